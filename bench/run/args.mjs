// The run's configuration: arguments (after `npm run bench --`) or their environment variables,
// the cases chosen, and the sizes of a full or a quick run (docs/benchmarks.md, "How to
// reproduce"). Node.
//
//   --only=reads,stats   BENCH_CASES     a subset of the cases (or groups), in run order
//   --engines=memwal,…   BENCH_ENGINES   only these engines in the row, Arrow and read cases
//   --quick              BENCH_QUICK=1   small sizes, 3 reps, for trying things
//   --reps=n             BENCH_REPS      repetitions
//   --full               BENCH_FULL=1    also IndexedDB and Dexie on the 1M-row set
//   --sizes=200k,1m,4m   BENCH_SIZES     the row counts of the read ladders (readsworker, readspage)
//   --profile=<case>     BENCH_PROFILE   CPU profile of the bench worker during that case (for
//                                        "stats": the host worker and the page; for "rows100k":
//                                        all three), written to
//                                        bench/results/profile-<case>-<thread>.cpuprofile.json
//   --baseline=<ref>     BENCH_BASELINE  an older memwal the ingest cases also run (default e7a7360,
//                                        main before compaction; `none`: skip)
//   BENCH_STALL_REPS (default 10: reps of the memorystall case; each memory or memorystall rep
//                    stops at 240 s, quick 120 s, and counts as timed out: a stall)
//   BENCH_LOAD_LIMIT_S (default 300, quick 60: a read-ladder engine whose next size would take
//                    longer than this to load, at the rate it loaded so far, stops there)
//   CHROMIUM_PATH, BENCH_PORT (default 5780), BENCH_COI=0 (no cross-origin isolation)

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** bench/, its Vite config and its results directory. */
export const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
export const CONFIG_FILE = join(BENCH_DIR, 'vite.config.ts');
export const RESULTS_DIR = join(BENCH_DIR, 'results');

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    engines: { type: 'string' },
    quick: { type: 'boolean' },
    reps: { type: 'string' },
    full: { type: 'boolean' },
    sizes: { type: 'string' },
    profile: { type: 'string' },
    baseline: { type: 'string' },
  },
});

export const list = (s) =>
  s
    ?.split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export const QUICK = args.quick || process.env.BENCH_QUICK === '1';
export const REPS = Number(args.reps ?? process.env.BENCH_REPS ?? (QUICK ? 3 : 5));

/** Every case, in run order (docs/benchmarks.md describes each). */
export const ALL_CASES = [
  'raw',
  'rawread',
  'arrow',
  'rows100k',
  'rows1m',
  'stats',
  'mainthread',
  'memory',
  'memorystall',
  'recovery',
  'reads',
  'readsworker',
  'readspage',
  'putpage',
  'openget',
  'queries',
  'coldnode',
];
export const GROUPS = {
  ingest: ['raw', 'rawread', 'arrow'],
  rows: ['rows100k', 'rows1m'],
  /** The write figures the targets name (docs/benchmarks.md), side by side. */
  writes: ['raw', 'arrow', 'rows100k', 'stats', 'putpage'],
  /** The read figures, page and worker. */
  readfigures: ['readsworker', 'readspage', 'openget', 'queries', 'coldnode'],
};
const chosen = (list(args.only ?? process.env.BENCH_CASES) ?? ALL_CASES).flatMap((c) => GROUPS[c] ?? [c]);
for (const c of chosen)
  if (!ALL_CASES.includes(c))
    throw new Error(`unknown case "${c}" (cases: ${ALL_CASES.join(', ')}; groups: ${Object.keys(GROUPS).join(', ')})`);
export const CASES = ALL_CASES.filter((c) => chosen.includes(c));

export const PROFILE = args.profile ?? process.env.BENCH_PROFILE;
if (PROFILE && !ALL_CASES.includes(PROFILE)) throw new Error(`unknown case "${PROFILE}" to profile`);

