// MemWal, the in-process writer: a thin façade that opens a store in named steps and routes the
// public API to the parts that do the work (LevelDB's DBImpl over log::Writer, Recover and
// BackgroundCompaction). docs/impl.md §1 maps the parts; every await here is at a part's call.

import type { RecordBatch, Schema, Table } from 'apache-arrow';
import { RecordBatch as ArrowRecordBatch, Table as ArrowTable } from 'apache-arrow';
import { MemWalError, toMemWalError } from '../errors.js';
import { MANIFEST_FORMAT_VERSION, type Manifest, cloneManifest } from '../manifest/manifest.js';
import { renderMetrics } from '../metrics/prometheus.js';
import { type MemWalOptions, type ResolvedOptions, resolveOptions } from '../options.js';
import type { StorageAdapter, StorageEstimate, StoreHandle } from '../storage/adapter.js';
import { resolveStorage } from '../storage/resolve.js';
import { nowMs, yieldToEventLoop } from '../util/schedule.js';
import { BackgroundLoop } from './background.js';
import { Backpressure } from './backpressure.js';
import { type CompactionPolicy, Compactor, DEFAULT_COMPACTION_POLICY } from './compaction.js';
import { InlineJobs } from './jobs.js';
import { Flusher } from './flusher.js';
import { type Key, type KeyEncoder, makeKeyEncoder } from './keys.js';
import { Lifecycle } from './lifecycle.js';
import { callLimitMs, settleWithin } from './limits.js';
import { ManifestLog } from './manifest-log.js';
import { estimateInsertBytes } from './memtable.js';
import { MemtableTier } from './memtables.js';
import { ReadView } from './read-view.js';
import { decodePayload, recover, type WalRecord } from './recovery.js';
import { Retention } from './retention.js';
import { compactIfSparse, projectBatch, toBatches, tombstoneBatch } from './rows.js';
import { AsyncRwLock } from './rwlock.js';
import { type StoreSchema, encodeSchema, makeStoreSchema } from './schema.js';
import {
  decodeVersions,
  evolutionProblem,
  evolveManifest,
  isSchemaMismatch,
  recordedVersions,
  SchemaVersions,
  schemaMismatchError,
} from './schema-versions.js';
import { CachedEstimate } from './storage-estimate.js';
import { TableCache } from './tables.js';
import type {
  BackpressureStats,
  CompactionResult,
  CompactionStats,
  ReadStats,
  MemTableStats,
  MemWalApi,
  PutResult,
  StorageStats,
  WalEntry,
  WalStats,
  WriteStats,
  WriterState,
} from './stats.js';
import { type Tier, WalOnlyTier } from './tier.js';
import { type PendingEntry, WalWriter } from './wal-writer.js';
import type { ColumnName, RowTypesOf, RowsParam, RowsOf, SchemaColumn, UntypedRows } from '../define-schema.js';

export { WAL_SEGMENT_TARGET_BYTES } from './wal-writer.js';
export { TABLE_WRITE_CHUNK_BYTES } from './table-files.js';

/** What `onSchemaMismatch: 'reset'` destroyed: the store, and why its recorded schema could not evolve. */
export interface SchemaReset {
  /** The store's name. */
  name: string;
  /** The mismatch: the `InvalidArgument` message the open would have rejected with. */
  reason: string;
}

/** Hooks for hosts (the worker) that must see state changes before `open` resolves, and for measurements. */
export interface OpenHooks {
  onStateChange?: (s: WriterState) => void;
  /**
   * Called when `onSchemaMismatch: 'reset'` destroyed the store (every row of it is gone), before
   * it is created anew with the given schema; the reset is also logged (`logger.warn`). A hook
   * that throws is logged and does not fail the open.
   */
  onSchemaReset?: (reset: SchemaReset) => void;
  /** Replace numbers of the compaction policy (for the policy benchmark, bench/compaction-policy.ts; not for apps). */
  compactionPolicy?: Partial<CompactionPolicy>;
}

