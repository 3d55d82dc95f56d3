// The page cases an app feels beyond reads: the latency of each 1,000-row put while a page saves
// 200k app rows (putpage), and the time from `openMemWal()` to the first answered `get` after a
// reload, with the store left open by the reload or closed cleanly before it, beside IndexedDB's
// (openget). Node.

import { REPS, SIZE } from '../args.mjs';
import { details, fmtNum, log, record } from '../results.mjs';

const name = (what) => `bench-${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** After a reload, the page's own start (its bench worker, module loading) is left this long to finish. */
const AFTER_RELOAD_MS = 300;

export const pageCases = {
  /**
   * Put latency from the page: `putRows` app rows in 1,000-row puts through `openMemWal`, each
   * awaited (one untimed rep, then REPS reps); then one more rep that asks the store's stats every
   * 10 ms, to say what the store was doing during the slowest puts.
   */
  async putpage({ call }) {
    const rep = async (sampleEveryMs) => {
      const store = name('putpage');
      try {
        return await call(([n, r, s]) => globalThis.bench.putPage(n, r, s), store, SIZE.putRows, sampleEveryMs);
      } finally {
        await call(([n]) => globalThis.bench.api.destroyStore(n), store);
      }
    };
    await rep(0);
    const rs = [];
    for (let i = 0; i < REPS; i++) {
      const r = await rep(0);
      rs.push(r);
      log(
        `putpage rep ${i + 1}/${REPS}: put p50 ${fmtNum(r.put.p50)} ms, p99 ${fmtNum(r.put.p99)} ms, max ${fmtNum(r.put.max)} ms; ${r.flushes} flushes, ${r.backpressureWaits} backpressure waits (${fmtNum(r.backpressureWaitMs)} ms), ${r.l0StallCount} level-0 stalls`,
      );
    }
    for (const k of ['p50', 'p99', 'max'])
      record(
        'putpage_put_ms',
        k,
        rs.map((r) => r.put[k]),
        'ms',
      );
    record(
      'putpage_rows_per_s',
      'memwal_page',
      rs.map((r) => r.rows / (r.ms / 1000)),
      'rows/s',
    );
    const sampled = await rep(10);
    record('putpage_sampled_put_ms', 'p99', [sampled.put.p99], 'ms');
    record('putpage_sampled_put_ms', 'max', [sampled.put.max], 'ms');
    details.putpage = {
      reps: rs.map(({ put, ms, drainMs, flushes, backpressureWaits, backpressureWaitMs, l0StallCount, compactions }) => ({
        put,
        ms,
        drainMs,
        flushes,
        backpressureWaits,
        backpressureWaitMs,
        l0StallCount,
        compactions,
      })),
      sampled,
    };
    for (const p of sampled.slowest.slice(0, 5))
      log(
        `putpage slow put #${p.index} at ${(p.at / 1000).toFixed(2)} s: ${fmtNum(p.ms)} ms; causes ${p.causes.join('/')}, waiting ${p.maxWaiting}, frozen ${p.maxFrozenCount}, compaction ${p.compactionRunning ? 'running' : 'idle'} (pending ${fmtNum(p.maxCompactionPendingBytes / 1048576)} MiB), flushes ${p.flushes} (last ${fmtNum(p.lastFlushMs)} ms), level-0 stalls ${p.l0Stalls}, batches waiting for their WAL append ≤ ${p.maxPendingWalBatches} (in ${p.pendingWalSamples} of ${p.samples} samples), WAL appends ${p.walAppends}, slowest stats answer ${fmtNum(p.slowestStatsMs)} ms`,
      );
  },

  /**
   * Open to first get: a store of `openRows` app rows with the last `openWalRows` still in the
   * WAL, and IndexedDB with the same rows. Each rep reloads the page (the store's worker ends
   * without close()), then times IndexedDB's openDB() to its first get, and openMemWal() to its
   * first get. Then the store is closed cleanly, and each rep reloads, times the open to the first
   * get, and closes. One untimed rep of each first.
   */
  async openget(s) {
    const { call } = s;
    const store = name('openget');
    const idbName = `${store}-idb`;
    const k = 12_345 % SIZE.openRows;
    const reload = async () => {
      await s.reload();
      await new Promise((r) => setTimeout(r, AFTER_RELOAD_MS));
    };
    try {
      const prepared = await call(([n, r, w]) => globalThis.bench.openGetPrepare(n, r, w), store, SIZE.openRows, SIZE.openWalRows);
      await call(([n, r]) => globalThis.bench.idbOpenPrepare(n, r), idbName, SIZE.openRows);
      log(`openget: ${SIZE.openRows} rows, ${SIZE.openWalRows} in the WAL (${fmtNum(prepared.retainedBytes / 1048576)} MiB retained)`);
      const dirty = [];
      const idb = [];
      for (let i = -1; i < REPS; i++) {
        await reload();
        const ib = await call(([n, key]) => globalThis.bench.idbOpenMeasure(n, key), idbName, k);
        const m = await call(([n, key]) => globalThis.bench.openGetMeasure(n, key), store, k);
        if (i < 0) continue;
        idb.push(ib);
        dirty.push(m);
        log(
          `openget rep ${i + 1}/${REPS} after a reload: memwal ${fmtNum(m.totalMs)} ms (open ${fmtNum(m.openMs)}, first get ${fmtNum(m.firstGetMs)}; replayed ${m.replayedRows} rows in ${fmtNum(m.replayTimeMs)} ms, WAL ${fmtNum(m.retainedBytes / 1048576)} MiB); IndexedDB ${fmtNum(ib.totalMs)} ms`,
        );
      }
      await call(() => globalThis.bench.openGetClose());
      const clean = [];
      for (let i = -1; i < REPS; i++) {
        await reload();
        const m = await call(([n, key]) => globalThis.bench.openGetMeasure(n, key), store, k);
        await call(() => globalThis.bench.openGetClose());
        if (i < 0) continue;
        clean.push(m);
        log(
          `openget rep ${i + 1}/${REPS} after close(): memwal ${fmtNum(m.totalMs)} ms (open ${fmtNum(m.openMs)}, first get ${fmtNum(m.firstGetMs)}; replayed ${m.replayedRows} rows, WAL ${fmtNum(m.retainedBytes / 1048576)} MiB)`,
        );
      }
      for (const [engine, rs] of [
        ['memwal_reload', dirty],
        ['memwal_after_close', clean],
        ['idb', idb],
      ]) {
        for (const f of ['totalMs', 'openMs', 'firstGetMs'])
          record(
            `openget_${f.replace('Ms', '')}_ms`,
            engine,
            rs.map((r) => r[f]),
            'ms',
          );
      }
      for (const [engine, rs] of [
        ['memwal_reload', dirty],
        ['memwal_after_close', clean],
      ])
        record(
          'openget_wal_mib',
          engine,
          rs.map((r) => r.retainedBytes / 1048576),
          'MiB',
        );
      details.openget = { prepared, afterReload: dirty, afterClose: clean, idb, afterReloadPauseMs: AFTER_RELOAD_MS };
    } finally {
      await call(() => globalThis.bench.openGetClose()).catch(() => undefined);
      await call(([n]) => globalThis.bench.api.destroyStore(n), store).catch((e) => log(`openget: destroy failed: ${e.message}`));
      await call(
        ([n]) =>
          new Promise((resolve, reject) => {
            const r = indexedDB.deleteDatabase(n);
            r.onsuccess = resolve;
            r.onerror = () => reject(r.error);
          }),
        idbName,
      ).catch(() => undefined);
    }
  },
};
