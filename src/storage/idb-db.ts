// The one IndexedDB database of memwal ("memwal", version 1, fixed object stores keyed by
// [store, …]) shared by both browser layouts: connection, strict transactions, the manifest
// compare-and-set, and navigator.storage figures. Browser contexts with IndexedDB.

import { openDB } from 'idb';
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { StorageEstimate } from './adapter.js';
import { checkManifestSuccessor, decideManifestCommit } from './fencing.js';

/** Written to disk: never rename these or renumber the version without a migration. */
export const DB_NAME = 'memwal';
export const DB_VERSION = 1;

/** A WAL chunk key of the IndexedDB layout: `[store, segmentName, offset, byteLength]`. */
export type WalChunkKey = [string, string, number, number];
/** A table chunk key of the IndexedDB layout: `[store, tableName, chunkIndex]`. */
export type TableChunkKey = [string, string, number];

/** The object stores of the "memwal" database (version 1), for `idb`'s typed API. */
export interface MemwalDbSchema extends DBSchema {
  /** Key: store name. Value: the committed Manifest (both layouts). */
  manifests: { key: string; value: Manifest };
  /** IndexedDB layout only: one record per WAL append. */
  wal: { key: WalChunkKey; value: Uint8Array };
  /** IndexedDB layout only: table files in chunks of at most TABLE_CHUNK_BYTES. */
  tables: { key: TableChunkKey; value: Uint8Array };
}

/** This context's connection to the "memwal" database. */
export type MemwalDb = IDBPDatabase<MemwalDbSchema>;
type Names = StoreNames<MemwalDbSchema>;

let connection: Promise<MemwalDb> | undefined;
const closeListeners = new Set<(reason: string) => void>();

/** Forgets and closes this context's connection and tells every open store handle. */
function dropConnection(reason: string): void {
  const current = connection;
  connection = undefined;
  void current?.then(
    (db) => db.close(),
    () => undefined,
  );
  for (const listener of [...closeListeners]) listener(reason);
}

/**
 * This context's connection to the "memwal" database, opened (and created) on first use. When
 * another context needs a version change (an upgrade or `deleteDatabase`) the connection closes
 * at once and every `onDatabaseClosed` listener fires; the next call reopens. Rejects `IOError`
 * (or `NotSupported` where IndexedDB is missing or the stored version is newer).
 */
export function memwalDb(): Promise<MemwalDb> {
  if (typeof indexedDB === 'undefined') {
    return Promise.reject(new MemWalError('NotSupported', 'IndexedDB is not available in this context'));
  }
  connection ??= openDB<MemwalDbSchema>(DB_NAME, DB_VERSION, {
    upgrade(db) {
      for (const name of ['manifests', 'wal', 'tables'] as const) {
        if (!db.objectStoreNames.contains(name)) db.createObjectStore(name);
      }
    },
    blocking: () => dropConnection('the IndexedDB database "memwal" is being upgraded or deleted (versionchange)'),
    terminated: () => dropConnection('the browser closed the IndexedDB database "memwal"'),
  }).catch((e: unknown) => {
    connection = undefined;
    throw toMemWalError(e, `opening IndexedDB "${DB_NAME}"`, (e as Error)?.name === 'VersionError' ? 'NotSupported' : 'IOError');
  });
  return connection;
}

/** Calls `listener(reason)` when this context's connection is closed under it; returns the unsubscribe. */
export function onDatabaseClosed(listener: (reason: string) => void): () => void {
  closeListeners.add(listener);
  return () => closeListeners.delete(listener);
}

/**
 * How long one transaction may take before it is aborted (`IOError`), unless the caller gives
 * its own limit. Healthy transactions take milliseconds; the limit exists so that a transaction
 * stuck behind another context's never keeps its object stores, and so the calls after it,
 * blocked for ever.
 */
export const TRANSACTION_LIMIT_MS = 10_000;

/**
 * Runs `work` in one transaction over `names` (readwrite ones with `durability: 'strict'`), and
 * resolves once the transaction has committed. If `work` throws, or the transaction aborts, it
 * rejects with the MemWalError `work` threw or the transaction's error (`tx.error`, where
 * IndexedDB puts a `QuotaExceededError`) mapped by `toMemWalError(…, context)`. A transaction not
 * finished after `limitMs` is aborted and rejects `IOError` (outcome unknown if it was already
 * committing); nothing of it is left to block later transactions.
 */
