// memwal in-process in the bench worker (as the peers run): Arrow ingest (case 2), plain rows
// (case 3, in-worker figure), memory under a 64 MiB budget (case 6) and crash recovery (case 7).
// Every repetition uses a fresh store on the default browser storage (OPFS), destroyed after.
// The ingest cases also run an older memwal (the baseline, bench/baseline.worker.ts), passed in
// as an `Engine`.

import type { RecordBatch } from 'apache-arrow';
import { MemWal, type MemWalOptions } from '../src/index.js';
import { defaultBrowserStorage } from '../src/worker.js';
import { BENCH_SCHEMA, batchBytes, withIds, type BatchPayload, type BenchRow } from './data.js';
import { MiB, now, pause, uniqueName } from './measure.js';

/** Which store a case writes: with the primary key `id` (upserts, key index) or append-only. */
export interface StoreShape {
  keyed: boolean;
}

/** The memwal build a case runs: this checkout's, or the baseline's (only its public entry points). */
export interface Engine {
  MemWal: typeof MemWal;
  defaultBrowserStorage: typeof defaultBrowserStorage;
}

export const CURRENT: Engine = { MemWal, defaultBrowserStorage };

/** This checkout with storage I/O and background jobs on the engine's own thread (no I/O worker). */
export const INLINE: Engine = { MemWal, defaultBrowserStorage: () => defaultBrowserStorage({ ioWorker: false }) };

/** The stores' warnings (backpressure is expected here; a failing compaction or flush says so too). */
const warnings: string[] = [];
let warningCount = 0;
const logger = {
  warn(message: string, ...details: unknown[]): void {
    warningCount += 1;
    if (warnings.length < 50)
      warnings.push([message, ...details.map((d) => (d instanceof Error ? d.message : String(d)))].join(' ').slice(0, 500));
  },
};

/** The warnings logged since the last call (the first 50 of them) and how many there were. */
export function takeWarnings(): { count: number; first: string[] } {
  const out = { count: warningCount, first: warnings.splice(0) };
  warningCount = 0;
  return out;
}

function options(name: string, shape: StoreShape, extra: Partial<MemWalOptions> = {}, engine = CURRENT): MemWalOptions {
  return {
    name,
    schema: BENCH_SCHEMA,
    ...(shape.keyed ? { primaryKey: ['id'] } : {}),
    storage: engine.defaultBrowserStorage(),
    logger,
    ...extra,
  };
}

/** Delete a store (from this worker: the page has no sync access handles). */
export function destroyStore(name: string, engine = CURRENT): Promise<void> {
  return engine.MemWal.destroy(name, { storage: engine.defaultBrowserStorage() });
}

/** One repetition's figures: at the last acknowledgement, and once every flush has committed. */
export interface IngestResult {
  rows: number;
  bytes: number;
  ackMs: number;
  drainedMs: number;
  flushes: number;
  backpressureWaits: number;
  /** Compaction during the rep (this store's compactionStats at the drain). */
  compaction: CompactionFigures | undefined;
  /** Each put's time from call to acknowledgement, ms: median, p90, p99, max. */
  putMs: { p50: number; p90: number; p99: number; max: number };
}

/** The median, p90, p99 and max of `ms`. */
function putPercentiles(ms: number[]): IngestResult['putMs'] {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number): number => +(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(2);
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}

/** What compaction did in a store since it opened, and where the tables stand. */
export interface CompactionFigures {
  completed: number;
  bytesWritten: number;
  bytesRead: number;
  l0StallCount: number;
  tableCount: number;
  tableBytes: number;
  flushBytes: number;
}

async function compactionFigures(db: MemWal): Promise<CompactionFigures | undefined> {
  if (typeof db.compactionStats !== 'function') return undefined; // a baseline from before compaction
  const [cs, ws] = await Promise.all([db.compactionStats(), db.writeStats()]);
  return {
    completed: cs.completedCount,
    bytesWritten: cs.bytesWritten,
    bytesRead: cs.bytesRead,
    l0StallCount: cs.l0StallCount,
    tableCount: cs.tableCount,
    tableBytes: cs.tableBytes,
    flushBytes: ws.flushBytes,
  };
}

/** `writers` loops take the next item and await its durable put until none is left. */
async function runWriters<T>(items: T[], writers: number, put: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const loop = async (): Promise<void> => {
    while (next < items.length) await put(items[next++]!);
  };
  await Promise.all(Array.from({ length: writers }, loop));
}

