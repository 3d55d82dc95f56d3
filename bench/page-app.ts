// The page cases an app feels beyond reads (docs/benchmarks.md): the latency of each 1,000-row
// put while a page writes 200k app rows (with, in a diagnostic rep, what the store's stats said
// during the slowest puts), and the time from `openMemWal()` to the first answered `get` after a
// reload — the store left open (the worker ends without `close()`, as in every reload) or closed
// cleanly — beside IndexedDB's. memwal is opened as an app opens it: `openMemWal` with its default
// worker and storage. Browser main thread.

import { openDB } from 'idb';
import { type MemWalClient, openMemWal } from '../src/index.js';
import { APP_SCHEMA, type AppRow, appBatch, appKey, appRows } from './app-data.js';
import { now, pause, settleStore, spread } from './measure.js';
import { idbPutChunk, openIdbRows } from './peers.js';

const open = (name: string): Promise<MemWalClient> =>
  openMemWal({ name, schema: APP_SCHEMA, primaryKey: ['id'], logger: { warn: () => undefined } });

/** 1,000-row chunks of rows `from .. to - 1`. */
function chunksOf(from: number, to: number): AppRow[][] {
  const out: AppRow[][] = [];
  for (let a = from; a < to; a += 1000) out.push(appRows(a, Math.min(to, a + 1000)));
  return out;
}

// ------------------------------------------------------------------------------------------------
// put latency from the page

/** What the store's stats said at one moment of the put run (one sample: four calls at once). */
interface StatsSample {
  /** When the sample was asked for, ms since the run began. */
  at: number;
  /** How long the four answers took. */
  ms: number;
  cause: 'memtable' | 'compaction' | null;
  waiting: number;
  frozenCount: number;
  frozenBytes: number;
  activeBytes: number;
  compactionRunning: boolean;
  compactionPendingBytes: number;
  l0StallCount: number;
  flushCount: number;
  tableCount: number;
  /** Batches accepted but not yet WAL-durable (their puts wait for the append). */
  pendingWalBatches: number;
  /** WAL appends completed so far. */
  walAppends: number;
  lastFlushMs: number;
}

/** One slow put and what the samples asked during it said. */
export interface SlowPut {
  index: number;
  /** When it was called, ms since the run began. */
  at: number;
  ms: number;
  /** The samples asked while it was pending (and the last one before, for context). */
  samples: number;
  causes: string[];
  maxWaiting: number;
  maxFrozenCount: number;
  maxFrozenBytes: number;
  maxActiveBytes: number;
  compactionRunning: boolean;
  maxCompactionPendingBytes: number;
  /** Flushes committed, and flushes that waited for compaction, during the put. */
  flushes: number;
  l0Stalls: number;
  /** The most batches waiting for their WAL append at once, in how many of the samples asked during the put any waited, and the appends completed during the put. */
  maxPendingWalBatches: number;
  pendingWalSamples: number;
  walAppends: number;
  /** The duration of the last flush the samples saw by the put's end (writeStats.lastFlushMs). */
  lastFlushMs: number;
  /** The slowest stats answer asked during the put (a blocked engine thread delays it too). */
  slowestStatsMs: number;
}

export interface PutPageResult {
  rows: number;
  puts: number;
  ms: number;
  put: ReturnType<typeof spread>;
  /** From the last put until every flush committed. */
  drainMs: number;
  flushes: number;
  backpressureWaits: number;
  backpressureWaitMs: number;
  l0StallCount: number;
  compactions: number;
  /** With `sampleEveryMs`: the stats samples taken and the 10 slowest puts, slowest first. */
  samples?: number;
  statsAnswer?: ReturnType<typeof spread>;
  slowest?: SlowPut[];
}

/**
 * `rows` app rows in 1,000-row puts through a fresh client, each awaited and timed, as a page
 * saves. `sampleEveryMs` > 0: meanwhile ask backpressure, memtable, compaction and write stats
 * every that many ms, and report what they said during the 10 slowest puts.
 */