/** A table-file read, under its time limit, failing with a MemWalError (storage's own errors mapped to codes). */
function readTableFile(read: Promise<Uint8Array>, limitMs: number, name: string): Promise<Uint8Array> {
  return settleWithin(read, limitMs, `read of table file ${name}`).catch((e: unknown) => {
    throw toMemWalError(e, `read of table file ${name}`);
  });
}

function zeroWriteStats(): WriteStats {
  return {
    putCount: 0,
    putRows: 0,
    putTimeMs: 0,
    walAppendCount: 0,
    walAppendTimeMs: 0,
    walAppendRetries: 0,
    flushCount: 0,
    flushRows: 0,
    flushBytes: 0,
    flushTimeMs: 0,
    flushFailureCount: 0,
    lastFlushMs: 0,
    replayedEntries: 0,
    replayedRows: 0,
    replayTimeMs: 0,
  };
}

/**
 * An open memwal store, in-process. Use `MemWal.open(options)`; in a browser main thread use
 * `openMemWal` instead (it hosts a MemWal in a dedicated worker).
 */
export class MemWal<R extends RowsParam = UntypedRows> implements MemWalApi<R> {
  private readonly opts: ResolvedOptions;
  private readonly policy: CompactionPolicy;
  private readonly schema: StoreSchema;
  private readonly adapter: StorageAdapter;
  private readonly keyEncoder: KeyEncoder | undefined;
  private readonly statsLock = new AsyncRwLock();
  private readonly backpressure = new Backpressure();
  private readonly life: Lifecycle;
  private readonly writeStats_ = zeroWriteStats();
  private readonly wal: WalWriter;
  private readonly tier: Tier;
  /** The MemTable-mode parts; undefined in WAL-only mode. */
  private readonly memtables: MemtableTier | undefined;
  private handle: StoreHandle | undefined;
  private log!: ManifestLog;
  private flusher: Flusher | undefined;
  private background: BackgroundLoop | undefined;
  private reads: ReadView | undefined;
  private tableCache: TableCache | undefined;
  /** The store's schema versions (set by the claim). */
  private versions!: SchemaVersions;
  private compactor: Compactor | undefined;
  private retention!: Retention;
  private closePromise: Promise<void> | undefined;
  private readonly estimates: CachedEstimate;

  private constructor(opts: ResolvedOptions, schema: StoreSchema, adapter: StorageAdapter, hooks: OpenHooks) {
    this.opts = opts;
    this.schema = schema;
    this.adapter = adapter;
    this.keyEncoder = schema.primaryKey.length > 0 ? makeKeyEncoder(schema) : undefined;
    this.life = new Lifecycle(opts.name, opts.logger, hooks.onStateChange);
    this.policy = { ...DEFAULT_COMPACTION_POLICY, ...hooks.compactionPolicy };
    this.estimates = new CachedEstimate(adapter, opts.name);
    this.life.onTerminal(() => this.backpressure.wake());
    this.wal = new WalWriter(opts, schema.internal, this.life, this.writeStats_, {
      onDurable: (e) => this.onDurable(e),
      onFailure: (err) => this.life.poison(err),
    });
    if (opts.enableMemtable) {
      this.memtables = new MemtableTier(
        opts,
        this.keyEncoder !== undefined,
        this.life,
        this.wal,
        this.backpressure,
        () => this.background?.kick(),
        () => this.background?.kickCompaction(),
      );
      this.tier = this.memtables;
    } else {
      this.tier = new WalOnlyTier(this.wal, this.backpressure);
    }
  }

  // ------------------------------------------------------------------ open

