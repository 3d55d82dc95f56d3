// Dedicated module worker of the conformance page (comlink): runs memwal's storage conformance
// cases and the quota probe, and holds one store handle that the page drives step by step.

import * as Comlink from 'comlink';
import { MemWalError } from '../../src/errors.js';
import { MANIFEST_FORMAT_VERSION } from '../../src/manifest/manifest.js';
import type { LockOptions, StoreHandle } from '../../src/storage/adapter.js';
import { resolveBrowserStorage } from '../../src/storage/browser.js';
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

const api = {
  async conformance(layout: Layout): Promise<CaseResult[]> {
    const results: CaseResult[] = [];
    for (const c of conformanceCases(() => resolveBrowserStorage(layout))) {
      try {
        await c.run();
        results.push({ layout, name: c.name, ok: true });
      } catch (e) {
        const error = e instanceof MemWalError ? `${e.code}: ${e.message}` : String((e as Error)?.stack ?? e);
        results.push({ layout, name: c.name, ok: false, error });
      }
    }
    return results;
  },

  /** 4 MiB WAL appends until one fails; then, with the segment removed, 4 MiB table files until one fails. */
  async quota(layout: Layout): Promise<QuotaResult> {
    const adapter = resolveBrowserStorage(layout);
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
      handle = await resolveBrowserStorage(layout).openStore(store, { ...options, onLost: (r) => (lostReason = r) });
      return undefined;
    });
  },

  lostReason(): string | undefined {
    return lostReason;
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
    return attempt(() => resolveBrowserStorage(layout).destroyStore(store));
  },

  /** The pattern `append(…, length, seed)` writes, for comparisons in the page. */
  pattern(length: number, seed: number): number[] {
    return [...pattern(length, seed)];
  },
};

export type StorageWorkerApi = typeof api;

Comlink.expose(api);
