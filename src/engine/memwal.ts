// MemWal, the in-process writer: a thin façade that opens a store in named steps (open.ts) and
// routes the public API to the parts that do the work (LevelDB's DBImpl over log::Writer, Recover
// and BackgroundCompaction). docs/impl.md §1 maps the parts; every await here is at a part's call.
// The mode of the store is its tier (tier.ts): nothing here tests it.

import type { RecordBatch, Schema, Table } from 'apache-arrow';
import { RecordBatch as ArrowRecordBatch, Table as ArrowTable } from 'apache-arrow';
import type { ColumnName, RowTypesOf, RowsOf, RowsParam, SchemaColumn, UntypedRows } from '../data/define-schema.js';
import type { IndexSpec, QueryFilter } from '../data/index-keys.js';
import type { IndexStats, QueryOptions } from './query.js';
import { type Key, encodeKey, makeKeyEncoder } from '../data/keys.js';
import { projectBatch, toBatches } from '../data/rows.js';
import { makeStoreSchema } from '../data/schema.js';
import type { ColumnView } from '../data/column-view.js';
import { isSchemaMismatch } from '../format/schema-versions.js';
import type { PreparedIndexing } from '../lsm/memtable.js';
import { sizePut } from './put-size.js';
import { renderMetrics } from '../metrics/prometheus.js';
import type {
  BackpressureStats,
  CompactionResult,
  CompactionStats,
  MemTableStats,
  ReadStats,
  StatsSnapshot,
  StorageStats,
  WalStats,
  WriteStats,
  WriterState,
} from '../metrics/stats.js';
import type { StorageAdapter, StoreHandle } from '../storage/adapter.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import { EventLoopTurns, nowMs } from '../util/schedule.js';
import { statsView } from '../metrics/views.js';
import type { MemWalApi, OnStatsOptions, PutResult, SchemaInfo, WalEntry, WatchInfo, WatchOptions, WatchResult, WatchSpec } from './api.js';
import { Backpressure } from './backpressure.js';
import { DEFAULT_COMPACTION_POLICY } from './compaction.js';
import type { ClaimedContext, EngineContext } from './context.js';
import { Lifecycle } from './lifecycle.js';
import { closeWriter } from './close.js';
import { callHook, openStore, releaseHandle, schemaInfoOf } from './open.js';
import { type MemWalOptions, type OpenHooks, resolveOptions } from './options.js';
import { resolveStorage } from './resolve-storage.js';
import type { Retention } from './retention.js';
import { AsyncRwLock } from './rwlock.js';
import { StatsSource, zeroWriteStats } from './stats-source.js';
import type { Tier } from './tier.js';
import type { PendingEntry, WalWriter } from './wal-writer.js';
import { type ReadFootprint, Watches } from './watch.js';
import { addWatch, watchReadOf } from './watch-reads.js';

export type { SchemaChange } from '../format/schema-versions.js';
export type { OpenHooks, SchemaReset } from './options.js';
export { WAL_SEGMENT_TARGET_BYTES } from './wal-writer.js';
export { TABLE_WRITE_CHUNK_BYTES } from './table-file-io.js';
export { MAX_GET_MANY_KEYS } from './read-view.js';

/**
 * An open memwal store, in-process. Use `MemWal.open(options)`; in a browser main thread use
 * `openMemWal` instead (it hosts a MemWal in a dedicated worker).
 */
export class MemWal<R extends RowsParam = UntypedRows> implements MemWalApi<R> {
  private readonly ctx: ClaimedContext;
  private readonly life: Lifecycle;
  private readonly backpressure: Backpressure;
  private readonly handle: StoreHandle;
  private readonly wal: WalWriter;
  private readonly tier: Tier;
  private readonly retention: Retention;
  /** @internal The stats snapshot and its readers (stats-source.ts; rpc/host.ts publishes it). */
  readonly statsSource: StatsSource;
  private readonly view: ColumnView;
  private closePromise: Promise<void> | undefined;
  /** Gives the event loop a turn during a long run of point reads that need no round trip. */
  private readonly readTurns = new EventLoopTurns();

