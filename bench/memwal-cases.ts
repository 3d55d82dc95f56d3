// memwal in-process in the bench worker (as the peers run): Arrow ingest (case 2), plain rows
// (case 3, in-worker figure), memory under a 64 MiB budget (case 6) and crash recovery (case 7).
// Every repetition uses a fresh store on the default browser storage (OPFS), destroyed after.

import type { RecordBatch } from 'apache-arrow';
import { MemWal, type MemWalOptions } from '../src/index.js';
import { defaultBrowserStorage } from '../src/worker.js';
import { BENCH_SCHEMA, batchBytes, withIds, type BatchPayload, type BenchRow } from './data.js';
import { MiB, now, pause, uniqueName } from './measure.js';

/** Which store a case writes: with the primary key `id` (upserts, key index) or append-only. */
export interface StoreShape {
  keyed: boolean;
}

function options(name: string, shape: StoreShape, extra: Partial<MemWalOptions> = {}): MemWalOptions {
  return {
    name,
    schema: BENCH_SCHEMA,
    ...(shape.keyed ? { primaryKey: ['id'] } : {}),
    storage: defaultBrowserStorage(),
    logger: { warn: () => undefined }, // backpressure warnings are expected here
    ...extra,
  };
}

/** Delete a store (from this worker: the page has no sync access handles). */
export function destroyStore(name: string): Promise<void> {
  return MemWal.destroy(name, { storage: defaultBrowserStorage() });
}

/** One repetition's figures: at the last acknowledgement, and once every flush has committed. */
export interface IngestResult {
  rows: number;
  bytes: number;
  ackMs: number;
  drainedMs: number;
  flushes: number;
  backpressureWaits: number;
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
  shape: StoreShape,
  items: T[],
  writers: number,
  size: (item: T) => { rows: number; bytes: number },
): Promise<IngestResult> {
  const name = uniqueName('memwal');
  const db = await MemWal.open(options(name, shape));
  let rows = 0;
  let bytes = 0;
  for (const it of items) {
    const s = size(it);
    rows += s.rows;
    bytes += s.bytes;
  }
  try {
    const t0 = now();
    await runWriters(items, writers, (it) => db.put(it as RecordBatch | Record<string, unknown>[]));
    const ackMs = now() - t0;
    await db.waitForFlushDrain();
    const drainedMs = now() - t0;
    const ws = await db.writeStats();
    const bp = await db.backpressureStats();
    return { rows, bytes, ackMs, drainedMs, flushes: ws.flushCount, backpressureWaits: bp.totalCount };
  } finally {
    await db.close();
    await destroyStore(name);
  }
}

/** Case 2: ≈1 MiB RecordBatches from `writers` concurrent writers. */
export function memwalArrow(batches: RecordBatch[], writers: number, shape: StoreShape): Promise<IngestResult> {
  return ingest(shape, batches, writers, (b) => ({ rows: b.numRows, bytes: batchBytes(b) }));
}

/** Case 3 in the worker: 1,000-row puts of plain objects, awaited one after another. */
export function memwalRows(chunks: BenchRow[][]): Promise<IngestResult> {
  return ingest({ keyed: true }, chunks, 1, (c) => ({ rows: c.length, bytes: 0 }));
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
}

let memoryDb: { db: MemWal; name: string; shape: StoreShape } | undefined;

/** Open the store of case 6 (default options: 64 MiB budget, 16 MiB memtables). */
export async function memoryOpen(shape: StoreShape): Promise<void> {
  const name = uniqueName('memory');
  memoryDb = { db: await MemWal.open(options(name, shape)), name, shape };
}

/** Ingest `totalMiB` of ≈1 MiB batches (fresh ids, payloads from `pool`) from `writers` writers. */
export async function memoryIngest(totalMiB: number, writers: number, pool: BatchPayload[]): Promise<MemoryResult> {
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
  const loop = async (): Promise<void> => {
    while (ingestedBytes < target) {
      const b = withIds(pool[k % pool.length]!, k * rowsPerBatch);
      k += 1;
      ingestedBytes += batchBytes(b);
      const p = db.put(b);
      sample();
      await p;
    }
  };
  await Promise.all(Array.from({ length: writers }, loop));
  const ms = now() - t0;
  running = false;
  await sampler;
  await db.waitForFlushDrain();
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
  };
}

/** Stats of the case-6 store while it runs (the runner logs them when a phase takes long). */
export async function memoryProbe(): Promise<unknown> {
  const m = memoryDb;
  if (!m) return undefined;
  const [memtable, backpressure, write] = await Promise.all([m.db.memtableStats(), m.db.backpressureStats(), m.db.writeStats()]);
  const internals = m.db as unknown as {
    flushing: boolean;
    flushStage: string;
    appending: boolean;
    frozen: { generation: number; state: string; durableBatches: number; batches: unknown[]; flushAttempts: number }[];
  };
  const engine = {
    flushing: internals.flushing,
    flushStage: internals.flushStage,
    appending: internals.appending,
    frozen: internals.frozen.map((f) => `${f.generation}:${f.state}:${f.durableBatches}/${f.batches.length}:${f.flushAttempts}`).join(' '),
  };
  return {
    memtable,
    backpressure,
    write: { putCount: write.putCount, flushCount: write.flushCount, flushFailureCount: write.flushFailureCount },
    engine,
  };
}

export async function memoryClose(): Promise<void> {
  const m = memoryDb;
  memoryDb = undefined;
  if (!m) return;
  await m.db.close();
  await destroyStore(m.name);
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
