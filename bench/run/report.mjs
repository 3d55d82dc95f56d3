// The report: the ratios of the run (each of two figures measured side by side in it), every
// figure the targets name with its target and whether it is met, and the table of all figures.
// Printed at the end of a run and kept in latest.json. Node.

import { PEERS, SIZE } from './args.mjs';
import { READ_ENGINES } from './cases/reads.mjs';
import { cases, details, fmtNum, get, label } from './results.mjs';

/** The ladder's sizes: the smallest (200k), the middle one (1M), the largest (4M). */
const ladder = () => {
  const L = SIZE.ladder.map(label);
  return { first: L[0], middle: L[Math.min(1, L.length - 1)], last: L.at(-1) };
};

export function computeRatios() {
  const r = {};
  const small = `rows_${label(SIZE.smallRows)}`;
  const big = `rows_${label(SIZE.bigRows)}`;
  for (const p of PEERS) {
    if (get(small, 'memwal') && get(small, p)) r[`rows_vs_${p}`] = get(small, 'memwal') / get(small, p);
    if (get(big, 'memwal') && get(big, p)) r[`rows_${label(SIZE.bigRows)}_vs_${p}`] = get(big, 'memwal') / get(big, p);
  }
  const ranked = PEERS.filter((p) => get(small, p)).sort((a, b) => get(small, b) - get(small, a));
  if (get(small, 'memwal') && ranked.length) {
    r.rows_vs_fastest_peer = get(small, 'memwal') / get(small, ranked[0]);
    details.fastest_peer = ranked[0];
  }
  // From the page, as an app calls each: memwal's client ÷ memwal in the worker, ÷ SQLite through
  // its worker API; and what the worker API costs SQLite itself.
  const ratio = (name, a, b) => {
    if (a && b) r[name] = a / b;
  };
  ratio('rows_client_vs_worker', get(small, 'memwal_client'), get(small, 'memwal'));
  ratio('rows_client_vs_sqlite_page', get(small, 'memwal_client'), get(small, 'sqlite_page_wal'));
  ratio('rows_sqlite_page_vs_sqlite_worker', get(small, 'sqlite_page_wal'), get(small, 'sqlite_sahpool_wal'));
  // The read case: reads (warm, present keys), cold reads, absent keys, full scans, and the
  // writes of the read case, memwal ÷ each peer.
  for (const p of [...READ_ENGINES.slice(1), 'dexie']) {
    for (const [name, c] of [
      ['reads', 'reads_warm_gets_per_s'],
      ['reads_cold', 'reads_cold_gets_per_s'],
      ['reads_absent', 'reads_absent_gets_per_s'],
      ['scan', 'reads_scan_rows_per_s'],
      ['reads_write', 'reads_write_rows_per_s'],
    ])
      ratio(`${name}_vs_${p}`, get(c, 'memwal'), get(c, p));
  }
  // The read ladders: memwal ÷ each peer at each size (warm), and each engine's warm gets/s at
  // the largest size ÷ the smallest ("no cliff").
  const { first, last } = ladder();
  for (const [prefix, peers] of [
    ['readsworker', ['sqlite_sahpool_wal', 'idb']],
    ['readspage', ['idb', 'dexie', 'sqlite_page_wal', 'pglite_page']],
  ]) {
    for (const n of SIZE.ladder.map(label)) {
      const c = `${prefix}_${n}_warm_gets_per_s`;
      for (const p of peers) ratio(`${prefix}_${n}_vs_${p}`, get(c, 'memwal'), get(c, p));
    }
    if (first !== last)
      for (const e of ['memwal', ...peers])
        ratio(`${prefix}_cliff_${e}`, get(`${prefix}_${last}_warm_gets_per_s`, e), get(`${prefix}_${first}_warm_gets_per_s`, e));
  }
  ratio('openget_reload_vs_idb', get('openget_total_ms', 'memwal_reload'), get('openget_total_ms', 'idb'));
  const raw = get('ingest_mibps', 'raw_opfs');
  if (raw) {
    ratio('bytes_vs_raw_opfs', get('ingest_mibps', 'memwal_1w'), raw);
    for (const e of ['memwal_8w', 'memwal_pk_1w', 'memwal_pk_8w', 'memwal_client_8w'])
      ratio(`bytes_${e.replace('memwal_', '')}_vs_raw_opfs`, get('ingest_mibps', e), raw);
  }
  // This checkout (with compaction) ÷ the baseline, same run: the target allows at most −10 %;
  // `inline_`: without the I/O worker, closer to the baseline's threading.
  for (const e of ['memwal_1w', 'memwal_pk_1w']) {
    const base = get('ingest_mibps', `baseline_${e}`);
    ratio(`ingest_${e.replace('memwal_', '')}_vs_baseline`, get('ingest_mibps', e), base);
    ratio(`ingest_${e.replace('memwal_', '')}_inline_vs_baseline`, get('ingest_mibps', `inline_${e}`), base);
  }
  ratio('rows_vs_baseline', get(small, 'memwal'), get(small, 'memwal_baseline'));
  ratio('rows_inline_vs_baseline', get(small, 'memwal_inline'), get(small, 'memwal_baseline'));
  const stall = cases.memorystall_ingest_mibps?.memwal_8w;
  if (stall) r.memorystall_slowest_vs_fastest = stall.min / stall.max;
  // Reps that hit their time limit (a stall), out of those run.
  const stalled = cases.memorystall_timed_out_reps?.memwal_8w;
  if (stalled && stall) r.memorystall_timed_out_reps = stalled.median;
  const mem = cases.memory_ingest_mibps?.memwal_8w;
  if (mem && mem.reps > 1) r.memory_slowest_vs_fastest = mem.min / mem.max;
  return r;
}

