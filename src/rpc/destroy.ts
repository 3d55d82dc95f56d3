// destroyMemWal(): delete a browser store from the main thread, through a short-lived worker
// (OPFS and the store's IndexedDB records are reached from there). Browser main thread.

import { MemWalError } from '../util/errors.js';
import type { WireStorage } from './protocol.js';
import { type WorkerLike, fromWire, openWorkerLink } from './worker-link.js';

/** Options of `destroyMemWal`: where the store lives, and which worker reaches it. */
export interface DestroyMemWalOptions {
  /** As in `openMemWal`; undefined: the default layout (OPFS where sync handles exist, which also clears IndexedDB). */
  storage?: WireStorage;
  /** A worker running `hostMemWal()`; it stays yours. */
  worker?: WorkerLike;
  /** A module worker script that calls `hostMemWal()`, started and ended here. */
  workerUrl?: string | URL;
}

/**
 * Delete store `name` and all its data (WAL, table files, manifest) from the main thread: starts
 * a worker, deletes there, ends the worker. Rejects `Locked` while a writer (this tab's or
 * another's, `tabs: 'share'` included) has the store open — close it first; `InvalidArgument`
 * for a bad name; `NotSupported` when no worker can start. A store that does not exist is no
 * error. Browser main thread; in-process code uses `MemWal.destroy`.
 */
export async function destroyMemWal(name: string, options: DestroyMemWalOptions = {}): Promise<void> {
  if (typeof name !== 'string' || !/^[A-Za-z0-9._-]{1,200}$/.test(name)) {
    throw new MemWalError('InvalidArgument', 'name: must be 1-200 characters of A-Z a-z 0-9 . _ -');
  }
  if (options.worker !== undefined && options.workerUrl !== undefined) {
    throw new MemWalError('InvalidArgument', 'option worker: give worker or workerUrl, not both');
  }
  const link = await openWorkerLink(options, console, undefined, 'destroyMemWal');
  try {
    await link.remote.destroy(name, options.storage);
  } catch (e) {
    throw fromWire(e, `destroy ${name}`);
  } finally {
    await link.end(true);
  }
}