/** Only these engines in the row, Arrow and read cases. */
const ENGINES = list(args.engines ?? process.env.BENCH_ENGINES);
export const ENGINE_FILTER = ENGINES ?? 'all';
export const wanted = (engine) => !ENGINES || ENGINES.includes(engine);

/**
 * --baseline=<git ref> (BENCH_BASELINE): an older memwal that the ingest cases (arrow, rows100k)
 * also run, interleaved, so that one run shows what a change costs ingest. Default: main just
 * before table format 2 and compaction; `none`: no baseline.
 */
export const BASELINE = args.baseline ?? process.env.BENCH_BASELINE ?? 'e7a7360';

/** `200k`, `1m`, `4000000` → a row count. */
function rowCount(s) {
  const m = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(s);
  if (!m) throw new Error(`--sizes: "${s}" is not a row count (e.g. 200k, 1m)`);
  return Math.round(Number(m[1]) * { '': 1, k: 1e3, m: 1e6 }[m[2].toLowerCase()]);
}

/** Sizes. Default: the sizes docs/benchmarks.md reports; quick: enough to see that everything runs. */
export const SIZE = QUICK
  ? {
      ingestMiB: 32,
      smallRows: 10_000,
      bigRows: 100_000,
      memoryMiB: 256,
      memoryReps: 1,
      stallReps: Number(process.env.BENCH_STALL_REPS ?? 2),
      memoryLimitMs: 120_000,
      walMiB: 16,
      readRows: 50_000,
      readPasses: { cold: 500, warmup: 1000, warm: 2000, maxMs: 10_000 },
      ladder: [20_000, 50_000, 100_000],
      pagePasses: { warmup: 500, warm: 1000, maxMs: 10_000, manyBatches: 20 },
      putRows: 20_000,
      openRows: 20_000,
      openWalRows: 3_000,
      coldKeys: 20_000,
      coldGets: 2000,
      queries: { rows: 20_000, chains: 5, counts: 10 },
      loadLimitS: Number(process.env.BENCH_LOAD_LIMIT_S ?? 60),
    }
  : {
      ingestMiB: 128,
      smallRows: 100_000,
      bigRows: 1_000_000,
      memoryMiB: 1024,
      memoryReps: 2,
      stallReps: Number(process.env.BENCH_STALL_REPS ?? 10),
      memoryLimitMs: 240_000,
      walMiB: 64,
      readRows: 1_000_000,
      readPasses: { cold: 2000, warmup: 5000, warm: 20_000, maxMs: 30_000 },
      ladder: [200_000, 1_000_000, 4_000_000],
      pagePasses: { warmup: 2000, warm: 5000, maxMs: 20_000, manyBatches: 200 },
      putRows: 200_000,
      openRows: 200_000,
      openWalRows: 30_000,
      coldKeys: 200_000,
      coldGets: 2000,
      queries: { rows: 100_000, chains: 20, counts: 50 },
      loadLimitS: Number(process.env.BENCH_LOAD_LIMIT_S ?? 300),
    };
const sizes = list(args.sizes ?? process.env.BENCH_SIZES);
if (sizes) SIZE.ladder = sizes.map(rowCount).sort((a, b) => a - b);

/** The peers of the row cases, in the bench worker. */
export const PEERS = [
  'idb',
  'dexie',
  'sqlite_sahpool',
  'sqlite_sahpool_wal',
  'sqlite_sahpool_wal_tuned',
  'pglite_opfs_ahp',
  'pglite_opfs_ahp_unnest',
];

/**
 * Repetitions per engine on the big row set, where the peers are slow: one pass of SQLite and
 * PGlite (20-40 s each here), and of SQLite called from the page; IndexedDB and Dexie (1-3 min a
 * pass) only with BENCH_FULL=1. Their rows/s at 100k (five reps each) is what the ratios use.
 */
export const FULL = args.full || process.env.BENCH_FULL === '1';
export const BIG_ROWS_REPS = {
  sqlite_sahpool: 1,
  pglite_opfs_ahp: 1,
  sqlite_page_wal: 1,
  idb: FULL ? 1 : 0,
  dexie: FULL ? 1 : 0,
};

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
