// The ingest cases: the raw OPFS limit (raw, rawread), Arrow ingest (arrow) and 1,000-row puts
// against the peers (rows100k, rows1m), each engine interleaved rep by rep. Node.

import { baselineCommit } from '../baseline.mjs';
import { BIG_ROWS_REPS, PEERS, REPS, SIZE, wanted } from '../args.mjs';
import { details, failed, fmtNum, guarded, label, log, record, repeat } from '../results.mjs';

const MiB = 1024 * 1024;

export const ingestCases = {
  /** Case 1: raw OPFS sync handle, 1 MiB chunks, flush per chunk. */
  async raw({ call }) {
    const mibps = await repeat('raw OPFS', REPS, () => call(([m]) => globalThis.bench.api.rawOpfs(m), SIZE.ingestMiB));
    record('ingest_mibps', 'raw_opfs', mibps, 'MiB/s');
  },

  /**
   * Case 1b: what one 64 KiB ranged read from a 16 MiB OPFS file costs, read whole and sliced
   * (OpfsStorage.tableReadRange today), through File.slice, and through a read-only sync handle.
   */
  async rawread({ call }) {
    const res = await repeat('raw OPFS ranged reads', REPS, () => call(() => globalThis.bench.api.rawOpfsRangeReads(16, 50)));
    for (const k of ['whole', 'fileSlice', 'syncHandle'])
      record(
        'range_read_ms',
        k,
        res.map((r) => r[k]),
        'ms',
      );
  },

  /** Case 2: Arrow ingest, 1 and 8 writers, append-only and keyed; engines interleaved per rep. */
  async arrow({ call }) {
    // Keyed stores ingest several times slower (the key index): a quarter of the volume keeps
    // the run short; with ~3.5x estimated bytes per input byte it still overruns the budget.
    // 1w and pk_1w also run on this checkout without the I/O worker (`inline_`) and, with a
    // baseline, on the baseline (`baseline_`), interleaved rep by rep.
    const variants = [
      ['memwal_1w', 1, false, SIZE.ingestMiB],
      ['memwal_8w', 8, false, SIZE.ingestMiB],
      ['memwal_pk_1w', 1, true, SIZE.ingestMiB / 4],
      ['memwal_pk_8w', 8, true, SIZE.ingestMiB / 4],
    ]
      .filter(([name]) => wanted(name))
      .flatMap((v) =>
        v[1] === 1 ? [v, [`inline_${v[0]}`, ...v.slice(1)], ...(baselineCommit() ? [[`baseline_${v[0]}`, ...v.slice(1)]] : [])] : [v],
      );
    const run = ([name, writers, keyed], n) =>
      name.startsWith('baseline_')
        ? call(([c, w, k]) => globalThis.bench.baseline.memwalArrow(c, w, { keyed: k }), n, writers, keyed)
        : call(([c, w, k, i]) => globalThis.bench.api.memwalArrow(c, w, { keyed: k }, i), n, writers, keyed, name.startsWith('inline_'));
    for (const v of variants) await run(v, 8); // warm-up
    const res = Object.fromEntries(variants.map(([name]) => [name, []]));
    for (let i = 0; i < REPS; i++) for (const v of variants) res[v[0]].push(await run(v, v[3]));
    details.arrow_mib_per_rep = Object.fromEntries(variants.map((v) => [v[0], v[3]]));
    for (const [name, rs] of Object.entries(res)) {
      record(
        'ingest_mibps',
        name,
        rs.map((r) => r.bytes / MiB / (r.ackMs / 1000)),
        'MiB/s',
      );
      record(
        'ingest_mibps_drained',
        name,
        rs.map((r) => r.bytes / MiB / (r.drainedMs / 1000)),
        'MiB/s',
      );
      record(
        'arrow_rows_per_s',
        name,
        rs.map((r) => r.rows / (r.ackMs / 1000)),
        'rows/s',
      );
      details[`arrow_${name}`] = {
        flushes: rs.map((r) => r.flushes),
        backpressureWaits: rs.map((r) => r.backpressureWaits),
        drainedSeconds: rs.map((r) => +(r.drainedMs / 1000).toFixed(2)),
        compaction: rs.map((r) => r.compaction),
        putMs: rs.map((r) => r.putMs),
      };
      if (rs[0]?.putMs)
        log(
          `${name}: put ms (p50 p90 p99 max) per rep: ${rs.map((r) => `${r.putMs.p50} ${r.putMs.p90} ${r.putMs.p99} ${r.putMs.max}`).join(' | ')}`,
        );
    }
    log('Arrow ingest: done');
  },

  rows100k: (s) => rowsCase(s, SIZE.smallRows, `rows_${label(SIZE.smallRows)}`, {}),
  rows1m: (s) => rowsCase(s, SIZE.bigRows, `rows_${label(SIZE.bigRows)}`, BIG_ROWS_REPS),
};

/**
 * Cases 3 and 4 on `rows` rows: memwal in the worker and through the client, each peer in the
 * worker, and SQLite called from the page through its worker API (`sqlite_page_wal`).
 */
async function rowsCase({ call }, rows, name, repsOf) {
  const runner = (engine) => (n) =>
    engine === 'memwal' || engine === 'memwal_inline'
      ? call(([r, i]) => globalThis.bench.api.memwalRows(r, i), n, engine === 'memwal_inline')
      : engine === 'memwal_baseline'
        ? call(([r]) => globalThis.bench.baseline.memwalRows(r), n)
        : engine === 'memwal_client'
          ? call(([r]) => globalThis.bench.clientRows(r), n)
          : engine === 'sqlite_page_wal'
            ? call(([r]) => globalThis.bench.sqlitePageRows(r), n)
            : call(([q, r]) => globalThis.bench.api.peerRows(q, r), engine, n);
  const engines = [
    'memwal',
    ...(rows === SIZE.smallRows ? ['memwal_inline', ...(baselineCommit() ? ['memwal_baseline'] : [])] : []),
    'memwal_client',
    ...PEERS,
    'sqlite_page_wal',
  ]
    .filter((e) => wanted(e) && (repsOf[e] ?? REPS) > 0)
    .map((e) => [e, () => runner(e)(rows)]);
  // Warm-up with a small set (JIT, wasm compile, PGlite start-up), then interleave engines per rep.
  const warm = Math.min(rows, 10_000);
  for (const [e] of engines) await guarded(`${name}/${e}`, () => runner(e)(warm));
  const samples = Object.fromEntries(engines.map(([e]) => [e, []]));
  const drained = { memwal: [], memwal_inline: [], memwal_baseline: [], memwal_client: [] };
  for (let i = 0; i < REPS; i++) {
    for (const [engine, run] of engines) {
      if (i >= (repsOf[engine] ?? REPS)) continue;
      if (failed.has(`${name}/${engine}`)) continue;
      const r = await guarded(`${name}/${engine}`, run);
      if (r === undefined) continue;
      if (typeof r === 'number') samples[engine].push(r);
      else {
        samples[engine].push(r.rows / (r.ackMs / 1000));
        drained[engine].push(r.rows / (r.drainedMs / 1000));
      }
    }
    log(`${name} rep ${i + 1}/${REPS}: ${engines.map(([e]) => `${e} ${fmtNum(samples[e].at(-1))}`).join(', ')}`);
  }
  for (const [e, s] of Object.entries(samples)) if (s.length) record(name, e, s, 'rows/s');
  for (const [e, s] of Object.entries(drained)) if (s.length) record(`${name}_drained`, e, s, 'rows/s');
}
