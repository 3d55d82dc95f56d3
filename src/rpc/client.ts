// MemWalClient: the MemWalApi of the browser main thread. openMemWal() (open-memwal.ts) starts a
// dedicated module worker (or attaches to yours, or with `tabs: 'share'` to the tab that hosts
// the store) hosting MemWal, and every call goes there over comlink; a dead worker is noticed so
// no call ever hangs. Its stats readers are client-stats.ts, its watches client-watch.ts.

import * as Comlink from 'comlink';
import type { RecordBatch, Table } from 'apache-arrow';
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
import { statsView } from '../metrics/views.js';
import type { ColumnName, RowTypesOf, RowsParam, UntypedRows } from '../data/define-schema.js';
import type { QueryFilter } from '../data/index-keys.js';
import type { IndexStats, QueryOptions } from '../engine/query.js';
import { MemWalError, type MemWalErrorCode, errorFromWire, isMemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { arrowCodec, encodeArrow, isArrowBatch, isArrowTable, transfersOf } from './client-wire.js';
import { type RowPlan, rowPlan, rowsToWire } from './client-rows.js';
import { PageStats } from './client-stats.js';
import { PageWatches } from './client-watch.js';
import type { HostEvent, Page, WireData, WireOpenOptions, WireSignal } from './protocol.js';
import { type ClientLink, type ClientRole, type Remote, GOODBYE_TIMEOUT_MS, fromWire, withTimeout } from './worker-link.js';

export type { WorkerLike } from './worker-link.js';

type ArrowCodec = Awaited<ReturnType<typeof arrowCodec>>;

/** A tail that meets this many leader changes in a row without an entry gives up (rejects `LeaderChanged`). */
const MAX_TAIL_RESUMES = 3;

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
  /** The stats snapshot the worker published last, and the stats readers (client-stats.ts). */
  private readonly pageStats: PageStats;
  /** Live watches (client-watch.ts). */
  private readonly watches: PageWatches;

  /** @internal Use `openMemWal`. */
  constructor(
    private readonly link: ClientLink,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly hooks: OpenHooks,
  ) {
    this.remote = link.remote;
    const gone = (): MemWalError | undefined => this.gone;
    this.pageStats = new PageStats({
      ask: () => this.call('stats', (r) => r.stats()),
      gone,
      persisted: () => this.persistResult,
      logger,
    });
    this.watches = new PageWatches({ call: (what, fn) => this.call(what, fn), gone, logger });
    link.start({
      event: (e) => this.onEvent(e),
      dead: (reason) => this.die(reason),
      role: (role) => this.onRole(role),
      served: () => this.watches.resubscribe(),
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
    if (e?.memwalEvent === 'stats') this.pageStats.accept(e.stats);
    else if (e?.memwalEvent === 'watch') this.watches.onResult(e.id, e.position, e.value);
    else if (e?.memwalEvent === 'watch-error') this.watches.onError(e.id, errorFromWire(e.error), e.final);
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
    this.pageStats.endSubscriptions();
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

  /** As `MemWal.nearest`: the vector (an array or a Float32Array, cloned) goes in one message, the rows come back in one. */
  nearest(...[index, vector, opts]: Parameters<MemWalApi<R>['nearest']>): ReturnType<MemWalApi<R>['nearest']> {
    return this.call('nearest', (r) => r.nearest(index, vector as Float32Array, opts)) as never;
  }
  /** As `MemWal.search`: the text and options go in one message, the hits come back in one. */
  search: MemWalApi<R>['search'] = (index, text, opts) => this.call('search', (r) => r.search(index, text, opts) as never);

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
    return this.pageStats.stats();
  }

  /**
   * As `MemWal.onStats`, on the page: `listener` gets a snapshot at once and then every
   * `intervalMs` (default 1000), each the newest published, its `maxWaitMsSinceLast` covering
   * every snapshot published since the previous push (a wait between two pushes shows). Ends at
   * the returned unsubscribe or when the client closes or its worker dies. A listener that throws
   * is logged. Throws `InvalidArgument` for a bad `intervalMs`.
   */
  onStats(listener: (s: StatsSnapshot) => void, opts: OnStatsOptions = {}): () => void {
    return this.pageStats.onStats(listener, opts);
  }

  /** As `MemWal.memtableStats`: `stats().memtable`, answered as `stats()` is. */
  async memtableStats(): Promise<MemTableStats> {
    return statsView.memtable(await this.pageStats.latest());
  }

  /** As `MemWal.backpressureStats`: `stats().backpressure`, answered as `stats()` is. */
  async backpressureStats(): Promise<BackpressureStats> {
    return statsView.backpressure(await this.pageStats.latest());
  }

  /** As `MemWal.walStats`: `stats().wal`, answered as `stats()` is. */
  async walStats(): Promise<WalStats> {
    return statsView.wal(await this.pageStats.latest());
  }

  /** As `MemWal.compactionStats`: `stats().compaction`, answered as `stats()` is. */
  async compactionStats(): Promise<CompactionStats> {
    return statsView.compaction(await this.pageStats.latest());
  }

  /** As `MemWal.readStats`: `stats().read`, answered as `stats()` is. */
  async readStats(): Promise<ReadStats> {
    return statsView.read(await this.pageStats.latest());
  }

  /** As `MemWal.compact`; `signal` aborts it in the worker. */
  compact(opts: { signal?: AbortSignal } = {}): Promise<CompactionResult> {
    return this.withSignal(opts.signal, (w) => this.call('compact', (r) => r.compact(w)));
  }

  /** As `MemWal.writeStats`: `stats().write`, answered as `stats()` is. */
  async writeStats(): Promise<WriteStats> {
    return statsView.write(await this.pageStats.latest());
  }

  /** As `MemWal.storageStats`: `stats().storage`, answered as `stats()` is; `persisted` falls back to this client's `persist()` answer. */
  async storageStats(): Promise<StorageStats> {
    const s = statsView.storage(await this.pageStats.latest());
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
    return this.watches.watch(spec as WatchSpec, listener as (value: unknown, info: WatchInfo) => void, opts);
  }

  /** Watches registered and not unsubscribed (for tests: none is left after unsubscribe or close). */
  get watchCount(): number {
    return this.watches.size;
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
      this.watches.release();
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
      this.watches.release();
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
