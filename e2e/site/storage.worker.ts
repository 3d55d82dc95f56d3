// Dedicated module worker of the conformance page (comlink): runs memwal's storage conformance
// cases and the quota probe, and holds one store handle that the page drives step by step.

import * as Comlink from 'comlink';
import { crc32cCheck } from './crc-check.js';
import { MemWalError } from '../../src/util/errors.js';
import { MANIFEST_FORMAT_VERSION } from '../../src/format/manifest/manifest.js';
import type { LockOptions, StorageAdapter, StoreHandle } from '../../src/storage/adapter.js';
import { resolveBrowserStorage } from '../../src/worker.js';
import { OpfsStorage } from '../../src/storage/opfs.js';
import { TableWriterClient } from '../../src/io-worker/table-writer.js';
import { opfsPlacement } from '../../src/io-worker/opfs-plane.js';
import { placeStorage } from '../../src/lsm/io-plane.js';
import { conformanceCases } from '../../src/testing/conformance.js';
import type { CaseResult, Layout, Outcome, QuotaResult } from './protocol.js';

const MiB = 1024 * 1024;
/** Enough writes of 4 MiB to pass any quota the tests set (they use 50 MiB). */
const MAX_WRITES = 64;

function failure(e: unknown): { ok: false; code: string; message: string } {
  if (e instanceof MemWalError) return { ok: false, code: e.code, message: e.message };
  return { ok: false, code: (e as Error)?.name ?? 'unknown', message: String((e as Error)?.message ?? e) };
}

async function attempt<T>(work: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await work() };
  } catch (e) {
    return failure(e);
  }
}

/** Incompressible bytes (IndexedDB compresses values, so zeros would flatter it). */
function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let at = 0; at < length; at += 65536) crypto.getRandomValues(out.subarray(at, Math.min(at + 65536, length)));
  return out;
}

/** `length` bytes of a pattern that depends on `seed`. */
function pattern(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed * 17) & 0xff);
}

let handle: StoreHandle | undefined;
let lostReason: string | undefined;
/** Whether this worker's adapters run on its own thread (`inline()`) or in their I/O worker (the default). */
let ioWorker = true;

/** Set by `conformance(…, 'tableWriter' | 'brokenTableWriter')`: an OpfsStorage on this thread with a table writer thread. */
let withTableWriter: OpfsStorage | undefined;
/** Its table writer thread's client. */
let writerClient: TableWriterClient | undefined;

/** This worker's adapter for `layout`. */
const adapterFor = (layout: Layout): StorageAdapter => withTableWriter ?? resolveBrowserStorage(layout, { ioWorker });

/** An OpfsStorage whose table files handed over whole are written by a table writer thread (`broken`: one whose script throws). */
function opfsWithTableWriter(broken: boolean): OpfsStorage {
  const worker = broken
    ? new Worker(new URL('./broken-table-writer.worker.ts', import.meta.url), { type: 'module' })
    : new Worker(new URL('./table-writer.worker.ts', import.meta.url), { type: 'module' });
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ port: port1 }, [port1]);
  writerClient = new TableWriterClient(port2);
  const adapter = new OpfsStorage({ tableWriter: writerClient });
  placeStorage(adapter, opfsPlacement(adapter)); // its stores' whole table writes go to that thread
  return adapter;
}

/** Until `client`'s thread says it is ready (at most 2 s). */
async function ready(client: TableWriterClient): Promise<void> {
  for (let i = 0; i < 200 && !client.usable; i++) await new Promise((r) => setTimeout(r, 10));
  if (!client.usable) throw new Error('the table writer thread never became ready');
}

/**
 * While set, this worker learns that its Web Lock was stolen only when the page releases it:
 * the rejection that tells a holder of the steal is held back, as for a writer whose thread is
 * busy or frozen. Its other calls run normally, so it keeps writing as a stale writer would.
 */
let heldLockLoss: { released: Promise<void>; release: () => void } | undefined;
const locks = navigator.locks;
const request = locks.request.bind(locks) as (...args: unknown[]) => Promise<unknown>;
(locks as unknown as { request: (...args: unknown[]) => Promise<unknown> }).request = (...args) =>
  request(...args).catch(async (e: unknown) => {
    if (heldLockLoss && (e as Error)?.name === 'AbortError') await heldLockLoss.released;
    throw e;
  });

