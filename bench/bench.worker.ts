// The bench worker: every in-worker case (raw OPFS, memwal in-process, the peers), exposed to
// the page through comlink. Data is generated once per size (data.ts) and reused by every engine.
// Dedicated module worker.

import * as Comlink from 'comlink';
import { arrowBatches, dropCachedData, payloadPool, rowChunks } from './data.js';
import { uniqueName } from './measure.js';
import {
  CURRENT,
  destroyStore,
  INLINE,
  memoryClose,
  memoryIngest,
  memoryOpen,
  memoryProbe,
  memwalArrow,
  memwalRows,
  recovery,
  takeWarnings,
  type IngestResult,
  type MemoryResult,
  type RecoveryResult,
  type StoreShape,
} from './memwal-cases.js';
import { closePeers, peerRows, type PeerName } from './peers.js';
import { type QueryEngineName, queryCase } from './page-queries.js';
import { workerQueryEngine } from './queries-worker.js';
import { rawOpfsRangeReads, rawOpfsWrite } from './raw-opfs.js';
import {
  readsClose,
  readsGrow,
  readsOpen,
  readsPass,
  readsScan,
  readsSettle,
  readsSpace,
  readsSwitchToDexie,
  readsWrite,
  readsWriteStats,
} from './reads.js';

const api = {
  ping: (): string => 'pong',
  /** Case 1: MiB/s of one repetition. */
  rawOpfs: (totalMiB: number): Promise<number> => rawOpfsWrite(totalMiB, uniqueName('raw')),
  /** Case 1b: ms per 64 KiB ranged read from a `fileMiB` file, three ways. */
  rawOpfsRangeReads: (fileMiB: number, reads: number) => rawOpfsRangeReads(fileMiB, reads, uniqueName('range')),
  /** Case 2: one repetition of `count` ≈1 MiB batches (`inline`: without the I/O worker). */
  memwalArrow: (count: number, writers: number, shape: StoreShape, inline = false): Promise<IngestResult> =>
    memwalArrow(arrowBatches(count), writers, shape, inline ? INLINE : CURRENT),
  /** Case 3 (in-worker): one repetition of `rows` rows (`inline`: without the I/O worker). */
  memwalRows: (rows: number, inline = false): Promise<IngestResult> => memwalRows(rowChunks(rows), inline ? INLINE : CURRENT),
  /** Case 4: rows/s of one repetition of `peer`. */
  peerRows: (peer: PeerName, rows: number): Promise<number> => peerRows(peer, rowChunks(rows)),
  /** Case 6, in three phases so the runner can read the heap between them. */
  memoryOpen: (shape: StoreShape): Promise<void> => (payloadPool(), memoryOpen(shape)),
  memoryIngest: (totalMiB: number, writers: number, limitMs?: number): Promise<MemoryResult> =>
    memoryIngest(totalMiB, writers, payloadPool(), limitMs),
  memoryProbe,
  memoryClose,
  /** Case 7: one repetition. */
  recovery: (walMiB: number, shape: StoreShape): Promise<RecoveryResult> => recovery(walMiB, payloadPool(), shape),
  /** Cases 8-10 and the read ladder: point reads, scans and space, one phase per call (reads.ts). */
  readsOpen,
  readsGrow,
  readsWrite,
  readsWriteStats,
  readsSettle,
  readsSpace,
  readsPass,
  readsScan,
  readsSwitchToDexie,
  readsClose,
  /** The query case in the worker (page-queries.ts): one engine, a fresh database. */
  queries: (engine: QueryEngineName, rows: number, chains: number, counts: number) =>
    queryCase(workerQueryEngine, engine, rows, chains, counts),
  /** What memwal warned about since the last call (run.mjs keeps it per case). */
  takeWarnings,
  /** Delete a store the page wrote through its client. */
  destroyStore,
  /** Drop cached data (between cases, so the heap of later cases is not inflated). */
  dropData: dropCachedData,
  closePeers,
};

export type BenchWorkerApi = typeof api;

Comlink.expose(api);
