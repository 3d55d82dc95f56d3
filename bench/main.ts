// The bench page: starts the bench worker and exposes `window.bench` to bench/run.mjs, which
// calls one repetition at a time. The main-thread cases run here: memwal through openMemWal
// (case 3's client figure, case 5's stats latency under load), SQLite through its worker API
// (page-peers.ts), and the page cases of reads, put latency and open to first get
// (page-reads.ts, page-app.ts). Browser main thread.

import { Table, tableToIPC } from 'apache-arrow';
import * as Comlink from 'comlink';
import { type MemWalClient, openMemWal } from '../src/index.js';
import type { BaselineWorkerApi } from './baseline.worker.js';
import type { BenchWorkerApi } from './bench.worker.js';
import type { LoadWorkerApi } from './load.worker.js';
import { BENCH_SCHEMA, arrowBatches, batchBytes, dropCachedData, rowChunks, rowsToBatch } from './data.js';
import { now, pause, settleStore, spread, uniqueName } from './measure.js';
import { idbOpenMeasure, idbOpenPrepare, openGetClose, openGetMeasure, openGetPrepare, putPage } from './page-app.js';
import { type PageEngineName, sqlitePageRows } from './page-peers.js';
import { type QueryEngineName, queryCase } from './page-queries.js';
import { pageQueryEngine } from './queries-page.js';
import {
  pageReadsClose,
  pageReadsGrow,
  pageReadsMany,
  pageReadsOpen,
  pageReadsPass,
  pageReadsReopen,
  pageReadsSettle,
  pageReadsUse,
} from './page-reads.js';

const benchWorker = new Worker(new URL('./bench.worker.ts', import.meta.url), { type: 'module' });
const api = Comlink.wrap<BenchWorkerApi>(benchWorker);
/** The ingest cases on the baseline memwal (started on first use). */
let baselineApi: Comlink.Remote<BaselineWorkerApi> | undefined;
const baseline = (): Comlink.Remote<BaselineWorkerApi> =>
  (baselineApi ??= Comlink.wrap<BaselineWorkerApi>(new Worker(new URL('./baseline.worker.ts', import.meta.url), { type: 'module' })));

/**
 * The memwal host workers the client cases use, each started once, on first use (as an app would
 * start its worker; not at page load, where they would compete with the open-to-first-get case),
 * so that the runner can attach its profiler to them; `openMemWal({ worker })` leaves them running
 * on close. `inline`: the host with storage I/O on its own thread (no I/O worker), for the stats case.
 */
const hosts: { default?: Worker; inline?: Worker } = {};
function hostWorker(inline = false): Worker {
  return inline
    ? (hosts.inline ??= new Worker(new URL('./host-inline.worker.ts', import.meta.url), { type: 'module' }))
    : (hosts.default ??= new Worker(new URL('./host.worker.ts', import.meta.url), { type: 'module' }));
}

