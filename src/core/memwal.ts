// The writer: put path, WAL group commit, freeze, flush scheduling, reads, recovery, close.
// The one big file (LevelDB's db_impl): every in-memory transition here is synchronous, and
// every await is at a storage call or a wait, so a reader never sees half a transition.

import { RecordBatch, Table, tableFromIPC, tableToIPC, type Schema } from 'apache-arrow';
import { MemWalError, toMemWalError } from '../errors.js';
import { MANIFEST_FORMAT_VERSION, cloneManifest, type Manifest, type TableFileEntry } from '../manifest/manifest.js';
import { renderMetrics } from '../metrics/prometheus.js';
import { resolveOptions, type MemWalOptions, type ResolvedOptions } from '../options.js';
import { parseSegmentName, segmentName, type StorageAdapter, type StoreHandle } from '../storage/adapter.js';
import { resolveStorage } from '../storage/resolve.js';
import { crc32c } from '../wal/crc32c.js';
import { encodeFrame, scanSegment } from '../wal/codec.js';
import { Backpressure } from './backpressure.js';
import { MemTable, RowOrdinals, estimateInsertBytes } from './memtable.js';
import { encodeKey, keyFromHex, keyString, keyToHex, makeKeyEncoder, type Key, type KeyEncoder } from './keys.js';
import { KeyIndex } from './keyindex.js';
import { compactIfSparse, concatRows, projectBatch, rowObject, toBatches, tombstoneBatch } from './rows.js';
import { AsyncRwLock } from './rwlock.js';
import { decodeSchema, describeSchemaDifference, encodeSchema, makeStoreSchema, schemasEqual, type StoreSchema } from './schema.js';
import type {
  BackpressureStats,
  MemTableStats,
  MemWalApi,
  PutResult,
  StorageStats,
  WalEntry,
  WalStats,
  WriteStats,
  WriterState,
} from './stats.js';
import { Signal, backoffMs, nowMs, sleep, yieldToEventLoop } from './util.js';
import type { ColumnName, RowTypes, RowsOf, SchemaColumn, UntypedRows } from '../define-schema.js';

/** A segment grows to about this size before the writer starts the next one (retention unit). */
export const WAL_SEGMENT_TARGET_BYTES = 8 * 1024 * 1024;
/** Table files are handed to the adapter in chunks of this size, with a yield between. */
export const TABLE_WRITE_CHUNK_BYTES = 1024 * 1024;
/** Decoded table files kept for get() (count, newest used first). */
const TABLE_CACHE_FILES = 4;

/** Hooks for hosts (the worker) that must see state changes before `open` resolves. */
export interface OpenHooks {
  onStateChange?: (s: WriterState) => void;
}

/** A WAL entry being built or waiting for its append. */
interface PendingEntry {
  position: number;
  /** The memtable its batches belong to (MemTable mode). */
  memtable: MemTable | undefined;
  batches: RecordBatch[];
  bytes: number;
  rows: number;
  /** The memtable's batch count after this entry's last batch. */
  batchEnd: number;
  /** Closed entries take no more puts; only closed entries are appended. */
  closed: boolean;
  done: Promise<void>;
  resolve: () => void;
  reject: (e: MemWalError) => void;
}

/** A WAL segment as the writer tracks it. */
interface Segment {
  name: string;
  epoch: number;
  firstPosition: number;
  bytes: number;
  /** Last position it holds that replay honours (firstPosition - 1 when none). */
  lastPosition: number;
}

/** A decoded table file, cached for get(). */
interface LoadedTable {
  entry: TableFileEntry;
  batches: RecordBatch[];
  keyIndex: KeyIndex | undefined;
  ordinals: RowOrdinals;
}

/** A consistent capture of the read view (SPEC §4.4): newest first. */
interface ReadView {
  memtables: { m: MemTable; visible: number }[];
  tables: TableFileEntry[];
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
export class MemWal<R extends RowTypes = UntypedRows> implements MemWalApi<R> {
  private readonly o: ResolvedOptions;
  private readonly ss: StoreSchema;
  private readonly adapter: StorageAdapter;
  private readonly keyEncoder: KeyEncoder | undefined;
  private readonly rw = new AsyncRwLock();
  private readonly bp = new Backpressure();
  private readonly listeners = new Set<(s: WriterState) => void>();
  private readonly hooks: OpenHooks;

  private handle: StoreHandle | undefined;
  private manifest!: Manifest;
  private epoch = 0;
  private state: WriterState = 'open';
  private poisonError: MemWalError | undefined;
  /** Set by close()/abort(): no more admissions. */
  private stopping = false;
  /** Set by abort() or a lost lock: no more storage I/O. */
  private dead = false;
  private closePromise: Promise<void> | undefined;

  // MemTable tier
  private active: MemTable;
  /** Frozen memtables in generation order: waiting, failed, or committed within grace. */
  private frozen: MemTable[] = [];
  /** Highest generation whose flush committed. */
  private committedGeneration = 0;
  private tables: TableFileEntry[] = [];
  private readonly tableCache = new Map<string, Promise<LoadedTable>>();
  private flushing = false;
  /** What the flush loop is doing (for diagnosing a slow or stuck flush). */
  private flushStage = 'idle';
  private closeFlushError: MemWalError | undefined;

  // WAL
  private walQueue: PendingEntry[] = [];
  private appending = false;
  private nextPosition = 1;
  private durablePosition = 0;
  private segments: Segment[] = [];
  private currentSegment: Segment | undefined;
  private walPendingBytes = 0;
  private walPendingBatches = 0;
  private durableBatchCount = 0;
  private walTimer: ReturnType<typeof setTimeout> | undefined;
  private tornTailBytes = 0;
  private bytesWritten = 0;
  private entriesWritten = 0;
  private commitChain: Promise<unknown> = Promise.resolve();

  private readonly ws = zeroWriteStats();
  /** Notified when an entry turns durable, a flush commits or fails, the writer poisons or stops. */
  private readonly progress = new Signal();
  /** Cuts flush backoff short (close). */
  private readonly flushKick = new Signal();

  private constructor(o: ResolvedOptions, ss: StoreSchema, adapter: StorageAdapter, hooks: OpenHooks) {
    this.o = o;
    this.ss = ss;
    this.adapter = adapter;
    this.hooks = hooks;
    this.keyEncoder = ss.primaryKey.length > 0 ? makeKeyEncoder(ss) : undefined;
    this.active = new MemTable(1, this.keyEncoder !== undefined);
  }

  // ------------------------------------------------------------------ open / recovery