  private constructor(
    opened: { ctx: ClaimedContext; wal: WalWriter; tier: Tier; retention: Retention; view: ColumnView },
    private readonly statsLock: AsyncRwLock,
    adapter: StorageAdapter,
  ) {
    this.ctx = opened.ctx;
    this.life = opened.ctx.life;
    this.backpressure = opened.ctx.backpressure;
    this.handle = opened.ctx.handle;
    this.wal = opened.wal;
    this.tier = opened.tier;
    this.retention = opened.retention;
    this.view = opened.view;
    this.statsSource = new StatsSource(opened.ctx, opened.wal, opened.tier, statsLock, adapter);
  }

  private get options(): ClaimedContext['options'] {
    return this.ctx.options;
  }

  // ------------------------------------------------------------------ open

  /**
   * Open (or create) a store in this process: validate options, claim the writer lock and epoch,
   * recover the WAL (validated before anything changes), replay it into memtables, and resolve
   * with the writer. Rejects `InvalidArgument` (bad options, or a reopen with a schema the store
   * cannot take — SPEC §9/§9.1: a stored column the schema lacks is kept, hidden — or another key
   * or mode, before anything is claimed), `NotSupported` (recorded layout unusable here),
   * `Locked`, `Corruption`, or the storage error.
   */
  static open<S extends Schema, K extends SchemaColumn<S> = never>(
    options: Omit<MemWalOptions, 'schema' | 'primaryKey' | 'indexes'> & {
      schema: S;
      primaryKey?: K[];
      indexes?: Record<string, IndexSpec<SchemaColumn<S>>>;
    },
    hooks?: OpenHooks,
  ): Promise<MemWal<RowsOf<S, K>>>;
  static async open(options: MemWalOptions, hooks: OpenHooks = {}): Promise<MemWal> {
    const opts = resolveOptions(options);
    const adapter = resolveStorage(opts.storage);
    try {
      return await MemWal.openOnce(opts, adapter, hooks);
    } catch (e) {
      if (opts.onSchemaMismatch !== 'reset' || !(e instanceof MemWalError) || !isSchemaMismatch(e)) throw e;
      // The recorded schema cannot evolve into this one and the caller chose a fresh store.
      opts.logger.warn(
        `memwal: ${e.message}; onSchemaMismatch 'reset': destroying store ${opts.name} and creating it anew (its rows are gone)`,
      );
      await adapter.destroyStore(opts.name);
      callHook(opts.logger, 'onSchemaReset', () => hooks.onSchemaReset?.({ name: opts.name, reason: e.message }));
      return MemWal.openOnce(opts, adapter, hooks);
    }
  }

  /** Open in named steps: lock → recover → build the parts (open.ts) → replay → wake the lanes. */
  private static async openOnce(options: EngineContext['options'], adapter: StorageAdapter, hooks: OpenHooks): Promise<MemWal> {
    const schema = makeStoreSchema(options.schema, options.primaryKey);
    const life = new Lifecycle(options.name, options.logger, hooks.onStateChange);
    const backpressure = new Backpressure();
    life.onTerminal(() => backpressure.wake());
    const keyEncoder = schema.primaryKey.length > 0 ? makeKeyEncoder(schema) : undefined;
    let durablePosition = (): number => 0;
    const watches = new Watches(keyEncoder, () => durablePosition());
    life.onTerminal(() => watches.close());
    const ctx: EngineContext = {
      options,
      schema,
      keyEncoder,
      life,
      backpressure,
      writeStats: zeroWriteStats(),
      policy: { ...DEFAULT_COMPACTION_POLICY, ...hooks.compactionPolicy },
      walSegmentTargetBytes: hooks.walSegmentTargetBytes,
      watches,
    };
    const statsLock = new AsyncRwLock();
    const opened = await openStore(ctx, adapter, statsLock);
    durablePosition = () => opened.wal.durablePosition;
    const w = new MemWal(opened, statsLock, adapter);
    life.setState('open');
    try {
      await opened.tier.replay(opened.entries, opened.ctx.log.manifest);
    } catch (e) {
      const err = toMemWalError(e, `replay of ${options.name}`);
      await w.abort();
      throw err;
    }
    opened.ctx.lanes.wakeAll();
    const change = opened.schemaChange;
    if (change) callHook(options.logger, 'onSchemaChange', () => hooks.onSchemaChange?.(change));
    return w;
  }