/** A client on a fresh store in the host worker (append-only unless `keyed`). */
async function openClient(keyed: boolean, inline = false): Promise<{ db: MemWalClient; done: () => Promise<void> }> {
  const name = uniqueName('client');
  const db = await openMemWal({
    name,
    schema: BENCH_SCHEMA,
    ...(keyed ? { primaryKey: ['id'] } : {}),
    storage: 'opfs',
    worker: hostWorker(inline),
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
  latencies: Record<'stats' | 'memtableStats' | 'backpressureStats' | 'metrics', number[]>;
  /**
   * How old each memtableStats answer was (ms): when the page had already seen more puts resolve
   * than the answer counts as durable (`durableBatchCount`, one batch per put here), the answer
   * predates the first resolution it misses by at least `issue time − that resolution`. Stats
   * computed when asked are never stale by this measure (0); a served snapshot can be.
   */
  staleness: number[];
  bytes: number;
  ms: number;
}

/**
 * Case 5: `writers` concurrent writers put `count` ≈1 MiB batches through the client (case 2's
 * load) while this thread polls memtableStats, backpressureStats and metrics, each in its own
 * loop (call, time it, pause 2 ms), as a dashboard would.
 */
async function statsUnderLoad(count: number, writers: number, inline = false): Promise<StatsUnderLoad> {
  const data = arrowBatches(count);
  const bytes = data.reduce((n, b) => n + batchBytes(b), 0);
  const { db, done } = await openClient(false, inline);
  /** When the page saw each put resolve, in order. */
  const resolved: number[] = [];
  try {
    return await pollStatsDuring(db, resolved, async () => {
      let next = 0;
      const loop = async (): Promise<void> => {
        while (next < data.length) {
          await db.put(data[next++]!);
          resolved.push(now());
        }
      };
      await Promise.all(Array.from({ length: writers }, loop));
      return bytes;
    });
  } finally {
    await done();
  }
}

/**
 * Case 5 with the load generator in a worker of its own (bench/load.worker.ts): this thread only
 * polls the stats, so their latency shows the engine thread and the cores, not the page's own
 * encoding and posting of puts. The page's client hosts the store (memwal's default worker,
 * `tabs: 'share'`); the load worker's client joins it, and its puts go straight to that worker.
 * No staleness figure (the page does not see the puts resolve).
 */
async function statsUnderWorkerLoad(count: number, writers: number): Promise<StatsUnderLoad> {
  const name = uniqueName('client');
  const db = await openMemWal({ name, schema: BENCH_SCHEMA, storage: 'opfs', tabs: 'share', logger: { warn: () => undefined } });
  const worker = new Worker(new URL('./load.worker.ts', import.meta.url), { type: 'module' });
  const load = Comlink.wrap<LoadWorkerApi>(worker);
  try {
    const role = await load.open(name);
    if (db.role() !== 'leader' || role !== 'follower')
      throw new Error(`stats: the page's client is ${db.role()}, the load worker's ${role}`);
    return await pollStatsDuring(db, undefined, async () => (await load.run(count, writers)).bytes);
  } finally {
    await load.close().catch(() => undefined);
    worker.terminate();
    await db.close();
    await api.destroyStore(name);
  }
}

/**
 * Poll stats, memtableStats, backpressureStats and metrics of `db`, each in its own loop (call, time it,
 * pause 2 ms), while `load()` runs; resolves their latencies and the load's bytes and duration.
 * `resolved` (the times the page saw each put resolve) gives memtableStats' staleness.
 */
async function pollStatsDuring(db: MemWalClient, resolved: number[] | undefined, load: () => Promise<number>): Promise<StatsUnderLoad> {
  const latencies: StatsUnderLoad['latencies'] = { stats: [], memtableStats: [], backpressureStats: [], metrics: [] };
  const staleness: number[] = [];
  let loading = true;
  // A user-timing mark brackets the load, so a trace (run.mjs) can cut its window out.
  performance.mark('bench-load-start');
  const samplers = (['stats', 'memtableStats', 'backpressureStats', 'metrics'] as const).map(async (k) => {
    while (loading) {
      const t = now();
      const seen = resolved?.length ?? 0;
      const s = await db[k]();
      latencies[k].push(now() - t);
      if (k === 'memtableStats' && resolved) {
        const counted = (s as Awaited<ReturnType<MemWalClient['memtableStats']>>).durableBatchCount;
        staleness.push(counted < seen ? t - resolved[counted]! : 0);
      }
      await pause(2);
    }
  });
  const t0 = now();
  let bytes: number;
  let ms: number;
  try {
    bytes = await load();
    ms = now() - t0;
  } finally {
    loading = false;
    await Promise.all(samplers);
  }
  performance.mark('bench-load-end');
  return { latencies, staleness, bytes, ms };
}

/**
 * Case 11a, main-thread cost of a put: `rows` rows in 1,000-row puts through the client, awaited
 * one by one (run.mjs profiles this thread meanwhile). `syncMs`: how long each `put()` call
 * itself takes before it returns its promise (argument handling and postMessage, which
 * structured-clones the rows); the rest of the thread's time (the reply, promise reactions) is
 * in the profile.
 */
async function mainThreadRows(rows: number): Promise<{ puts: number; ms: number; syncMs: ReturnType<typeof spread> }> {
  const data = rowChunks(rows);
  const { db, done } = (mainThreadClient ??= await openClient(true));
  const sync: number[] = [];
  try {
    const t0 = now();
    for (const c of data) {
      const t = now();
      const p = db.put(c);
      sync.push(now() - t);
      await p;
    }
    return { puts: data.length, ms: now() - t0, syncMs: spread(sync) };
  } catch (e) {
    mainThreadClient = undefined;
    await done();
    throw e;
  }
}

/** The store of case 11a, opened before and closed after the profiled puts. */
let mainThreadClient: Awaited<ReturnType<typeof openClient>> | undefined;

/** Opens the store of case 11a and builds its rows (so neither lands in the profile). */
async function mainThreadOpen(rows: number): Promise<void> {
  rowChunks(rows);
  mainThreadClient ??= await openClient(true);
}

async function mainThreadClose(): Promise<void> {
  const c = mainThreadClient;
  mainThreadClient = undefined;
  await c?.done();
}

/**
 * Case 11b, the pieces of a 1,000-row put on the main thread, timed one by one on the same
 * chunks without the store: `structuredClone` (what postMessage does to rows), `postMessage` to a
 * port nobody reads (clone + send), building an Arrow RecordBatch from the rows (what an app
 * sending Arrow does first), and IPC-encoding it (what the client does to Arrow before it
 * transfers the bytes); and `put()` of that batch through the client (sync part).
 */
async function mainThreadPieces(rows: number): Promise<Record<string, ReturnType<typeof spread>>> {
  const data = rowChunks(rows);
  const t: Record<'structuredClone' | 'postMessage' | 'arrowBuild' | 'ipcEncode' | 'arrowPutSync', number[]> = {
    structuredClone: [],
    postMessage: [],
    arrowBuild: [],
    ipcEncode: [],
    arrowPutSync: [],
  };
  const channel = new MessageChannel(); // port2 is never started: messages just queue
  const { db, done } = await openClient(true);
  try {
    for (const c of data) {
      let t0 = now();
      structuredClone(c);
      t.structuredClone.push(now() - t0);
      t0 = now();
      channel.port1.postMessage(c);
      t.postMessage.push(now() - t0);
      t0 = now();
      const batch = rowsToBatch([c]);
      t.arrowBuild.push(now() - t0);
      t0 = now();
      tableToIPC(new Table([batch]), 'stream');
      t.ipcEncode.push(now() - t0);
      t0 = now();
      const p = db.put(batch);
      t.arrowPutSync.push(now() - t0);
      await p;
    }
  } finally {
    channel.port1.close();
    await done();
  }
  return Object.fromEntries(Object.entries(t).map(([k, xs]) => [k, spread(xs)]));
}

/** Long tasks (> 50 ms) of this page's main thread, collected since the last call. */
const longTasks: { start: number; ms: number }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) longTasks.push({ start: e.startTime, ms: e.duration });
}).observe({ type: 'longtask', buffered: true });