  /**
   * Open (or create) a store in this process: validate options, claim the writer lock and epoch,
   * sweep orphans, repair a torn WAL tail, replay the WAL into memtables, and resolve with the
   * writer. Rejects `InvalidArgument` (bad options, or a reopen with another schema, key or mode,
   * before anything is claimed), `NotSupported` (recorded layout unusable here), `Locked`,
   * `Corruption`, or the storage error.
   */
  static open<S extends Schema, K extends SchemaColumn<S> = never>(
    options: Omit<MemWalOptions, 'schema' | 'primaryKey'> & { schema: S; primaryKey?: K[] },
    hooks?: OpenHooks,
  ): Promise<MemWal<RowsOf<S, K>>>;
  static async open(options: MemWalOptions, hooks: OpenHooks = {}): Promise<MemWal> {
    const o = resolveOptions(options);
    const ss = makeStoreSchema(o.schema, o.primaryKey);
    if (!o.enableMemtable && ss.primaryKey.length > 0) {
      throw new MemWalError('InvalidArgument', 'option primaryKey: WAL-only mode has no primary key');
    }
    const adapter = resolveStorage(o.storage);
    const w = new MemWal(o, ss, adapter, hooks);
    await w.openStore();
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

  private async openStore(): Promise<void> {
    const o = this.o;
    await this.rw.write(async () => {
      let handle: StoreHandle;
      try {
        handle = await this.adapter.openStore(o.name, {
          timeoutMs: o.lockTimeoutMs,
          steal: o.steal,
          onWaiting: () => this.setState('waiting-for-lock'),
          onLost: (reason) => this.onLockLost(reason),
        });
      } catch (e) {
        throw toMemWalError(e, `open ${o.name}`);
      }
      this.handle = handle;
      try {
        // Validate everything before claiming, so a doomed open changes nothing.
        const stored = await handle.manifestLoad();
        this.checkStored(stored);
        const before = await readSegments(handle);
        const checked = analyzeWal(before, this.retainedFrom(stored));
        await this.claim(handle, stored);
        await this.sweepOrphans(handle);
        // Re-read after the claim: a fenced predecessor may have appended until then. Segments
        // whose length did not change are not read again, nor scanned again if none changed.
        const after = await readSegments(handle, before);
        const unchanged = after.length === before.length && after.every((seg, i) => seg.bytes === before[i]!.bytes);
        await this.recoverWal(handle, unchanged ? checked : analyzeWal(after, this.retainedFrom(this.manifest)));
      } catch (e) {
        this.dead = true;
        await handle.release();
        throw toMemWalError(e, `open ${o.name}`);
      }
    });
    this.setState('open');
    if (this.o.enableMemtable) {
      try {
        await this.replay();
      } catch (e) {
        const err = toMemWalError(e, `replay of ${o.name}`);
        await this.abort();
        throw err;
      }
    }
    void this.retainWal();
  }

  /** Refuse a stored manifest whose layout, mode, schema or key differs from the options. */
  private checkStored(stored: Manifest | undefined): void {
    if (!stored) return;
    const o = this.o;
    const mode = o.enableMemtable ? 'memtable' : 'wal-only';
    if (stored.layout !== this.adapter.layout) {
      throw new MemWalError(
        'NotSupported',
        `store ${o.name} was written with layout '${stored.layout}', which this storage ('${this.adapter.layout}') cannot read`,
      );
    }
    if (stored.mode !== mode) {
      throw new MemWalError('InvalidArgument', `option enableMemtable: store ${o.name} was created in ${stored.mode} mode`);
    }
    const storedSchema = decodeSchema(stored.schema);
    if (!schemasEqual(storedSchema, this.ss.base)) {
      throw new MemWalError(
        'InvalidArgument',
        `option schema: differs from the schema of store ${o.name} (schema evolution is not supported): ${describeSchemaDifference(storedSchema, this.ss.base) ?? ''}`,
      );
    }
    if (stored.primaryKey.join('\u0000') !== this.ss.primaryKey.join('\u0000')) {
      throw new MemWalError(
        'InvalidArgument',
        `option primaryKey: store ${o.name} has primary key [${stored.primaryKey.join(', ')}], not [${this.ss.primaryKey.join(', ')}]`,
      );
    }
  }

  /** Entries after this position must all still be in the WAL (replay or an unconsumed tail). */
  private retainedFrom(m: Manifest | undefined): number {
    if (!m) return 0;
    return this.o.enableMemtable ? m.replayCursor : (m.consumerCursor ?? 0);
  }

  /** Claim writer epoch + 1 with a compare-and-set on the manifest version. */
  private async claim(handle: StoreHandle, stored: Manifest | undefined): Promise<void> {
    let next: Manifest;
    if (stored) {
      next = { ...cloneManifest(stored), writerEpoch: stored.writerEpoch + 1, version: stored.version + 1 };
    } else {
      next = {
        formatVersion: MANIFEST_FORMAT_VERSION,
        layout: this.adapter.layout,
        mode: this.o.enableMemtable ? 'memtable' : 'wal-only',
        schema: encodeSchema(this.ss.base),
        primaryKey: [...this.ss.primaryKey],
        writerEpoch: 1,
        version: 1,
        nextGeneration: 1,
        replayCursor: 0,
        consumerCursor: null,
        positionHint: 0,
        tables: [],
      };
    }
    await handle.manifestCommit(stored?.version ?? 0, next);
    this.manifest = next;
    this.epoch = next.writerEpoch;
    this.tables = next.tables.map((t) => ({ ...t }));
    this.committedGeneration = next.nextGeneration - 1;
    this.active = new MemTable(next.nextGeneration, this.keyEncoder !== undefined);
  }

  /** Remove table files the manifest does not name (failed or interrupted flush attempts). */
  private async sweepOrphans(handle: StoreHandle): Promise<void> {
    const named = new Set(this.manifest.tables.map((t) => t.name));
    for (const name of await handle.tableList()) {
      if (!named.has(name)) await handle.tableRemove(name);
    }
  }

  private replayEntries: WalRecord[] = [];

  /**
   * Repair torn tails (SPEC §4.7), establish the position sequence, and keep the entries after
   * the replay cursor for replay.
   */
  private async recoverWal(handle: StoreHandle, a: WalAnalysis): Promise<void> {
    const m = this.manifest;
    for (const t of a.torn) {
      await handle.walTruncate(t.name, t.validEnd);
      this.tornTailBytes += t.cut;
    }
    this.segments = a.segments;
    this.replayEntries = this.o.enableMemtable ? a.entries.filter((e) => e.position > m.replayCursor) : [];
    const lastEntry = a.entries.length > 0 ? a.entries[a.entries.length - 1]!.position : 0;
    this.nextPosition = Math.max(lastEntry, m.replayCursor, m.consumerCursor ?? 0, m.positionHint) + 1;
    this.durablePosition = this.nextPosition - 1;
  }

  /** Replay entries after the replay cursor into memtables through the normal freeze triggers. */
  private async replay(): Promise<void> {
    const start = nowMs();
    const entries = this.replayEntries;
    this.replayEntries = [];
    for (const e of entries) {
      // Never hold more than the budget: wait for flushes as a put would.
      while (this.unflushedBytes() >= this.o.maxUnflushedMemtableBytes) {
        this.throwIfUnusable();
        if (!this.hasUncommittedFrozen()) this.freeze();
        await this.progress.wait();
      }
      this.throwIfUnusable();
      const batches = this.decodeEntry(e.payload, e.position);
      const keys = this.keyEncoder ? batches.map((b) => this.keyEncoder!(b)) : undefined;
      const bytes = batches.map((b, i) => estimateInsertBytes(b, keys?.[i]));
      const m = this.active;
      const end = m.append(batches, keys, bytes);
      m.durableBatches = end;
      m.publish(end);
      m.lastPosition = e.position;
      this.durableBatchCount += batches.length;
      this.ws.replayedEntries += 1;
      for (const b of batches) this.ws.replayedRows += b.numRows;
      if (this.freezeTriggered(m)) this.freeze();
      if (this.ws.replayedEntries % 64 === 0) await yieldToEventLoop();
    }
    this.ws.replayTimeMs = nowMs() - start;
  }

  /** Decode a WAL payload into batches carrying the store's internal schema object. */
  private decodeEntry(payload: Uint8Array, position: number): RecordBatch[] {
    let table: Table;
    try {
      // Decode from a copy of just this payload: the batches then own a compact buffer instead
      // of viewing the whole segment (one memcpy instead of a column-by-column compaction).
      table = tableFromIPC(payload.slice()) as Table;
    } catch (e) {
      throw new MemWalError('Corruption', `WAL entry ${position}: payload is not an Arrow IPC stream: ${String(e)}`);
    }
    if (!schemasEqual(table.schema, this.schemaForWal())) {
      throw new MemWalError('Corruption', `WAL entry ${position}: schema differs from the store's`);
    }
    // Decoded views point into the whole segment buffer: compact them so the estimate is what is resident.
    return table.batches.map((b) => compactIfSparse(b, this.schemaForWal()));
  }

  private schemaForWal(): Schema {
    return this.ss.internal;
  }

  // ------------------------------------------------------------------ state

  /**
   * Subscribe to writer state changes ('waiting-for-lock' | 'open' | 'fenced' | 'poisoned' |
   * 'closed'). Returns the unsubscribe function.
   */
  onStateChange(listener: (s: WriterState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Always `'in-process'`: this writer runs here. */
  role(): 'in-process' {
    return 'in-process';
  }

  /** The writer's current state. */
  get writerState(): WriterState {
    return this.state;
  }

  private setState(s: WriterState): void {
    if (this.state === s) return;
    this.state = s;
    this.hooks.onStateChange?.(s);
    for (const l of [...this.listeners]) {
      try {
        l(s);
      } catch (e) {
        this.o.logger.warn('memwal: onStateChange listener threw', e);
      }
    }
  }

  /** Latch a terminal failure: reject what waits, stop timers, wake everything. */
  private poison(err: MemWalError): void {
    if (this.poisonError || this.state === 'closed') return;
    this.poisonError = err;
    this.clearWalTimer();
    for (const e of this.walQueue) e.reject(err);
    this.setState(err.code === 'Fenced' ? 'fenced' : 'poisoned');
    this.bp.wake();
    this.progress.notify();
    this.flushKick.notify();
  }

  private onLockLost(reason: string): void {
    if (this.state === 'closed') return;
    this.poison(new MemWalError('Fenced', `writer lock of ${this.o.name} lost (${reason}): another writer may own the store`));
    this.dead = true;
    void this.handle?.release();
  }

  /** Reject reads and writes of a poisoned or closed writer. */
  private throwIfUnusable(): void {
    if (this.poisonError) throw this.poisonError;
    if (this.stopping || this.state === 'closed') throw new MemWalError('Closed', `store ${this.o.name} is closed`);
  }

  private requireMemtable(op: string): void {
    if (!this.o.enableMemtable) throw new MemWalError('NotSupported', `${op} is not available in WAL-only mode`);
  }

  private terminalForAdmission(): MemWalError | undefined {
    if (this.poisonError) return this.poisonError;
    if (this.stopping || this.state === 'closed') {
      return new MemWalError('Closed', `store ${this.o.name} closed while the put waited; nothing was written`);
    }
    return undefined;
  }

  // ------------------------------------------------------------------ put path

  /**
   * Write rows. Resolves `{ rows, position, durable }` once the WAL entry holding them is durable
   * (`durableWrite`, default) or once they are visible in memory.
   *
   * Rejections — not written: `InvalidArgument` (bad input, nothing written), `NotSupported`,
   * `Aborted` / `BackpressureTimeout` (the wait for room ended first), `Closed` before admission.
   * Outcome unknown: `IOError`, `QuotaExceeded`, `Fenced` (the WAL append failed or the writer
   * was fenced after the rows were admitted), `Closed` from `abort()` after admission.
   * `signal` governs only the backpressure wait.
   */
  async put(data: RecordBatch | Table | R['input'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    this.throwIfUnusable();
    const batches = toBatches(data, this.ss);
    return this.write(batches, opts.signal);
  }

  /**
   * Delete rows by primary key: writes tombstones that hide older versions in every tier.
   * `NotSupported` without a primary key or in WAL-only mode; otherwise as `put`.
   */
  async delete(keys: Table | R['key'][], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    this.throwIfUnusable();
    this.requireMemtable('delete');
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'delete needs a primary key (this store is append-only)');
    const batch = tombstoneBatch(keys, this.ss);
    return this.write([batch], opts.signal);
  }

  private async write(batches: RecordBatch[], signal: AbortSignal | undefined): Promise<PutResult> {
    const keys = this.keyEncoder ? batches.map((b) => this.keyEncoder!(b)) : undefined;
    const sizes = batches.map((b, i) => estimateInsertBytes(b, keys?.[i]));
    let bytes = 0;
    let rows = 0;
    for (let i = 0; i < batches.length; i++) {
      bytes += sizes[i]!;
      rows += batches[i]!.numRows;
    }
    let entry: PendingEntry | undefined;
    const tryAdmit = (): boolean => {
      if (this.unflushedBytes() >= this.o.maxUnflushedMemtableBytes) return false;
      entry = this.insert(batches, keys, sizes, bytes, rows);
      return true;
    };
    await this.bp.admit(tryAdmit, {
      terminal: () => this.terminalForAdmission(),
      onBlocked: () => this.onBlocked(),
      describe: () => `unflushed ${this.unflushedBytes()} of ${this.o.maxUnflushedMemtableBytes} bytes; flush: ${this.flushStage}`,
      signal,
      timeoutMs: this.o.backpressureTimeoutMs,
      logIntervalMs: this.o.backpressureLogIntervalMs,
      logger: this.o.logger,
    });
    const e = entry!;
    if (this.o.durableWrite) {
      await e.done;
      return { rows, position: e.position, durable: true };
    }
    return { rows, position: e.position, durable: e.position <= this.durablePosition };
  }

  /** Room-making step of the ladder: freeze if nothing else can free memory; push the WAL. */
  private onBlocked(): void {
    if (this.o.enableMemtable) {
      if (!this.hasUncommittedFrozen() && this.active.rows > 0) this.freeze();
      this.kickFlush(); // a no-op while the flush loop runs
    } else {
      this.closeOpenEntry();
      this.kickWal();
    }
  }

  /** Insert admitted batches: one synchronous step (memtable, WAL entry, freeze trigger). */
  private insert(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined, sizes: number[], bytes: number, rows: number): PendingEntry {
    const t0 = nowMs();
    let m: MemTable | undefined;
    let end = 0;
    if (this.o.enableMemtable) {
      m = this.active;
      end = m.append(batches, keys, sizes);
      if (!this.o.durableWrite) m.publish(end);
    }
    const e = this.joinEntry(m, batches, bytes, rows, end);
    this.ws.putCount += 1;
    this.ws.putRows += rows;
    if (m && this.freezeTriggered(m)) this.freeze();
    if (this.o.durableWrite || e.bytes >= this.o.maxWalBufferBytes) {
      this.kickWal();
    } else {
      this.armWalTimer();
    }
    this.ws.putTimeMs += nowMs() - t0;
    return e;
  }

  /** Add a put to the open WAL entry, or open a new one (one memtable per entry; size cap). */
  private joinEntry(m: MemTable | undefined, batches: RecordBatch[], bytes: number, rows: number, batchEnd: number): PendingEntry {
    let e = this.walQueue[this.walQueue.length - 1];
    if (!e || e.closed || e.memtable !== m || e.bytes + bytes > this.o.maxWalBufferBytes) {
      if (e) e.closed = true;
      e = this.newEntry(m);
      this.walQueue.push(e);
    }
    for (const b of batches) e.batches.push(b);
    e.bytes += bytes;
    e.rows += rows;
    e.batchEnd = batchEnd;
    this.walPendingBytes += bytes;
    this.walPendingBatches += batches.length;
    if (m) m.lastPosition = e.position;
    if (e.bytes >= this.o.maxWalBufferBytes) e.closed = true;
    return e;
  }

  private newEntry(m: MemTable | undefined): PendingEntry {
    let resolve!: () => void;
    let reject!: (e: MemWalError) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    done.catch(() => undefined); // non-durable puts do not await it; poison reports the failure
    return {
      position: this.nextPosition++,
      memtable: m,
      batches: [],
      bytes: 0,
      rows: 0,
      batchEnd: 0,
      closed: false,
      done,
      resolve,
      reject,
    };
  }

  private freezeTriggered(m: MemTable): boolean {
    return m.estimatedBytes >= this.o.maxMemtableBytes || m.rows >= this.o.maxMemtableRows || m.batches.length >= this.o.maxMemtableBatches;
  }

  /**
   * Freeze the active memtable (synchronous): close its WAL entry, swap in generation + 1, put
   * the frozen one in the read view before anything can fail, and push its WAL append and flush.
   */
  private freeze(): number | null {
    const m = this.active;
    if (m.rows === 0) return null;
    const tail = this.walQueue[this.walQueue.length - 1];
    if (tail && tail.memtable === m) tail.closed = true;
    m.state = 'frozen';
    this.frozen.push(m);
    this.active = new MemTable(m.generation + 1, this.keyEncoder !== undefined);
    this.kickWal();
    this.kickFlush();
    return m.generation;
  }

  private hasUncommittedFrozen(): boolean {
    return this.frozen.some((f) => f.state === 'frozen');
  }

  /** Active memtable + uncommitted frozen memtables (MemTable mode); bytes not appended (WAL-only). */
  private unflushedBytes(): number {
    if (!this.o.enableMemtable) return this.walPendingBytes;
    return this.active.estimatedBytes + this.frozenUncommittedBytes();
  }

  private frozenUncommittedBytes(): number {
    let n = 0;
    for (const f of this.frozen) if (f.state === 'frozen') n += f.estimatedBytes;
    return n;
  }

  // ------------------------------------------------------------------ WAL group commit

  private closeOpenEntry(): void {
    const tail = this.walQueue[this.walQueue.length - 1];
    if (tail) tail.closed = true;
  }

  private armWalTimer(): void {
    if (this.walTimer !== undefined || this.dead) return;
    this.walTimer = setTimeout(() => {
      this.walTimer = undefined;
      this.closeOpenEntry();
      this.kickWal();
    }, this.o.maxWalFlushIntervalMs);
  }

  private clearWalTimer(): void {
    if (this.walTimer !== undefined) clearTimeout(this.walTimer);
    this.walTimer = undefined;
  }

  /** Start the append loop if it is idle and a closed entry (or, when durable, any entry) waits. */
  private kickWal(): void {
    if (this.appending || this.poisonError || this.dead) return;
    const head = this.walQueue[0];
    if (!head) return;
    if (!head.closed) {
      if (!this.o.durableWrite) return;
      head.closed = true;
    }
    this.appending = true;
    void this.appendLoop();
  }

  /** Leader-style group commit: append entries in order; puts arriving meanwhile ride the next. */
  private async appendLoop(): Promise<void> {
    try {
      for (;;) {
        if (this.poisonError || this.dead) return;
        const e = this.walQueue[0];
        if (!e) return;
        if (!e.closed) {
          if (!this.o.durableWrite) break;
          e.closed = true;
        }
        await this.appendEntry(e);
        if (this.poisonError || this.dead) return;
        this.walQueue.shift();
        this.onEntryDurable(e);
      }
    } catch (err) {
      this.poison(toMemWalError(err, 'WAL append'));
      return;
    } finally {
      this.appending = false;
    }
    if (this.walQueue.length > 0) this.armWalTimer();
  }

  /** Append one entry, retrying (truncating back first) until walRetry.timeoutMs; then throw. */
  private async appendEntry(e: PendingEntry): Promise<void> {
    const handle = this.handle!;
    const payload = tableToIPC(new Table(this.schemaForWal(), e.batches), 'stream');
    const frame = encodeFrame(this.epoch, e.position, payload);
    let seg = this.currentSegment;
    if (!seg || seg.bytes >= WAL_SEGMENT_TARGET_BYTES) {
      seg = {
        name: segmentName(this.epoch, e.position),
        epoch: this.epoch,
        firstPosition: e.position,
        bytes: 0,
        lastPosition: e.position - 1,
      };
      this.currentSegment = seg;
      this.segments.push(seg);
    }
    const start = nowMs();
    let attempt = 0;
    await yieldToEventLoop(); // encoding and the append are separate slices
    for (;;) {
      try {
        await handle.walAppend(seg.name, seg.bytes, frame);
        break;
      } catch (raw) {
        const err = toMemWalError(raw, `WAL append of entry ${e.position}`);
        if (err.code === 'Fenced' || this.dead || this.poisonError) throw err;
        attempt += 1;
        this.ws.walAppendRetries += 1;
        if (nowMs() - start >= this.o.walRetry.timeoutMs) throw err;
        this.o.logger.warn(`memwal: ${err.message}; retry ${attempt}`);
        await sleep(backoffMs(attempt, this.o.walRetry.baseMs, this.o.walRetry.maxMs));
        if (this.dead || this.poisonError) throw err;
        try {
          await handle.walTruncate(seg.name, seg.bytes);
        } catch (t) {
          const terr = toMemWalError(t, `WAL truncate of ${seg.name}`);
          if (terr.code === 'Fenced') throw terr;
          // A segment that was never created cannot be truncated; the next append recreates it.
        }
      }
    }
    seg.bytes += frame.length;
    seg.lastPosition = e.position;
    this.bytesWritten += frame.length;
    this.entriesWritten += 1;
    this.ws.walAppendCount += 1;
    this.ws.walAppendTimeMs += nowMs() - start;
  }

  /** An entry is durable: advance cursors, publish rows, resolve puts, wake waiters. */
  private onEntryDurable(e: PendingEntry): void {
    this.durablePosition = e.position;
    this.walPendingBytes -= e.bytes;
    this.walPendingBatches -= e.batches.length;
    this.durableBatchCount += e.batches.length;
    const m = e.memtable;
    if (m) {
      if (e.batchEnd > m.durableBatches) m.durableBatches = e.batchEnd;
      if (this.o.durableWrite) m.publish(e.batchEnd);
      if (m.state === 'frozen' && m.fullyDurable) this.kickFlush();
    }
    e.resolve();
    if (!this.o.enableMemtable) this.bp.wake();
    this.progress.notify();
  }

  /**
   * Make everything accepted so far durable. Resolves with the last durable position.
   * Rejects with the latched error if the writer poisons first.
   */
  async sync(): Promise<{ position: number }> {
    this.throwIfUnusable();
    const last = this.walQueue[this.walQueue.length - 1];
    if (last) {
      this.closeOpenEntry();
      this.kickWal();
      await last.done;
    }
    return { position: this.durablePosition };
  }

  // ------------------------------------------------------------------ flush

  /**
   * Seal the active memtable now. `{ sealedGeneration: null }` when it was empty.
   * `NotSupported` in WAL-only mode.
   */
  async forceSealActive(): Promise<{ sealedGeneration: number | null }> {
    this.requireMemtable('forceSealActive');
    this.throwIfUnusable();
    return { sealedGeneration: this.freeze() };
  }

  private kickFlush(): void {
    if (this.flushing || this.dead || this.poisonError) return;
    this.flushing = true;
    void this.flushLoop();
  }

  /** Flush frozen memtables one at a time, oldest first; a failure is retried in place. */
  private async flushLoop(): Promise<void> {
    try {
      for (;;) {
        if (this.dead || this.poisonError) return;
        const m = this.frozen.find((f) => f.state === 'frozen');
        if (!m) return;
        if (!m.fullyDurable) {
          await this.progress.wait();
          continue;
        }
        const ok = await this.flushOnce(m);
        if (!ok) {
          if (this.stopping) return; // close: one more try each, then report
          await sleep(backoffMs(m.flushAttempts, this.o.flushRetry.baseMs, this.o.flushRetry.maxMs), this.flushKick);
        }
      }
    } finally {
      this.flushing = false;
      this.progress.notify();
    }
  }

  /** One flush attempt: write the table file, then commit the manifest. True on commit. */
  private async flushOnce(m: MemTable): Promise<boolean> {
    const handle = this.handle!;
    m.flushAttempts += 1;
    const stage = (s: string): void => {
      this.flushStage = `generation ${m.generation} attempt ${m.flushAttempts}: ${s}`;
    };
    const name = `${m.generation}-${this.epoch}-${m.flushAttempts}.arrow`;
    const start = nowMs();
    let written = false;
    try {
      stage('selecting rows');
      const { batches, rows, minKey, maxKey } = this.flushContent(m);
      await yieldToEventLoop();
      stage('encoding');
      const bytes = tableToIPC(new Table(this.ss.internal, batches), 'file');
      await yieldToEventLoop();
      const crc = { value: 0 };
      written = true;
      stage('writing the table file');
      await settleWithin(handle.tableWrite(name, chunked(bytes, crc)), this.o.flushRetry.stallMs, `table write of ${name}`);
      const checksum = crc.value.toString(16).padStart(8, '0');
      const entry: TableFileEntry = { generation: m.generation, name, bytes: bytes.length, rows, checksum };
      if (minKey !== undefined && maxKey !== undefined) {
        entry.minKey = keyToHex(minKey);
        entry.maxKey = keyToHex(maxKey);
      }
      stage('committing the manifest');
      const next = await this.commit((cur) => ({
        ...cur,
        tables: [...cur.tables, entry],
        nextGeneration: m.generation + 1,
        replayCursor: m.lastPosition,
      }));
      this.publishFlush(m, next, entry, start);
      this.flushStage = 'idle';
      return true;
    } catch (raw) {
      const err = toMemWalError(raw, `flush of generation ${m.generation}`);
      this.ws.flushFailureCount += 1;
      if (written && !this.dead) {
        try {
          await settleWithin(handle.tableRemove(name), this.o.flushRetry.stallMs, `removal of ${name}`);
        } catch (r) {
          this.o.logger.warn(`memwal: could not remove partial table file ${name} (swept at next open)`, r);
        }
      }
      if (err.code === 'Fenced') {
        this.poison(err);
      } else if (this.stopping) {
        this.closeFlushError ??= err;
      } else {
        this.o.logger.warn(`memwal: ${err.message}; retrying in place`);
      }
      this.progress.notify();
      return false;
    }
  }

  /** The synchronous publish step of a committed flush (SPEC §4.4). */
  private publishFlush(m: MemTable, next: Manifest, entry: TableFileEntry, start: number): void {
    this.tables = next.tables;
    this.committedGeneration = m.generation;
    m.state = 'committed';
    m.committedAtMs = nowMs();
    if (this.o.frozenMemtableGraceMs === 0) {
      this.frozen = this.frozen.filter((f) => f !== m);
    } else {
      m.graceTimer = setTimeout(() => {
        m.graceTimer = undefined;
        this.frozen = this.frozen.filter((f) => f !== m);
      }, this.o.frozenMemtableGraceMs);
    }
    const ms = nowMs() - start;
    this.ws.flushCount += 1;
    this.ws.flushRows += entry.rows;
    this.ws.flushBytes += entry.bytes;
    this.ws.flushTimeMs += ms;
    this.ws.lastFlushMs = ms;
    this.bp.wake();
    this.progress.notify();
    void this.retainWal();
  }

  /** The rows a memtable flushes: the newest visible version of each key (tombstones kept). */
  private flushContent(m: MemTable): { batches: RecordBatch[]; rows: number; minKey?: string; maxKey?: string } {
    if (!m.keyIndex) {
      let rows = 0;
      for (const b of m.batches) rows += b.numRows;
      return {
        batches: concatRows(
          m.batches.map((batch) => ({ batch, rows: 'all' as const })),
          this.ss.internal,
        ),
        rows,
      };
    }
    const perBatch: number[][] = m.batches.map(() => []);
    // Bounds: numbers compare as numbers, strings as strings; the two are merged at the end.
    let minNum = Infinity;
    let maxNum = -Infinity;
    let minStr: string | undefined;
    let maxStr: string | undefined;
    for (const [k, loc] of m.keyIndex) {
      const { batch, row } = m.ordinals.locate(loc);
      perBatch[batch]!.push(row);
      if (typeof k === 'number') {
        if (k < minNum) minNum = k;
        if (k > maxNum) maxNum = k;
      } else {
        if (minStr === undefined || k < minStr) minStr = k;
        if (maxStr === undefined || k > maxStr) maxStr = k;
      }
    }
    const bound = (num: number, str: string | undefined, pick: (a: string, b: string) => string): string | undefined => {
      const n = Number.isFinite(num) ? keyString(num, this.ss) : undefined;
      return n === undefined ? str : str === undefined ? n : pick(n, str);
    };
    const minKey = bound(minNum, minStr, (a, b) => (a < b ? a : b));
    const maxKey = bound(maxNum, maxStr, (a, b) => (a > b ? a : b));
    let rows = 0;
    const parts = m.batches.map((batch, i) => {
      const sel = perBatch[i]!.sort((a, b) => a - b);
      rows += sel.length;
      return { batch, rows: sel.length === batch.numRows ? ('all' as const) : sel };
    });
    return {
      batches: concatRows(
        parts.filter((p) => p.rows === 'all' || p.rows.length > 0),
        this.ss.internal,
      ),
      rows,
      minKey,
      maxKey,
    };
  }

  /**
   * Compare-and-set commit of the manifest, serialized. An ambiguous failure is resolved by
   * re-reading: our own version with our epoch means it landed; a newer epoch means `Fenced`.
   */
  private commit(change: (cur: Manifest) => Manifest): Promise<Manifest> {
    const run = async (): Promise<Manifest> => {
      const cur = this.manifest;
      const next: Manifest = {
        ...change(cloneManifest(cur)),
        version: cur.version + 1,
        writerEpoch: this.epoch,
        // Only durable positions: one assigned to an entry not yet appended may be reused after a
        // crash (it never reached storage), and reserving it would leave a gap in the WAL.
        positionHint: Math.max(cur.positionHint, this.durablePosition),
      };
      const handle = this.handle!;
      try {
        await handle.manifestCommit(cur.version, next);
      } catch (raw) {
        const err = toMemWalError(raw, 'manifest commit');
        if (err.code === 'Fenced' || this.dead) throw err;
        let stored: Manifest | undefined;
        try {
          stored = await handle.manifestLoad();
        } catch {
          throw err;
        }
        if (stored && stored.writerEpoch > this.epoch) {
          throw new MemWalError('Fenced', `manifest commit: store ${this.o.name} was claimed by writer epoch ${stored.writerEpoch}`);
        }
        if (!stored || stored.version !== next.version || stored.writerEpoch !== this.epoch) throw err;
      }
      this.manifest = next;
      return next;
    };
    const p = this.commitChain.then(run, run);
    this.commitChain = p.catch(() => undefined);
    return p;
  }

  /**
   * Resolve once every memtable frozen before the call has committed; waits through retried
   * failures. Rejects with the latched error (poisoned), `Closed`, or `Aborted` (signal).
   * `NotSupported` in WAL-only mode.
   */
  async waitForFlushDrain(opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.requireMemtable('waitForFlushDrain');
    const target = this.active.generation - 1;
    const signal = opts.signal;
    for (;;) {
      if (this.poisonError) throw this.poisonError;
      if (this.committedGeneration >= target) return;
      if (this.state === 'closed' || this.dead) throw new MemWalError('Closed', `store ${this.o.name} closed before its flushes drained`);
      if (signal?.aborted) throw new MemWalError('Aborted', 'waitForFlushDrain aborted');
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal?.removeEventListener('abort', done);
          resolve();
        };
        signal?.addEventListener('abort', done, { once: true });
        void this.progress.wait().then(done);
      });
    }
  }