/**
 * Every figure a target names: `{ figure, value, unit, target, milestone, better, note }`, where
 * `better` says which way is good ('higher' or 'lower') and a figure without a target is reported
 * as measured. `value` is undefined when the run did not measure it.
 */
export function targetFigures(r) {
  const { first, middle, last } = ladder();
  const many = get(`readspage_${middle}_getmany_keys_per_s`, 'memwal');
  /** The load a stats figure was measured under (the 8-writer page load for comparison). */
  const mibps = (e) =>
    get('ingest_mibps', e) === undefined
      ? undefined
      : `under ${fmtNum(get('ingest_mibps', e))} MiB/s; 8 writers on the page: ${fmtNum(get('ingest_mibps', 'memwal_client_8w'))}`;
  const up = (figure, value, target, milestone, note) => ({ figure, value, unit: 'x', target, milestone, better: 'higher', note });
  const ms = (figure, value, target, milestone, note) => ({ figure, value, unit: 'ms', target, milestone, better: 'lower', note });
  return [
    up('Arrow ingest ÷ raw OPFS, 1 writer', r.bytes_vs_raw_opfs, 0.4, 0.3),
    up('Arrow ingest ÷ raw OPFS, 8 writers', r.bytes_8w_vs_raw_opfs, 0.4, 0.3),
    up('keyed Arrow ingest ÷ raw OPFS, 1 writer', r.bytes_pk_1w_vs_raw_opfs, 0.25, 0.15),
    up('keyed Arrow ingest ÷ raw OPFS, 8 writers', r.bytes_pk_8w_vs_raw_opfs, 0.25, 0.15),
    up('rows/s ÷ fastest peer at equal durability (in the worker)', r.rows_vs_fastest_peer, 8, 5, details.fastest_peer),
    up("rows/s through the page's client ÷ in the worker", r.rows_client_vs_worker, 0.7),
    up("rows/s through the page's client ÷ SQLite from the page (promiser)", r.rows_client_vs_sqlite_page, 3),
    ms('stats p99 from the page, 8 writers (memtableStats)', get('stats_p99_ms', 'memtableStats'), 2, 5),
    ms('stats p99 from the page, 4 writers', get('stats_p99_ms', 'w4_memtableStats'), undefined, undefined, mibps('memwal_client_4w')),
    ms(
      'stats p99 from the page, 8 writers in a load worker',
      get('stats_p99_ms', 'loadworker_memtableStats'),
      undefined,
      undefined,
      mibps('loadworker_memwal_client_8w'),
    ),
    ms('longest task on the engine thread, 8 writers (trace)', get('engine_thread_longest_task_ms', 'memwal_host'), 2, 5),
    up(`warm gets/s from the page at ${middle}: memwal ÷ IndexedDB`, r[`readspage_${middle}_vs_idb`], 2),
    up(`warm gets/s in the worker at ${middle}: memwal ÷ SQLite (WAL)`, r[`readsworker_${middle}_vs_sqlite_sahpool_wal`], 1, 0.5),
    up(`no cliff in the worker: memwal gets/s at ${last} ÷ ${first}`, r.readsworker_cliff_memwal, 0.5),
    up(`no cliff from the page: memwal gets/s at ${last} ÷ ${first}`, r.readspage_cliff_memwal, 0.5),
    ms(`cold get p99 in Node, ${label(SIZE.coldKeys)} keys in one table file`, get('coldnode_get_ms', 'p99'), 1),
    {
      figure: `getMany from the page at ${middle}, 100-key batches`,
      value: many,
      unit: 'keys/s',
      better: 'higher',
      note: many === undefined && details.readspage_getmany ? details.readspage_getmany : undefined,
    },
    ms('openMemWal() to first get after a reload (WAL left by the reload)', get('openget_total_ms', 'memwal_reload'), 150, 250),
    ms('openMemWal() to first get after a clean close()', get('openget_total_ms', 'memwal_after_close'), 150, 250),
    ms('IndexedDB: openDB() to first get after a reload', get('openget_total_ms', 'idb')),
    ms(`put p99 from the page, ${label(SIZE.putRows)} rows in 1,000-row puts`, get('putpage_put_ms', 'p99'), 100),
  ];
}

