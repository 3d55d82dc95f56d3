// The two modes of a store as two implementations of one interface (SlateDB's wal_disabled
// pattern): MemTable mode (memtable-tier.ts) and WAL-only mode, a durable queue (below). The writer
// asks the tier; it never tests the mode. What WAL-only mode lacks (memtables, table files,
// reads) rejects `NotSupported` here, in one place.

import type { RecordBatch, Table } from 'apache-arrow';
import type { Key } from '../data/keys.js';
import type { PreparedIndexing } from '../lsm/memtable.js';
import type { Manifest, StoreMode } from '../format/manifest/manifest.js';
import type { CompactionResult, CompactionStats, MemTableStats, ReadStats, StatsSnapshot } from '../metrics/stats.js';
import { MemWalError } from '../util/errors.js';
import type { QueryFilter } from '../data/index-keys.js';
import type { Backpressure } from './backpressure.js';
import type { IndexStats, QueryOptions } from './query.js';
import type { NearestHit, NearestOptions } from './nearest.js';
import type { SearchHit, SearchOptions } from './search.js';
import type { ReadFootprint } from './watch.js';
import type { WalRecord } from './recovery.js';
import type { PendingEntry, WalWriter } from './wal-writer.js';

/** What differs between MemTable mode and WAL-only mode. Methods marked sync must not await. */
export interface Tier {
  readonly mode: StoreMode;

  // The put path.
  /** Bytes held against the budget (sync). */
  unflushedBytes(): number;
  /**
   * Each batch's index work, done once before a put is checked (its bytes count against
   * `maxPutBytes`) and handed to `insert`; undefined when nothing is indexed (sync).
   */
  prepareIndexing(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined): PreparedIndexing[] | undefined;
  /** Insert admitted batches and join them to a WAL entry (sync, one step with admission). */
  insert(
    batches: RecordBatch[],
    keys: ArrayLike<Key>[] | undefined,
    sizes: number[],
    bytes: number,
    rows: number,
    prepared?: PreparedIndexing[],
  ): PendingEntry;
  /** A put is blocked: make sure something can free room (sync). */
  onBlocked(): void;
  /** A WAL entry turned durable (sync). */
  onDurable(e: PendingEntry): void;
  /** WAL entries at or below this position may be removed. */
  retentionCursor(m: Manifest): number;
  /** What the flush is doing, for the log of a put that waits long. */
  flushStage(): string;
  /** True while flushes wait for compaction (`BackpressureStats.cause`). */
  compactionStalled(): boolean;

  // Open and close.
  /** Open: take in the WAL entries recovery found (those after the manifest's replay cursor). */
  replay(entries: readonly WalRecord[], m: Manifest): Promise<void>;
  /** Close, step 1: freeze the active memtable (sync). */
  freezeForClose(): void;
  /** Close, step 2: one more flush attempt for each frozen memtable. Resolves the failure, if one. */
  flushForClose(): Promise<MemWalError | undefined>;
  /** Rows accepted and not yet in a table file (a close cut short must say so). */
  hasUnflushed(): boolean;

  // MemTable mode only: WAL-only mode rejects `NotSupported`.
  /** The tombstone batch of a delete (rows.ts `tombstoneBatch`); undefined for no keys. `NotSupported` without a primary key. */
  tombstones(keys: Table | Record<string, unknown>[]): RecordBatch | undefined;
  /** Freeze the active memtable now (`forceSealActive`); null when it was empty. */
  seal(): number | null;
  waitForFlushDrain(signal: AbortSignal | undefined): Promise<void>;
  get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined>;
  getMany(keys: readonly Record<string, unknown>[]): Promise<(Record<string, unknown> | undefined)[]>;
  scan(columns: string[] | undefined, limit: number, after?: Record<string, unknown>): AsyncGenerator<RecordBatch>;
  /** Ordered query over an index or `'primary'` (query.ts). */
  query(index: string, opts: QueryOptions | undefined): Promise<Record<string, unknown>[]>;
  count(index: string, filter: QueryFilter | undefined): Promise<number>;
  /** What a watched query of `index` with `filter` covers besides its rows (`IndexQueries.watchFootprint`). */
  queryFootprint(index: string, filter: QueryFilter | undefined): ReadFootprint;
  /** The rows nearest to `vector` on a vector index (nearest.ts). */
  nearest(index: string, vector: unknown, opts: NearestOptions): Promise<NearestHit[]>;
  /** Full-text search over a text index (search.ts). */
  search(index: string, text: string, opts: SearchOptions | undefined): Promise<SearchHit[]>;
  /** Per declared index: entries and bytes (sync). */
  indexStats(): Record<string, IndexStats>;
  memtableStats(): MemTableStats;
  compactionStats(): CompactionStats;
  readStats(): ReadStats;
  compact(signal: AbortSignal | undefined): Promise<CompactionResult>;
  /**
   * Cheap figures that change when the mode's stats change (sync; compared, never shown): a
   * host republishes its stats snapshot when they, or the writer's own, differ (rpc/host.ts).
   * `reads` false: without the read counters (a point read changes only those).
   */
  statsMark(reads?: boolean): number[];
  /** The mode's part of a stats snapshot, read in one synchronous step (WAL-only mode: none). */
  statsParts(): Pick<StatsSnapshot, 'memtable' | 'compaction' | 'read'>;