  // ------------------------------------------------------------------ retention

  /** Remove WAL segments wholly at or below the retention cursor (SPEC §4.9). */
  private async retainWal(): Promise<void> {
    if (this.dead || this.poisonError || !this.handle) return;
    const m = this.manifest;
    const cursor = this.o.enableMemtable
      ? m.consumerCursor === null
        ? m.replayCursor
        : Math.min(m.replayCursor, m.consumerCursor)
      : (m.consumerCursor ?? 0);
    const removable = this.segments.filter((s) => s !== this.currentSegment && s.lastPosition <= cursor);
    for (const s of removable) {
      try {
        await this.handle.walRemove(s.name);
        this.segments = this.segments.filter((x) => x !== s);
      } catch (e) {
        this.o.logger.warn(`memwal: could not remove WAL segment ${s.name} (retried later)`, e);
        return;
      }
    }
  }

  /**
   * Record that a consumer is done with every entry up to `position` (durably, in the
   * manifest). WAL entries are removed only at or below the consumer cursor once it is set.
   */
  async markConsumed(position: number): Promise<void> {
    this.throwIfUnusable();
    if (!Number.isSafeInteger(position) || position < 0 || position > this.durablePosition) {
      throw new MemWalError(
        'InvalidArgument',
        `markConsumed: position must be an integer in [0, ${this.durablePosition}], got ${position}`,
      );
    }
    if (this.manifest.consumerCursor !== null && position <= this.manifest.consumerCursor) return;
    try {
      await this.commit((cur) => ({ ...cur, consumerCursor: Math.max(cur.consumerCursor ?? 0, position) }));
    } catch (raw) {
      const err = toMemWalError(raw, 'markConsumed');
      if (err.code === 'Fenced') this.poison(err);
      throw err;
    }
    await this.retainWal();
  }

