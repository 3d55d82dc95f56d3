// The stats case: stats latency from the page while writers put ≈1 MiB batches, in four
// variants interleaved rep by rep — 8 writers on the page (the product's default host, and the
// host with storage I/O on its own thread: `inline_`), 4 writers (`w4_`, half the load), and 8
// writers in a load worker of their own (`loadworker_`, so the page's thread only calls stats) —
// then the first two traced, for the engine thread's tasks. Node.

import { REPS, SIZE } from '../args.mjs';
import { details, guarded, log, percentile, record } from '../results.mjs';
import { taskFigures, traced } from '../trace.mjs';

const MiB = 1024 * 1024;

/** The variants: prefix of their figures, writers, storage I/O on the engine's thread, load from a worker. */
const VARIANTS = [
  { prefix: '', writers: 8, inline: false, worker: false },
  { prefix: 'inline_', writers: 8, inline: true, worker: false },
  { prefix: 'w4_', writers: 4, inline: false, worker: false },
  { prefix: 'loadworker_', writers: 8, inline: false, worker: true },
];

export const statsCases = {
  async stats({ call, context, page }) {
    const load = (v) =>
      v.worker
        ? call(([c, w]) => globalThis.bench.statsUnderWorkerLoad(c, w), SIZE.ingestMiB, v.writers)
        : call(([c, w, i]) => globalThis.bench.statsUnderLoad(c, w, i), SIZE.ingestMiB, v.writers, v.inline);
    const reps = Object.fromEntries(VARIANTS.map((v) => [v.prefix, []]));
    const traces = { '': [], inline_: [] };
    for (const v of VARIANTS) await guarded(`stats/${v.prefix}`, () => load(v)); // warm-up
    for (let i = 0; i < REPS; i++) {
      for (const v of VARIANTS) {
        const r = await guarded(`stats/${v.prefix}`, () => load(v));
        if (r) reps[v.prefix].push(r);
      }
    }
    // The same load again, traced (separate reps, so tracing cannot slow the figures above).
    for (let i = 0; i < Math.min(REPS, 3); i++) {
      for (const v of VARIANTS.filter((x) => x.prefix in traces)) {
        const t = await guarded(`stats/trace/${v.prefix}`, async () => {
          const [r, events] = await traced(context, page, () => load(v));
          return {
            ...taskFigures(events, v.inline ? 'host-inline.worker' : 'host.worker'),
            statsP99Ms: percentile(r.latencies.memtableStats, 99),
          };
        });
        if (t) traces[v.prefix].push(t);
      }
    }
    log('stats under load: done');
    for (const { prefix, writers } of VARIANTS) {
      const rs = reps[prefix];
      if (!rs.length) continue;
      for (const k of ['stats', 'memtableStats', 'backpressureStats', 'metrics']) {
        const e = `${prefix}${k}`;
        record(
          'stats_p50_ms',
          e,
          rs.map((r) => percentile(r.latencies[k], 50)),
          'ms',
        );
        record(
          'stats_p99_ms',
          e,
          rs.map((r) => percentile(r.latencies[k], 99)),
          'ms',
        );
        record(
          'stats_max_ms',
          e,
          rs.map((r) => Math.max(...r.latencies[k])),
          'ms',
        );
      }
      const stale = rs.flatMap((r) => r.staleness);
      if (stale.length) {
        record(
          'stats_staleness_ms',
          `${prefix}memtableStats`,
          rs.map((r) => percentile(r.staleness, 99)),
          'ms',
        );
        details[`${prefix}stats_staleness`] = {
          samples: stale.length,
          stale: stale.filter((x) => x > 0).length,
          p99: percentile(stale, 99),
          max: Math.max(...stale),
        };
      }
      record(
        'ingest_mibps',
        `${prefix === 'w4_' ? '' : prefix}memwal_client_${writers}w`,
        rs.map((r) => r.bytes / MiB / (r.ms / 1000)),
        'MiB/s',
      );
      details[`${prefix}stats_pooled`] = Object.fromEntries(
        ['stats', 'memtableStats', 'backpressureStats', 'metrics'].map((k) => {
          const all = rs.flatMap((r) => r.latencies[k]);
          return [k, { samples: all.length, p50: percentile(all, 50), p99: percentile(all, 99), max: Math.max(...all) }];
        }),
      );
      const ts = traces[prefix];
      if (!ts?.length) continue;
      const host = `memwal_host${prefix ? '_inline' : ''}`;
      record(
        'engine_thread_longest_task_ms',
        host,
        ts.map((t) => t.engine.longestMs),
        'ms',
      );
      record(
        'engine_thread_longest_task_cpu_ms',
        host,
        ts.map((t) => t.engine.longestCpuMs ?? Number.NaN),
        'ms',
      );
      record(
        'engine_thread_task_p99_ms',
        host,
        ts.map((t) => t.engine.p99Ms),
        'ms',
      );
      record(
        'page_longest_task_ms',
        `stats_load${prefix ? '_inline' : ''}`,
        ts.map((t) => t.page?.longestMs ?? 0),
        'ms',
      );
      details[`${prefix}engine_thread`] = ts;
      log(`${host}: longest task on the engine thread ${ts.map((t) => t.engine.longestMs.toFixed(1)).join(', ')} ms`);
    }
  },
};
