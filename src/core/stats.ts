// Stats shapes returned by the stats accessors (docs/impl.md §6) and the public API interface that
// MemWal (in-process) and MemWalClient (main thread) both implement.

import type { RecordBatch, Table } from 'apache-arrow';
import type { ColumnName, RowTypesOf, RowsParam, UntypedRows } from '../define-schema.js';

/**
 * The memtable tier (MemTable mode only; WAL-only mode rejects with `NotSupported`).
 * All byte figures are estimates: slice-aware Arrow buffer sizes plus the documented per-row
 * key-index estimate (docs/impl.md).
 */
export interface MemTableStats {
  /** Rows in the active memtable, durable or not. */
  rowCount: number;
  /** Record batches in the active memtable. */
  batchCount: number;
  /** Estimated bytes of the active memtable. */
  estimatedBytes: number;
  /** Generation the active memtable will carry when flushed. */
  generation: number;
  /**
   * Frozen memtables still held in the read view: waiting for their flush, retrying after a
   * failed flush, or flushed and lingering for `frozenMemtableGraceMs`. Its denominator differs
   * from `frozenBytes` on purpose: it may stay up while `frozenBytes` drops to 0 during grace.
   */
  frozenCount: number;
  /**
   * Bytes of frozen memtables whose flush has **not committed**, failed flushes included: memory
   * still resident and still owed to storage. Drops the moment a flush commits.
   */
  frozenBytes: number;
  /** Bytes of committed memtables still held for the grace period (outside the budget). */
  graceBytes: number;
  /** Batches (writer-wide, this open) whose WAL append is durable. */
  durableBatchCount: number;
  /** Batches accepted but not yet WAL-durable. */
  pendingWalBatchCount: number;
  /** Estimated bytes of those batches. */
  pendingWalBytes: number;
}

/** Backpressure waits (both modes, always answers). Counters count from this open. */
export interface BackpressureStats {
  /** Waits that completed: the put was admitted after waiting. */
  totalCount: number;
  /** Summed duration of completed waits, ms. */
  totalWaitMs: number;
  /** Puts waiting right now (incremented when a wait starts, decremented in a `finally`). */
  activeCount: number;
  /** Summed elapsed time of the waits in progress, ms. */
  activeWaitMs: number;
  /** Waits that ended without admission: abort, timeout, poison or close. */
  abortedCount: number;
  /** Summed duration of those waits, ms. */
  abortedWaitMs: number;
  /**
   * Why the puts waiting right now wait: `'memtable'` (unflushed bytes are at the budget while
   * flushes run), `'compaction'` (flushes are held back because compaction is behind, docs/impl.md
   * §5), `null` when nobody waits.
   */
  cause: 'memtable' | 'compaction' | null;
}

/** Point reads and table-file reads since this open (MemTable mode). */
export interface ReadStats {
  /** `get` calls. */
  gets: number;
  /** Table files whose key range and Bloom filter admitted a `get` (each costs at most one block read). */
  tableFilesConsulted: number;
  /** Table files a `get` skipped because their Bloom filter ruled the key out. */
  bloomNegatives: number;
  /** Bloom filters that admitted the key. */
  bloomPositives: number;
  /** Of those, how many did not hold the key after all. */
  bloomFalsePositives: number;
  /** Blocks read from storage (point reads, scans, compaction inputs). */
  blockReads: number;
  /** Blocks served from the block cache. */
  blockCacheHits: number;
  /** Bytes held by the block cache now (bounded by `blockCacheBytes`). */
  blockCacheBytes: number;
}

/** Table files per LSM level. */
export interface LevelStats {
  level: number;
  files: number;
  bytes: number;
}

