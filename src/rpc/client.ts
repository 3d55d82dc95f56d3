// MemWalClient: the MemWalApi of the browser main thread. openMemWal() starts a dedicated module
// worker (or attaches to yours, or with `tabs: 'share'` to the tab that hosts the store) hosting
// MemWal, and every call goes there over comlink; a dead worker is noticed so no call ever hangs.

import * as Comlink from 'comlink';
import type { RecordBatch, Schema, Table } from 'apache-arrow';
import type { OpenHooks } from '../engine/memwal.js';
import type {
  BackpressureStats,
  CompactionResult,
  CompactionStats,
  ReadStats,
  MemTableStats,
  StatsSnapshot,
  StorageStats,
  WalStats,
  WriteStats,
  WriterState,
} from '../metrics/stats.js';
import type {
  MemWalApi,
  OnStatsOptions,
  PutResult,
  Role,
  SchemaInfo,
  WalEntry,
  WatchInfo,
  WatchOptions,
  WatchResult,
  WatchSpec,
} from '../engine/api.js';
import { checkStatsInterval, statsView } from '../metrics/views.js';
import { nowMs, setRepeating } from '../util/schedule.js';
import type { ColumnName, RowTypesOf, RowsParam, RowsOf, SchemaColumn, UntypedRows } from '../data/define-schema.js';
import type { IndexSpec, QueryFilter } from '../data/index-keys.js';
import type { IndexStats, QueryOptions } from '../engine/query.js';
import { MemWalError, type MemWalErrorCode, errorFromWire, isMemWalError } from '../util/errors.js';
import { resolveOptions, type MemWalOptions } from '../engine/options.js';
import type { Logger } from '../util/logger.js';
import { arrowCodec, encodeArrow, isArrowBatch, isArrowTable, schemaToWire, transfersOf } from './client-wire.js';
import { type RowPlan, rowPlan, rowsToWire } from './client-rows.js';
import type { HostEvent, Page, WireArrow, WireData, WireOpenOptions, WireSignal, WireStorage, WireWatchSpec } from './protocol.js';
import { TabsLink } from './tabs/tabs.js';
import { openHandle } from './realm.js';
import { openThroughTestHook } from './test-hook.js';
import {
  type ClientLink,
  type ClientRole,
  type Remote,
  type WorkerLike,
  GOODBYE_TIMEOUT_MS,
  NO_WORKERS_MESSAGE,
  fromWire,
  openWorkerLink,
  withTimeout,
} from './worker-link.js';

export type { WorkerLike } from './worker-link.js';

type ArrowCodec = Awaited<ReturnType<typeof arrowCodec>>;

/**
 * A published stats snapshot older than this (received this long ago; the host posts one at least
 * every STATS_HEARTBEAT_MS, 250 ms, while it publishes) is not answered from: `stats()` asks the
 * worker instead, which also restarts publishing where it stopped (a new leader tab). ms.
 */
export const STATS_FRESH_MS = 1000;

/** A reader's interval of `maxWaitMsSinceLast` on the page: the longest wait the snapshots received in it showed. */
interface PageWaitWindow {
  max: number;
}

/** The reads `watch` takes (engine/memwal.ts WATCH_READS), checked here before anything is posted. */
const WATCH_KINDS = ['get', 'getMany', 'scan'] as const;

/** Watch ids, unique in the page: the clients of one page may share a connection (realm.ts). */
let nextWatchId = 1;

/** A watch of this client: what it asks and the last position it delivered (nothing older is delivered). */
interface ClientWatch {
  spec: WireWatchSpec;
  scan: boolean;
  position: number;
  /** Results in arrival order (a scan's waits for the Arrow codec). */
  chain: Promise<void>;
  listener: (value: unknown, info: WatchInfo) => void;
  onError: WatchOptions['onError'];
}

/** A tail that meets this many leader changes in a row without an entry gives up (rejects `LeaderChanged`). */
const MAX_TAIL_RESUMES = 3;

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