/** 'yes', 'milestone only', 'no', '—' (no target), 'n/a' (a note says why) or 'not measured'. */
function met(f) {
  if (f.value === undefined) return f.note ? 'n/a' : 'not measured';
  if (f.target === undefined) return '—';
  const ok = (t) => (f.better === 'higher' ? f.value >= t : f.value <= t);
  if (ok(f.target)) return 'yes';
  return f.milestone !== undefined && ok(f.milestone) ? 'milestone only' : 'no';
}

export function printTargets(figures) {
  const bound = (f, t) => (t === undefined ? '—' : `${f.better === 'higher' ? '≥' : '≤'} ${t}`);
  console.log('\n| figure | measured | target | milestone | met? |\n|---|---:|---|---|---|');
  for (const f of figures) {
    const value = f.value === undefined ? (f.note ?? '-') : `${fmtNum(f.value)} ${f.unit}${f.note ? ` (${f.note})` : ''}`;
    console.log(`| ${f.figure} | ${value} | ${bound(f, f.target)} | ${bound(f, f.milestone)} | ${met(f)} |`);
  }
}

/** The figures with their verdicts, for latest.json. */
export const targetsOf = (figures) => figures.map((f) => ({ ...f, met: met(f) }));

export function printTable() {
  console.log('\n| case | engine | median | min | max | unit | reps |\n|---|---|---:|---:|---:|---|---:|');
  for (const [c, engines] of Object.entries(cases)) {
    for (const [e, s] of Object.entries(engines)) {
      console.log(`| ${c} | ${e} | ${fmtNum(s.median)} | ${fmtNum(s.min)} | ${fmtNum(s.max)} | ${s.unit} | ${s.reps} |`);
    }
  }
}

export function printRatios(ratios) {
  console.log('\n| ratio | value |\n|---|---:|');
  for (const [k, v] of Object.entries(ratios)) console.log(`| ${k} | ${v.toFixed(k.includes('_reps') ? 0 : 3)} |`);
  console.log('');
}