  /**
   * Delete a store and all its data. Rejects `Locked` while a writer has it open. `storage` as in `MemWal.open`.
   */
  static async destroy(name: string, options: { storage: MemWalOptions['storage'] }): Promise<void> {
    if (typeof name !== 'string' || !/^[A-Za-z0-9._-]{1,200}$/.test(name)) {
      throw new MemWalError('InvalidArgument', 'name: must be 1-200 characters of A-Z a-z 0-9 . _ -');
    }
    const adapter = resolveStorage(options?.storage);
    try {
      await adapter.destroyStore(name);
    } catch (e) {
      throw toMemWalError(e, `destroy ${name}`);
    }
  }

  // ------------------------------------------------------------------ state

  /**
   * Subscribe to writer state changes ('waiting-for-lock' | 'open' | 'fenced' | 'poisoned' |
   * 'closed'). Returns the unsubscribe function.
   */
  onStateChange(listener: (s: WriterState) => void): () => void {
    return this.life.subscribe(listener);
  }

  /** Always `'in-process'`: this writer runs here. */
  role(): 'in-process' {
    return 'in-process';
  }

  /**
   * Checks the invariants of every part (docs/impl.md §1): the WAL writer, the tier (memtables,
   * table cache), the manifest this writer holds and the admission ladder. Cheap; for tests.
   * Throws an Error naming a broken one.
   */
  checkInvariants(): void {
    this.wal.checkInvariants();
    this.tier.checkInvariants();
    this.ctx.log.checkInvariants();
    this.backpressure.checkInvariants();
    // Across the parts: the WAL holds what the manifest says is flushed or durable.
    const m = this.ctx.log.manifest;
    if (this.wal.durablePosition < m.replayCursor) {
      throw new Error(`WAL durable position ${this.wal.durablePosition} below the replay cursor ${m.replayCursor}`);
    }
  }

  /** The writer's current state. */
  get writerState(): WriterState {
    return this.life.state;
  }

  /**
   * The store's schema as stored (SPEC §9.1): the current version and schema (hidden columns
   * included), every recorded version with its renames, the stored columns this opener does not
   * see, and its columns that read a stored column under another name. Answers on a poisoned or
   * closed writer too (it reads nothing from storage).
   */
  async schemaInfo(): Promise<SchemaInfo> {
    return schemaInfoOf(this.ctx.log.manifest, this.view);
  }

  // ------------------------------------------------------------------ put path