/**
 * Put/delete input for the wire, taken now: Arrow as a copy of its buffers, marked for transfer;
 * with a `plan` (puts), rows built into the store's columns here and transferred
 * (client-rows.ts); other rows as they are (cloned as they are posted); what is not an object
 * (bad input, which the worker refuses with its own error) crosses as it is.
 */
function wireInput(data: unknown, plan?: RowPlan): WireData {
  if (isArrowTable(data) || isArrowBatch(data)) {
    const wire = encodeArrow(data);
    return Comlink.transfer(wire, transfersOf(wire));
  }
  const built = plan && Array.isArray(data) ? rowsToWire(data, plan) : undefined;
  if (built) return Comlink.transfer(built, transfersOf(built));
  return data as WireData;
}

/**
 * A store open in a worker, used from the main thread: the same `MemWalApi` as `MemWal`, with
 * Arrow data crossing as its transferred buffers, errors as `MemWalError` with their codes, signals
 * as messages, and `tail` / `scanBatches` pulled page by page. When the worker dies (terminated,
 * crashed, out of memory) every pending and later call rejects `Closed`. After `close()` or
 * `abort()` the worker is gone, so every call (stats too) rejects `Closed`.
 * On `pagehide` and when the page turns hidden it asks the worker for `sync()`.
 * Create with `openMemWal`. Browser main thread.
 */
export class MemWalClient<R extends RowsParam = UntypedRows> implements MemWalApi<R> {
  private readonly remote: Remote;
  private readonly listeners = new Set<(s: WriterState) => void>();
  private readonly roleListeners = new Set<(role: ClientRole) => void>();
  /** Rejecters of the calls in flight (a dying worker rejects them all). */
  private readonly pending = new Set<(e: MemWalError) => void>();
  /** Undefined until the host reports the first state. */
  private state: WriterState | undefined;
  /** Set when the worker is gone or we closed: every later call rejects with it. */
  private gone: MemWalError | undefined;
  /** True when `gone` came from our own close()/abort(), not from the worker dying. */
  private ended = false;
  private closing: Promise<void> | undefined;
  private aborting: Promise<void> | undefined;
  private nextSignalId = 1;
  private readonly cleanups: (() => void)[] = [];
  private persistResult: boolean | undefined;
  /** How a put's plain rows are built here (client-rows.ts); undefined: they cross as they are. */
  private rowPlan: RowPlan | undefined;
  /** The newest stats snapshot the host published or answered, and when it arrived (nowMs). */
  private latestStats: { snapshot: StatsSnapshot; atMs: number } | undefined;
  /** The intervals of `maxWaitMsSinceLast`: `stats()` callers' and each `onStats` listener's. */
  private readonly statsWindows = new Set<PageWaitWindow>();
  private readonly pullWindow: PageWaitWindow = { max: 0 };
  /** Stop functions of the `onStats` subscriptions (ended when the client is). */
  private readonly statsSubscriptions = new Set<() => void>();
  /** Live watches by id. */
  private readonly watches = new Map<number, ClientWatch>();

  /** @internal Use `openMemWal`. */
  constructor(
    private readonly link: ClientLink,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly hooks: OpenHooks,
  ) {
    this.remote = link.remote;
    this.statsWindows.add(this.pullWindow);
    link.start({
      event: (e) => this.onEvent(e),
      dead: (reason) => this.die(reason),
      role: (role) => this.onRole(role),
      served: () => this.resubscribe(),
    });
    const doc = (globalThis as { document?: Document }).document;
    if (doc && typeof globalThis.addEventListener === 'function') {
      this.listen(globalThis as unknown as EventTarget, 'pagehide', () => this.lifecycleSync('pagehide'));
      this.listen(doc, 'visibilitychange', () => doc.visibilityState === 'hidden' && this.lifecycleSync('visibilitychange'));
    }
  }

  private listen(target: Pick<EventTarget, 'addEventListener' | 'removeEventListener'>, type: string, fn: (ev: Event) => void): void {
    target.addEventListener(type, fn);
    this.cleanups.push(() => target.removeEventListener(type, fn));
  }

