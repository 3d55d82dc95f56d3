// Stats shapes returned by the stats accessors (docs/impl.md §6): plain data that every layer
// reporting a figure fills in and metrics/prometheus.ts renders. Imports nothing.

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
  /** `get` calls, plus one per key of each `getMany`. */
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
  /**
   * Bytes of this store in storage (the browser adapters: the whole origin's); see StorageEstimate.
   * Undefined until the adapter's first estimate lands (a call waits at most 200 ms for it) and
   * when the adapter cannot tell.
   */
  usageBytes?: number;
  /** Room to grow, where the runtime tells; see StorageEstimate. */
  quotaBytes?: number;
  persisted?: boolean;
  /** Table files in the manifest and their total bytes. */
  tableFileCount: number;
  tableFileBytes: number;
}

export type WriterState = 'waiting-for-lock' | 'open' | 'fenced' | 'poisoned' | 'closed';