async function ingest<T>(
  engine: Engine,
  shape: StoreShape,
  items: T[],
  writers: number,
  size: (item: T) => { rows: number; bytes: number },
): Promise<IngestResult> {
  const name = uniqueName('memwal');
  const db = await engine.MemWal.open(options(name, shape, {}, engine));
  let rows = 0;
  let bytes = 0;
  for (const it of items) {
    const s = size(it);
    rows += s.rows;
    bytes += s.bytes;
  }
  try {
    const putMs: number[] = [];
    const t0 = now();
    await runWriters(items, writers, async (it) => {
      const t = now();
      await db.put(it as RecordBatch | Record<string, unknown>[]);
      putMs.push(now() - t);
    });
    const ackMs = now() - t0;
    await db.waitForFlushDrain();
    const drainedMs = now() - t0;
    const ws = await db.writeStats();
    const bp = await db.backpressureStats();
    return {
      rows,
      bytes,
      ackMs,
      drainedMs,
      flushes: ws.flushCount,
      backpressureWaits: bp.totalCount,
      compaction: await compactionFigures(db),
      putMs: putPercentiles(putMs),
    };
  } finally {
    await db.close();
    await destroyStore(name, engine);
  }
}

/** Case 2: ≈1 MiB RecordBatches from `writers` concurrent writers. */
export function memwalArrow(batches: RecordBatch[], writers: number, shape: StoreShape, engine = CURRENT): Promise<IngestResult> {
  return ingest(engine, shape, batches, writers, (b) => ({ rows: b.numRows, bytes: batchBytes(b) }));
}

/** Case 3 in the worker: 1,000-row puts of plain objects, awaited one after another. */
export function memwalRows(chunks: BenchRow[][], engine = CURRENT): Promise<IngestResult> {
  return ingest(engine, { keyed: true }, chunks, 1, (c) => ({ rows: c.length, bytes: 0 }));
}

// ---------------------------------------------------------------------------------------------
// Case 6: memory. The runner measures the worker's heap over CDP between the phases.

/** What case 6 reports from inside the worker. */
export interface MemoryResult {
  ingestedBytes: number;
  ms: number;
  budgetBytes: number;
  /** The largest one put's estimated bytes (what admission may overshoot by). */
  onePutBytes: number;
  /** Highest `estimatedBytes + frozenBytes` seen (sampled after every put call and every 2 ms). */
  peakUnflushedBytes: number;
  samples: number;
  backpressureWaits: number;
  flushes: number;
  flushFailures: number;
  /** The slowest single put, ms (a flush stall shows as puts blocked for seconds). */
  slowestPutMs: number;
  /** From the last acknowledgement until every flush committed, ms. */
  drainMs: number;
  /** True when the rep hit its time limit (ingest or drain); `ingestedBytes` is what was acknowledged. */
  timedOut: boolean;
  compaction: CompactionFigures | undefined;
}

let memoryDb: { db: MemWal; name: string; shape: StoreShape } | undefined;

/** Open the store of case 6 (default options: 64 MiB budget, 16 MiB memtables). */
export async function memoryOpen(shape: StoreShape): Promise<void> {
  const name = uniqueName('memory');
  memoryDb = { db: await MemWal.open(options(name, shape)), name, shape };
}

/** Ingest `totalMiB` of ≈1 MiB batches (fresh ids, payloads from `pool`) from `writers` writers. */
export async function memoryIngest(
  totalMiB: number,
  writers: number,
  pool: BatchPayload[],
  limitMs = Number.POSITIVE_INFINITY,
): Promise<MemoryResult> {
  const { db } = memoryDb!;
  const budgetBytes = 64 * MiB;
  let peak = 0;
  let samples = 0;
  const sample = (): void => {
    void db.memtableStats().then((s) => {
      samples += 1;
      peak = Math.max(peak, s.estimatedBytes + s.frozenBytes);
    });
  };
  let running = true;
  const sampler = (async () => {
    while (running) {
      sample();
      await pause(2);
    }
  })();
  let ingestedBytes = 0;
  let k = 0;
  const t0 = now();
  const rowsPerBatch = pool[0]!.rows;
  // What one put weighs against the budget, as the store counts it: the first put, alone.
  const before = (await db.memtableStats()).estimatedBytes;
  const first = withIds(pool[0]!, 0);
  await db.put(first);
  const onePutBytes = (await db.memtableStats()).estimatedBytes - before;
  ingestedBytes += batchBytes(first);
  k = 1;
  const target = totalMiB * MiB;
  let issuedBytes = ingestedBytes;
  let slowestPutMs = 0;
  // Past `limitMs` (ingest and drain together) the rep stops: waiting puts are aborted, and the
  // rep counts what was acknowledged until then (a stall shows as a rep that timed out).
  // The signal governs only the backpressure wait; a put stuck past admission (a WAL append that
  // never settles) is left behind instead, through `stopped`.
  const stop = new AbortController();
  const timer = Number.isFinite(limitMs) ? setTimeout(() => stop.abort(), limitMs) : undefined;
  const stopped = new Promise<'stopped'>((resolve) => stop.signal.addEventListener('abort', () => resolve('stopped')));
  const loop = async (): Promise<void> => {
    while (issuedBytes < target && !stop.signal.aborted) {
      const b = withIds(pool[k % pool.length]!, k * rowsPerBatch);
      k += 1;
      issuedBytes += batchBytes(b);
      const t = now();
      const p = db.put(b, { signal: stop.signal });
      p.catch(() => undefined); // one left behind at the limit rejects unobserved
      sample();
      try {
        if ((await Promise.race([p, stopped])) === 'stopped') return;
      } catch (e) {
        if (stop.signal.aborted) return;
        throw e;
      }
      ingestedBytes += batchBytes(b);
      slowestPutMs = Math.max(slowestPutMs, now() - t);
    }
  };
  await Promise.all(Array.from({ length: writers }, loop));
  const ms = now() - t0;
  running = false;
  await sampler;
  const t1 = now();
  await Promise.race([db.waitForFlushDrain({ signal: stop.signal }), stopped]).catch((e: unknown) => {
    if (!stop.signal.aborted) throw e;
  });
  const drainMs = now() - t1;
  clearTimeout(timer);
  const timedOut = stop.signal.aborted;
  const ws = await db.writeStats();
  const bp = await db.backpressureStats();
  return {
    ingestedBytes,
    ms,
    budgetBytes,
    onePutBytes,
    peakUnflushedBytes: peak,
    samples,
    backpressureWaits: bp.totalCount,
    flushes: ws.flushCount,
    flushFailures: ws.flushFailureCount,
    slowestPutMs,
    drainMs,
    timedOut,
    compaction: await compactionFigures(db),
  };
}

