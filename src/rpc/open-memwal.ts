// openMemWal: a store opened from the browser main thread. It validates the options here (before
// any worker starts), joins an open of the same store in this page (realm.ts) or starts its
// worker link (worker-link.ts, or tabs/ under `tabs: 'share'`), and returns the client (client.ts).

import type { Schema } from 'apache-arrow';
import type { RowsOf, SchemaColumn } from '../data/define-schema.js';
import type { IndexSpec } from '../data/index-keys.js';
import type { OpenHooks } from '../engine/memwal.js';
import { type MemWalOptions, resolveOptions } from '../engine/options.js';
import { MemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { MemWalClient } from './client.js';
import { schemaToWire } from './client-wire.js';
import type { WireOpenOptions, WireStorage } from './protocol.js';
import { openHandle } from './realm.js';
import { TabsLink } from './tabs/tabs.js';
import { openThroughTestHook } from './test-hook.js';
import { type ClientLink, NO_WORKERS_MESSAGE, type WorkerLike, openWorkerLink } from './worker-link.js';

/**
 * `MemWalOptions` for the main thread. `storage` is `'opfs'`, `'indexeddb'`, `'memory'` (that
 * worker's own registry) or undefined (OPFS where the worker has sync access handles, else
 * IndexedDB); an adapter object cannot be posted — host it in your own worker with
 * `memwal/worker` and pass that worker here.
 */
export type OpenMemWalOptions = Omit<MemWalOptions, 'storage'> & {
  storage?: WireStorage;
  /**
   * An already-started worker that calls `hostMemWal()` (memwal/worker). It is yours: `close()`
   * and `abort()` detach from it but do not terminate it. Not with `tabs: 'share'` (a new leader
   * tab must be able to start a worker: give `workerUrl`).
   */
  worker?: WorkerLike;
  /** URL of a module worker script that calls `hostMemWal()`, for bundlers that cannot follow memwal's default. */
  workerUrl?: string | URL;
  /**
   * `'exclusive'` (default): this client's worker is the store's only writer; another tab's open
   * waits for it (or fails `Locked`, or steals). `'share'`: every tab of the origin that opens the
   * store with `'share'` uses it at once: the tab holding the lock hosts it (the leader), the
   * others forward their calls there, and another tab takes over when the leader tab closes,
   * reloads or crashes (calls it had accepted reject `LeaderChanged`). Needs Web Locks and
   * BroadcastChannel.
   */
  tabs?: 'exclusive' | 'share';
};

/** `OpenMemWalOptions` whose schema types the rows (`defineSchema`) and whose key names its columns. */
export type TypedOpenMemWalOptions<S extends Schema, K extends string> = Omit<OpenMemWalOptions, 'schema' | 'primaryKey' | 'indexes'> & {
  schema: S;
  primaryKey?: K[];
  /** Ordered indexes on the schema's columns (a column the schema lacks does not compile). */
  indexes?: Record<string, IndexSpec<SchemaColumn<S>>>;
};

/** Options as posted, validated here first (InvalidArgument before any worker starts). */
function toWire(options: OpenMemWalOptions): { wire: WireOpenOptions; logger: Logger; tabs: 'exclusive' | 'share' } {
  if (typeof options !== 'object' || options === null) throw new MemWalError('InvalidArgument', 'options must be an object');
  const { worker, workerUrl, tabs = 'exclusive', ...rest } = options;
  if (typeof rest.storage === 'object' && rest.storage !== null) {
    throw new MemWalError('InvalidArgument', 'option storage: an adapter object cannot be posted to a worker; host it with memwal/worker');
  }
  if (tabs !== 'exclusive' && tabs !== 'share') throw new MemWalError('InvalidArgument', "option tabs: must be 'exclusive' or 'share'");
  if (worker !== undefined && workerUrl !== undefined)
    throw new MemWalError('InvalidArgument', 'option worker: give worker or workerUrl, not both');
  if (worker !== undefined && (typeof worker !== 'object' || worker === null || typeof worker.postMessage !== 'function')) {
    throw new MemWalError('InvalidArgument', 'option worker: must be a Worker running hostMemWal()');
  }
  if (worker !== undefined && tabs === 'share') {
    throw new MemWalError(
      'InvalidArgument',
      "option worker: not with tabs: 'share' (each tab that becomes the leader starts its own worker; give workerUrl instead)",
    );
  }
  if (workerUrl !== undefined && typeof workerUrl !== 'string' && !(workerUrl instanceof URL)) {
    throw new MemWalError('InvalidArgument', 'option workerUrl: must be a string or a URL');
  }
  const resolved = resolveOptions(rest as MemWalOptions);
  const { schema, logger: _logger, ...plain } = rest;
  return { wire: { ...plain, schema: schemaToWire(schema) }, logger: resolved.logger, tabs };
}

/**
 * Open a store in a dedicated module worker (one per call; or in `options.worker`) and return
 * its main-thread client. With a schema from `defineSchema` the client's rows are typed, and
 * `primaryKey` must name its columns. `hooks.onStateChange` sees every state from the first
 * one: `'waiting-for-lock'` while another writer holds the store, then `'open'` (also on an
 * uncontended open), before this resolves. With `persist: true` the client requests
 * `navigator.storage.persist()` here, on the main thread (`client.persisted`). With
 * `tabs: 'share'` the store is shared by every tab that opens it so (see `OpenMemWalOptions.tabs`).
 *
 * A store this page already has open (or is opening) is joined, in every `tabs` mode: the new
 * client shares that open's worker at once instead of waiting on its own lock (React
 * StrictMode's open → close → open, a module re-run by HMR). The store stays open until the last
 * client of the page lets go: `close()` of one client closes only it, and so does `abort()` (it
 * never waits on I/O, but the other clients keep the store: an HMR `dispose` or an effect's
 * cleanup that aborts must not pull the store from under the components still using it); the
 * last `close()` (`abort()`) closes (aborts) the store. A join must give the open's options
 * (`lockTimeoutMs`, `steal`, `persist`, `onSchemaMismatch` and `logger` aside): another `schema`,
 * `primaryKey`, `storage`, `tabs`, `workerUrl`... rejects `InvalidArgument` naming the option. A
 * store opened on a `worker` you pass is joined only by opens that pass the same worker.
 *
 * Rejects as `MemWal.open` does (`InvalidArgument` before anything starts, `Locked`,
 * `NotSupported`, `Corruption`, ...), with `InvalidArgument` for an adapter object in `storage`,
 * `NotSupported` when no module worker can be started, its script fails to load (the message
 * names it) or it never answers, and `Closed` when the worker dies during open. Browser main
 * thread (any context with `Worker`).
 */
export function openMemWal<S extends Schema, K extends SchemaColumn<S> = never>(
  options: TypedOpenMemWalOptions<S, K>,
  hooks?: OpenHooks,
): Promise<MemWalClient<RowsOf<S, K>>>;
export async function openMemWal(options: OpenMemWalOptions, hooks: OpenHooks = {}): Promise<MemWalClient> {
  const underTest = openThroughTestHook(openMemWal as (o: OpenMemWalOptions, h: OpenHooks) => Promise<MemWalClient>, options, hooks); // memwal/playwright's init script only
  if (underTest) return underTest;
  const { wire, logger, tabs } = toWire(options);
  if (typeof Worker !== 'function' && options.worker === undefined) throw new MemWalError('NotSupported', NO_WORKERS_MESSAGE);
  // A store this page already opens joins that open (realm.ts): no second worker, no wait on our own lock.
  const workerUrl = options.workerUrl === undefined ? undefined : String(options.workerUrl);
  const link = await openHandle(
    { wire, tabs, workerUrl },
    options.worker,
    async (): Promise<ClientLink> =>
      tabs === 'share'
        ? new TabsLink(wire, options, logger)
        : await openWorkerLink(options, logger, { name: wire.name, storage: wire.storage }),
    options.steal === true,
  );
  const client = new MemWalClient(link, wire.name, logger, hooks);
  if (options.persist) client.requestPersist();
  try {
    await client.callOpen(wire);
  } catch (e) {
    await client.abort();
    throw e;
  }
  return client;
}