  /** @internal Open the store in the worker (state events arrive before the reply). */
  callOpen(wire: WireOpenOptions): Promise<void> {
    this.rowPlan = rowPlan(wire.schema);
    return this.call('open', (r) => r.open(wire));
  }

  /** @internal Request persistent storage on the main thread (it does not exist in workers). */
  requestPersist(): void {
    const storage = (globalThis as { navigator?: { storage?: StorageManager } }).navigator?.storage;
    if (typeof storage?.persist !== 'function') return;
    storage.persist().then(
      (granted) => (this.persistResult = granted),
      (e: unknown) => this.logger.warn('memwal: navigator.storage.persist() failed', e),
    );
  }

  /**
   * The answer of `navigator.storage.persist()` when `persist: true` was given: true (granted),
   * false (refused), undefined (not requested, not answered yet, or unavailable).
   */
  get persisted(): boolean | undefined {
    return this.persistResult;
  }

  /** The writer's state as last reported by the worker ('closed' once the worker is gone). */
  get writerState(): WriterState {
    return this.state ?? 'waiting-for-lock';
  }

  /**
   * `'leader'` when this tab's worker hosts the store (always, unless `tabs: 'share'`), else
   * `'follower'`. Under `tabs: 'share'` it changes when another tab takes over.
   */
  role(): Role {
    return this.link.role();
  }

  private onEvent(e: HostEvent | undefined): void {
    if (e?.memwalEvent === 'stats') this.acceptStats(e.stats);
    else if (e?.memwalEvent === 'watch') this.onWatchResult(e.id, e.position, e.value);
    else if (e?.memwalEvent === 'watch-error') this.onWatchError(e.id, errorFromWire(e.error), e.final);
    else if (e?.memwalEvent === 'state') this.setState(e.state);
    else if (e?.memwalEvent === 'warn') this.logger.warn(e.message, ...e.details);
    else if (e?.memwalEvent === 'schema-reset') {
      try {
        this.hooks.onSchemaReset?.({ name: e.name, reason: e.reason });
      } catch (err) {
        this.logger.warn('memwal: onSchemaReset hook threw', err);
      }
    } else if (e?.memwalEvent === 'schema-change') {
      try {
        this.hooks.onSchemaChange?.(e.change);
      } catch (err) {
        this.logger.warn('memwal: onSchemaChange hook threw', err);
      }
    }
  }

  private setState(s: WriterState): void {
    if (this.state === s || this.state === 'closed') return;
    this.state = s;
    this.hooks.onStateChange?.(s);
    for (const l of [...this.listeners]) {
      try {
        l(s);
      } catch (e) {
        this.logger.warn('memwal: onStateChange listener threw', e);
      }
    }
  }

  private onRole(role: ClientRole): void {
    if (this.gone) return;
    for (const l of [...this.roleListeners]) {
      try {
        l(role);
      } catch (e) {
        this.logger.warn('memwal: onRoleChange listener threw', e);
      }
    }
  }

  private lifecycleSync(why: string): void {
    if (this.gone) return;
    this.sync().catch((e: unknown) => {
      if (!isMemWalError(e, 'Closed')) this.logger.warn(`memwal: sync on ${why} failed`, e);
    });
  }

  /**
   * One call to the worker: rejects `Closed` at once when the worker is gone or dies meanwhile;
   * a local failure without a code of its own rejects `local` (fromWire).
   */
  private call<T>(what: string, fn: (r: Remote) => Promise<T>, local?: MemWalErrorCode): Promise<T> {
    if (this.gone) return Promise.reject(this.gone);
    return new Promise<T>((resolve, reject) => {
      this.pending.add(reject);
      let p: Promise<T>;
      try {
        p = fn(this.remote);
      } catch (e) {
        p = Promise.reject(e);
      }
      p.then(resolve, (e: unknown) => reject(fromWire(e, what, local))).finally(() => this.pending.delete(reject));
    });
  }

  /** The worker is gone on its own: reject everything in flight and from now on with `Closed`. */
  private die(reason: string): void {
    if (this.gone) return;
    this.gone = new MemWalError(
      'Closed',
      `the memwal worker of store ${this.name} is gone (${reason}); the outcome of calls in flight is unknown`,
    );
    this.teardown();
    void this.link.end(false);
  }