  /**
   * Write rows. Resolves `{ rows, position, durable }` once the WAL entry holding them is durable
   * (`durableWrite`, default) or once they are visible in memory. Rows without any row (`[]`)
   * are a no-op: `{ rows: 0 }` at the current durable position, no WAL entry.
   *
   * Rejections — not written: `InvalidArgument` (bad input, or larger than `maxPutBytes`),
   * `NotSupported`, `Aborted` / `BackpressureTimeout` (the wait for room ended first), `Closed`
   * before admission. Outcome unknown: `IOError`, `QuotaExceeded`, `Fenced` (the WAL append failed
   * or the writer was fenced after the rows were admitted), `Closed` from `abort()` after
   * admission. `signal` governs only the backpressure wait.
   */
  async put(data: RecordBatch | Table | RowTypesOf<R>['input'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    this.life.throwIfUnusable();
    return this.write(toBatches(data, this.view.putSchema), opts.signal);
  }

  /**
   * Delete rows by primary key: writes tombstones that hide older versions in every tier.
   * `NotSupported` without a primary key or in WAL-only mode; otherwise as `put`.
   */
  async delete(keys: Table | RowTypesOf<R>['key'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    this.life.throwIfUnusable();
    const batch = this.tier.tombstones(keys as Table | Record<string, unknown>[]);
    return this.write(batch ? [batch] : [], opts.signal);
  }

  /** Admission (backpressure.ts) and insert (tier) in one synchronous step, then durability. */
  private async write(batches: RecordBatch[], signal: AbortSignal | undefined): Promise<PutResult> {
    if (batches.length === 0) return { rows: 0, position: this.wal.durablePosition, durable: true };
    const keyEncoder = this.ctx.keyEncoder;
    const keys = keyEncoder ? batches.map((b) => keyEncoder(b)) : undefined;
    const { sizes, bytes, rows, prepared } = sizePut(this.tier, this.options.maxPutBytes, batches, keys);
    let entry: PendingEntry | undefined;
    const tryAdmit = (): boolean => {
      if (this.tier.unflushedBytes() >= this.options.maxUnflushedMemtableBytes) return false;
      entry = this.insert(batches, keys, sizes, bytes, rows, prepared);
      return true;
    };
    await this.backpressure.admit(tryAdmit, {
      terminal: () => this.life.terminalForAdmission(),
      onBlocked: () => this.tier.onBlocked(),
      describe: () =>
        `unflushed ${this.tier.unflushedBytes()} of ${this.options.maxUnflushedMemtableBytes} bytes; flush: ${this.tier.flushStage()}`,
      signal,
      timeoutMs: this.options.backpressureTimeoutMs,
      logIntervalMs: this.options.backpressureLogIntervalMs,
      logger: this.options.logger,
    });
    const e = entry!;
    if (this.options.durableWrite) {
      await e.done;
      return { rows, position: e.position, durable: true };
    }
    return { rows, position: e.position, durable: e.position <= this.wal.durablePosition };
  }

  /** Insert admitted batches (synchronous: tier, WAL entry, freeze trigger, append schedule). */
  private insert(
    batches: RecordBatch[],
    keys: ArrayLike<Key>[] | undefined,
    sizes: number[],
    bytes: number,
    rows: number,
    prepared: PreparedIndexing[] | undefined,
  ): PendingEntry {
    const t0 = nowMs();
    const e = this.tier.insert(batches, keys, sizes, bytes, rows, prepared);
    this.ctx.writeStats.putCount += 1;
    this.ctx.writeStats.putRows += rows;
    this.wal.schedule(e);
    this.ctx.writeStats.putTimeMs += nowMs() - t0;
    return e;
  }

  /**
   * Make everything accepted so far durable. Resolves with the last durable position.
   * Rejects with the latched error if the writer poisons first.
   */
  async sync(): Promise<{ position: number }> {
    this.life.throwIfUnusable();
    return { position: await this.wal.sync() };
  }

  // ------------------------------------------------------------------ flush

  /**
   * Seal the active memtable now. `{ sealedGeneration: null }` when it was empty.
   * `NotSupported` in WAL-only mode.
   */
  async forceSealActive(): Promise<{ sealedGeneration: number | null }> {
    return { sealedGeneration: this.tier.seal() };
  }

  /**
   * Resolve once every memtable frozen before the call has committed; waits through retried
   * failures. Rejects with the latched error (poisoned), `Closed`, or `Aborted` (signal).
   * `NotSupported` in WAL-only mode.
   */
  async waitForFlushDrain(opts: { signal?: AbortSignal } = {}): Promise<void> {
    return this.tier.waitForFlushDrain(opts.signal);
  }

  // ------------------------------------------------------------------ reads and the log

  /** The newest version of the row with this key (`MemWalApi.get`); `NotSupported` in WAL-only mode. */
  get(key: RowTypesOf<R>['key']): Promise<RowTypesOf<R>['output'] | undefined>;
  async get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    this.life.throwIfUnusable();
    await this.readTurns.turn();
    return this.view.row(await this.tier.get(key));
  }

  /** Many point reads from one snapshot (`MemWalApi.getMany`, read-view.ts); `NotSupported` in WAL-only mode. */
  getMany(keys: readonly RowTypesOf<R>['key'][]): Promise<(RowTypesOf<R>['output'] | undefined)[]>;
  async getMany(keys: readonly Record<string, unknown>[]): Promise<(Record<string, unknown> | undefined)[]> {
    this.life.throwIfUnusable();
    await this.readTurns.turn();
    const rows = await this.tier.getMany(keys);
    return this.view.identity ? rows : rows.map((r) => this.view.row(r));
  }

  /** Rows of an ordered index in index order (`MemWalApi.query`, SPEC §17.1; engine/query.ts). */
  async query(index: string, opts?: QueryOptions): Promise<Record<string, unknown>[]> {
    this.life.throwIfUnusable();
    await this.readTurns.turn();
    if (this.view.identity) return this.tier.query(index, opts);
    const q = this.view.query(opts ?? {}); // through the opener's view (SPEC §9.1)
    return q.rows(await this.tier.query(index, q.opts));
  }

  /** How many rows `query(index, filter)` returns (without limit). */
  async count(index: string, filter?: QueryFilter): Promise<number> {
    this.life.throwIfUnusable();
    await this.readTurns.turn();
    return this.tier.count(index, filter);
  }

  /** The `k` rows nearest to `vector` on a vector index (`MemWalApi.nearest`, SPEC §17.3; engine/nearest.ts). */
  async nearest(...[index, vector, opts]: Parameters<MemWalApi<R>['nearest']>): ReturnType<MemWalApi<R>['nearest']> {
    this.life.throwIfUnusable();
    await this.readTurns.turn();
    const hits = await this.tier.nearest(index, vector, opts);
    return (this.view.identity ? hits : hits.map((h) => ({ row: this.view.row(h.row)!, distance: h.distance }))) as never;
  }

  /** Full-text search over a text index (`MemWalApi.search`, SPEC §17.2; engine/search.ts). */
  async search(...[index, text, opts]: Parameters<MemWalApi<R>['search']>): ReturnType<MemWalApi<R>['search']> {
    this.life.throwIfUnusable();
    await this.readTurns.turn();
    const hits = await this.tier.search(index, text, opts);
    return (this.view.identity ? hits : hits.map((h) => ({ row: this.view.row(h.row)!, score: h.score }))) as never;
  }

  /** Per declared index: entries and estimated bytes. */
  async indexStats(): Promise<Record<string, IndexStats>> {
    return this.statsLock.read(() => this.tier.indexStats());
  }

  // ------------------------------------------------------------------ live reads

  /**
   * Keep the read `spec` names live (`MemWalApi.watch`): the result now, then after each durable
   * commit group that touches what the read touched (engine/watch.ts). Listener errors are logged.
   */
  watch<S extends WatchSpec<R>>(
    spec: S,
    listener: (result: WatchResult<R, S>, info: WatchInfo) => void,
    opts: WatchOptions = {},
  ): () => void {
    const read = watchReadOf(this as MemWal, spec as WatchSpec);
    this.life.throwIfUnusable();
    return addWatch(this.ctx.watches, read, listener as (r: unknown, i: WatchInfo) => void, opts, this.options.logger);
  }

  /** Live reads registered and not stopped (for tests: none is left after unsubscribe or close). */
  get watchCount(): number {
    return this.ctx.watches.size;
  }

  /** @internal The primary key's columns (a watched query's row keys; watch-reads.ts). */
  get primaryKeyColumns(): readonly string[] {
    return this.ctx.schema.primaryKey;
  }

  /** @internal What a watched query covers besides its rows (watch-reads.ts). */
  queryFootprint(index: string, filter: QueryFilter | undefined): ReadFootprint {
    return this.tier.queryFootprint(index, filter);
  }

  /** @internal A key as the watches compare it (engine/watch.ts). */
  encodeWatchKey(key: Record<string, unknown>): Key {
    return encodeKey(key, this.ctx.schema);
  }

  /**
   * Every live row across all tiers: with a primary key the newest version of each key in key
   * order (deleted keys absent), without one every row in insertion order. `columns` projects.
   * `NotSupported` in WAL-only mode.
   */
  async scan<C extends ColumnName<R> = ColumnName<R>>(opts: { columns?: C[] } = {}): Promise<Table<Pick<RowTypesOf<R>['columns'], C>>> {
    this.life.throwIfUnusable();
    const batches: RecordBatch[] = [];
    const stored = this.view.storedColumns(opts.columns);
    for await (const b of this.tier.scan(stored, Number.POSITIVE_INFINITY)) batches.push(this.view.batch(b, opts.columns));
    const schema = this.view.batch(
      projectBatch(new ArrowRecordBatch(this.ctx.schema.internal, undefined as never), stored, true),
      opts.columns,
    ).schema;
    return batches.length > 0 ? new ArrowTable(batches) : new ArrowTable(schema);
  }

  /**
   * The same rows as `scan`, in the same order, one record batch at a time with bounded memory
   * (one block per table file, plus a sorted copy of each memtable's index). `limit` caps the
   * total rows yielded. `after` (keyed stores) starts past that key, reading no table block
   * wholly before it: page by passing the last key of the previous page (each page is its own
   * snapshot, so a row written between pages shows if its key is past the cursor).
   */
  scanBatches<C extends ColumnName<R> = ColumnName<R>>(
    opts: { columns?: C[]; limit?: number; after?: RowTypesOf<R>['key'] } = {},
  ): AsyncIterable<RecordBatch<Pick<RowTypesOf<R>['columns'], C>>> {
    const limit = opts.limit ?? Number.POSITIVE_INFINITY;
    if (!(limit >= 0)) throw new MemWalError('InvalidArgument', 'scanBatches: limit must be >= 0');
    const writer = this;
    const view = this.view;
    return (async function* () {
      writer.life.throwIfUnusable();
      const stored = view.storedColumns(opts.columns);
      const source = writer.tier.scan(stored, limit, opts.after as Record<string, unknown> | undefined);
      if (view.identity) return yield* source;
      for await (const b of source) yield view.batch(b, opts.columns);
    })();
  }

  /**
   * Durable WAL entries from `fromPosition` in order; ends at the end of the log, or with
   * `follow` waits for more (until close, poison or `signal`). Rejects `Truncated` below the
   * oldest retained entry.
   */
  async *tail(fromPosition: number, opts: { follow?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<WalEntry> {
    if (!Number.isSafeInteger(fromPosition) || fromPosition < 1) {
      throw new MemWalError('InvalidArgument', `tail: fromPosition must be an integer >= 1, got ${fromPosition}`);
    }
    this.life.throwIfUnusable();
    if (this.view.identity) return yield* this.retention.tail(fromPosition, opts);
    for await (const e of this.retention.tail(fromPosition, opts)) yield { ...e, data: this.view.table(e.data) };
  }

  /**
   * Record that a consumer is done with every entry up to `position` (durably, in the
   * manifest). WAL entries are removed only at or below the consumer cursor once it is set.
   */
  async markConsumed(position: number): Promise<void> {
    this.life.throwIfUnusable();
    await this.retention.markConsumed(position);
  }

  // ------------------------------------------------------------------ stats

  /**
   * Every stat in one snapshot, taken in one synchronous step (SPEC §15.3; `StatsSnapshot`):
   * memtable, backpressure (waits in progress included), WAL, writes, compaction, reads, storage,
   * indexes, and `unflushedBytes`. Never checks poison. Usage figures as in `storageStats` (the
   * only wait, before the step). `backpressure.maxWaitMsSinceLast` covers the time since the
   * previous `stats()` call on this writer.
   */
  async stats(): Promise<StatsSnapshot> {
    return this.statsSource.stats();
  }

  /**
   * Call `listener` with a stats snapshot now and then every `intervalMs` (default 1000) until the
   * returned function is called or the store closes. Each snapshot's
   * `backpressure.maxWaitMsSinceLast` covers the interval since this listener's previous one, so
   * a wait that began and ended between two pushes still shows. A listener that throws is logged
   * (`logger.warn`). `InvalidArgument` for an `intervalMs` that is not a finite number ≥ 1.
   */
  onStats(listener: (s: StatsSnapshot) => void, opts: OnStatsOptions = {}): () => void {
    return this.statsSource.onStats(listener, opts);
  }

  /** Memtable tier stats (never checks poison): `stats().memtable`. `NotSupported` in WAL-only mode. */
  async memtableStats(): Promise<MemTableStats> {
    return this.statsSource.view(statsView.memtable);
  }

  /** Backpressure waits (both modes; never checks poison): `stats().backpressure` in the seed's shape. */
  async backpressureStats(): Promise<BackpressureStats> {
    return this.statsSource.view(statsView.backpressure);
  }

  /** Table files per level, compaction debt and work since this open: `stats().compaction`. `NotSupported` in WAL-only mode. */
  async compactionStats(): Promise<CompactionStats> {
    return this.statsSource.view(statsView.compaction);
  }

  /** Point reads, Bloom filters and the block cache since this open: `stats().read`. `NotSupported` in WAL-only mode. */
  async readStats(): Promise<ReadStats> {
    return this.statsSource.view(statsView.read);
  }

  /**
   * Compact until every table file is in level 1 (the policy's triggers aside): after a bulk
   * import, or before measuring space. Resolves what it did. Rejects with the latched error,
   * `Closed`, `Aborted` (signal), or `IOError` when a compaction fails (nothing lost; the
   * background retries). `NotSupported` in WAL-only mode.
   */
  async compact(opts: { signal?: AbortSignal } = {}): Promise<CompactionResult> {
    return this.tier.compact(opts.signal);
  }

  /** WAL positions and bytes (never checks poison): `stats().wal`. */
  async walStats(): Promise<WalStats> {
    return this.statsSource.view(statsView.wal);
  }

  /** Counters and times of puts, appends, flushes and replay since this open: `stats().write`. */
  async writeStats(): Promise<WriteStats> {
    return this.statsSource.view(statsView.write);
  }

  /**
   * Usage, quota and persistence where the runtime knows them, plus table-file totals and this
   * store's own bytes: `stats().storage`. Usage figures come from a cache
   * (engine/storage-estimate.ts): the first call waits at most 200 ms for the adapter, then
   * answers without them.
   */
  async storageStats(): Promise<StorageStats> {
    return (await this.statsSource.settled()).storage;
  }

  /** One consistent snapshot of every stat (`stats()`) as Prometheus text exposition (format 0.0.4); usage figures as in `storageStats`. */
  async metrics(): Promise<string> {
    return renderMetrics(await this.statsSource.settled());
  }

  // ------------------------------------------------------------------ close / abort

  /**
   * Stop admitting (waiting and later puts reject `Closed`), make every accepted put durable,
   * flush what is frozen or active (one more try each), release the lock. On a flush failure it
   * still releases everything and rejects with that error; the rows are in the WAL and replay
   * at the next open. On a poisoned writer it releases without I/O. If `abort()` cuts it short it
   * rejects `Closed` (the outcome of puts not yet durable is unknown). Idempotent.
   */
  close(): Promise<void> {
    this.closePromise ??= closeWriter({
      ctx: this.ctx,
      wal: this.wal,
      tier: this.tier,
      retention: this.retention,
      statsLock: this.statsLock,
      handle: this.handle,
      statsSource: this.statsSource,
    });
    return this.closePromise;
  }

  /**
   * Stop now: no flush, no I/O beyond releasing the lock. In-flight puts reject `Closed`
   * (outcome unknown). Idempotent.
   */
  async abort(): Promise<void> {
    this.statsSource.endSubscriptions();
    if (this.life.closed) return;
    this.life.shutdown(new MemWalError('Closed', `store ${this.options.name} was aborted; the outcome of in-flight puts is unknown`));
    await releaseHandle(this.ctx, this.handle);
  }
}
