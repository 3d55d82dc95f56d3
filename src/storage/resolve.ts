// Turns the `storage` option into an adapter. Browser layouts register themselves here (from
// the worker host), so the core never imports browser code.

import { MemWalError } from '../errors.js';
import type { StorageOption } from '../options.js';
import type { StorageAdapter } from './adapter.js';
import { sharedMemoryStorage } from './memory.js';

type NamedLayout = 'opfs' | 'indexeddb';
let browserResolver: ((layout: NamedLayout | undefined) => StorageAdapter) | undefined;

/**
 * Install the resolver for `'opfs'`, `'indexeddb'` and the browser default (`undefined`).
 * Called by memwal's worker host; in-process users outside a browser never need it.
 */
export function setBrowserStorageResolver(fn: (layout: NamedLayout | undefined) => StorageAdapter): void {
  browserResolver = fn;
}

/**
 * The adapter for a `storage` option. Throws `InvalidArgument` when in-process code names no
 * storage (there is no silent in-memory default) and `NotSupported` for a browser layout
 * outside a browser worker.
 */
export function resolveStorage(storage: StorageOption | undefined): StorageAdapter {
  if (typeof storage === 'object') return storage;
  if (storage === 'memory') return sharedMemoryStorage();
  if (browserResolver) return browserResolver(storage);
  // A browser page (or a worker without memwal's host): OPFS and the default layout are reached
  // from memwal's worker, through openMemWal / destroyMemWal.
  const onPage = typeof (globalThis as { document?: unknown }).document === 'object';
  const fromPage = 'on a browser page use openMemWal / destroyMemWal, which run memwal in a worker';
  if (storage === undefined) {
    throw new MemWalError(
      'InvalidArgument',
      onPage
        ? `option storage: MemWal.open and MemWal.destroy run in this thread, where no storage is the default; ${fromPage}, or name storage ('memory' or a StorageAdapter)`
        : "option storage: must be named outside the browser ('memory' or a StorageAdapter such as NodeFileStorage)",
    );
  }
  throw new MemWalError(
    'NotSupported',
    onPage
      ? `option storage: '${storage}' is reached from a worker, not from this thread; ${fromPage} (or host a store in your own worker with memwal/worker)`
      : `option storage: '${storage}' is only available in a browser worker (openMemWal, destroyMemWal or memwal/worker)`,
  );
}