  /** The invariants of the mode's parts, checked (cheap; for tests). Throws an Error naming a broken one. */
  checkInvariants(): void;
}

/** WAL entries after this position must stay under manifest `m` in `mode` (replay, or an unconsumed tail). */
export function retainedFrom(mode: StoreMode, m: Manifest): number {
  return mode === 'memtable' ? m.replayCursor : (m.consumerCursor ?? 0);
}

const walOnly = (op: string): MemWalError => new MemWalError('NotSupported', `${op} is not available in WAL-only mode`);

/** WAL-only mode: puts are appended, nothing is held in memory once durable. */
export class WalOnlyTier implements Tier {
  readonly mode = 'wal-only';

  constructor(
    private readonly wal: WalWriter,
    private readonly backpressure: Backpressure,
  ) {}

  /** Bytes accepted but not yet appended. */
  unflushedBytes(): number {
    return this.wal.pendingBytes;
  }

  prepareIndexing(): undefined {
    return undefined; // no memtable, no index
  }

  insert(batches: RecordBatch[], _keys: ArrayLike<Key>[] | undefined, _sizes: number[], bytes: number, rows: number): PendingEntry {
    return this.wal.join(undefined, batches, bytes, rows, 0);
  }

  onBlocked(): void {
    this.wal.closeOpen();
    this.wal.kick();
  }

  onDurable(): void {
    this.backpressure.wake();
  }

  retentionCursor(m: Manifest): number {
    return retainedFrom(this.mode, m);
  }

  flushStage(): string {
    return 'none (WAL-only)';
  }

  compactionStalled(): boolean {
    return false;
  }

  /** Nothing to replay: the entries stay in the WAL for `tail`. */
  async replay(): Promise<void> {}

  freezeForClose(): void {}

  async flushForClose(): Promise<MemWalError | undefined> {
    return undefined;
  }

  hasUnflushed(): boolean {
    return false;
  }

  tombstones(): RecordBatch | undefined {
    throw walOnly('delete');
  }

  seal(): number | null {
    throw walOnly('forceSealActive');
  }

  waitForFlushDrain(): Promise<void> {
    return Promise.reject(walOnly('waitForFlushDrain'));
  }

  get(): Promise<Record<string, unknown> | undefined> {
    return Promise.reject(walOnly('get'));
  }

  getMany(): Promise<(Record<string, unknown> | undefined)[]> {
    return Promise.reject(walOnly('getMany'));
  }

  // biome-ignore lint/correctness/useYield: it only rejects, as the other mode's scan would after its checks
  async *scan(): AsyncGenerator<RecordBatch> {
    throw walOnly('scan');
  }

  query(): Promise<Record<string, unknown>[]> {
    return Promise.reject(walOnly('query'));
  }

  count(): Promise<number> {
    return Promise.reject(walOnly('count'));
  }

  queryFootprint(): ReadFootprint {
    throw walOnly('query');
  }

  nearest(): Promise<NearestHit[]> {
    return Promise.reject(walOnly('nearest'));
  }

  search(): Promise<SearchHit[]> {
    return Promise.reject(walOnly('search'));
  }

  indexStats(): Record<string, IndexStats> {
    return {};
  }

  memtableStats(): MemTableStats {
    throw walOnly('memtableStats');
  }

  compactionStats(): CompactionStats {
    throw walOnly('compactionStats');
  }

  readStats(): ReadStats {
    throw walOnly('readStats');
  }

  compact(): Promise<CompactionResult> {
    return Promise.reject(walOnly('compact'));
  }

  statsMark(): number[] {
    return [];
  }

  statsParts(): Pick<StatsSnapshot, 'memtable' | 'compaction' | 'read'> {
    return {};
  }

  checkInvariants(): void {}
}
