// Chooses the browser storage adapter: OPFS where sync access handles exist (dedicated workers),
// else IndexedDB; and where it runs: in an I/O worker of the store's own (remote-storage.ts), so
// that sync I/O and table building never block the engine's thread, where nested workers exist
// and this context knows a script that serves the I/O role (`setIoWorkerStarter`: memwal's
// default worker starts its own script, memwal/worker's entry io.worker.ts). The I/O role itself
// (`serveIoRole`). One adapter instance per layout per JavaScript context. Browser contexts.

import type { StorageAdapter } from '../storage/adapter.js';
import { IndexedDbStorage } from '../storage/indexeddb.js';
import { OpfsStorage } from '../storage/opfs.js';
import { opfsSyncHandlesAvailable } from '../storage/opfs-files.js';
import { serveTableWriter, TableWriterClient } from './table-writer.js';
import { type IoScope, serveStorage } from './io-host.js';
import { type IoEndpoint, RemoteStorage } from './remote-storage.js';
import { opfsPlacement } from './opfs-plane.js';
import { placeStorage } from '../lsm/io-plane.js';

/** The browser layouts, as named by the `storage` option. */
export type BrowserLayout = 'opfs' | 'indexeddb';

/** Where a browser adapter does its work. */
export interface BrowserStorageOptions {
  /**
   * Run storage I/O and background jobs in a dedicated I/O worker started from this context
   * (default: wherever `Worker` exists here and `setIoWorkerStarter` named its script), or on
   * this thread (`false`).
   */
  ioWorker?: boolean;
}

const instances = new Map<string, StorageAdapter>();

/** True where this context can start a module worker (dedicated workers and pages; not Chromium's shared workers). */
function canStartWorkers(): boolean {
  return typeof (globalThis as { Worker?: unknown }).Worker === 'function';
}

/** The name an I/O worker is started under: its role flag, and its layout in devtools. */
const IO_WORKER_NAME = 'memwal-io-';

/** Starts a dedicated module worker named `name` from a script that serves the I/O role (`serveIoRole`). */
export type IoWorkerStarter = (name: string) => IoEndpoint;

let ioWorkerStarter: IoWorkerStarter | undefined;

/**
 * Say how this context starts an I/O worker: memwal's default worker starts its own script (one
 * script for both roles, so an app ships Arrow and the storage code once), memwal/worker's entry
 * starts io.worker.ts. A context that never calls it keeps its storage I/O on its own thread.
 */
export function setIoWorkerStarter(start: IoWorkerStarter): void {
  ioWorkerStarter = start;
}

/**
 * True where `resolveBrowserStorage(layout, options)` gives an adapter whose stores run in an I/O
 * worker (its I/O plane is remote): `options.ioWorker` is not `false`, this context can start
 * workers, and it knows an I/O worker script (`setIoWorkerStarter`).
 */
export function runsInIoWorker(options: BrowserStorageOptions = {}): boolean {
  return (options.ioWorker ?? true) && canStartWorkers() && ioWorkerStarter !== undefined;
}

/**
 * The layout the I/O worker a starter is asked for under `name` serves; `undefined` for the OPFS
 * table writer thread (a starter that throws for it leaves the I/O worker writing its tables itself).
 */
export function ioWorkerLayout(name: string): BrowserLayout | undefined {
  const role = name.slice(IO_WORKER_NAME.length);
  return role === 'opfs' || role === 'indexeddb' ? role : undefined;
}

/** True in a worker started as an I/O worker (by its name), which should call `serveIoRole`. */
export function isIoWorker(scope: { name?: string }): boolean {
  return scope.name?.startsWith(IO_WORKER_NAME) === true;
}

/**
 * Starts the I/O worker for `layout` and tells it which layout to serve. For OPFS it also gives
 * the I/O worker one end of a port to its table writer thread, and starts that thread (a second
 * worker from the same script, here rather than from the I/O worker: nested once, as the I/O
 * worker is) with the other end only when the engine is about to have a table built or written
 * (`IoEndpoint.tablesAhead`), not at open: a second script evaluated beside the I/O worker's
 * and the open's own work on a two-core machine made the open slower (bench/results/HISTORY.md,
 * "Opening after a reload: the regression"). Until the thread said it is ready the I/O worker
 * writes its tables itself. The endpoint returned stands for both: an error event of either is
 * the I/O worker's (the store poisons, as when the I/O worker dies), and terminating it ends both.
 * Exported for its test (browser.test.ts).
 */