/** Public stats of the case-6 store while it runs (the runner logs them when a phase takes long). */
export async function memoryProbe(): Promise<unknown> {
  const m = memoryDb;
  if (!m) return undefined;
  const [memtable, backpressure, write, compaction] = await Promise.all([
    m.db.memtableStats(),
    m.db.backpressureStats(),
    m.db.writeStats(),
    m.db.compactionStats(),
  ]);
  return {
    memtable,
    backpressure,
    write: {
      putCount: write.putCount,
      flushCount: write.flushCount,
      flushFailureCount: write.flushFailureCount,
      lastFlushMs: write.lastFlushMs,
    },
    compaction: {
      tableCount: compaction.tableCount,
      running: compaction.running,
      pendingBytes: compaction.pendingBytes,
      failures: compaction.failureCount,
    },
  };
}

/**
 * Close and delete the case-6 store (`abort`: without flushing, after a rep that timed out);
 * resolves how long `close()` (or `abort()`) and the deletion took (ms).
 */
export async function memoryClose(abort = false): Promise<{ closeMs: number; destroyMs: number }> {
  const m = memoryDb;
  memoryDb = undefined;
  if (!m) return { closeMs: 0, destroyMs: 0 };
  const t0 = now();
  await (abort ? m.db.abort() : m.db.close());
  const t1 = now();
  await destroyStore(m.name);
  return { closeMs: t1 - t0, destroyMs: now() - t1 };
}

// ---------------------------------------------------------------------------------------------
// Case 7: recovery.

/** Budgets large enough that `walMiB` of WAL stays unflushed (nothing freezes before the crash). */
const NO_FLUSH: Partial<MemWalOptions> = {
  maxMemtableBytes: 2048 * MiB,
  maxUnflushedMemtableBytes: 2048 * MiB,
  maxMemtableRows: 100_000_000,
  maxMemtableBatches: 1_000_000,
};

export interface RecoveryResult {
  walBytes: number;
  openMs: number;
  replayTimeMs: number;
  replayedRows: number;
  unflushedBeforeCrash: number;
}

/**
 * Write until `walMiB` of WAL is unflushed, crash (abort: no flush, no I/O, lock released, as a
 * killed worker leaves it), then time `MemWal.open` replaying it. Same options both times.
 */
export async function recovery(walMiB: number, pool: BatchPayload[], shape: StoreShape): Promise<RecoveryResult> {
  const name = uniqueName('recovery');
  const db = await MemWal.open(options(name, shape, NO_FLUSH));
  let walBytes = 0;
  let unflushedBeforeCrash = 0;
  try {
    const rowsPerBatch = pool[0]!.rows;
    for (let k = 0; walBytes < walMiB * MiB; k++) {
      await db.put(withIds(pool[k % pool.length]!, k * rowsPerBatch));
      walBytes = (await db.walStats()).bytesWritten;
    }
    const s = await db.memtableStats();
    unflushedBeforeCrash = s.estimatedBytes + s.frozenBytes;
    if ((await db.writeStats()).flushCount !== 0) throw new Error('recovery: a flush ran before the crash');
  } finally {
    await db.abort();
  }
  const t0 = now();
  const reopened = await MemWal.open(options(name, shape, NO_FLUSH));
  const openMs = now() - t0;
  try {
    const ws = await reopened.writeStats();
    return { walBytes, openMs, replayTimeMs: ws.replayTimeMs, replayedRows: ws.replayedRows, unflushedBeforeCrash };
  } finally {
    await reopened.abort();
    await destroyStore(name);
  }
}
