// Chooses the browser storage adapter: OPFS where sync access handles exist (dedicated workers),
// else IndexedDB; and where it runs: in an I/O worker of the store's own (remote-storage.ts), so
// that sync I/O and table building never block the engine's thread, where nested workers exist.
// One adapter instance per layout per JavaScript context. Browser contexts.

import type { StorageAdapter } from '../storage/adapter.js';
import { IndexedDbStorage } from '../storage/indexeddb.js';
import { OpfsStorage, opfsSyncHandlesAvailable } from '../storage/opfs.js';
import { type IoEndpoint, RemoteStorage } from './remote-storage.js';

/** The browser layouts, as named by the `storage` option. */
export type BrowserLayout = 'opfs' | 'indexeddb';

/** Where a browser adapter does its work. */
export interface BrowserStorageOptions {
  /**
   * Run storage I/O and background jobs in a dedicated I/O worker started from this context
   * (default: wherever `Worker` exists here), or on this thread (`false`).
   */
  ioWorker?: boolean;
}

const instances = new Map<string, StorageAdapter>();

/** True where this context can start a module worker (dedicated workers and pages; not Chromium's shared workers). */
function canStartWorkers(): boolean {
  return typeof (globalThis as { Worker?: unknown }).Worker === 'function';
}

/** Starts the I/O worker for `layout` and tells it which layout to serve. */
function spawnIoWorker(layout: BrowserLayout): IoEndpoint {
  const worker = new Worker(new URL('./io.worker.js', import.meta.url), { type: 'module', name: `memwal-io-${layout}` });
  worker.postMessage({ layout });
  return worker as unknown as IoEndpoint;
}

/**
 * This context's adapter for `layout` (the same instance on every call with the same options).
 * Never throws: where sync access handles are missing, the `'opfs'` adapter's `openStore`
 * rejects `NotSupported`, so a store whose manifest pins OPFS is never silently written elsewhere.
 */
export function resolveBrowserStorage(layout: BrowserLayout, options: BrowserStorageOptions = {}): StorageAdapter {
  const remote = (options.ioWorker ?? true) && canStartWorkers();
  const key = `${layout}:${remote ? 'io-worker' : 'inline'}`;
  let adapter = instances.get(key);
  if (!adapter) {
    if (remote) adapter = new RemoteStorage(layout, () => spawnIoWorker(layout));
    else adapter = layout === 'opfs' ? new OpfsStorage() : new IndexedDbStorage();
    instances.set(key, adapter);
  }
  return adapter;
}

/**
 * The default browser adapter: OPFS when this context has `FileSystemSyncAccessHandle` and
 * `navigator.storage.getDirectory` (dedicated workers of current browsers), else IndexedDB
 * (pages, shared and service workers, browsers without sync handles), run in an I/O worker where
 * this context can start one. A feature check only: where `getDirectory` exists but rejects (some
 * private modes), opening fails `NotSupported`.
 */
export function defaultBrowserStorage(options: BrowserStorageOptions = {}): StorageAdapter {
  return resolveBrowserStorage(opfsSyncHandlesAvailable() ? 'opfs' : 'indexeddb', options);
}