  /** We closed or aborted: later calls reject `Closed`; detach from a worker that is not ours. */
  private async finish(): Promise<void> {
    if (this.gone) return;
    this.gone = new MemWalError('Closed', `store ${this.name} is closed`);
    this.ended = true;
    await this.link.end(true);
    this.teardown();
  }

  private teardown(): void {
    for (const stop of [...this.statsSubscriptions]) stop();
    this.watches.clear();
    const gone = this.gone!;
    for (const reject of [...this.pending]) reject(gone);
    this.pending.clear();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.setState('closed');
  }

  /**
   * `signal` as a message: its WireSignal, and while registered an abort here posts
   * `abortSignal(id)` so the wait in the worker ends. `dispose()` unregisters.
   */
  private crossSignal(signal: AbortSignal | undefined): { wire: WireSignal | undefined; dispose(): void } {
    if (!signal) return { wire: undefined, dispose() {} };
    const id = this.nextSignalId++;
    const onAbort = (): void => {
      // Fails only when the worker is gone, and then the call itself rejects `Closed`.
      this.call('abortSignal', (r) => r.abortSignal(id)).catch(() => undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return { wire: { id, aborted: signal.aborted }, dispose: () => signal.removeEventListener('abort', onAbort) };
  }

  private async withSignal<T>(signal: AbortSignal | undefined, run: (w: WireSignal | undefined) => Promise<T>): Promise<T> {
    const crossed = this.crossSignal(signal);
    try {
      return await run(crossed.wire);
    } finally {
      crossed.dispose();
    }
  }

  /**
   * A worker-side iterator pulled page by page; `return()` releases it in the worker. Items are
   * decoded with the Arrow codec (loaded here on first use).
   */
  private async *pull<W, T>(
    start: (r: Remote, signal: WireSignal | undefined) => Promise<number>,
    next: (r: Remote, id: number) => Promise<Page<W>>,
    decode: (w: W, codec: ArrowCodec) => T,
    signal?: AbortSignal,
  ): AsyncGenerator<T> {
    const crossed = this.crossSignal(signal);
    let id: number | undefined;
    let done = false;
    try {
      const codec = arrowCodec();
      id = await this.call('iterator', (r) => start(r, crossed.wire));
      while (!done) {
        const page = await this.call('next page', (r) => next(r, id!));
        done = page.done;
        for (const item of page.items) yield decode(item, await codec);
      }
    } finally {
      crossed.dispose();
      if (id !== undefined && !done && !this.gone) {
        this.call('release', (r) => r.release(id!)).catch(() => undefined); // only fails once the worker is gone
      }
    }
  }

  // ------------------------------------------------------------------ MemWalApi

  /**
   * As `MemWal.put`. Posted before it returns, so the caller may reuse its rows or table at once:
   * plain rows are built into columns here or structured-cloned (client-rows.ts); Arrow data
   * crosses as a copy of its buffers (transferred; client-wire.ts). Rows that cannot be read or
   * cloned (a getter that throws) reject `InvalidArgument`: nothing was written.
   */
  put(data: RecordBatch | Table | RowTypesOf<R>['input'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    return this.withSignal(opts.signal, (w) => this.call('put', (r) => r.put(wireInput(data, this.rowPlan), w), 'InvalidArgument'));
  }

  /** As `MemWal.delete` (posted as `put` is). */
  delete(keys: Table | RowTypesOf<R>['key'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    return this.withSignal(opts.signal, (w) => this.call('delete', (r) => r.delete(wireInput(keys), w), 'InvalidArgument'));
  }

  /** As `MemWal.get`. */
  get(key: RowTypesOf<R>['key']): Promise<RowTypesOf<R>['output'] | undefined> {
    return this.call('get', (r) => r.get(key) as Promise<RowTypesOf<R>['output'] | undefined>);
  }

  /** As `MemWal.getMany`: the keys go in one message, the rows come back in one. */
  getMany(keys: readonly RowTypesOf<R>['key'][]): Promise<(RowTypesOf<R>['output'] | undefined)[]> {
    return this.call('getMany', (r) => r.getMany(keys as Record<string, unknown>[]) as Promise<(RowTypesOf<R>['output'] | undefined)[]>);
  }

  /** As `MemWal.query`: the filter goes in one message, the rows come back in one. */
  query(index: string, opts?: QueryOptions): Promise<RowTypesOf<R>['output'][]> {
    return this.call('query', (r) => r.query(index, opts) as Promise<RowTypesOf<R>['output'][]>);
  }

  /** As `MemWal.count`. */
  count(index: string, filter?: QueryFilter): Promise<number> {
    return this.call('count', (r) => r.count(index, filter));
  }

  /** As `MemWal.indexStats`. */
  indexStats(): Promise<Record<string, IndexStats>> {
    return this.call('indexStats', (r) => r.indexStats());
  }

  /** As `MemWal.scan`; the table crosses as its buffers (Arrow's data classes load on first use). */
  async scan<C extends ColumnName<R> = ColumnName<R>>(opts: { columns?: C[] } = {}): Promise<Table<Pick<RowTypesOf<R>['columns'], C>>> {
    const [codec, w] = await Promise.all([arrowCodec(), this.call('scan', (r) => r.scan(opts))]);
    return codec.decodeTable(w);
  }

  /**
   * As `MemWal.scanBatches`, pulled from the worker a page (up to 256 batches or ~4 MiB) at a
   * time. Breaking out of the loop releases the worker-side iterator; one dropped half-way is
   * released when the store closes.
   */
  scanBatches<C extends ColumnName<R> = ColumnName<R>>(
    opts: { columns?: C[]; limit?: number; after?: RowTypesOf<R>['key'] } = {},
  ): AsyncIterable<RecordBatch<Pick<RowTypesOf<R>['columns'], C>>> {
    const limit = opts.limit ?? Infinity;
    if (!(limit >= 0)) throw new MemWalError('InvalidArgument', 'scanBatches: limit must be >= 0');
    return this.pull(
      (r) => r.scanBatches(opts),
      (r, id) => r.nextBatches(id),
      (w, codec) => codec.decodeArrow(w) as RecordBatch,
    );
  }

  /**
   * As `MemWal.tail`, pulled page by page; `signal` ends a following tail in the worker, and
   * breaking out of the loop releases it there. Under `tabs: 'share'` a tail goes on at the next
   * leader when the leader tab goes away (entries keep their positions across leaders).
   */
  async *tail(fromPosition: number, opts: { follow?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<WalEntry> {
    let next = fromPosition;
    for (let leaderChanges = 0; ; leaderChanges++) {
      const from = next;
      try {
        for await (const entry of this.pull(
          (r, w) => r.tail(from, { follow: opts.follow, signal: w }),
          (r, id) => r.nextEntries(id),
          (e, codec) => ({ position: e.position, epoch: e.epoch, data: codec.decodeTable(e.data) }),
          opts.signal,
        )) {
          next = entry.position + 1;
          leaderChanges = 0;
          yield entry;
        }
        return;
      } catch (e) {
        if (!isMemWalError(e, 'LeaderChanged') || leaderChanges >= MAX_TAIL_RESUMES) throw e;
      }
    }
  }

  /** As `MemWal.sync`. */
  sync(): Promise<{ position: number }> {
    return this.call('sync', (r) => r.sync());
  }

  /** As `MemWal.forceSealActive`. */
  forceSealActive(): Promise<{ sealedGeneration: number | null }> {
    return this.call('forceSealActive', (r) => r.forceSealActive());
  }

  /** As `MemWal.waitForFlushDrain`; `signal` aborts the wait in the worker. */
  waitForFlushDrain(opts: { signal?: AbortSignal } = {}): Promise<void> {
    return this.withSignal(opts.signal, (w) => this.call('waitForFlushDrain', (r) => r.waitForFlushDrain(w)));
  }

  // ------------------------------------------------------------------ stats (SPEC §15.3)

  /** A snapshot the host published or answered: the newest, and every interval sees its longest wait. */
  private acceptStats(snapshot: StatsSnapshot): StatsSnapshot {
    if (!this.latestStats || snapshot.takenAt >= this.latestStats.snapshot.takenAt) this.latestStats = { snapshot, atMs: nowMs() };
    const m = snapshot.backpressure.maxWaitMsSinceLast;
    for (const w of this.statsWindows) if (m > w.max) w.max = m;
    return snapshot;
  }

  /**
   * The newest snapshot: the one the host published last when it is recent (no round trip; it is
   * never older than any reply received, as the host posts it ahead of them), else asked of the
   * worker, which from then on publishes.
   */
  private latest(): Promise<StatsSnapshot> {
    if (this.gone) return Promise.reject(this.gone);
    const l = this.latestStats;
    if (l && nowMs() - l.atMs <= STATS_FRESH_MS) return Promise.resolve(l.snapshot);
    return this.call('stats', (r) => r.stats()).then((s) => this.acceptStats(s));
  }

  /** `snapshot` as reader `w` sees it: `maxWaitMsSinceLast` over w's interval, which restarts now. */
  private forWindow(snapshot: StatsSnapshot, w: PageWaitWindow): StatsSnapshot {
    const maxWaitMsSinceLast = Math.max(w.max, snapshot.backpressure.longestActiveWaitMs);
    w.max = 0;
    const persisted = snapshot.storage.persisted ?? this.persistResult;
    return {
      ...snapshot,
      backpressure: { ...snapshot.backpressure, maxWaitMsSinceLast },
      storage: persisted === undefined ? snapshot.storage : { ...snapshot.storage, persisted },
    };
  }

  /** As `MemWal.schemaInfo` (under `tabs: 'share'`, the leader's store as this tab's schema sees it: the tabs' schemas are equal). */
  async schemaInfo(): Promise<SchemaInfo> {
    const [codec, w] = await Promise.all([arrowCodec(), this.call('schemaInfo', (r) => r.schemaInfo())]);
    return {
      ...w,
      schema: codec.schemaFromWire(w.schema),
      versions: w.versions.map((v) => ({ ...v, schema: codec.schemaFromWire(v.schema) })),
    };
  }

  /**
   * As `MemWal.stats`: one consistent snapshot of every stat. Answered from the snapshot the
   * worker published last, without waiting for the engine thread's turn: the worker posts one
   * whenever the stats changed (checked every 25 ms, and ahead of every reply, so a `stats()`
   * after any reply reflects at least what that reply showed) and at least every 250 ms. The
   * first call (and one after a second with no publication: a leader change under
   * `tabs: 'share'`) asks the worker. `maxWaitMsSinceLast` covers the time since this client's
   * previous `stats()`. `persisted` falls back to this client's `persist()` answer.
   */
  async stats(): Promise<StatsSnapshot> {
    return this.forWindow(await this.latest(), this.pullWindow);
  }

  /**
   * As `MemWal.onStats`, on the page: `listener` gets a snapshot at once and then every
   * `intervalMs` (default 1000), each the newest published, its `maxWaitMsSinceLast` covering
   * every snapshot published since the previous push (a wait between two pushes shows). Ends at
   * the returned unsubscribe or when the client closes or its worker dies. A listener that throws
   * is logged. Throws `InvalidArgument` for a bad `intervalMs`.
   */
  onStats(listener: (s: StatsSnapshot) => void, opts: OnStatsOptions = {}): () => void {
    const intervalMs = checkStatsInterval(opts.intervalMs);
    const interval: PageWaitWindow = { max: 0 };
    this.statsWindows.add(interval);
    let stopped = false;
    const push = (): void => {
      this.latest().then(
        (s) => {
          if (stopped) return;
          try {
            listener(this.forWindow(s, interval));
          } catch (e) {
            this.logger.warn('memwal: onStats listener threw', e);
          }
        },
        () => undefined, // the client is gone (teardown stops this subscription) or the call failed: the next push tries again
      );
    };
    const stopTimer = setRepeating(push, intervalMs);
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      stopTimer();
      this.statsWindows.delete(interval);
      this.statsSubscriptions.delete(stop);
    };
    this.statsSubscriptions.add(stop);
    push();
    return stop;
  }

  /** As `MemWal.memtableStats`: `stats().memtable`, answered as `stats()` is. */
  async memtableStats(): Promise<MemTableStats> {
    return statsView.memtable(await this.latest());
  }

  /** As `MemWal.backpressureStats`: `stats().backpressure`, answered as `stats()` is. */
  async backpressureStats(): Promise<BackpressureStats> {
    return statsView.backpressure(await this.latest());
  }

  /** As `MemWal.walStats`: `stats().wal`, answered as `stats()` is. */
  async walStats(): Promise<WalStats> {
    return statsView.wal(await this.latest());
  }

  /** As `MemWal.compactionStats`: `stats().compaction`, answered as `stats()` is. */
  async compactionStats(): Promise<CompactionStats> {
    return statsView.compaction(await this.latest());
  }

  /** As `MemWal.readStats`: `stats().read`, answered as `stats()` is. */
  async readStats(): Promise<ReadStats> {
    return statsView.read(await this.latest());
  }

  /** As `MemWal.compact`; `signal` aborts it in the worker. */
  compact(opts: { signal?: AbortSignal } = {}): Promise<CompactionResult> {
    return this.withSignal(opts.signal, (w) => this.call('compact', (r) => r.compact(w)));
  }

  /** As `MemWal.writeStats`: `stats().write`, answered as `stats()` is. */
  async writeStats(): Promise<WriteStats> {
    return statsView.write(await this.latest());
  }

  /** As `MemWal.storageStats`: `stats().storage`, answered as `stats()` is; `persisted` falls back to this client's `persist()` answer. */
  async storageStats(): Promise<StorageStats> {
    const s = statsView.storage(await this.latest());
    return s.persisted === undefined && this.persistResult !== undefined ? { ...s, persisted: this.persistResult } : s;
  }

  /** As `MemWal.metrics`: rendered in the worker from its stats snapshot (the renderer stays out of the page's bundle). */
  metrics(): Promise<string> {
    return this.call('metrics', (r) => r.metrics());
  }

  markConsumed(position: number): Promise<void> {
    return this.call('markConsumed', (r) => r.markConsumed(position));
  }

  /** Subscribe to state changes as the worker reports them (plus 'closed' when it is gone). */
  onStateChange(listener: (s: WriterState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Subscribe to this tab's role changes (`tabs: 'share'`): `'leader'` when this tab takes the
   * store over (the leader tab closed, reloaded or crashed, or the store came back after a
   * steal), `'follower'` when it stops hosting it (its worker died, the page went into the
   * back/forward cache, another writer stole the store). Called once per change, in every tab;
   * a tab that stays a follower while the leader moves between other tabs hears nothing (its
   * calls re-route by themselves). The role at open is `role()`. A `tabs: 'exclusive'` client
   * always leads and never calls it. Returns an unsubscribe.
   */
  onRoleChange(listener: (role: ClientRole) => void): () => void {
    this.roleListeners.add(listener);
    return () => this.roleListeners.delete(listener);
  }

  /**
   * As `MemWal.watch`: the read runs in the worker, which matches each commit group against what
   * it touched and posts one message per affected watch per commit group (a write elsewhere posts
   * nothing to this page); a `scan` table crosses as its buffers. Under `tabs: 'share'` it works
   * from every tab, and goes on at the next leader (a re-subscription there delivers its current
   * result; nothing older than a result already delivered is). The unsubscribe (or `signal`)
   * releases it in the worker; so do `close()` and `abort()`. Throws `InvalidArgument` for a spec
   * that names no read and `Closed` when the client is closed.
   */
  watch<S extends WatchSpec<R>>(
    spec: S,
    listener: (result: WatchResult<R, S>, info: WatchInfo) => void,
    opts: WatchOptions = {},
  ): () => void {
    const named = typeof spec === 'object' && spec !== null ? Object.keys(spec) : [];
    if (named.length !== 1 || !(WATCH_KINDS as readonly string[]).includes(named[0]!)) {
      throw new MemWalError('InvalidArgument', `watch: spec must name one read (${WATCH_KINDS.join(', ')}), as { get: key }`);
    }
    if (this.gone) throw this.gone;
    if (opts.signal?.aborted) return () => undefined;
    const id = nextWatchId++;
    const w: ClientWatch = {
      spec: spec as unknown as WireWatchSpec,
      scan: named[0] === 'scan',
      position: -1,
      chain: Promise.resolve(),
      listener: listener as (value: unknown, info: WatchInfo) => void,
      onError: opts.onError,
    };
    this.watches.set(id, w);
    this.subscribe(id, w);
    const signal = opts.signal;
    const unsubscribe = (): void => {
      signal?.removeEventListener('abort', unsubscribe);
      if (!this.watches.delete(id) || this.gone) return;
      this.call('unwatch', (r) => r.unwatch(id)).catch(() => undefined); // fails only once the worker is gone, which drops it
    };
    signal?.addEventListener('abort', unsubscribe, { once: true });
    return unsubscribe;
  }

  /** Watches registered and not unsubscribed (for tests: none is left after unsubscribe or close). */
  get watchCount(): number {
    return this.watches.size;
  }

  private subscribe(id: number, w: ClientWatch): void {
    this.call('watch', (r) => r.watch(id, w.spec)).catch((e: MemWalError) => {
      if (this.watches.get(id) !== w || this.gone) return;
      if (e.code === 'LeaderChanged') return; // the next leader gets it again (resubscribe)
      this.onWatchError(id, e, true);
    });
  }

  /** Calls are served elsewhere now (another leader): every watch subscribes there again. */
  private resubscribe(): void {
    if (this.gone) return;
    for (const [id, w] of this.watches) this.subscribe(id, w);
  }

  private onWatchResult(id: number, position: number, value: unknown): void {
    const w = this.watches.get(id);
    if (!w || position < w.position) return; // never a result older than one delivered
    w.position = position;
    const deliver = (v: unknown): void => {
      if (this.watches.get(id) !== w) return; // unsubscribed meanwhile
      try {
        w.listener(v, { position });
      } catch (e) {
        this.logger.warn('memwal: a watch listener threw', e);
      }
    };
    if (!w.scan) {
      deliver(value);
      return;
    }
    w.chain = w.chain.then(async () => deliver((await arrowCodec()).decodeTable(value as WireArrow)));
  }

  private onWatchError(id: number, error: MemWalError, final: boolean): void {
    const w = this.watches.get(id);
    if (!w) return;
    if (final) this.watches.delete(id);
    if (w.onError) w.onError(error, final);
    else this.logger.warn(`memwal: a watched read failed${final ? '; the watch stopped' : ''}`, error);
  }

  /** Let go of every watch in the worker (this client closes; the worker's store may stay open for other clients). */
  private releaseWatches(): void {
    for (const id of [...this.watches.keys()]) {
      this.watches.delete(id);
      this.call('unwatch', (r) => r.unwatch(id)).catch(() => undefined);
    }
  }

  /**
   * As `MemWal.close`, then the worker is terminated (a worker given as `options.worker` is only
   * detached). Rejects `Closed` if the worker died before or during the close (what it had not
   * flushed is in the WAL and replays at the next open). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.gone) {
        if (this.ended) return;
        throw this.gone;
      }
      this.releaseWatches();
      try {
        await this.call('close', (r) => r.close());
      } finally {
        await this.finish();
      }
    })();
    return this.closing;
  }

  /** As `MemWal.abort`, then the worker is terminated (or detached when it is yours). Never rejects. */
  abort(): Promise<void> {
    this.aborting ??= (async () => {
      if (this.gone) return;
      this.releaseWatches();
      // Stop now: a worker that does not answer promptly is terminated all the same.
      await withTimeout(
        this.call('abort', (r) => r.abort()),
        GOODBYE_TIMEOUT_MS,
      ).catch(() => undefined);
      await this.finish();
    })();
    return this.aborting;
  }
}
