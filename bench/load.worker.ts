// The stats case's load generator in a worker of its own, so the page's thread only calls stats:
// a second client of the page's store (`tabs: 'share'`: the page's client leads and hosts the
// store; this one follows, and its puts go to the host's worker without passing through the page)
// puts ≈1 MiB Arrow batches from `writers` concurrent writers. Dedicated module worker.

import * as Comlink from 'comlink';
import { type MemWalClient, openMemWal } from '../src/index.js';
import { BENCH_SCHEMA, arrowBatches, batchBytes } from './data.js';
import { now } from './measure.js';

let db: MemWalClient | undefined;

const api = {
  /** Join store `name`, which the page's client hosts; resolves this client's role ('follower'). */
  async open(name: string): Promise<string> {
    db = await openMemWal({ name, schema: BENCH_SCHEMA, storage: 'opfs', tabs: 'share', logger: { warn: () => undefined } });
    return db.role();
  },
  /** `count` ≈1 MiB batches from `writers` writers, each put awaited; resolves the bytes and ms. */
  async run(count: number, writers: number): Promise<{ bytes: number; ms: number }> {
    const data = arrowBatches(count);
    const bytes = data.reduce((n, b) => n + batchBytes(b), 0);
    let next = 0;
    const t0 = now();
    const loop = async (): Promise<void> => {
      while (next < data.length) await db!.put(data[next++]!);
    };
    await Promise.all(Array.from({ length: writers }, loop));
    return { bytes, ms: now() - t0 };
  },
  async close(): Promise<void> {
    await db?.close();
    db = undefined;
  },
};

export type LoadWorkerApi = typeof api;

Comlink.expose(api);