export async function putPage(name: string, rows: number, sampleEveryMs = 0): Promise<PutPageResult> {
  const chunks = chunksOf(0, rows);
  const db = await open(name);
  const lat = new Float64Array(chunks.length);
  const starts = new Float64Array(chunks.length);
  const samples: StatsSample[] = [];
  let running = true;
  const t0 = now();
  const sampler = (async () => {
    while (sampleEveryMs > 0 && running) {
      const at = now() - t0;
      const [bp, mt, cs, ws] = await Promise.all([db.backpressureStats(), db.memtableStats(), db.compactionStats(), db.writeStats()]);
      samples.push({
        at,
        ms: now() - t0 - at,
        cause: bp.cause,
        waiting: bp.activeCount,
        frozenCount: mt.frozenCount,
        frozenBytes: mt.frozenBytes,
        activeBytes: mt.estimatedBytes,
        compactionRunning: cs.running,
        compactionPendingBytes: cs.pendingBytes,
        l0StallCount: cs.l0StallCount,
        flushCount: ws.flushCount,
        tableCount: cs.tableCount,
        pendingWalBatches: mt.pendingWalBatchCount,
        walAppends: ws.walAppendCount,
        lastFlushMs: ws.lastFlushMs,
      });
      await pause(sampleEveryMs);
    }
  })();
  try {
    for (let i = 0; i < chunks.length; i++) {
      const t = now();
      starts[i] = t - t0;
      await db.put(chunks[i]!);
      lat[i] = now() - t;
    }
    const ms = now() - t0;
    running = false;
    await sampler;
    const t1 = now();
    await db.waitForFlushDrain();
    const drainMs = now() - t1;
    const [ws, bp, cs] = await Promise.all([db.writeStats(), db.backpressureStats(), db.compactionStats()]);
    const out: PutPageResult = {
      rows,
      puts: chunks.length,
      ms,
      put: spread(lat),
      drainMs,
      flushes: ws.flushCount,
      backpressureWaits: bp.totalCount,
      backpressureWaitMs: bp.totalWaitMs,
      l0StallCount: cs.l0StallCount,
      compactions: cs.completedCount,
    };
    if (sampleEveryMs > 0) {
      out.samples = samples.length;
      out.statsAnswer = spread(samples.map((s) => s.ms));
      out.slowest = slowestPuts(starts, lat, samples, 10);
    }
    return out;
  } finally {
    running = false;
    await db.close();
  }
}

/** The `top` slowest puts, each with a summary of the stats samples asked while it was pending. */
function slowestPuts(starts: Float64Array, lat: Float64Array, samples: StatsSample[], top: number): SlowPut[] {
  const order = Array.from(lat.keys()).sort((a, b) => lat[b]! - lat[a]!);
  return order.slice(0, top).map((i) => {
    const from = starts[i]!;
    const to = from + lat[i]!;
    const before = samples.filter((s) => s.at < from).at(-1);
    const during = samples.filter((s) => s.at >= from && s.at <= to);
    // The first sample asked after the put resolved closes the window (flushes and appends counted across it).
    const after = samples.find((s) => s.at > to);
    const seen = before ? [before, ...during] : during;
    const max = (f: (s: StatsSample) => number): number => Math.max(0, ...seen.map(f));
    const last = after ?? seen.at(-1);
    return {
      index: i,
      at: from,
      ms: lat[i]!,
      samples: during.length,
      causes: [...new Set(seen.map((s) => s.cause ?? 'none'))],
      maxWaiting: max((s) => s.waiting),
      maxFrozenCount: max((s) => s.frozenCount),
      maxFrozenBytes: max((s) => s.frozenBytes),
      maxActiveBytes: max((s) => s.activeBytes),
      compactionRunning: seen.some((s) => s.compactionRunning),
      maxCompactionPendingBytes: max((s) => s.compactionPendingBytes),
      flushes: before && last ? last.flushCount - before.flushCount : 0,
      l0Stalls: before && last ? last.l0StallCount - before.l0StallCount : 0,
      maxPendingWalBatches: max((s) => s.pendingWalBatches),
      pendingWalSamples: during.filter((s) => s.pendingWalBatches > 0).length,
      walAppends: before && last ? last.walAppends - before.walAppends : 0,
      lastFlushMs: last?.lastFlushMs ?? 0,
      slowestStatsMs: Math.max(0, ...during.map((s) => s.ms)),
    };
  });
}