/** Compaction since this open, and the table files now (MemTable mode). */
export interface CompactionStats {
  /** Live table files and their bytes. */
  tableCount: number;
  tableBytes: number;
  levels: LevelStats[];
  /** Bytes the next compaction would read (0 when none is due): the compaction debt. */
  pendingBytes: number;
  /** True while a compaction runs. */
  running: boolean;
  completedCount: number;
  failureCount: number;
  bytesRead: number;
  bytesWritten: number;
  /**
   * Live table bytes ÷ the bytes their newest versions would take (an estimate from the
   * compaction that last rewrote everything; 1 means nothing is stale).
   */
  spaceAmplification: number;
  /**
   * Flushes that had to wait because compaction was behind (level-0 file count or pending bytes
   * at their bound): a leading indicator, it rises before puts block.
   */
  l0StallCount: number;
}

/** What `compact()` did. */
export interface CompactionResult {
  /** Compactions run by this call. */
  compactions: number;
  bytesRead: number;
  bytesWritten: number;
  tablesBefore: number;
  tablesAfter: number;
}

export interface WalStats {
  /** Position the next WAL entry will get. */
  nextPosition: number;
  /** Oldest position still retained in storage (= `nextPosition` when nothing is retained). */
  oldestPosition: number;
  /** Bytes of WAL segments still in storage. */
  retainedBytes: number;
  /** Bytes appended by this open (frames included). */
  bytesWritten: number;
  /** Entries appended by this open. */
  entriesWritten: number;
  /** Bytes cut from torn tails at this open. */
  tornTailBytes: number;
}

export interface WriteStats {
  putCount: number;
  putRows: number;
  /** Time inside put from admission to insert (excludes backpressure and durability waits), ms. */
  putTimeMs: number;
  walAppendCount: number;
  walAppendTimeMs: number;
  walAppendRetries: number;
  flushCount: number;
  flushRows: number;
  flushBytes: number;
  flushTimeMs: number;
  flushFailureCount: number;
  /** Duration of the last successful flush, ms (0 before the first). */
  lastFlushMs: number;
  replayedEntries: number;
  replayedRows: number;
  /** Time open spent replaying, ms. */
  replayTimeMs: number;
}

/** The adapter's `StorageEstimate` of this store (each figure defined there), plus table-file totals. */
export interface StorageStats {
  /** Bytes of this store in storage (the browser adapters: the whole origin's); see StorageEstimate. */
  usageBytes?: number;
  /** Room to grow, where the runtime tells; see StorageEstimate. */
  quotaBytes?: number;
  persisted?: boolean;
  /** Table files in the manifest and their total bytes. */
  tableFileCount: number;
  tableFileBytes: number;
}

/** `{ rows, position, durable }`: position is the WAL entry that holds the put. */
export interface PutResult {
  rows: number;
  position: number;
  /** True when the entry was durable when the put resolved (always, with `durableWrite`). */
  durable: boolean;
}

/** One durable WAL entry as `tail` yields it. */
export interface WalEntry {
  position: number;
  epoch: number;
  /** The entry's rows; deletes are rows with `_tombstone` true. */
  data: Table;
}

export type WriterState = 'waiting-for-lock' | 'open' | 'fenced' | 'poisoned' | 'closed';

/**
 * Where calls of a store are served: `'in-process'` (`MemWal`), `'leader'` (this tab's worker
 * hosts the store: every `openMemWal` client of the default `tabs: 'exclusive'`, and the tab
 * elected under `tabs: 'share'`) or `'follower'` (another tab's worker hosts it; calls are
 * forwarded there).
 */
export type Role = 'leader' | 'follower' | 'in-process';

/**
 * The API shared by `MemWal` (in-process) and `MemWalClient` (main thread, via a worker). `R`
 * holds the row types: typed when the schema came from `defineSchema`, any object otherwise.
 * Rejections are `MemWalError`s; what each code means for a write is in `errors.ts`.
 */
