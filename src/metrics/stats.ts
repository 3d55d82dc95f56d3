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
  /** Bytes held by the block cache now (bounded by `blockCacheLimitBytes`). */
  blockCacheBytes: number;
  /**
   * The block cache's bound now: the `blockCacheBytes` option, or by default sized from the table
   * files reads have opened (docs/impl.md §4).
   */
  blockCacheLimitBytes: number;
  /** Bytes of the block indexes and Bloom filters held for the open table files, outside the block cache's bound. */
  indexBytes: number;
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
  /**
   * The store's incarnation id (docs/format.md §9): new when the store is created, so a store
   * destroyed and created again under the same name, whose positions start again at 1, has
   * another. A drain sends it to its sink. Absent only from implementations that keep none.
   */
  incarnation?: string;
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
   * Bytes of this store in storage as the adapter reports them; see StorageEstimate. The browser
   * adapters report **the whole origin's** usage (`navigator.storage.estimate()`): every store of
   * the origin, its caches and other databases, and whatever the browser adds to its estimate
   * (Chromium pads opaque cached responses), so it may be gigabytes while this store holds
   * kilobytes: this store's own bytes are `storeBytes`.
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
  /**
   * Bytes of this store the engine itself accounts for: its table files plus its retained WAL
   * segments (`tableFileBytes + WalStats.retainedBytes`; the manifest's few KiB aside). Exact,
   * never the origin's: compare it with `usageBytes`, which in a browser is everything the origin
   * keeps.
   */
  storeBytes: number;
}

export type WriterState = 'waiting-for-lock' | 'open' | 'fenced' | 'poisoned' | 'closed';

/**
 * Backpressure in a stats snapshot: `BackpressureStats` (the seed's contract) plus what a reader
 * that samples now and then needs to see a wait that began and ended between two samples.
 */
export interface SnapshotBackpressure extends BackpressureStats {
  /**
   * The longest backpressure wait (ms) that was in progress at any moment since the previous
   * snapshot this reader got (its previous `stats()` call, or for an `onStats` listener its
   * previous push): waits that completed, were aborted, or still wait (their elapsed time so far).
   * 0 when no put waited in that interval. Its first snapshot covers the time since the store opened.
   */
  maxWaitMsSinceLast: number;
  /** The elapsed time of the longest wait in progress, ms (0 when none). */
  longestActiveWaitMs: number;
  /** Waits that started since this open (each completes, aborts, or is in `activeCount`). */
  startedCount: number;
}

/**
 * One index's figures (SPEC §17), one per declared index in `StatsSnapshot.indexes`: the ordered
 * indexes report theirs (engine/query.ts `IndexQueries.stats`), the text indexes theirs (engine/search.ts
 * `TextSearch.stats`: documents and bytes), the same figures as `indexStats()`.
 */
export interface IndexStats {
  /** The index's name. */
  name: string;
  /** Its kind: `'ordered'`, `'text'` or `'vector'`. */
  kind: string;
  /** Entries indexed (memtables and the table-file sections built so far), where the index tells. */
  entries?: number;
  /** Bytes the index holds in memory and in storage, where it tells. */
  bytes?: number;
  /**
   * Ordered indexes, the background build: live table files holding the index's section as
   * defined now, and those still without one (read from their rows until built). Absent for
   * text and vector indexes (their sections are not persisted).
   */
  filesBuilt?: number;
  filesPending?: number;
}

/**
 * Every stat of a store taken in one synchronous step (`stats()`, SPEC §15.3): the figures agree
 * with each other as of `takenAt`. The individual accessors (`memtableStats()`, ...) and
 * `metrics()` are views of it. Plain data (structured-clonable).
 */
export interface StatsSnapshot {
  /** Wall-clock time (ms since the epoch) the snapshot was taken, on the engine's thread. */
  takenAt: number;
  /** The store's name. */
  store: string;
  mode: 'memtable' | 'wal-only';
  state: WriterState;
  /**
   * Bytes accepted and not yet flushed: the active memtable plus frozen memtables whose flush has
   * not committed (`estimatedBytes + frozenBytes`, failed flushes included); in WAL-only mode the
   * bytes accepted and not yet appended to the WAL. What backpressure meters against `budgetBytes`.
   */
  unflushedBytes: number;
  /** `maxUnflushedMemtableBytes`: the budget `unflushedBytes` is held under. */
  budgetBytes: number;
  /** Absent in WAL-only mode. */
  memtable?: MemTableStats;
  backpressure: SnapshotBackpressure;
  wal: WalStats;
  write: WriteStats;
  /** Absent in WAL-only mode (no table files). */
  compaction?: CompactionStats;
  /** Absent in WAL-only mode (no table files). */
  read?: ReadStats;
  storage: StorageStats;
  /** One entry per index (SPEC §17); empty until an index layer reports. */
  indexes: IndexStats[];
}