const api = {
  crc32c: crc32cCheck,

  /** From now on this worker's adapters run on its own thread: OpfsStorage or IndexedDbStorage themselves. */
  inline(): void {
    ioWorker = false;
  },

  /** Every conformance case, through the I/O worker (`ioWorker`, the default) or on this thread. */
  async conformance(layout: Layout, via: boolean | 'tableWriter' | 'brokenTableWriter' = true): Promise<CaseResult[]> {
    ioWorker = via === true;
    withTableWriter = typeof via === 'string' && layout === 'opfs' ? opfsWithTableWriter(via === 'brokenTableWriter') : undefined;
    // Every case on the thread; with the broken one, every case on this thread (checked after them).
    if (via === 'tableWriter' && writerClient && withTableWriter) await ready(writerClient);
    const results: CaseResult[] = [];
    for (const c of conformanceCases(() => adapterFor(layout))) {
      try {
        await c.run();
        results.push({ layout, name: c.name, ok: true });
      } catch (e) {
        const error = e instanceof MemWalError ? `${e.code}: ${e.message}` : String((e as Error)?.stack ?? e);
        results.push({ layout, name: c.name, ok: false, error });
      }
    }
    if (via === 'brokenTableWriter' && writerClient?.usable) {
      results.push({ layout, name: 'the broken table writer thread never says it is ready', ok: false, error: 'it did' });
    }
    return results;
  },

  /** 4 MiB WAL appends until one fails; then, with the segment removed, 4 MiB table files until one fails. */
  async quota(layout: Layout): Promise<QuotaResult> {
    const adapter = adapterFor(layout);
    const store = `quota-${layout}-${Math.random().toString(36).slice(2, 10)}`;
    const h = await adapter.openStore(store, { timeoutMs: 0 });
    const chunk = randomBytes(4 * MiB);
    const result: QuotaResult = { layout };
    try {
      let offset = 0;
      for (let i = 0; i < MAX_WRITES && !result.wal; i++) {
        try {
          await h.walAppend('1-1', offset, chunk);
          offset += chunk.length;
        } catch (e) {
          const lengthAfter = (await h.walList()).find((s) => s.name === '1-1')?.bytes ?? 0;
          result.wal = { bytesBefore: offset, ...failure(e), lengthAfter };
        }
      }
      await h.walRemove('1-1');
      let written = 0;
      for (let i = 0; i < MAX_WRITES && !result.table; i++) {
        const name = `${i}-1-0.arrow`;
        try {
          await h.tableWrite(name, [chunk]);
          written += chunk.length;
        } catch (e) {
          result.table = { bytesBefore: written, ...failure(e), partialFileLeft: (await h.tableList()).includes(name) };
        }
      }
    } finally {
      await h.release();
      await adapter.destroyStore(store);
    }
    return result;
  },

  /** Opens `store` into this worker's one handle, remembering the reason it is later lost. */
  open(layout: Layout, store: string, options: Pick<LockOptions, 'timeoutMs' | 'steal'>): Promise<Outcome> {
    return attempt(async () => {
      handle = await adapterFor(layout).openStore(store, { ...options, onLost: (r) => (lostReason = r) });
      return undefined;
    });
  },

  lostReason(): string | undefined {
    return lostReason;
  },

  /** From now on, hold back the news that this worker's lock was stolen (see heldLockLoss). */
  holdLockLoss(): void {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    heldLockLoss = { released, release };
  },

  /** Deliver any held-back lock loss now. */
  releaseLockLoss(): void {
    heldLockLoss?.release();
    heldLockLoss = undefined;
  },

  truncate(segment: string, length: number): Promise<Outcome> {
    return attempt(() => handle!.walTruncate(segment, length));
  },

  removeSegment(segment: string): Promise<Outcome> {
    return attempt(() => handle!.walRemove(segment));
  },

  /** Writes table file `name` of `length` pattern bytes. */
  tableWrite(name: string, length: number, seed: number): Promise<Outcome> {
    return attempt(() => handle!.tableWrite(name, [pattern(length, seed)]));
  },

  tableRemove(name: string): Promise<Outcome> {
    return attempt(() => handle!.tableRemove(name));
  },

  tableList(): Promise<Outcome<string[]>> {
    return attempt(async () => (await handle!.tableList()).sort());
  },

  /** The manifest's writer epoch and version, as `[epoch, version]`. */
  manifest(): Promise<Outcome<[number, number] | undefined>> {
    return attempt(async () => {
      const m = await handle!.manifestLoad();
      return m ? [m.writerEpoch, m.version] : undefined;
    });
  },

  /** Every WAL segment listed now, with its bytes as numbers (small segments only). */
  segments(): Promise<Outcome<[string, number[]][]>> {
    return attempt(async () => {
      const out: [string, number[]][] = [];
      for (const s of await handle!.walList()) out.push([s.name, [...(await handle!.walRead(s.name))]]);
      return out.sort(([a], [b]) => (a < b ? -1 : 1));
    });
  },

  /** Commits a minimal manifest of `epoch`, version `expectedVersion + 1`. */
  commit(layout: Layout, expectedVersion: number, epoch: number): Promise<Outcome> {
    return attempt(() =>
      handle!.manifestCommit(expectedVersion, {
        formatVersion: MANIFEST_FORMAT_VERSION,
        layout,
        mode: 'wal-only',
        schema: 'AAAA',
        primaryKey: [],
        writerEpoch: epoch,
        version: expectedVersion + 1,
        nextGeneration: 1,
        replayCursor: 0,
        consumerCursor: null,
        positionHint: 0,
        tables: [],
      }),
    );
  },

  append(segment: string, offset: number, length: number, seed: number): Promise<Outcome> {
    return attempt(() => handle!.walAppend(segment, offset, pattern(length, seed)));
  },

  /** The segment's bytes, as numbers (small segments only). */
  read(segment: string): Promise<Outcome<number[]>> {
    return attempt(async () => [...(await handle!.walRead(segment))]);
  },

  list(): Promise<Outcome<[string, number][]>> {
    return attempt(async () => (await handle!.walList()).map((s): [string, number] => [s.name, s.bytes]).sort());
  },

  release(): Promise<Outcome> {
    return attempt(() => handle!.release());
  },

  destroy(layout: Layout, store: string): Promise<Outcome> {
    return attempt(() => adapterFor(layout).destroyStore(store));
  },

  /** The pattern `append(…, length, seed)` writes, for comparisons in the page. */
  pattern(length: number, seed: number): number[] {
    return [...pattern(length, seed)];
  },
};

export type StorageWorkerApi = typeof api;

Comlink.expose(api);
