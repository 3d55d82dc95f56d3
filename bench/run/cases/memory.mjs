// The memory cases: ≥ 1 GiB through a 64 MiB budget with the heap read over CDP (memory), the
// same load without CDP, many times, to catch a flush stall (memorystall), and the reopen after a
// crash with unflushed WAL (recovery). Node.

import { REPS, SIZE } from '../args.mjs';
import { details, guarded, log, record, repeat } from '../results.mjs';

const MiB = 1024 * 1024;

export const memoryCases = {
  /** Case 6: ≥ 1 GiB through a 64 MiB budget (append-only store, 8 writers); heap read over CDP. */
  async memory(s) {
    const { call } = s;
    const cdp = await s.benchWorkerCdp();
    const res = [];
    for (let i = 0; i < SIZE.memoryReps; i++) {
      await call(() => globalThis.bench.api.memoryOpen({ keyed: false }));
      const before = await cdp.heapBytes(true);
      let peakHeap = before;
      let sampling = true;
      const sampler = (async () => {
        for (let n = 1; sampling; n++) {
          peakHeap = Math.max(peakHeap, await cdp.heapBytes(false, 5000).catch(() => peakHeap));
          await new Promise((r) => setTimeout(r, 100));
          if (n % 300 === 0) log('memory: still running', JSON.stringify(await call(() => globalThis.bench.api.memoryProbe())));
        }
      })();
      const r = await call(([m, l]) => globalThis.bench.api.memoryIngest(m, 8, l), SIZE.memoryMiB, SIZE.memoryLimitMs);
      sampling = false;
      await sampler;
      const after = await cdp.heapBytes(true);
      await call(([a]) => globalThis.bench.api.memoryClose(a), r.timedOut);
      const closed = await cdp.heapBytes(true);
      res.push({ ...r, heapBefore: before, heapPeak: peakHeap, heapAfter: after, heapClosed: closed });
      log(
        `memory rep ${i + 1}: ${(r.ingestedBytes / MiB).toFixed(0)} MiB in ${(r.ms / 1000).toFixed(1)} s, peak unflushed ${(r.peakUnflushedBytes / MiB).toFixed(1)} MiB`,
      );
    }
    const m = (f) => res.map((r) => f(r) / MiB);
    record(
      'memory_mib',
      'budget',
      m((r) => r.budgetBytes),
      'MiB',
    );
    record(
      'memory_mib',
      'budget_plus_one_put',
      m((r) => r.budgetBytes + r.onePutBytes),
      'MiB',
    );
    record(
      'memory_mib',
      'peak_unflushed',
      m((r) => r.peakUnflushedBytes),
      'MiB',
    );
    record(
      'memory_mib',
      'heap_peak_growth',
      m((r) => r.heapPeak - r.heapBefore),
      'MiB',
    );
    record(
      'memory_mib',
      'heap_growth_after_gc',
      m((r) => r.heapAfter - r.heapBefore),
      'MiB',
    );
    record(
      'memory_mib',
      'heap_growth_after_close',
      m((r) => r.heapClosed - r.heapBefore),
      'MiB',
    );
    record(
      'memory_mib',
      'ingested',
      m((r) => r.ingestedBytes),
      'MiB',
    );
    record(
      'memory_ingest_mibps',
      'memwal_8w',
      res.map((r) => r.ingestedBytes / MiB / (r.ms / 1000)),
      'MiB/s',
    );
    details.memory = res.map(({ samples, backpressureWaits, flushes, drainMs, slowestPutMs, timedOut, compaction }) => ({
      samples,
      timedOut,
      backpressureWaits,
      flushes,
      drainMs,
      slowestPutMs,
      compaction,
    }));
  },

  /**
   * Case 6b, the flush stall (docs/impl.md, "The OPFS stall"): the memory case's load (1 GiB, 8 writers, 64 MiB
   * budget) with no CDP attached to the worker (no heap probes, no forced GC), `stallReps` times.
   */
  async memorystall({ call }) {
    const res = [];
    for (let i = 0; i < SIZE.stallReps; i++) {
      const r = await guarded('memorystall', async () => {
        await call(() => globalThis.bench.api.memoryOpen({ keyed: false }));
        let ingesting = true;
        const watch = (async () => {
          for (let n = 1; ingesting; n++) {
            await new Promise((resolve) => setTimeout(resolve, 1000));
            if (ingesting && n % 30 === 0)
              log(`memorystall rep ${i + 1}: still running`, JSON.stringify(await call(() => globalThis.bench.api.memoryProbe())));
          }
        })();
        let r;
        try {
          r = await call(([m, l]) => globalThis.bench.api.memoryIngest(m, 8, l), SIZE.memoryMiB, SIZE.memoryLimitMs);
        } finally {
          ingesting = false;
          await watch;
          const closed = await call(([a]) => globalThis.bench.api.memoryClose(a), r?.timedOut ?? true);
          if (r) Object.assign(r, closed);
        }
        return r;
      });
      if (!r) break;
      res.push(r);
      log(
        `memorystall rep ${i + 1}: ${(r.ingestedBytes / MiB / (r.ms / 1000)).toFixed(1)} MiB/s${r.timedOut ? ' (TIMED OUT)' : ''}, slowest put ${r.slowestPutMs.toFixed(0)} ms, drain ${(r.drainMs / 1000).toFixed(1)} s, flush failures ${r.flushFailures}, compaction ${JSON.stringify(r.compaction)}`,
      );
    }
    if (!res.length) return;
    const rates = res.map((r) => r.ingestedBytes / MiB / (r.ms / 1000));
    record('memorystall_ingest_mibps', 'memwal_8w', rates, 'MiB/s');
    record('memorystall_timed_out_reps', 'memwal_8w', [res.filter((r) => r.timedOut).length], 'reps');
    record(
      'memorystall_slowest_put_ms',
      'memwal_8w',
      res.map((r) => r.slowestPutMs),
      'ms',
    );
    details.memorystall = res.map(
      ({ ms, timedOut, slowestPutMs, drainMs, flushes, flushFailures, backpressureWaits, closeMs, destroyMs, compaction }) => ({
        ms,
        timedOut,
        slowestPutMs,
        drainMs,
        flushes,
        flushFailures,
        backpressureWaits,
        closeMs,
        destroyMs,
        compaction,
      }),
    );
  },

  /** Case 7: crash with 64 MiB of unflushed WAL, then time the reopen (append-only and keyed). */
  async recovery({ call }) {
    for (const [suffix, keyed] of [
      ['', false],
      ['_pk', true],
    ]) {
      const res = await repeat(`recovery${suffix}`, REPS, () =>
        call(([m, k]) => globalThis.bench.api.recovery(m, { keyed: k }), SIZE.walMiB, keyed),
      );
      const c = `recovery${suffix}`;
      record(
        c,
        'open_ms',
        res.map((r) => r.openMs),
        'ms',
      );
      record(
        c,
        'replay_ms',
        res.map((r) => r.replayTimeMs),
        'ms',
      );
      record(
        c,
        'replay_mibps',
        res.map((r) => r.walBytes / MiB / (r.openMs / 1000)),
        'MiB/s',
      );
      record(
        c,
        'wal_mib',
        res.map((r) => r.walBytes / MiB),
        'MiB',
      );
      details[c] = res.map(({ replayedRows, unflushedBeforeCrash }) => ({ replayedRows, unflushedBeforeCrash }));
    }
  },
};
