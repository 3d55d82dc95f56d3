// What a seed runs: its configuration (swarm testing: every seed draws its own store options,
// compaction policy, key type, columns, storage latency and which features it uses) and its list
// of steps (operations over the public API, each with the faults injected while it runs). Both are
// drawn from the seed alone, before anything runs, so a step list can be shrunk and replayed.

import type { FaultOp, TearableOp } from '../../src/testing/fault-controller.js';
import { int, rng } from '../../src/testing/rng.js';
import { drawQueryStep, type IndexDecl, type QueryAction, withIndexes } from './queries.js';
import { type ColType, type ColumnSpec, drawKeyPool, type KeyType, type KeyValue } from './values.js';

export type Mode = 'keyed' | 'append' | 'wal-only';

export interface SimConfig {
  mode: Mode;
  keyType: KeyType | undefined;
  keyPool: KeyValue[];
  /** The value columns of the first open. */
  columns: ColumnSpec[];
  durableWrite: boolean;
  frozenMemtableGraceMs: number;
  maxMemtableRows: number;
  maxMemtableBytes: number;
  maxMemtableBatches: number;
  maxUnflushedMemtableBytes: number;
  maxWalBufferBytes: number;
  maxWalFlushIntervalMs: number;
  maxPutBytes: number;
  blockCacheBytes: number;
  maxPendingCompactionBytes: number;
  backpressureTimeoutMs: number | undefined;
  walRetry: { baseMs: number; maxMs: number; timeoutMs: number };
  flushRetry: { baseMs: number; maxMs: number; stallMs: number };
  policy: { level0Trigger: number; level0Stop: number; spaceAmpTrigger: number; keyedOutputBytes: number; appendOnlyOutputBytes: number };
  /** Storage calls take up to this many virtual ms (each draws its own delay). */
  latencyMs: number;
  /** Before a timer runs, the host is busy this many ms (at most), with this chance: timers fire late, in order. */
  stall: { chance: number; maxMs: number };
  /** A drain into the model sink follows every writer. */
  drain: boolean;
  /** Ordered indexes declared with each open whose columns they name (test/sim/queries.ts). */
  indexes: IndexDecl[];
  /** Writes of one key may be in flight at once (keyed stores; otherwise each waits for the earlier ones). */
  overlap?: boolean;
  /** WAL segments roll over at this size (OpenHooks.walSegmentTargetBytes) instead of 8 MiB: a WAL of many segments. */
  walSegmentBytes?: number;
}

/** Faults injected at the start of a step; cleared when the step's window ends. */
export type FaultSpec =
  | { f: 'failNext' | 'failAfter'; op: FaultOp; count: number; quota: boolean; reread: boolean }
  | { f: 'hangNext' | 'hangAfter'; op: FaultOp }
  | { f: 'tearNext'; op: TearableOp }
  | { f: 'hold'; op: FaultOp; ms: number }
  | { f: 'crashAt'; n: number };

/**
 * A schema change at reopen, one of each kind SPEC §9/§9.1 allows (a nullable column added
 * anywhere; a column the schema omits, kept hidden; a column named in `dropColumns`, gone; a hidden
 * column named again, its values back; a dropped one added again, a new column) or refuses (a
 * non-nullable column omitted; a kept or hidden column's type changed, widened or not, or its
 * nullability either way; a key column changed; a new non-nullable column), or a reset.
 */
export type Evolve =
  | { e: 'add'; type: ColType; at: number }
  | { e: 'drop'; pick: number }
  | { e: 'dropColumns'; pick: number }
  | { e: 'readd'; pick: number; type: ColType | 'same'; nonNull: boolean }
  | { e: 'retype'; pick: number }
  | { e: 'widen'; pick: number }
  | { e: 'nullability'; pick: number }
  | { e: 'key'; how: 'type' | 'nullable' | 'drop' }
  | { e: 'addNonNull'; type: ColType }
  | { e: 'reset'; type: ColType }
  /** A shown column renamed (SPEC §9.1): by `renameColumns`, or by `renamedFrom` field metadata. */
  | { e: 'rename'; pick: number; how: 'option' | 'metadata' };