function takeLongTasks(): { start: number; ms: number }[] {
  return longTasks.splice(0);
}

const bench = {
  api,
  get baseline() {
    return baseline();
  },
  /** Start both host workers (before a profiler attaches to them). */
  startHosts: (): void => void [hostWorker(false), hostWorker(true)],
  clientRows,
  sqlitePageRows: (rows: number): Promise<number> => sqlitePageRows(rowChunks(rows)),
  statsUnderLoad,
  statsUnderWorkerLoad,
  pageReadsOpen: (engine: PageEngineName) => pageReadsOpen(engine, (name) => api.destroyStore(name)),
  pageReadsGrow,
  pageReadsSettle,
  pageReadsReopen,
  pageReadsUse,
  pageReadsPass,
  pageReadsMany,
  pageReadsClose,
  /** The query case from the page (page-queries.ts): one engine, a fresh database. */
  queriesPage: (engine: QueryEngineName, rows: number, chains: number, counts: number) =>
    queryCase(
      (e) =>
        pageQueryEngine(
          e,
          (name) => api.destroyStore(name),
          (db) => settleStore(db),
        ),
      engine,
      rows,
      chains,
      counts,
    ),
  putPage,
  openGetPrepare,
  openGetMeasure,
  openGetClose,
  idbOpenPrepare,
  idbOpenMeasure,
  mainThreadOpen,
  mainThreadRows,
  mainThreadClose,
  mainThreadPieces,
  dropData: dropCachedData,
  takeLongTasks,
};
export type BenchPage = typeof bench;
(globalThis as unknown as { bench: BenchPage }).bench = bench;