// ------------------------------------------------------------------------------------------------
// open to first get

/** The client the open-to-first-get phases keep between calls (a reload ends it without close). */
let held: MemWalClient | undefined;

/**
 * Write the store of the open-to-first-get case: `rows - walRows` rows (10k-row puts), flushed and
 * compacted, then `walRows` more in 1,000-row puts that stay in the WAL (the store is left open
 * for the reload). Resolves the WAL figures.
 */
export async function openGetPrepare(
  name: string,
  rows: number,
  walRows: number,
): Promise<{ retainedBytes: number; activeRows: number; tableCount: number }> {
  const db = (held = await open(name));
  for (let a = 0; a < rows - walRows; a += 10_000) await db.put(appBatch(appRows(a, Math.min(rows - walRows, a + 10_000))));
  const { tableCount } = await settleStore(db);
  for (const c of chunksOf(rows - walRows, rows)) await db.put(c);
  const [wal, mt] = await Promise.all([db.walStats(), db.memtableStats()]);
  return { retainedBytes: wal.retainedBytes, activeRows: mt.rowCount, tableCount };
}

/** What one open to first get measured. */
export interface OpenGet {
  /** `openMemWal()` until it resolved. */
  openMs: number;
  /** The first `get` after it. */
  firstGetMs: number;
  /** `openMemWal()` until the first `get` answered. */
  totalMs: number;
  /** The WAL the open found (walStats().retainedBytes right after open) and what it replayed. */
  retainedBytes: number;
  replayedRows: number;
  replayTimeMs: number;
}

/** Open store `name` (a fresh worker), then get the row of `k`; the client is kept open. */
export async function openGetMeasure(name: string, k: number): Promise<OpenGet> {
  const t0 = now();
  const db = (held = await open(name));
  const t1 = now();
  const row = (await db.get({ id: appKey(k) })) as AppRow | undefined;
  const t2 = now();
  if (row?.id !== appKey(k)) throw new Error(`open to first get: row ${k} not found`);
  const [wal, ws] = await Promise.all([db.walStats(), db.writeStats()]);
  return {
    openMs: t1 - t0,
    firstGetMs: t2 - t1,
    totalMs: t2 - t0,
    retainedBytes: wal.retainedBytes,
    replayedRows: ws.replayedRows,
    replayTimeMs: ws.replayTimeMs,
  };
}

/** Close the kept client cleanly; resolves how long `close()` took. */
export async function openGetClose(): Promise<{ closeMs: number }> {
  const db = held;
  held = undefined;
  const t0 = now();
  await db?.close();
  return { closeMs: now() - t0 };
}

/** IndexedDB beside it: `rows` app rows in database `name` (10k-row relaxed transactions). */
export async function idbOpenPrepare(name: string, rows: number): Promise<void> {
  const db = await openIdbRows(name);
  try {
    for (let a = 0; a < rows; a += 10_000) await idbPutChunk(db, appRows(a, Math.min(rows, a + 10_000)), 'relaxed');
  } finally {
    db.close();
  }
}

/** `openDB()` until the first `get` of row `k` answered (the connection is closed after). */
export async function idbOpenMeasure(name: string, k: number): Promise<{ openMs: number; firstGetMs: number; totalMs: number }> {
  const t0 = now();
  const db = await openDB(name, 1);
  const t1 = now();
  const row = (await db.get('rows', appKey(k))) as AppRow | undefined;
  const t2 = now();
  db.close();
  if (row?.id !== appKey(k)) throw new Error(`IndexedDB open to first get: row ${k} not found`);
  return { openMs: t1 - t0, firstGetMs: t2 - t1, totalMs: t2 - t0 };
}