  /**
   * Open (or create) a store in this process: validate options, claim the writer lock and epoch,
   * recover the WAL (validated before anything changes), replay it into memtables, and resolve
   * with the writer. Rejects `InvalidArgument` (bad options, or a reopen with another schema,
   * key or mode, before anything is claimed), `NotSupported` (recorded layout unusable here),
   * `Locked`, `Corruption`, or the storage error.
   */
  static open<S extends Schema, K extends SchemaColumn<S> = never>(
    options: Omit<MemWalOptions, 'schema' | 'primaryKey'> & { schema: S; primaryKey?: K[] },
    hooks?: OpenHooks,
  ): Promise<MemWal<RowsOf<S, K>>>;
  static async open(options: MemWalOptions, hooks: OpenHooks = {}): Promise<MemWal> {
    const opts = resolveOptions(options);
    const schema = makeStoreSchema(opts.schema, opts.primaryKey);
    const adapter = resolveStorage(opts.storage);
    const w = new MemWal(opts, schema, adapter, hooks);
    try {
      await w.openStore();
    } catch (e) {
      if (opts.onSchemaMismatch !== 'reset' || !(e instanceof MemWalError) || !isSchemaMismatch(e)) throw e;
      // The recorded schema cannot evolve into this one and the caller chose a fresh store.
      opts.logger.warn(
        `memwal: ${e.message}; onSchemaMismatch 'reset': destroying store ${opts.name} and creating it anew (its rows are gone)`,
      );
      await adapter.destroyStore(opts.name);
      try {
        hooks.onSchemaReset?.({ name: opts.name, reason: e.message });
      } catch (hookError) {
        opts.logger.warn('memwal: onSchemaReset hook threw', hookError);
      }
      const fresh = new MemWal(opts, schema, adapter, hooks);
      await fresh.openStore();
      return fresh;
    }
    return w;
  }

  /**
   * Delete a store and all its data. Rejects `Locked` while a writer has it open.
   * `storage` as in `MemWal.open`.
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

  /** Open in named steps: lock → recover → start the parts → replay → retention. */
  private async openStore(): Promise<void> {
    let replay: WalRecord[] = [];
    await this.statsLock.write(async () => {
      const handle = await this.lock();
      try {
        replay = await this.recover(handle);
      } catch (e) {
        this.life.dead = true;
        await this.release(handle);
        throw toMemWalError(e, `open ${this.opts.name}`);
      }
    });
    this.life.setState('open');
    if (this.memtables) {
      try {
        await this.replay(replay);
      } catch (e) {
        const err = toMemWalError(e, `replay of ${this.opts.name}`);
        await this.abort();
        throw err;
      }
    }
    void this.retention.run();
    this.background?.kickCompaction();
  }

  /** Take the store's writer lock (waiting, failing fast or stealing, as the options say). */
  private async lock(): Promise<StoreHandle> {
    try {
      this.handle = await this.adapter.openStore(this.opts.name, {
        timeoutMs: this.opts.lockTimeoutMs,
        steal: this.opts.steal,
        onWaiting: () => this.life.setState('waiting-for-lock'),
        logger: this.opts.logger,
        onLost: (reason) => this.onLockLost(reason),
      });
      return this.handle;
    } catch (e) {
      throw toMemWalError(e, `open ${this.opts.name}`);
    }
  }