export async function inTransaction<N extends Names[], M extends 'readonly' | 'readwrite', T>(
  names: N,
  mode: M,
  context: string,
  work: (tx: IDBPTransaction<MemwalDbSchema, N, M>) => Promise<T>,
  limitMs = TRANSACTION_LIMIT_MS,
): Promise<T> {
  const db = await memwalDb();
  let tx: IDBPTransaction<MemwalDbSchema, N, M>;
  try {
    tx = db.transaction(names, mode, mode === 'readwrite' ? { durability: 'strict' } : {});
  } catch (e) {
    throw toMemWalError(e, context);
  }
  const abort = (): void => {
    try {
      tx.abort();
    } catch {
      // Already committed or aborted: tx.error (if any) says why.
    }
  };
  const run = (async () => {
    try {
      const result = await work(tx);
      await tx.done;
      return result;
    } catch (e) {
      abort();
      await tx.done.catch(() => undefined);
      throw toMemWalError(e instanceof MemWalError ? e : (tx.error ?? e), context);
    }
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      run.catch(() => undefined);
      abort();
      reject(new MemWalError('IOError', `${context}: the transaction did not finish within ${limitMs} ms and was aborted`));
    }, limitMs);
  });
  try {
    return await Promise.race([run, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Key range of every record of `store` in an object store keyed `[store, …]`. */
export function storeRange(store: string): IDBKeyRange {
  return IDBKeyRange.bound([store], [store, []]);
}

/** Key range of every chunk of file `name` of `store`, from chunk key `from` (default: the first). */
export function fileRange(store: string, name: string, from?: number): IDBKeyRange {
  return IDBKeyRange.bound(from === undefined ? [store, name] : [store, name, from], [store, name, []]);
}

/** The committed manifest of `store`, or undefined. Rejects `IOError`. */
export function loadManifest(store: string): Promise<Manifest | undefined> {
  return inTransaction(['manifests'], 'readonly', `loading the manifest of "${store}"`, (tx) => tx.objectStore('manifests').get(store));
}

/**
 * The manifest compare-and-set of StoreHandle.manifestCommit, in one strict transaction:
 * `InvalidArgument` unless `next.version` is `expectedVersion + 1`; `Fenced` if the stored writer
 * epoch is newer than `next`'s (even at the expected version); `IOError` on any other mismatch.
 */
export async function commitManifest(store: string, expectedVersion: number, next: Manifest): Promise<void> {
  checkManifestSuccessor(expectedVersion, next);
  await inTransaction(['manifests'], 'readwrite', `committing the manifest of "${store}"`, async (tx) => {
    const manifests = tx.objectStore('manifests');
    decideManifestCommit(expectedVersion, next, await manifests.get(store));
    await manifests.put(next, store);
  });
}

/** Deletes every record of `store` (manifest, WAL chunks, table chunks) in one strict transaction. */
export function deleteStoreRecords(store: string): Promise<void> {
  return inTransaction(['manifests', 'wal', 'tables'], 'readwrite', `destroying store "${store}"`, async (tx) => {
    await Promise.all([
      tx.objectStore('manifests').delete(store),
      tx.objectStore('wal').delete(storeRange(store)),
      tx.objectStore('tables').delete(storeRange(store)),
    ]);
  });
}

/**
 * `navigator.storage.estimate()` and `persisted()`, for the whole origin (both layouts share it).
 * In headless Chromium the quota is a static usage + 10 GiB, not the enforced limit. Fields the
 * context cannot answer are left out.
 */
export async function browserStorageEstimate(): Promise<StorageEstimate> {
  const storage = (globalThis as { navigator?: { storage?: StorageManager } }).navigator?.storage;
  if (!storage?.estimate) return {};
  try {
    const { usage, quota } = await storage.estimate();
    const persisted = typeof storage.persisted === 'function' ? await storage.persisted() : undefined;
    return { usageBytes: usage, quotaBytes: quota, persisted };
  } catch (e) {
    throw toMemWalError(e, 'navigator.storage.estimate');
  }
}

/** `bytes` itself when it spans its whole ArrayBuffer, else a copy (IndexedDB clones whole buffers). */
export function ownBuffer(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer
    ? bytes
    : bytes.slice();
}

export { concatBytes } from '../util/bytes.js';