export interface MemWalApi<R extends RowsParam = UntypedRows> {
  /**
   * Write rows (a `RecordBatch`, a `Table` or plain row objects); with a primary key an upsert.
   * Resolves once the WAL entry holding them is durable (`durableWrite`, the default) or once
   * they are visible in memory. `signal` governs only the wait for backpressure. Rejects
   * `InvalidArgument` (nothing written) for rows that do not match the schema.
   */
  put(data: RecordBatch | Table | RowTypesOf<R>['input'][], opts?: { signal?: AbortSignal }): Promise<PutResult>;
  /** Write tombstones for these primary keys; as `put`. `NotSupported` without a primary key. */
  delete(keys: Table | RowTypesOf<R>['key'][], opts?: { signal?: AbortSignal }): Promise<PutResult>;
  /** The newest version of the row with this key, or `undefined`. `NotSupported` without a primary key. */
  get(key: RowTypesOf<R>['key']): Promise<RowTypesOf<R>['output'] | undefined>;
  /** Every live row across all tiers (newest version per key), as one Arrow `Table`; `columns` projects. */
  scan<C extends ColumnName<R> = ColumnName<R>>(opts?: { columns?: C[] }): Promise<Table<Pick<RowTypesOf<R>['columns'], C>>>;
  /**
   * The rows of `scan` batch by batch, with bounded memory; `limit` caps the rows; `after`
   * (keyed stores) starts past that key — pass the last key of the previous page to page.
   */
  scanBatches<C extends ColumnName<R> = ColumnName<R>>(opts?: {
    columns?: C[];
    limit?: number;
    after?: RowTypesOf<R>['key'];
  }): AsyncIterable<RecordBatch<Pick<RowTypesOf<R>['columns'], C>>>;
  /** Resolves once everything accepted so far is durable, with the last durable position. */
  sync(): Promise<{ position: number }>;
  /** Freeze the active memtable now; `sealedGeneration` is null when it was empty. */
  forceSealActive(): Promise<{ sealedGeneration: number | null }>;
  /** Resolves once every memtable frozen so far has committed its flush (waiting through retries). */
  waitForFlushDrain(opts?: { signal?: AbortSignal }): Promise<void>;
  /** Memtable tier stats (`NotSupported` in WAL-only mode). Answers on a poisoned writer. */
  memtableStats(): Promise<MemTableStats>;
  /** Backpressure waits. Always answers. */
  backpressureStats(): Promise<BackpressureStats>;
  compactionStats(): Promise<CompactionStats>;
  readStats(): Promise<ReadStats>;
  compact(opts?: { signal?: AbortSignal }): Promise<CompactionResult>;
  walStats(): Promise<WalStats>;
  writeStats(): Promise<WriteStats>;
  /**
   * Usage figures and table-file totals. The adapter's usage figures are cached for a second and
   * refreshed in the background; the first call waits at most 200 ms for them, then answers with
   * `usageBytes`/`quotaBytes` undefined (an estimate that never settles is not asked again).
   */
  storageStats(): Promise<StorageStats>;
  /** Every stat as Prometheus text exposition (format 0.0.4) with a `store` label; usage figures as in `storageStats`. */
  metrics(): Promise<string>;
  /**
   * Durable WAL entries from `fromPosition` in order, then the end, or with `follow` more as
   * they turn durable (until close or `signal`). `Truncated` below the oldest retained entry.
   */
  tail(fromPosition: number, opts?: { follow?: boolean; signal?: AbortSignal }): AsyncIterable<WalEntry>;
  /** A consumer is done with every entry up to `position`; the WAL keeps later ones for it. */
  markConsumed(position: number): Promise<void>;
  /** Call `listener` on every later state change; returns the unsubscribe function. */
  onStateChange(listener: (s: WriterState) => void): () => void;
  /** Where this store's calls are served (see `Role`). */
  role(): Role;
  /** Stop admitting, make accepted puts durable, flush, release. Idempotent. */
  close(): Promise<void>;
  /** Stop now, without I/O (accepted puts replay at the next open). Idempotent, never rejects. */
  abort(): Promise<void>;
}
