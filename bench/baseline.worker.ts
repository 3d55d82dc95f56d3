// The baseline worker: the in-worker ingest cases (Arrow ingest, 1,000-row puts) on an older
// memwal — by default the commit before table format 2 and compaction — which bench/run/baseline.mjs
// extracts from git into bench/.baseline and Vite bundles through the `memwal-baseline` alias.
// Run interleaved with the same cases on this checkout, it shows what compaction costs ingest in
// one run. Only the baseline's public entry points are used. Dedicated module worker.

import * as Comlink from 'comlink';
import { MemWal } from 'memwal-baseline/index.js';
import { defaultBrowserStorage } from 'memwal-baseline/worker.js';
import { arrowBatches, dropCachedData, rowChunks } from './data.js';
import { type Engine, type IngestResult, memwalArrow, memwalRows, type StoreShape } from './memwal-cases.js';

const baseline: Engine = { MemWal, defaultBrowserStorage };

const api = {
  memwalArrow: (count: number, writers: number, shape: StoreShape): Promise<IngestResult> =>
    memwalArrow(arrowBatches(count), writers, shape, baseline),
  memwalRows: (rows: number): Promise<IngestResult> => memwalRows(rowChunks(rows), baseline),
  dropData: dropCachedData,
};

export type BaselineWorkerApi = typeof api;

Comlink.expose(api);
