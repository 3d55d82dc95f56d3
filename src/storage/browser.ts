// Chooses the browser storage adapter: OPFS where sync access handles exist (dedicated workers),
// else IndexedDB. One adapter instance per layout per JavaScript context. Browser contexts.

import type { StorageAdapter } from './adapter.js';
import { IndexedDbStorage } from './indexeddb.js';
import { OpfsStorage, opfsSyncHandlesAvailable } from './opfs.js';

/** The browser layouts, as named by the `storage` option. */
export type BrowserLayout = 'opfs' | 'indexeddb';

const instances = new Map<BrowserLayout, StorageAdapter>();

/**
 * This context's adapter for `layout` (the same instance on every call). Never throws: where
 * sync access handles are missing, the `'opfs'` adapter's `openStore` rejects `NotSupported`, so
 * a store whose manifest pins OPFS is never silently written elsewhere.
 */
export function resolveBrowserStorage(layout: BrowserLayout): StorageAdapter {
  let adapter = instances.get(layout);
  if (!adapter) {
    adapter = layout === 'opfs' ? new OpfsStorage() : new IndexedDbStorage();
    instances.set(layout, adapter);
  }
  return adapter;
}

/**
 * The default browser adapter: OPFS when this context has `FileSystemSyncAccessHandle` and
 * `navigator.storage.getDirectory` (dedicated workers of current browsers), else IndexedDB
 * (pages, shared and service workers, browsers without sync handles). A feature check only:
 * where `getDirectory` exists but rejects (some private modes), opening fails `NotSupported`.
 */
export function defaultBrowserStorage(): StorageAdapter {
  return resolveBrowserStorage(opfsSyncHandlesAvailable() ? 'opfs' : 'indexeddb');
}