export type Action =
  | {
      a: 'put';
      rows: { key: number; seed: number }[];
      wait: boolean;
      /** The put carries an AbortSignal that aborts this many virtual ms after it is issued. */
      abortMs?: number;
    }
  | { a: 'delete'; keys: number[]; wait: boolean }
  /**
   * A delete aimed at a range edge, its keys found when it runs: the first and/or last key of a
   * table file of `level` (its `pick`-th, as the manifest lists them) or of the rows of the last
   * put (they sit in the active memtable).
   */
  | { a: 'edgeDelete'; at: 0 | 1 | 'memtable'; pick: number; ends: 'first' | 'last' | 'both'; wait: boolean }
  /** The writer closes and every table file of the store is rewritten in the previous format (2), as a release before index sections wrote it. */
  | { a: 'downgrade' }
  /** The keys the last `edgeDelete` aimed at, put again (a newer version above the delete, in whatever tier it reached). */
  | { a: 'edgePut'; seed: number; wait: boolean }
  /** With `more`: one getMany of `key` and `more` (duplicates allowed), each checked as a get. */
  | { a: 'get'; key: number; alt: boolean; more?: number[] }
  | { a: 'scan' }
  | { a: 'scanBatches'; after: number | null; limit: number; someColumns: boolean }
  | { a: 'sync' }
  | { a: 'seal' }
  | { a: 'compact' }
  | { a: 'flushDrain' }
  | { a: 'stats' }
  | { a: 'tail'; consume: number }
  | { a: 'advance'; ms: number }
  | { a: 'close' }
  | { a: 'abort' }
  | { a: 'crash' }
  | { a: 'reopen'; evolve: Evolve | undefined }
  | { a: 'stale'; writes: number }
  | { a: 'catchUp' }
  | { a: 'damage'; frac: number; pick: number }
  /** Puts issued in flight one after another, `gapMs` apart (within one step: its faults last through them all). */
  | { a: 'burst'; puts: Extract<Action, { a: 'put' }>[]; gapMs: number }
  /** `MemWal.destroy` (`keep` < 0), or one cut short: the manifest gone, each other file left with chance `keep`. */
  | { a: 'destroy'; keep: number }
  | QueryAction;