  // ------------------------------------------------------------------ reads

  /** Capture memtables and table files in one synchronous step (no hole, no double). */
  private captureView(): ReadView {
    const memtables = [{ m: this.active, visible: this.active.visibleBatches }];
    const inMemory = new Set<number>([this.active.generation]);
    for (let i = this.frozen.length - 1; i >= 0; i--) {
      const f = this.frozen[i]!;
      memtables.push({ m: f, visible: f.visibleBatches });
      inMemory.add(f.generation);
    }
    const tables = this.tables.filter((t) => !inMemory.has(t.generation)).sort((a, b) => b.generation - a.generation);
    return { memtables, tables };
  }

  private tombstoneIndex(): number {
    return this.ss.hasTombstone ? this.ss.internal.fields.length - 1 : -1;
  }

  private isTombstone(batch: RecordBatch, row: number): boolean {
    const t = this.tombstoneIndex();
    return t >= 0 && batch.getChildAt(t)!.get(row) === true;
  }

  /**
   * The newest version of the row with this primary key, or undefined (absent or deleted).
   * `NotSupported` without a primary key or in WAL-only mode; `InvalidArgument` for a bad key.
   */
  get(key: R['key']): Promise<R['output'] | undefined>;
  async get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    this.throwIfUnusable();
    this.requireMemtable('get');
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'get needs a primary key (this store is append-only)');
    const k = encodeKey(key, this.ss);
    let encoded: string | undefined;
    const view = this.captureView();
    for (const { m, visible } of view.memtables) {
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b >= visible) continue;
      const batch = m.batches[b]!;
      return this.isTombstone(batch, row) ? undefined : rowObject(batch, row);
    }
    for (const t of view.tables) {
      if (t.minKey !== undefined) {
        const ks = (encoded ??= keyString(k, this.ss));
        if (ks < keyFromHex(t.minKey) || ks > keyFromHex(t.maxKey!)) continue;
      }
      const lt = await this.loadTable(t);
      const loc = lt.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = lt.ordinals.locate(loc);
      const batch = lt.batches[b]!;
      return this.isTombstone(batch, row) ? undefined : rowObject(batch, row);
    }
    return undefined;
  }

  /** Read, verify and decode a table file (cached for a few files). */
  private loadTable(t: TableFileEntry): Promise<LoadedTable> {
    const cached = this.tableCache.get(t.name);
    if (cached) {
      this.tableCache.delete(t.name);
      this.tableCache.set(t.name, cached);
      return cached;
    }
    const p = (async (): Promise<LoadedTable> => {
      let bytes: Uint8Array;
      try {
        bytes = await this.handle!.tableRead(t.name);
      } catch (e) {
        throw toMemWalError(e, `read of table file ${t.name}`);
      }
      if (bytes.length !== t.bytes || crc32c(bytes).toString(16).padStart(8, '0') !== t.checksum) {
        throw new MemWalError('Corruption', `table file ${t.name}: length or checksum differs from the manifest`);
      }
      const table = tableFromIPC(bytes) as Table;
      const batches = table.batches.map((b) => new RecordBatch(this.ss.internal, b.data));
      let keyIndex: KeyIndex | undefined;
      const ordinals = new RowOrdinals();
      for (const b of batches) ordinals.add(b.numRows);
      if (this.keyEncoder) {
        keyIndex = new KeyIndex();
        for (let bi = 0; bi < batches.length; bi++) {
          const keys = this.keyEncoder(batches[bi]!);
          const base = ordinals.start(bi);
          for (let r = 0; r < keys.length; r++) keyIndex.set(keys[r]!, base + r);
        }
      }
      return { entry: t, batches, keyIndex, ordinals };
    })();
    p.catch(() => this.tableCache.delete(t.name));
    this.tableCache.set(t.name, p);
    while (this.tableCache.size > TABLE_CACHE_FILES) this.tableCache.delete(this.tableCache.keys().next().value!);
    return p;
  }

  /**
   * Every live row across all tiers (newest version per key; deleted keys absent), oldest tier
   * first. `columns` projects. `NotSupported` in WAL-only mode.
   */
  async scan<C extends ColumnName<R> = ColumnName<R>>(opts: { columns?: C[] } = {}): Promise<Table<Pick<R['columns'], C>>> {
    const batches: RecordBatch[] = [];
    for await (const b of this.scanSources(opts.columns, Infinity, true)) batches.push(b);
    const schema = projectBatch(new RecordBatch(this.ss.internal, undefined as never), opts.columns, true).schema;
    return batches.length > 0 ? new Table(batches) : new Table(schema);
  }

  /**
   * The same rows as `scan`, one record batch at a time, holding one table file in memory at a
   * time (plus the set of keys already seen). With a primary key, batches come newest tier
   * first. `limit` caps the total rows yielded.
   */
  scanBatches<C extends ColumnName<R> = ColumnName<R>>(
    opts: { columns?: C[]; limit?: number } = {},
  ): AsyncIterable<RecordBatch<Pick<R['columns'], C>>> {
    const limit = opts.limit ?? Infinity;
    if (!(limit >= 0)) throw new MemWalError('InvalidArgument', 'scanBatches: limit must be >= 0');
    return this.scanSources(opts.columns, limit, false);
  }

  private async *scanSources(columns: string[] | undefined, limit: number, oldestFirst: boolean): AsyncGenerator<RecordBatch> {
    this.throwIfUnusable();
    this.requireMemtable('scan');
    const view = this.captureView();
    let left = limit;
    const emit = (batch: RecordBatch, rows: number[] | 'all'): RecordBatch[] => {
      if (left <= 0) return [];
      let sel = rows;
      const n = sel === 'all' ? batch.numRows : sel.length;
      if (n === 0) return [];
      if (n > left) sel = (sel === 'all' ? [...Array(batch.numRows).keys()] : sel).slice(0, left);
      left -= sel === 'all' ? batch.numRows : sel.length;
      return concatRows([{ batch, rows: sel }], this.ss.internal).map((b) => projectBatch(b, columns, true));
    };
    if (!this.keyEncoder) {
      // Append-only: every visible row, oldest first.
      const sources: RecordBatch[][] = [];
      for (const t of [...view.tables].reverse()) sources.push((await this.loadTable(t)).batches);
      for (const { m, visible } of [...view.memtables].reverse()) sources.push(m.batches.slice(0, visible));
      for (const src of sources) for (const b of src) for (const out of emit(b, 'all')) yield out;
      return;
    }
    // Keyed: newest first; a key seen in a newer tier hides older versions; tombstones hide.
    const seen = new Set<Key>();
    const tomb = this.tombstoneIndex();
    const pending: { batch: RecordBatch; rows: number[] }[] = [];
    const select = (batch: RecordBatch, keys: ArrayLike<Key>, newest: (r: number) => boolean): number[] => {
      const t = batch.getChildAt(tomb)!;
      const rows: number[] = [];
      for (let r = keys.length - 1; r >= 0; r--) {
        const k = keys[r]!;
        if (!newest(r) || seen.has(k)) continue;
        seen.add(k);
        if (t.get(r) !== true) rows.push(r);
      }
      return rows.reverse();
    };
    for (const { m, visible } of view.memtables) {
      for (let b = visible - 1; b >= 0; b--) {
        const rows = select(m.batches[b]!, m.batchKeys[b]!, (r) => m.isNewest(b, r));
        if (oldestFirst) pending.push({ batch: m.batches[b]!, rows });
        else for (const out of emit(m.batches[b]!, rows)) yield out;
      }
    }
    for (const t of view.tables) {
      const lt = await this.loadTable(t);
      for (let b = lt.batches.length - 1; b >= 0; b--) {
        const batch = lt.batches[b]!;
        const rows = select(batch, this.keyEncoder(batch), () => true);
        if (oldestFirst) pending.push({ batch, rows });
        else for (const out of emit(batch, rows)) yield out;
      }
    }
    for (let i = pending.length - 1; i >= 0; i--) for (const out of emit(pending[i]!.batch, pending[i]!.rows)) yield out;
  }

  // ------------------------------------------------------------------ tail

  /**
   * Durable WAL entries from `fromPosition` in order; ends at the end of the log, or with
   * `follow` waits for more (until close, poison or `signal`). Rejects `Truncated` below the
   * oldest retained entry.
   */
  async *tail(fromPosition: number, opts: { follow?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<WalEntry> {
    if (!Number.isSafeInteger(fromPosition) || fromPosition < 1) {
      throw new MemWalError('InvalidArgument', `tail: fromPosition must be an integer >= 1, got ${fromPosition}`);
    }
    this.throwIfUnusable();
    let pos = fromPosition;
    for (;;) {
      if (this.poisonError) throw this.poisonError;
      const oldest = this.oldestRetainedPosition();
      if (pos < oldest) {
        throw new MemWalError('Truncated', `tail: entry ${pos} was removed by retention (oldest retained: ${oldest})`);
      }
      const durable = this.durablePosition;
      if (pos <= durable) {
        const seg = [...this.segments].reverse().find((s) => s.firstPosition <= pos && pos <= s.lastPosition);
        if (!seg) {
          throw new MemWalError('Truncated', `tail: entry ${pos} is not in any retained WAL segment`);
        }
        let bytes: Uint8Array;
        try {
          bytes = await this.handle!.walRead(seg.name, 0);
        } catch (e) {
          throw toMemWalError(e, `tail read of ${seg.name}`);
        }
        const scan = scanSegment(bytes, 0);
        let progressed = false;
        for (const f of scan.frames) {
          if (f.position < pos || f.position > Math.min(durable, seg.lastPosition)) continue;
          const t = tableFromIPC(f.payload) as Table;
          yield { position: f.position, epoch: f.epoch, data: t };
          pos = f.position + 1;
          progressed = true;
        }
        if (!progressed) {
          throw new MemWalError('Corruption', `tail: entry ${pos} could not be read from WAL segment ${seg.name}`);
        }
        continue;
      }
      if (!opts.follow) return;
      if (this.state === 'closed' || this.dead) return;
      if (opts.signal?.aborted) return;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          opts.signal?.removeEventListener('abort', done);
          resolve();
        };
        opts.signal?.addEventListener('abort', done, { once: true });
        void this.progress.wait().then(done);
      });
    }
  }

  private oldestRetainedPosition(): number {
    let oldest = this.nextPosition;
    for (const s of this.segments) if (s.lastPosition >= s.firstPosition) oldest = Math.min(oldest, s.firstPosition);
    return Math.min(oldest, this.durablePosition + 1);
  }

  // ------------------------------------------------------------------ stats

  /** Memtable tier stats (never checks poison). `NotSupported` in WAL-only mode. */
  async memtableStats(): Promise<MemTableStats> {
    this.requireMemtable('memtableStats');
    return this.rw.read(() => this.memtableSnapshot());
  }

  private memtableSnapshot(): MemTableStats {
    let frozenBytes = 0;
    let graceBytes = 0;
    for (const f of this.frozen) {
      if (f.state === 'frozen') frozenBytes += f.estimatedBytes;
      else graceBytes += f.estimatedBytes;
    }
    return {
      rowCount: this.active.rows,
      batchCount: this.active.batches.length,
      estimatedBytes: this.active.estimatedBytes,
      generation: this.active.generation,
      frozenCount: this.frozen.length,
      frozenBytes,
      graceBytes,
      durableBatchCount: this.durableBatchCount,
      pendingWalBatchCount: this.walPendingBatches,
      pendingWalBytes: this.walPendingBytes,
    };
  }

  /** Backpressure waits (both modes; never checks poison). */
  async backpressureStats(): Promise<BackpressureStats> {
    return this.rw.read(() => this.bp.stats());
  }

  /** WAL positions and bytes (never checks poison). */
  async walStats(): Promise<WalStats> {
    return this.rw.read(() => this.walSnapshot());
  }

  private walSnapshot(): WalStats {
    let retainedBytes = 0;
    for (const s of this.segments) retainedBytes += s.bytes;
    return {
      nextPosition: this.nextPosition,
      oldestPosition: this.oldestRetainedPosition(),
      retainedBytes,
      bytesWritten: this.bytesWritten,
      entriesWritten: this.entriesWritten,
      tornTailBytes: this.tornTailBytes,
    };
  }

  /** Counters and times of puts, appends, flushes and replay since this open. */
  async writeStats(): Promise<WriteStats> {
    return this.rw.read(() => ({ ...this.ws }));
  }

  /** Usage, quota and persistence where the runtime knows them, plus table-file totals. */
  async storageStats(): Promise<StorageStats> {
    const est = await this.estimate();
    return this.rw.read(() => this.storageSnapshot(est));
  }

  private async estimate(): Promise<Awaited<ReturnType<NonNullable<StorageAdapter['estimate']>>>> {
    try {
      return (await this.adapter.estimate?.()) ?? {};
    } catch {
      return {};
    }
  }

  private storageSnapshot(est: { usageBytes?: number; quotaBytes?: number; persisted?: boolean }): StorageStats {
    let tableFileBytes = 0;
    for (const t of this.tables) tableFileBytes += t.bytes;
    return { ...est, tableFileCount: this.tables.length, tableFileBytes };
  }

  /** One consistent snapshot of every stat as Prometheus text exposition (format 0.0.4). */
  async metrics(): Promise<string> {
    const est = await this.estimate();
    return this.rw.read(() =>
      renderMetrics({
        store: this.o.name,
        mode: this.o.enableMemtable ? 'memtable' : 'wal-only',
        memtable: this.o.enableMemtable ? this.memtableSnapshot() : undefined,
        walUnappendedBytes: this.walPendingBytes,
        backpressure: this.bp.stats(),
        wal: this.walSnapshot(),
        write: { ...this.ws },
        storage: this.storageSnapshot(est),
        budgetBytes: this.o.maxUnflushedMemtableBytes,
        state: this.state,
      }),
    );
  }

  // ------------------------------------------------------------------ close / abort

  /**
   * Stop admitting (waiting and later puts reject `Closed`), make every accepted put durable,
   * flush what is frozen or active (one more try each), release the lock. On a flush failure it
   * still releases everything and rejects with that error; the rows are in the WAL and replay
   * at the next open. On a poisoned writer it releases without I/O. Idempotent.
   */
  close(): Promise<void> {
    this.closePromise ??= this.closeImpl();
    return this.closePromise;
  }

  private async closeImpl(): Promise<void> {
    if (this.state === 'closed') return;
    this.stopping = true;
    this.bp.wake();
    let failure: MemWalError | undefined;
    const poisonedBefore = this.poisonError !== undefined || this.dead;
    if (!poisonedBefore) {
      if (this.o.enableMemtable) this.freeze();
      this.closeOpenEntry();
      this.kickWal();
      // Every accepted put durable, then every frozen memtable flushed (one more try each).
      while (!this.poisonError && !this.dead && this.walQueue.length > 0) await this.progress.wait();
      if (this.o.enableMemtable && !this.poisonError && !this.dead) {
        this.flushKick.notify();
        this.kickFlush();
        while (!this.poisonError && !this.dead && this.hasUncommittedFrozen() && !this.closeFlushError) {
          await this.progress.wait();
          if (!this.flushing && this.hasUncommittedFrozen() && !this.closeFlushError) this.kickFlush();
        }
      }
      // A failure during close (a WAL append past walRetry, a failed last flush) is reported.
      failure = this.closeFlushError ?? this.poisonError;
    }
    await this.rw.write(async () => {
      this.shutdown(new MemWalError('Closed', `store ${this.o.name} is closed`));
      await this.handle?.release();
    });
    if (failure) throw failure;
  }

  /**
   * Stop now: no flush, no I/O beyond releasing the lock. In-flight puts reject `Closed`
   * (outcome unknown). Idempotent.
   */
  async abort(): Promise<void> {
    if (this.state === 'closed') return;
    this.stopping = true;
    this.dead = true;
    this.shutdown(new MemWalError('Closed', `store ${this.o.name} was aborted; the outcome of in-flight puts is unknown`));
    await this.handle?.release();
  }

  private shutdown(err: MemWalError): void {
    this.dead = true;
    this.clearWalTimer();
    for (const e of this.walQueue) e.reject(err);
    for (const f of this.frozen) if (f.graceTimer !== undefined) clearTimeout(f.graceTimer);
    this.setState('closed');
    this.bp.wake();
    this.progress.notify();
    this.flushKick.notify();
  }
}

