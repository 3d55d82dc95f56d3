// The bench page: starts the bench worker and exposes `window.bench` to bench/run.mjs, which
// calls one repetition at a time. The main-thread cases (memwal through openMemWal: case 3's
// client figure and case 5's stats latency under load) run here. Browser main thread.

import * as Comlink from 'comlink';
import { type MemWalClient, openMemWal } from '../src/index.js';
import type { BenchWorkerApi } from './bench.worker.js';
import { BENCH_SCHEMA, arrowBatches, batchBytes, dropCachedData, rowChunks } from './data.js';
import { now, pause, uniqueName } from './measure.js';

const benchWorker = new Worker(new URL('./bench.worker.ts', import.meta.url), { type: 'module' });
const api = Comlink.wrap<BenchWorkerApi>(benchWorker);

/**
 * The memwal host worker every client case uses, started once (as an app would) so that the
 * runner can attach its profiler to it; `openMemWal({ worker })` leaves it running on close.
 */
const hostWorker = new Worker(new URL('./host.worker.ts', import.meta.url), { type: 'module' });

/** A client on a fresh store in the host worker (append-only unless `keyed`). */
async function openClient(keyed: boolean): Promise<{ db: MemWalClient; done: () => Promise<void> }> {
  const name = uniqueName('client');
  const db = await openMemWal({
    name,
    schema: BENCH_SCHEMA,
    ...(keyed ? { primaryKey: ['id'] } : {}),
    storage: 'opfs',
    worker: hostWorker,
    logger: { warn: () => undefined },
  });
  return {
    db,
    done: async () => {
      await db.close();
      await api.destroyStore(name);
    },
  };
}

/** Case 3 through the client: 1,000-row puts awaited in order, as a page would write. */
async function clientRows(rows: number): Promise<{ rows: number; ackMs: number; drainedMs: number }> {
  const data = rowChunks(rows);
  const { db, done } = await openClient(true);
  try {
    const t0 = now();
    for (const c of data) await db.put(c);
    const ackMs = now() - t0;
    await db.waitForFlushDrain();
    return { rows, ackMs, drainedMs: now() - t0 };
  } finally {
    await done();
  }
}

/** What one repetition of case 5 measured: each accessor's latencies (ms) and the load. */
export interface StatsUnderLoad {
  latencies: Record<'memtableStats' | 'backpressureStats' | 'metrics', number[]>;
  bytes: number;
  ms: number;
}

/**
 * Case 5: `writers` concurrent writers put `count` ≈1 MiB batches through the client (case 2's
 * load) while this thread polls memtableStats, backpressureStats and metrics, each in its own
 * loop (call, time it, pause 2 ms), as a dashboard would.
 */
async function statsUnderLoad(count: number, writers: number): Promise<StatsUnderLoad> {
  const data = arrowBatches(count);
  const bytes = data.reduce((n, b) => n + batchBytes(b), 0);
  const { db, done } = await openClient(false);
  const latencies: StatsUnderLoad['latencies'] = { memtableStats: [], backpressureStats: [], metrics: [] };
  try {
    let loading = true;
    const samplers = (['memtableStats', 'backpressureStats', 'metrics'] as const).map(async (k) => {
      while (loading) {
        const t = now();
        await db[k]();
        latencies[k].push(now() - t);
        await pause(2);
      }
    });
    const t0 = now();
    let next = 0;
    const loop = async (): Promise<void> => {
      while (next < data.length) await db.put(data[next++]!);
    };
    await Promise.all(Array.from({ length: writers }, loop));
    const ms = now() - t0;
    loading = false;
    await Promise.all(samplers);
    return { latencies, bytes, ms };
  } finally {
    await done();
  }
}

const bench = { api, clientRows, statsUnderLoad, dropData: dropCachedData };
export type BenchPage = typeof bench;
(globalThis as unknown as { bench: BenchPage }).bench = bench;