  /** Recover (recovery.ts), then start the parts on the claimed manifest. Returns the entries to replay. */
  private async recover(handle: StoreHandle): Promise<WalRecord[]> {
    const opts = this.opts;
    this.log = new ManifestLog(handle, opts.name, callLimitMs(opts.walRetry.timeoutMs));
    const r = await recover({
      handle,
      log: this.log,
      limitMs: opts.flushRetry.stallMs,
      check: (stored) => this.checkStored(stored),
      claimOf: (stored) => this.claimOf(stored),
      expectations: (m) => ({ mustKeepAfter: this.tier.retainedFrom(m), durableUpTo: m.positionHint }),
      schemasOf: (stored) => {
        if (!stored) return this.schema.internal;
        // The versions the claim records (or has recorded): the entries are read in them after it.
        const evolved = evolveManifest(stored, this.schema.base, this.schema.primaryKey, this.opts.name, stored.writerEpoch + 1);
        const known = new SchemaVersions(this.schema, evolved.schemaVersion ?? 1, recordedVersions(evolved));
        return (s, epoch) => known.versionOfEntry(s, epoch) !== undefined;
      },
      logger: opts.logger,
    });
    const m = this.log.manifest;
    this.versions = new SchemaVersions(this.schema, m.schemaVersion ?? 1, recordedVersions(m));
    this.wal.start(handle, this.log.epoch, r.analysis.segments, r.nextPosition - 1, r.tornTailBytes);
    this.retention = new Retention(opts, handle, this.life, this.log, this.wal, this.tier, (t, epoch, position) =>
      this.versions.projectEntry(t, epoch, position),
    );
    if (this.memtables) {
      this.memtables.start(m);
      const limit = opts.flushRetry.stallMs;
      this.tableCache = new TableCache(
        this.schema,
        this.schema.internal,
        this.keyEncoder,
        {
          range: (name, offset, length) => readTableFile(handle.tableReadRange(name, offset, length), limit, name),
          whole: (name) => readTableFile(handle.tableRead(name), limit, name),
        },
        opts.blockCacheBytes,
        this.versions,
      );
      const cache = this.tableCache;
      const jobs =
        this.adapter.backgroundJobs?.(handle, this.schema, recordedVersions(m), m.schemaVersion ?? 1) ??
        new InlineJobs(this.schema, this.keyEncoder, (t) => cache.open(t));
      this.compactor = new Compactor(opts, this.keyEncoder !== undefined, this.policy, jobs, handle, this.life, this.log, this.tableCache);
      this.flusher = new Flusher(
        opts,
        jobs,
        (first, last) =>
          this.wal.segments
            .filter((s) => s.lastPosition >= first && s.firstPosition <= last)
            .map((s) => ({ name: s.name, firstPosition: s.firstPosition, lastPosition: s.lastPosition })),
        handle,
        this.life,
        this.log,
        this.memtables,
        this.writeStats_,
        () => this.wal.durablePosition,
        () => void this.retention.run(),
      );
      this.background = new BackgroundLoop(
        opts,
        this.life,
        this.memtables,
        this.flusher,
        this.compactor,
        this.log,
        this.keyEncoder !== undefined,
        this.policy,
      );
      this.reads = new ReadView(this.schema, this.keyEncoder, this.memtables, () => this.log.manifest.tables, this.tableCache);
    }
    return this.memtables ? r.analysis.entries.filter((e) => e.position > m.replayCursor) : [];
  }

  /** Refuse a stored manifest whose layout, mode, schema or key differs from the options. */
  private checkStored(stored: Manifest | undefined): void {
    if (!stored) return;
    const name = this.opts.name;
    if (stored.layout !== this.adapter.layout) {
      throw new MemWalError(
        'NotSupported',
        `store ${name} was written with layout '${stored.layout}', which this storage ('${this.adapter.layout}') cannot read`,
      );
    }
    if (stored.mode !== this.tier.mode) {
      throw new MemWalError('InvalidArgument', `option enableMemtable: store ${name} was created in ${stored.mode} mode`);
    }
    const problem = evolutionProblem(decodeVersions(recordedVersions(stored), stored.primaryKey), this.schema.base, this.schema.primaryKey);
    if (problem) throw schemaMismatchError(name, problem);
    if (stored.primaryKey.join('\u0000') !== this.schema.primaryKey.join('\u0000')) {
      throw new MemWalError(
        'InvalidArgument',
        `option primaryKey: store ${name} has primary key [${stored.primaryKey.join(', ')}], not [${this.schema.primaryKey.join(', ')}]`,
      );
    }
  }

  /** The manifest that claims the store: epoch + 1 over `stored`, or a new store's first. */
  private claimOf(stored: Manifest | undefined): Manifest {
    if (stored) {
      return {
        ...cloneManifest(stored),
        ...evolveManifest(stored, this.schema.base, this.schema.primaryKey, this.opts.name, stored.writerEpoch + 1),
        writerEpoch: stored.writerEpoch + 1,
        version: stored.version + 1,
      };
    }
    return {
      formatVersion: MANIFEST_FORMAT_VERSION,
      layout: this.adapter.layout,
      mode: this.tier.mode,
      schema: encodeSchema(this.schema.base),
      schemaVersion: 1,
      schemas: [{ version: 1, schema: encodeSchema(this.schema.base), writerEpoch: 1 }],
      primaryKey: [...this.schema.primaryKey],
      writerEpoch: 1,
      version: 1,
      nextGeneration: 1,
      replayCursor: 0,
      consumerCursor: null,
      positionHint: 0,
      tables: [],
    };
  }