/**
 * `p`, or an `IOError` if it has not settled after `ms` (a storage call that never settles must
 * not stall the writer for ever). A late settlement of `p` is ignored.
 */
function settleWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  p.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stall = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new MemWalError('IOError', `${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p, stall]).finally(() => clearTimeout(timer));
}

/** One durable WAL entry found at open. */
interface WalRecord {
  position: number;
  epoch: number;
  payload: Uint8Array;
}

/** A listed WAL segment with its bytes. */
interface ReadSegment {
  name: string;
  epoch: number;
  firstPosition: number;
  bytes: Uint8Array;
}

/** Every WAL segment of the store with its bytes; unchanged ones are taken from `cache`. */
async function readSegments(handle: StoreHandle, cache: ReadSegment[] = []): Promise<ReadSegment[]> {
  const known = new Map(cache.map((c) => [c.name, c]));
  const out: ReadSegment[] = [];
  for (const info of await handle.walList()) {
    const parsed = parseSegmentName(info.name);
    if (!parsed) continue;
    const hit = known.get(info.name);
    const bytes = hit && hit.bytes.length === info.bytes ? hit.bytes : await handle.walRead(info.name, 0);
    out.push({ name: info.name, epoch: parsed.epoch, firstPosition: parsed.firstPosition, bytes });
  }
  return out.sort((a, b) => a.firstPosition - b.firstPosition || a.epoch - b.epoch);
}

/**
 * Validate the WAL as open finds it (pure: changes nothing). Throws `Corruption` for an invalid
 * entry that is not a torn tail of the last segment of its epoch, a frame whose epoch or
 * position does not fit its segment, or a gap in positions after `mustKeepAfter`. An older
 * epoch's entries at or beyond the first position of a newer epoch's segment are ignored.
 */
/** What open learns from the WAL: the segments as tracked, the entries, the torn tails to cut. */
interface WalAnalysis {
  segments: Segment[];
  entries: WalRecord[];
  torn: { name: string; validEnd: number; cut: number }[];
}

function analyzeWal(listed: ReadSegment[], mustKeepAfter: number): WalAnalysis {
  const lastOfEpoch = new Map<number, string>();
  for (const s of listed) lastOfEpoch.set(s.epoch, s.name);
  const entries: WalRecord[] = [];
  const segments: Segment[] = [];
  const torn: { name: string; validEnd: number; cut: number }[] = [];
  for (const s of listed) {
    let limit = Infinity;
    for (const t of listed) if (t.epoch > s.epoch) limit = Math.min(limit, t.firstPosition);
    const scan = scanSegment(s.bytes, 0);
    let length = s.bytes.length;
    if (scan.status !== 'clean') {
      if (scan.status !== 'torn' || lastOfEpoch.get(s.epoch) !== s.name) {
        throw new MemWalError(
          'Corruption',
          `WAL segment ${s.name}: invalid entry at byte ${scan.validEnd} (${scan.reason ?? scan.status}); nothing was changed`,
        );
      }
      torn.push({ name: s.name, validEnd: scan.validEnd, cut: s.bytes.length - scan.validEnd });
      length = scan.validEnd;
    }
    let expected = s.firstPosition;
    let last = s.firstPosition - 1;
    for (const f of scan.frames) {
      if (f.epoch !== s.epoch || f.position !== expected) {
        throw new MemWalError(
          'Corruption',
          `WAL segment ${s.name}: entry at byte ${f.offset} has epoch ${f.epoch} position ${f.position}, expected epoch ${s.epoch} position ${expected}`,
        );
      }
      expected += 1;
      if (f.position >= limit) continue;
      last = f.position;
      entries.push({ position: f.position, epoch: f.epoch, payload: f.payload });
    }
    segments.push({ name: s.name, epoch: s.epoch, firstPosition: s.firstPosition, bytes: length, lastPosition: last });
  }
  entries.sort((a, b) => a.position - b.position);
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.position !== entries[i - 1]!.position + 1) {
      throw new MemWalError(
        'Corruption',
        `WAL is missing entries between positions ${entries[i - 1]!.position} and ${entries[i]!.position}`,
      );
    }
  }
  const firstAfter = entries.find((e) => e.position > mustKeepAfter);
  if (firstAfter && firstAfter.position !== mustKeepAfter + 1) {
    throw new MemWalError('Corruption', `WAL entries ${mustKeepAfter + 1}..${firstAfter.position - 1} are missing`);
  }
  return { segments, entries, torn };
}

/**
 * Split bytes into chunks, yielding to the event loop between them (stats stay responsive), and
 * fold each chunk into `crc.value` (CRC-32C of everything yielded so far).
 */
async function* chunked(bytes: Uint8Array, crc: { value: number }): AsyncGenerator<Uint8Array> {
  for (let off = 0; off < bytes.length; off += TABLE_WRITE_CHUNK_BYTES) {
    if (off > 0) await yieldToEventLoop();
    const chunk = bytes.subarray(off, Math.min(bytes.length, off + TABLE_WRITE_CHUNK_BYTES));
    crc.value = crc32c(chunk, crc.value);
    yield chunk;
  }
}
