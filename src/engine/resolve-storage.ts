// Turns the `storage` option into an adapter. Browser layouts register themselves here (from
// the worker host), so the core never imports browser code.

import { MemWalError } from '../util/errors.js';
import type { StorageOption } from './options.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { sharedMemoryStorage } from '../storage/memory.js';

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
  // Here: outside memwal's worker host (Node, Deno, an edge runtime, or a browser page).
  const fromPage = 'on a browser page use openMemWal / destroyMemWal, which run memwal in a worker';
  if (storage === undefined) {
    throw new MemWalError(
      'InvalidArgument',
      `option storage: MemWal.open and MemWal.destroy need it named here ('memory' or a StorageAdapter such as NodeFileStorage); ${fromPage} with the browser's storage as default`,
    );
  }
  throw new MemWalError(
    'NotSupported',
    `option storage: '${storage}' is reached from a browser worker, not from here; ${fromPage} (or host a store in your own worker with memwal/worker)`,
  );
}