  /** Replay entries after the replay cursor into memtables through the normal freeze triggers. */
  private async replay(entries: WalRecord[]): Promise<void> {
    const memtables = this.memtables!;
    const start = nowMs();
    for (const e of entries) {
      // Never hold more than the budget: wait for flushes as a put would.
      while (memtables.unflushedBytes() >= this.opts.maxUnflushedMemtableBytes) {
        this.life.throwIfUnusable();
        if (!memtables.hasUncommittedFrozen()) memtables.freeze();
        await this.life.progress.wait();
      }
      this.life.throwIfUnusable();
      // A copy of just this payload: the batches own a compact buffer, not a view of the segment;
      // written in an older schema version, projected onto the current one.
      const internal = this.schema.internal;
      const decoded = decodePayload(e, (s, epoch) => this.versions.versionOfEntry(s, epoch) !== undefined, true);
      const batches = this.versions.projectEntry(decoded, e.epoch, e.position).map((b) => compactIfSparse(b, internal));
      const keys = this.keyEncoder ? batches.map((b) => this.keyEncoder!(b)) : undefined;
      const bytes = batches.map((b, i) => estimateInsertBytes(b, keys?.[i]));
      const m = memtables.active;
      const end = m.append(batches, keys, bytes);
      m.durableBatches = end;
      m.publish(end);
      if (m.firstPosition === 0) m.firstPosition = e.position;
      m.lastPosition = e.position;
      this.wal.durableBatchCount += batches.length;
      this.writeStats_.replayedEntries += 1;
      for (const b of batches) this.writeStats_.replayedRows += b.numRows;
      if (memtables.freezeTriggered(m)) memtables.freeze();
      if (this.writeStats_.replayedEntries % 64 === 0) await yieldToEventLoop();
    }
    this.writeStats_.replayTimeMs = nowMs() - start;
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

  /** Checks the parts' invariants (docs/impl.md §1; cheap, for tests). Throws an Error naming a broken one. */
  checkInvariants(): void {
    this.wal.checkInvariants();
    this.memtables?.checkInvariants();
    this.backpressure.checkInvariants();
    this.tableCache?.checkInvariants();
    if (!this.log?.manifest) return; // not claimed yet
    this.log.checkInvariants();
    // Across the parts: the WAL holds what the manifest says is flushed or durable, and memtables
    // are of the generations the manifest has not flushed yet.
    const m = this.log.manifest;
    if (this.wal.durablePosition < m.replayCursor) {
      throw new Error(`WAL durable position ${this.wal.durablePosition} below the replay cursor ${m.replayCursor}`);
    }
    const mt = this.memtables;
    if (mt) {
      if (m.nextGeneration > mt.active.generation) {
        throw new Error(`nextGeneration ${m.nextGeneration} above the active memtable's generation ${mt.active.generation}`);
      }
      for (const f of mt.frozen) {
        // A flush whose commit landed while in doubt is published at its next attempt.
        const landed = f.pendingTable !== undefined && m.tables.some((t) => t.name === f.pendingTable!.name);
        if (f.state === 'frozen' && f.generation < m.nextGeneration && !landed) {
          throw new Error(`memtable ${f.generation} is not flushed, but the manifest's nextGeneration is ${m.nextGeneration}`);
        }
      }
    }
  }

  /** The writer's current state. */
  get writerState(): WriterState {
    return this.life.state;
  }

  private onLockLost(reason: string): void {
    if (this.life.closed) return;
    this.life.poison(new MemWalError('Fenced', `writer lock of ${this.opts.name} lost (${reason}): another writer may own the store`));
    void this.handle?.release();
  }

  private requireMemtable(op: string): MemtableTier {
    if (!this.memtables) throw new MemWalError('NotSupported', `${op} is not available in WAL-only mode`);
    return this.memtables;
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
    return this.write(toBatches(data, this.schema), opts.signal);
  }

  /**
   * Delete rows by primary key: writes tombstones that hide older versions in every tier.
   * `NotSupported` without a primary key or in WAL-only mode; otherwise as `put`.
   */
  async delete(keys: Table | RowTypesOf<R>['key'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    this.life.throwIfUnusable();
    this.requireMemtable('delete');
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'delete needs a primary key (this store is append-only)');
    const batch = tombstoneBatch(keys, this.schema);
    return this.write(batch ? [batch] : [], opts.signal);
  }

  /** Admission (backpressure.ts) and insert (tier) in one synchronous step, then durability. */
  private async write(batches: RecordBatch[], signal: AbortSignal | undefined): Promise<PutResult> {
    if (batches.length === 0) return { rows: 0, position: this.wal.durablePosition, durable: true };
    const keys = this.keyEncoder ? batches.map((b) => this.keyEncoder!(b)) : undefined;
    const sizes = batches.map((b, i) => estimateInsertBytes(b, keys?.[i]));
    let bytes = 0;
    let rows = 0;
    for (let i = 0; i < batches.length; i++) {
      bytes += sizes[i]!;
      rows += batches[i]!.numRows;
    }
    if (bytes > this.opts.maxPutBytes) {
      throw new MemWalError(
        'InvalidArgument',
        `put of ${rows} rows is about ${bytes} bytes, more than maxPutBytes (${this.opts.maxPutBytes}); split it into smaller puts; nothing was written`,
      );
    }
    let entry: PendingEntry | undefined;
    const tryAdmit = (): boolean => {
      if (this.tier.unflushedBytes() >= this.opts.maxUnflushedMemtableBytes) return false;
      entry = this.insert(batches, keys, sizes, bytes, rows);
      return true;
    };
    await this.backpressure.admit(tryAdmit, {
      terminal: () => this.life.terminalForAdmission(),
      onBlocked: () => this.tier.onBlocked(),
      describe: () =>
        `unflushed ${this.tier.unflushedBytes()} of ${this.opts.maxUnflushedMemtableBytes} bytes; flush: ${this.flusher?.stage ?? 'none (WAL-only)'}`,
      signal,
      timeoutMs: this.opts.backpressureTimeoutMs,
      logIntervalMs: this.opts.backpressureLogIntervalMs,
      logger: this.opts.logger,
    });
    const e = entry!;
    if (this.opts.durableWrite) {
      await e.done;
      return { rows, position: e.position, durable: true };
    }
    return { rows, position: e.position, durable: e.position <= this.wal.durablePosition };
  }

  /** Insert admitted batches (synchronous: tier, WAL entry, freeze trigger, append schedule). */
  private insert(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined, sizes: number[], bytes: number, rows: number): PendingEntry {
    const t0 = nowMs();
    const e = this.tier.insert(batches, keys, sizes, bytes, rows);
    this.writeStats_.putCount += 1;
    this.writeStats_.putRows += rows;
    this.wal.schedule(e);
    this.writeStats_.putTimeMs += nowMs() - t0;
    return e;
  }

  /** An entry is durable: the tier publishes its rows; everything waiting re-checks. */
  private onDurable(e: PendingEntry): void {
    this.tier.onDurable(e);
    this.life.progress.notify();
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
    const memtables = this.requireMemtable('forceSealActive');
    this.life.throwIfUnusable();
    return { sealedGeneration: memtables.freeze() };
  }

  /**
   * Resolve once every memtable frozen before the call has committed; waits through retried
   * failures. Rejects with the latched error (poisoned), `Closed`, or `Aborted` (signal).
   * `NotSupported` in WAL-only mode.
   */
  async waitForFlushDrain(opts: { signal?: AbortSignal } = {}): Promise<void> {
    const memtables = this.requireMemtable('waitForFlushDrain');
    const target = memtables.active.generation - 1;
    const signal = opts.signal;
    for (;;) {
      if (this.life.poisonError) throw this.life.poisonError;
      if (memtables.committedGeneration >= target) return;
      if (this.life.closed || this.life.dead) throw new MemWalError('Closed', `store ${this.opts.name} closed before its flushes drained`);
      if (signal?.aborted) throw new MemWalError('Aborted', 'waitForFlushDrain aborted');
      await this.life.progress.wait(signal);
    }
  }

  // ------------------------------------------------------------------ reads and the log

  /**
   * The newest version of the row with this primary key, or undefined (absent or deleted).
   * `NotSupported` without a primary key or in WAL-only mode; `InvalidArgument` for a bad key.
   */
  get(key: RowTypesOf<R>['key']): Promise<RowTypesOf<R>['output'] | undefined>;
  async get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    this.life.throwIfUnusable();
    this.requireMemtable('get');
    return this.reads!.get(key);
  }