export interface Step {
  faults: FaultSpec[];
  action: Action;
  /** Virtual ms the step runs for after its operation started (or settled, when it waits). */
  window: number;
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[int(r, xs.length)]!;
const COL_TYPES: ColType[] = ['int32', 'int64', 'uint64', 'float64', 'utf8', 'bool', 'binary'];
const READS: FaultOp[] = ['walRead', 'tableRead', 'manifestLoad', 'walList', 'tableList'];
const WRITES: FaultOp[] = ['walAppend', 'tableWrite', 'manifestCommit', 'walRemove', 'tableRemove', 'walTruncate'];

/** The configuration of seed `seed` (its own stream: the steps do not shift it). */
export function drawConfig(seed: number): SimConfig {
  return segmented(overlapping(sized(withIndexes(squeeze(drawBaseConfig(seed), seed), seed), seed), seed), seed);
}

/**
 * Multi-segment WALs, in 40% of seeds: segments roll over at a few bytes to 16 KiB instead of
 * WAL_SEGMENT_TARGET_BYTES (8 MiB, which no seed reaches), so a writer's WAL spans many segments;
 * crashes, replay, tails and retention then cross segment boundaries. At 1 byte every entry has a
 * segment of its own. A stream of its own, drawn last.
 */
function segmented(config: SimConfig, seed: number): SimConfig {
  const r = rng(seed * 13 + 10);
  if (r() >= 0.4) return config;
  return { ...config, walSegmentBytes: pick(r, [1, 1, 600, 2048, 8192, 16 * 1024]) };
}

/** Writes of one key in flight at once, in 40% of keyed seeds (a stream of its own, drawn last). */
function overlapping(config: SimConfig, seed: number): SimConfig {
  return config.mode === 'keyed' && rng(seed * 13 + 8)() < 0.4 ? { ...config, overlap: true } : config;
}

/**
 * The sizes dimension: a wide binary column, so that table files hold many blocks (a keyed block
 * is cut at 16 KiB, an append-only one at 64 KiB) and compactions write several level-1 files.
 * (Multi-segment WALs come from `segmented`: small segment sizes, not large rows.) Its own stream.
 */
function sized(config: SimConfig, seed: number): SimConfig {
  const r = rng(seed * 13 + 7);
  if (r() >= 0.15) return config;
  const wide: ColumnSpec = {
    name: 'wide',
    type: 'binary',
    nullable: true,
    inc: config.columns.length + 1,
    width: pick(r, [700, 2500, 7000]),
  };
  return { ...config, columns: [...config.columns, wide] };
}

function drawBaseConfig(seed: number): SimConfig {
  const r = rng(seed * 2 + 1);
  const mode: Mode = pick(r, ['keyed', 'keyed', 'keyed', 'append', 'wal-only'] as const);
  const keyType = mode === 'keyed' ? pick(r, ['int64', 'int64', 'int32', 'uint64', 'utf8', 'composite'] as const) : undefined;
  const columns: ColumnSpec[] = [];
  const ncols = int(r, 4);
  for (let i = 0; i < ncols; i++) columns.push({ name: `c${i}`, type: pick(r, COL_TYPES), nullable: r() < 0.7, inc: i + 1 });
  const small = r() < 0.8;
  const walTimeout = pick(r, [200, 1000, 3000]);
  const level0Trigger = pick(r, [2, 4, 4]);
  return {
    mode,
    keyType,
    keyPool: keyType ? drawKeyPool(r, keyType, 6 + int(r, 40)) : [],
    columns,
    durableWrite: r() < 0.7,
    frozenMemtableGraceMs: r() < 0.5 ? 0 : pick(r, [1, 50, 500, 3000]),
    maxMemtableRows: small ? 2 + int(r, 40) : 500_000,
    maxMemtableBytes: r() < 0.3 ? 1024 + int(r, 16 * 1024) : 16 * 1024 * 1024,
    maxMemtableBatches: r() < 0.2 ? 1 + int(r, 6) : 4096,
    maxUnflushedMemtableBytes: r() < 0.3 ? 2048 + int(r, 64 * 1024) : 64 * 1024 * 1024,
    maxWalBufferBytes: r() < 0.3 ? 256 + int(r, 4096) : 2 * 1024 * 1024,
    maxWalFlushIntervalMs: pick(r, [1, 10, 100]),
    maxPutBytes: 32 * 1024 * 1024,
    blockCacheBytes: pick(r, [0, 4096, 8 * 1024 * 1024]),
    maxPendingCompactionBytes: r() < 0.2 ? 1 + int(r, 64 * 1024) : 1024 * 1024 * 1024,
    backpressureTimeoutMs: r() < 0.2 ? pick(r, [50, 2000]) : undefined,
    walRetry: { baseMs: pick(r, [1, 20]), maxMs: pick(r, [20, 200]), timeoutMs: walTimeout },
    flushRetry: { baseMs: pick(r, [1, 50]), maxMs: pick(r, [50, 500]), stallMs: pick(r, [300, 2000, 5000]) },
    policy: {
      // The stop trigger stays above the compaction trigger (flushes wait only for a compaction that is due).
      level0Trigger,
      level0Stop: level0Trigger + pick(r, [1, 2, 8, 8]),
      spaceAmpTrigger: pick(r, [0.3, 0.3, 1, 100]),
      keyedOutputBytes: pick(r, [512, 4096, 8 * 1024 * 1024]),
      appendOnlyOutputBytes: pick(r, [1024, 8192, 64 * 1024 * 1024]),
    },
    latencyMs: pick(r, [0, 0, 1, 3, 20]),
    stall: r() < 0.5 ? { chance: 0, maxMs: 0 } : { chance: 0.2, maxMs: pick(r, [1, 5, 50]) },
    drain: mode !== 'keyed' || r() < 0.3 ? r() < 0.5 : false,
    indexes: [],
  };
}

/**
 * Backpressure that ends without admission (a timeout, an abort) needs a budget that fills and
 * flushes that stall: a small budget with a timeout for some seeds. Drawn from a stream of its own,
 * after the rest of the configuration, so that every other choice of the seed stays as it was.
 */
function squeeze(config: SimConfig, seed: number): SimConfig {
  const r = rng(seed * 13 + 5);
  if (config.mode === 'wal-only' || r() >= 0.25) return config;
  return {
    ...config,
    maxUnflushedMemtableBytes: 1024 + int(r, 8192),
    backpressureTimeoutMs: r() < 0.7 ? pick(r, [20, 300, 2000]) : config.backpressureTimeoutMs,
  };
}

/** The steps of seed `seed` for `config`. */
export function drawSteps(seed: number, config: SimConfig): Step[] {
  const r = rng(seed * 2 + 2);
  // Choices added later draw from their own stream, so the steps drawn before them stay the same.
  const later = rng(seed * 13 + 6);
  const queries = rng(seed * 17 + 4);
  const renames = rng(seed * 13 + 9);
  const edges = rng(seed * 13 + 11);
  const quota = rng(seed * 13 + 12);
  const older = rng(seed * 13 + 14);
  const n = 20 + int(r, 50);
  const steps: Step[] = [];
  const keyed = config.mode === 'keyed';
  const memtable = config.mode !== 'wal-only';
  const keys = Math.max(1, config.keyPool.length);
  const drawRows = () =>
    Array.from({ length: r() < 0.1 ? 10 + int(r, 50) : 1 + int(r, 6) }, () => ({ key: int(r, keys), seed: int(r, 2 ** 31) }));
  for (let i = 0; i < n; i++) {
    const x = r();
    let action: Action;
    if (x < 0.34) action = { a: 'put', rows: drawRows(), wait: r() < 0.6 };
    else if (x < 0.42 && keyed) action = { a: 'delete', keys: Array.from({ length: 1 + int(r, 4) }, () => int(r, keys)), wait: r() < 0.6 };
    else if (x < 0.47 && keyed) {
      action = { a: 'get', key: int(r, keys), alt: r() < 0.3 };
      if (r() < 0.4) action.more = Array.from({ length: int(r, 8) }, () => int(r, keys));
    } else if (x < 0.5 && memtable) action = { a: 'scan' };
    else if (x < 0.53 && memtable)
      action = { a: 'scanBatches', after: keyed && r() < 0.7 ? int(r, keys) : null, limit: 1 + int(r, 20), someColumns: r() < 0.3 };
    else if (x < 0.56) action = { a: 'sync' };
    else if (x < 0.61 && memtable) action = { a: 'seal' };
    else if (x < 0.64 && memtable) action = { a: 'compact' };
    else if (x < 0.66 && memtable) action = { a: 'flushDrain' };
    else if (x < 0.68) action = { a: 'stats' };
    else if (x < 0.71) action = { a: 'tail', consume: r() < 0.5 ? r() : -1 };
    else if (x < 0.76) action = { a: 'advance', ms: pick(r, [1, 10, 100, 1000, 5000]) };
    else if (x < 0.78) action = { a: 'close' };
    else if (x < 0.8) action = { a: 'abort' };
    else if (x < 0.84) action = { a: 'crash' };
    else if (x < 0.89) action = { a: 'reopen', evolve: r() < 0.5 ? drawEvolve(r, renames) : undefined };
    else if (x < 0.92) action = { a: 'stale', writes: 1 + int(r, 4) };
    else if (x < 0.94 && config.drain) action = { a: 'catchUp' };
    else if (x < 0.945) action = { a: 'damage', frac: r(), pick: int(r, 1000) };
    else if (x < 0.955) action = { a: 'destroy', keep: r() < 0.3 ? -1 : r() };
    else action = { a: 'put', rows: drawRows(), wait: false };
    const faults: FaultSpec[] = [];
    if (r() < 0.35) {
      const k = 1 + (r() < 0.3 ? 1 : 0);
      for (let j = 0; j < k; j++) faults.push(drawFault(r, action));
    }
    const window = pick(r, [0, 0, 1, 5, 20, 100, 1000, 4000]);
    if (action.a === 'stale') {
      // The old writer, never told, goes on writing while its successor opens: often with an append
      // whose reply is lost, so that its retry (truncate, append again) meets the successor's claim.
      steps.push({ faults, action, window: 0 });
      for (let j = 0; j < action.writes; j++) {
        const lost: FaultSpec[] = r() < 0.5 ? [{ f: 'failAfter', op: 'walAppend', count: 1, quota: false, reread: false }] : [];
        steps.push({ faults: lost, action: { a: 'put', rows: drawRows(), wait: r() < 0.3 }, window: pick(r, [0, 1, 5, 20, 100]) });
      }
      i += action.writes;
      continue;
    }
    steps.push({ faults, action, window });
    const query = drawQueryStep(queries, config, keys);
    if (query) steps.push(query);
    if (keyed && edges() < 0.08) steps.push(...drawEdgeDeletes(edges));
    if (memtable && older() < 0.03) steps.push({ faults: [], action: { a: 'downgrade' }, window: 0 });
    if (memtable && quota() < 0.05) {
      // A flush meets a full disk (QuotaExceeded on its table write): docs/impl.md says it is
      // retried in place, and the liveness check holds the writer to it (issue 34).
      const full: FaultSpec = { f: 'failNext', op: 'tableWrite', count: 1 + int(quota, 3), quota: true, reread: false };
      steps.push({ faults: [full], action: { a: 'seal' }, window: pick(quota, [20, 100, 1000]) });
    }
    if (memtable && later() < 0.05) {
      // A burst while flushes stall: puts pile up against the budget, and some give up waiting
      // (their signal aborts, or backpressureTimeoutMs passes) while others wait it out.
      const hold: FaultSpec = { f: 'hold', op: pick(later, ['tableWrite', 'manifestCommit'] as const), ms: pick(later, [100, 1000, 5000]) };
      const puts: Extract<Action, { a: 'put' }>[] = [];
      for (let j = 3 + int(later, 10); j > 0; j--) {
        const rows = Array.from({ length: 1 + int(later, 20) }, () => ({ key: int(later, keys), seed: int(later, 2 ** 31) }));
        puts.push({ a: 'put', rows, wait: false, ...(later() < 0.4 ? { abortMs: pick(later, [0, 1, 20, 200, 2000]) } : {}) });
      }
      steps.push({
        faults: [hold],
        action: { a: 'burst', puts, gapMs: pick(later, [0, 1, 5]) },
        window: pick(later, [0, 100, 1000, 4000]),
      });
    }
  }
  return steps;
}

/**
 * Deletes at range edges (issue 34): the first or last key of a level-0 or level-1 table file or
 * of the memtable's last put, then often a seal and a compaction (the delete marker moves down a
 * tier, and a compaction's output file starts or ends next to it), then often the same keys put
 * again, newer than the delete, across tiers.
 */
function drawEdgeDeletes(r: () => number): Step[] {
  const at = pick(r, [0, 0, 1, 1, 'memtable'] as const);
  const out: Step[] = [
    {
      faults: r() < 0.15 ? [drawFault(r, { a: 'delete', keys: [], wait: true })] : [],
      action: { a: 'edgeDelete', at, pick: int(r, 100), ends: pick(r, ['first', 'last', 'both'] as const), wait: r() < 0.7 },
      window: pick(r, [0, 5, 100]),
    },
  ];
  if (r() < 0.5) out.push({ faults: [], action: { a: 'seal' }, window: pick(r, [0, 100, 1000]) });
  if (r() < 0.4) out.push({ faults: [], action: { a: 'compact' }, window: pick(r, [0, 100, 1000]) });
  if (r() < 0.6) out.push({ faults: [], action: { a: 'edgePut', seed: int(r, 2 ** 31), wait: r() < 0.7 }, window: pick(r, [0, 5, 100]) });
  return out;
}

function drawEvolve(r: () => number, renames: () => number): Evolve {
  // Renames came later: a stream of their own, drawn after the others, so every other choice stays as it was.
  const drawn = drawOtherEvolve(r);
  if (renames() < 0.3) return { e: 'rename', pick: int(renames, 100), how: renames() < 0.5 ? 'option' : 'metadata' };
  return drawn;
}

function drawOtherEvolve(r: () => number): Evolve {
  const x = r();
  if (x < 0.3) return { e: 'add', type: pick(r, COL_TYPES), at: int(r, 100) };
  if (x < 0.45) return { e: 'drop', pick: int(r, 100) };
  if (x < 0.55) return { e: 'dropColumns', pick: int(r, 100) };
  if (x < 0.71) return { e: 'readd', pick: int(r, 100), type: r() < 0.6 ? 'same' : pick(r, COL_TYPES), nonNull: r() < 0.1 };
  if (x < 0.75) return { e: 'retype', pick: int(r, 100) };
  if (x < 0.79) return { e: 'widen', pick: int(r, 100) };
  if (x < 0.87) return { e: 'nullability', pick: int(r, 100) };
  if (x < 0.91) return { e: 'key', how: pick(r, ['type', 'nullable', 'drop'] as const) };
  if (x < 0.97) return { e: 'addNonNull', type: pick(r, COL_TYPES) };
  return { e: 'reset', type: pick(r, COL_TYPES) };
}

export function drawFault(r: () => number, action: Action): FaultSpec {
  const x = r();
  const op = (): FaultOp => (r() < 0.25 ? pick(r, READS) : r() < 0.05 ? 'estimate' : pick(r, WRITES));
  if (x < 0.3) return { f: 'failNext', op: op(), count: r() < 0.15 ? 1000 : 1 + int(r, 3), quota: r() < 0.1, reread: false };
  if (x < 0.55) return { f: 'failAfter', op: pick(r, WRITES), count: 1 + int(r, 2), quota: false, reread: r() < 0.5 };
  if (x < 0.65) return { f: r() < 0.5 ? 'hangNext' : 'hangAfter', op: op() };
  if (x < 0.75) return { f: 'tearNext', op: r() < 0.6 ? 'walAppend' : 'tableWrite' };
  if (x < 0.85) return { f: 'hold', op: op(), ms: pick(r, [1, 50, 500, 10_000]) };
  // A crash during a reopen is a crash during recovery.
  return { f: 'crashAt', n: 1 + int(r, action.a === 'reopen' ? 12 : 40) };
}