export function spawnIoWorker(start: IoWorkerStarter, layout: BrowserLayout): IoEndpoint {
  const io = start(`${IO_WORKER_NAME}${layout}`);
  const channel = layout === 'opfs' && typeof MessageChannel === 'function' ? new MessageChannel() : undefined;
  io.postMessage({ layout, tableWriter: channel?.port2 } satisfies IoRoleStart, channel ? [channel.port2] : []);
  if (!channel) return io;
  type Listener = (ev: Event) => void;
  const on = (target: IoEndpoint, type: 'message' | 'error', listener: Listener): void =>
    (target.addEventListener as (type: string, listener: Listener) => void)(type, listener);
  const errorListeners: Listener[] = [];
  let writer: IoEndpoint | undefined;
  let asked = false;
  let ended = false;
  return {
    postMessage: (message, transfer) => io.postMessage(message, transfer),
    addEventListener: (type: 'message' | 'error', listener: Listener) => {
      on(io, type, listener);
      if (type !== 'error') return;
      errorListeners.push(listener);
      if (writer) on(writer, 'error', listener);
    },
    terminate: () => {
      ended = true;
      io.terminate?.();
      writer?.terminate?.();
    },
    tablesAhead: () => {
      if (ended || asked) return;
      asked = true;
      try {
        writer = start(`${IO_WORKER_NAME}tables`);
      } catch {
        channel.port1.close(); // no second worker here: the I/O worker writes its tables itself
        return;
      }
      for (const listener of errorListeners) on(writer, 'error', listener);
      writer.postMessage({ tableWriter: channel.port1 } satisfies IoRoleStart, [channel.port1]);
    },
  } as IoEndpoint;
}

/** The first message a worker started for the I/O role gets: which role, on which layout. */
type IoRoleStart = { layout: BrowserLayout; tableWriter?: MessagePort } | { layout?: undefined; tableWriter: MessagePort };

/** The part of a dedicated worker's global the I/O role uses. */
export type IoRoleScope = IoScope & {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void, options?: { once?: boolean }): void;
};

/** How a worker serves the I/O role (`serveIoRole`). */
export interface IoRoleOptions {
  /**
   * Serve the stores over a wrapper of the layout's adapter (fault injection, tracing): in this
   * worker, under the I/O plane's seam, so the engine's stores stay placed here and their flushes
   * and compactions are still built here, next to the files. The wrapper is an adapter of its own,
   * placed inline (lsm/io-plane.ts): every WAL entry and table file passes through it. The OPFS
   * table writer thread is not used then (its writes would bypass the wrapper).
   */
  wrap?(adapter: StorageAdapter, layout: BrowserLayout): StorageAdapter;
}

/**
 * Serve the I/O role on `scope` (a dedicated worker's global): storage calls and background jobs
 * on the layout the engine names in its first message, answered `{ ready: layout }`.
 */
export function serveIoRole(scope: IoRoleScope, options: IoRoleOptions = {}): void {
  scope.addEventListener(
    'message',
    (ev: MessageEvent) => {
      const first = ev.data as IoRoleStart;
      if (first.layout === undefined) return serveTableWriter(first.tableWriter);
      const { layout, tableWriter } = first;
      if (options.wrap) {
        tableWriter?.close(); // a table written on that thread would not pass the wrapper
        serveStorage(scope, options.wrap(layout === 'opfs' ? new OpfsStorage() : new IndexedDbStorage(), layout));
      } else if (layout === 'opfs') {
        // The OPFS table writer thread also builds flush tables (the store's plane writes them there).
        const writer = tableWriter ? new TableWriterClient(tableWriter) : undefined;
        const adapter = new OpfsStorage({ tableWriter: writer });
        const placement = opfsPlacement(adapter);
        placeStorage(adapter, placement);
        serveStorage(scope, adapter, writer && { builder: writer, placement });
      } else serveStorage(scope, new IndexedDbStorage());
      scope.postMessage({ ready: layout }, []);
    },
    { once: true },
  );
}

/**
 * This context's adapter for `layout` (the same instance on every call with the same options).
 * Never throws: where sync access handles are missing, the `'opfs'` adapter's `openStore`
 * rejects `NotSupported`, so a store whose manifest pins OPFS is never silently written elsewhere.
 */
export function resolveBrowserStorage(layout: BrowserLayout, options: BrowserStorageOptions = {}): StorageAdapter {
  const start = runsInIoWorker(options) ? ioWorkerStarter : undefined;
  const key = `${layout}:${start ? 'io-worker' : 'inline'}`;
  let adapter = instances.get(key);
  if (!adapter) {
    if (start) adapter = new RemoteStorage(layout, () => spawnIoWorker(start, layout));
    else if (layout === 'opfs') {
      const opfs = new OpfsStorage();
      placeStorage(opfs, opfsPlacement(opfs)); // its WAL entries appended in two parts, without a joined copy
      adapter = opfs;
    } else adapter = new IndexedDbStorage();
    instances.set(key, adapter);
  }
  return adapter;
}

/**
 * The default browser adapter: OPFS when this context has `FileSystemSyncAccessHandle` and
 * `navigator.storage.getDirectory` (dedicated workers of current browsers), else IndexedDB
 * (pages, shared and service workers, browsers without sync handles), run in an I/O worker where
 * this context can start one (`BrowserStorageOptions.ioWorker`). A feature check only: where
 * `getDirectory` exists but rejects (some private modes), opening fails `NotSupported`.
 */
export function defaultBrowserStorage(options: BrowserStorageOptions = {}): StorageAdapter {
  return resolveBrowserStorage(opfsSyncHandlesAvailable() ? 'opfs' : 'indexeddb', options);
}