  /**
   * Every live row across all tiers: with a primary key the newest version of each key in key
   * order (deleted keys absent), without one every row in insertion order. `columns` projects.
   * `NotSupported` in WAL-only mode.
   */
  async scan<C extends ColumnName<R> = ColumnName<R>>(opts: { columns?: C[] } = {}): Promise<Table<Pick<RowTypesOf<R>['columns'], C>>> {
    this.life.throwIfUnusable();
    this.requireMemtable('scan');
    const batches: RecordBatch[] = [];
    for await (const b of this.reads!.scan(opts.columns, Number.POSITIVE_INFINITY)) batches.push(b);
    const schema = projectBatch(new ArrowRecordBatch(this.schema.internal, undefined as never), opts.columns, true).schema;
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
    return (async function* () {
      writer.life.throwIfUnusable();
      writer.requireMemtable('scan');
      yield* writer.reads!.scan(opts.columns, limit, opts.after as Record<string, unknown> | undefined);
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
    yield* this.retention.tail(fromPosition, opts);
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

  /** Memtable tier stats (never checks poison). `NotSupported` in WAL-only mode. */
  async memtableStats(): Promise<MemTableStats> {
    const memtables = this.requireMemtable('memtableStats');
    return this.statsLock.read(() => memtables.snapshot());
  }

  /** Backpressure waits (both modes; never checks poison). */
  async backpressureStats(): Promise<BackpressureStats> {
    return this.statsLock.read(() => this.backpressure.stats(this.background?.stalled));
  }

  /** Table files per level, compaction debt and work since this open. `NotSupported` in WAL-only mode. */
  async compactionStats(): Promise<CompactionStats> {
    this.requireMemtable('compactionStats');
    return this.statsLock.read(() => this.compactionSnapshot());
  }

  private compactionSnapshot(): CompactionStats {
    return this.compactor!.snapshot(this.log.manifest, this.background!.pendingBytes());
  }

  /** Point reads, Bloom filters and the block cache since this open. `NotSupported` in WAL-only mode. */
  async readStats(): Promise<ReadStats> {
    this.requireMemtable('readStats');
    return this.statsLock.read(() => ({ ...this.tableCache!.stats }));
  }

  /**
   * Compact until every table file is in level 1 (the policy's triggers aside): after a bulk
   * import, or before measuring space. Resolves what it did. Rejects with the latched error,
   * `Closed`, `Aborted` (signal), or `IOError` when a compaction fails (nothing lost; the
   * background retries). `NotSupported` in WAL-only mode.
   */
  async compact(opts: { signal?: AbortSignal } = {}): Promise<CompactionResult> {
    this.requireMemtable('compact');
    this.life.throwIfUnusable();
    return this.background!.compact(opts.signal);
  }

  /** WAL positions and bytes (never checks poison). */
  async walStats(): Promise<WalStats> {
    return this.statsLock.read(() => this.wal.snapshot());
  }

  /** Counters and times of puts, appends, flushes and replay since this open. */
  async writeStats(): Promise<WriteStats> {
    return this.statsLock.read(() => ({ ...this.writeStats_ }));
  }

  /**
   * Usage, quota and persistence where the runtime knows them, plus table-file totals. Usage
   * figures come from a cache (core/storage-estimate.ts): the first call waits at most 200 ms for
   * the adapter, then answers without them.
   */
  async storageStats(): Promise<StorageStats> {
    const est = await this.estimates.get();
    return this.statsLock.read(() => this.storageSnapshot(est));
  }

  private storageSnapshot(est: StorageEstimate): StorageStats {
    const tables = this.log?.manifest?.tables ?? [];
    let tableFileBytes = 0;
    for (const t of tables) tableFileBytes += t.bytes;
    return { ...est, tableFileCount: tables.length, tableFileBytes };
  }

  /** One consistent snapshot of every stat as Prometheus text exposition (format 0.0.4); usage figures as in `storageStats`. */
  async metrics(): Promise<string> {
    const est = await this.estimates.get();
    return this.statsLock.read(() =>
      renderMetrics({
        store: this.opts.name,
        mode: this.tier.mode,
        memtable: this.memtables?.snapshot(),
        compaction: this.memtables ? this.compactionSnapshot() : undefined,
        reads: this.tableCache ? { ...this.tableCache.stats } : undefined,
        walUnappendedBytes: this.wal.pendingBytes,
        backpressure: this.backpressure.stats(this.background?.stalled),
        wal: this.wal.snapshot(),
        write: { ...this.writeStats_ },
        storage: this.storageSnapshot(est),
        budgetBytes: this.opts.maxUnflushedMemtableBytes,
        state: this.life.state,
      }),
    );
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
    this.closePromise ??= this.closeSteps();
    return this.closePromise;
  }

  private async closeSteps(): Promise<void> {
    if (this.life.closed) return;
    const life = this.life;
    life.stopping = true;
    this.backpressure.wake();
    life.progress.notify(); // a flush lane waiting for compaction flushes anyway now
    let failure: MemWalError | undefined;
    if (!life.poisonError && !life.dead) {
      // 1. Every accepted put durable (the WAL writer's limits bound this wait).
      this.memtables?.freeze();
      this.wal.closeOpen();
      this.wal.kick();
      while (!life.poisonError && !life.dead && this.wal.queue.length > 0) await life.progress.wait();
      // 2. Every frozen memtable flushed, one more try each.
      const memtables = this.memtables;
      if (memtables && this.flusher && this.background && !life.poisonError && !life.dead) {
        life.kick.notify();
        this.background.kick();
        while (!life.poisonError && !life.dead && memtables.hasUncommittedFrozen() && !this.flusher.closeError) {
          await life.progress.wait();
          if (!this.background.busy && memtables.hasUncommittedFrozen() && !this.flusher.closeError) this.background.kick();
        }
      }
      // 3. A failure while closing (a WAL append past walRetry, a failed last flush) is reported;
      //    so is an abort that cut the close short.
      failure = this.flusher?.closeError ?? life.poisonError;
      const unfinished = this.wal.queue.length > 0 || this.memtables?.hasUncommittedFrozen() === true;
      if (!failure && life.closed && unfinished) {
        failure = new MemWalError(
          'Closed',
          `store ${this.opts.name} was aborted while closing; the outcome of puts not yet durable is unknown`,
        );
      }
    }
    life.stopping = true;
    await this.retention.settle();
    await this.statsLock.write(async () => {
      this.life.shutdown(new MemWalError('Closed', `store ${this.opts.name} is closed`));
      await this.release(this.handle);
    });
    if (failure) throw failure;
  }

  /**
   * Stop now: no flush, no I/O beyond releasing the lock. In-flight puts reject `Closed`
   * (outcome unknown). Idempotent.
   */
  async abort(): Promise<void> {
    if (this.life.closed) return;
    this.life.shutdown(new MemWalError('Closed', `store ${this.opts.name} was aborted; the outcome of in-flight puts is unknown`));
    await this.release(this.handle);
  }

  /** Release the handle, within a time limit (a release that never settles must not hang close). */
  private async release(handle: StoreHandle | undefined): Promise<void> {
    if (!handle) return;
    try {
      await settleWithin(handle.release(), callLimitMs(this.opts.walRetry.timeoutMs), `release of ${this.opts.name}`);
    } catch (e) {
      this.opts.logger.warn(`memwal: ${toMemWalError(e, 'release').message}`);
    }
  }
}
