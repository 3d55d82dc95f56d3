// The conformance page: runs storage checks in fresh dedicated module workers (where OPFS sync
// access handles exist) and exposes them to Playwright as `window.harness`.

import * as Comlink from 'comlink';
import { crc32cCheck } from './crc-check.js';
import type { Harness, Layout, StaleWriterResult, StealResult, VersionChangeResult } from './protocol.js';
import type { StorageWorkerApi } from './storage.worker.js';

interface StorageWorker {
  api: Comlink.Remote<StorageWorkerApi>;
  terminate(): void;
}

function spawn(): StorageWorker {
  const worker = new Worker(new URL('./storage.worker.ts', import.meta.url), { type: 'module' });
  return { api: Comlink.wrap<StorageWorkerApi>(worker), terminate: () => worker.terminate() };
}

/** Runs `work` with a fresh worker and terminates it afterwards. */
async function withWorker<T>(work: (api: Comlink.Remote<StorageWorkerApi>) => Promise<T>): Promise<T> {
  const w = spawn();
  try {
    return await work(w.api);
  } finally {
    w.terminate();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const storeName = (what: string): string => `e2e-${what}-${Math.random().toString(36).slice(2, 10)}`;

/** Worker A writes, worker B steals, both die without releasing, worker C opens and reads. */
async function stealAcrossWorkers(layout: Layout): Promise<StealResult> {
  const store = storeName('steal');
  const a = spawn();
  const b = spawn();
  try {
    await a.api.open(layout, store, { timeoutMs: 0 });
    await a.api.commit(layout, 0, 1);
    await a.api.append('1-1', 0, 100, 1);
    const secondOpenWithoutSteal = await b.api.open(layout, store, { timeoutMs: 0 });
    const stealOpen = await b.api.open(layout, store, { steal: true });
    const oldSegmentSeenByNewWriter = await b.api.read('1-1');
    for (let i = 0; i < 100 && !(await a.api.lostReason()); i++) await sleep(10);
    const oldWriterLostReason = await a.api.lostReason();
    const oldWriterAppend = await a.api.append('1-1', 100, 10, 2);
    const oldWriterCommit = await a.api.commit(layout, 1, 1);
    const newWriterCommit = await b.api.commit(layout, 1, 2);
    const newWriterAppend = await b.api.append('2-2', 0, 50, 3);
    a.terminate();
    b.terminate();
    return await withWorker(async (c) => {
      const openAfterTerminate = await c.open(layout, store, { timeoutMs: 10_000 });
      const segmentsAfterTerminate = await c.list();
      await c.release();
      await c.destroy(layout, store);
      return {
        secondOpenWithoutSteal,
        stealOpen,
        oldSegmentSeenByNewWriter,
        oldWriterLostReason,
        oldWriterAppend,
        oldWriterCommit,
        newWriterCommit,
        newWriterAppend,
        openAfterTerminate,
        segmentsAfterTerminate,
      };
    });
  } finally {
    a.terminate();
    b.terminate();
  }
}

/**
 * Worker A writes with its lock loss held back, so it keeps writing after worker B stole its lock:
 * it creates a segment between B's open and B's claim, then tries every mutation after the
 * claim. B lists the WAL after its claim while A still holds its handles; the page lets A learn
 * of the loss 300 ms later, and B reads what A left.
 */
async function staleWriter(layout: Layout): Promise<StaleWriterResult> {
  const store = storeName('stale');
  const a = spawn();
  const b = spawn();
  try {
    // On the workers' own threads: the held-back lock loss is in this worker's navigator.locks.
    await a.api.inline();
    await b.api.inline();
    await a.api.holdLockLoss();
    await a.api.open(layout, store, { timeoutMs: 0 });
    await a.api.commit(layout, 0, 1);
    await a.api.tableWrite('1-1-1.arrow', 24, 5);
    const stealOpen = await b.api.open(layout, store, { steal: true });
    const appendInWindow = await a.api.append('1-1', 0, 100, 1);
    const newWriterClaim = await b.api.commit(layout, 1, 2);
    const appendAfterClaim = await a.api.append('1-1', 100, 50, 2);
    const newSegmentAfterClaim = await a.api.append('1-151', 0, 10, 3);
    const truncate = await a.api.truncate('1-1', 0);
    const removeSegment = await a.api.removeSegment('1-1');
    const tableWrite = await a.api.tableWrite('1-1-2.arrow', 8, 4);
    const tableRemove = await a.api.tableRemove('1-1-1.arrow');
    const commitAtCurrentVersion = await a.api.commit(layout, 2, 1);
    const listing = b.api.segments();
    await sleep(300);
    await a.api.releaseLockLoss();
    const segmentsSeenByNewWriter = await listing;
    const tablesSeenByNewWriter = await b.api.tableList();
    const manifestSeenByNewWriter = await b.api.manifest();
    const oldWriterLostReason = await a.api.lostReason();
    await b.api.release();
    await b.api.destroy(layout, store);
    return {
      stealOpen,
      appendInWindow,
      newWriterClaim,
      appendAfterClaim,
      newSegmentAfterClaim,
      truncate,
      removeSegment,
      tableWrite,
      tableRemove,
      commitAtCurrentVersion,
      segmentsSeenByNewWriter,
      tablesSeenByNewWriter,
      manifestSeenByNewWriter,
      oldWriterLostReason,
    };
  } finally {
    a.terminate();
    b.terminate();
  }
}

/** A writer in a worker; the page deletes the "memwal" IndexedDB database under it. */
function databaseDeletedUnderWriter(layout: Layout): Promise<VersionChangeResult> {
  return withWorker(async (w) => {
    const store = storeName('versionchange');
    await w.open(layout, store, { timeoutMs: 0 });
    await w.append('1-1', 0, 10, 1);
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase('memwal');
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });
    for (let i = 0; i < 100 && !(await w.lostReason()); i++) await sleep(10);
    const lostReason = await w.lostReason();
    const appendAfter = await w.append('1-1', 10, 10, 2);
    await w.release();
    const reopenAfterRelease = await w.open(layout, store, { timeoutMs: 5000 });
    await w.release();
    await w.destroy(layout, store);
    return { lostReason, appendAfter, reopenAfterRelease };
  });
}

const harness: Harness = {
  conformance: (layout, ioWorker) => withWorker((w) => w.conformance(layout, ioWorker)),
  quota: (layout) => withWorker((w) => w.quota(layout)),
  stealAcrossWorkers,
  staleWriter,
  databaseDeletedUnderWriter,
  crc32c: async () => ({ page: crc32cCheck(), worker: await withWorker((w) => w.crc32c()) }),
};

(window as unknown as { harness: Harness }).harness = harness;
