// The public API interface that MemWal (in-process) and MemWalClient (main thread) both
// implement, and the values its calls return. Types only.

import type { RecordBatch, Schema, Table } from 'apache-arrow';
import type { ColumnName, RowTypesOf, RowsParam, UntypedRows } from '../data/define-schema.js';
import type { QueryFilter } from '../data/index-keys.js';
import type { IndexStats, QueryOptions } from './query.js';
import type { NearestHit, NearestOptions } from './nearest.js';
import type { SearchHit, SearchOptions } from './search.js';
import type { MemWalError } from '../util/errors.js';
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

/** Options of `onStats`. */
export interface OnStatsOptions {
  /** How often a snapshot is pushed, ms (default 1000; a finite number ≥ 1). */
  intervalMs?: number;
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

/**
 * Where calls of a store are served: `'in-process'` (`MemWal`), `'leader'` (this tab's worker
 * hosts the store: every `openMemWal` client of the default `tabs: 'exclusive'`, and the tab
 * elected under `tabs: 'share'`) or `'follower'` (another tab's worker hosts it; calls are
 * forwarded there).
 */
/** One recorded schema version of a store (`schemaInfo`). */
export interface SchemaVersionInfo {
  version: number;
  schema: Schema;
  /** Columns this version renamed, old name → new name (absent: none). */
  renamed?: Record<string, string>;
}

/** What `schemaInfo()` answers. */
export interface SchemaInfo {
  /** The current schema version. */
  version: number;
  /** The current stored schema: every column the store keeps, hidden ones included. */
  schema: Schema;
  /** Every recorded version, oldest first. */
  versions: SchemaVersionInfo[];
  /** Stored columns this opener's schema lacks: kept with their values, not returned by its reads; its puts write null to them. */
  hidden: string[];
  /** This opener's columns that read and write a stored column of another name (a release from before a rename): its name → the stored name. */
  aliases: Record<string, string>;
}

export type Role = 'leader' | 'follower' | 'in-process';

/**
 * One read for `watch` to keep live, named by its method and given its arguments:
 * `{ get: key }`, `{ getMany: keys }`, `{ scan: { columns? } }` (`{ scan: {} }`: every column),
 * `{ query: index, ...QueryOptions }`, `{ count: index, ...QueryFilter }` (SPEC §15.1, §17.1),
 * `{ nearest: index, vector, ...NearestOptions }` (§17.3: it runs again after every commit) and
 * `{ search: index, text, ...SearchOptions }` (§17.2; woken by every commit: any write moves the
 * corpus statistics).
 */
export type WatchSpec<R extends RowsParam = UntypedRows> =
  | { get: RowTypesOf<R>['key'] }
  | { getMany: readonly RowTypesOf<R>['key'][] }
  | { scan: { columns?: ColumnName<R>[] } }
  | ({ query: string } & QueryOptions)
  | ({ count: string } & QueryFilter)
  | ({ nearest: string; vector: readonly number[] | Float32Array } & NearestOptions)
  | ({ search: string; text: string } & SearchOptions);

/** What `watch(spec)` delivers: what the read `spec` names resolves to. */
export type WatchResult<R extends RowsParam, S> = S extends { get: unknown }
  ? RowTypesOf<R>['output'] | undefined
  : S extends { getMany: unknown }
    ? (RowTypesOf<R>['output'] | undefined)[]
    : S extends { scan: { columns?: (infer C)[] } }
      ? Table<Pick<RowTypesOf<R>['columns'], C & ColumnName<R>>>
      : S extends { query: string }
        ? RowTypesOf<R>['output'][]
        : S extends { count: string }
          ? number
          : S extends { nearest: string }
            ? NearestHit<RowTypesOf<R>['output']>[]
            : S extends { search: string }
              ? SearchHit<RowTypesOf<R>['output']>[]
              : never;

/** Options of `watch`. */
export interface WatchOptions {
  /** Aborting it stops the watch, as the returned unsubscribe does. */
  signal?: AbortSignal;
  /**
   * A run of the read failed. `final` (a bad key: `InvalidArgument`; `NotSupported`): the watch
   * has stopped. Otherwise (a transient `IOError`...) it runs again after the next commit that
   * can alter it. Without it failures go to the store's logger. The store closing stops the watch
   * silently.
   */
  onError?: (error: MemWalError, final: boolean) => void;
}

/** What a watch listener learns beside the result. */
export interface WatchInfo {
  /** The result reflects at least every commit up to this WAL position. */
  position: number;
}

/**
 * The API shared by `MemWal` (in-process) and `MemWalClient` (main thread, via a worker). `R`
 * holds the row types: typed when the schema came from `defineSchema`, any object otherwise.
 * Rejections are `MemWalError`s; what each code means for a write is in `util/errors.ts`.
 */
export interface MemWalApi<R extends RowsParam = UntypedRows> {
  /**
   * Write rows (a `RecordBatch`, a `Table` or plain row objects); with a primary key an upsert.
   * Resolves once the WAL entry holding them is durable (`durableWrite`, the default) or once
   * they are visible in memory. `signal` governs only the wait for backpressure. Rejects
   * `InvalidArgument` (nothing written) for rows that do not match the schema. In-process
   * (`MemWal`), the memtable may keep views of a `RecordBatch`'s or `Table`'s buffers until they
   * are flushed: do not change them after `put` (build a new batch); `MemWalClient` copies them
   * as `put` is called, so from the page they may be reused at once.
   */
  put(data: RecordBatch | Table | RowTypesOf<R>['input'][], opts?: { signal?: AbortSignal }): Promise<PutResult>;
  /** Write tombstones for these primary keys; as `put`. `NotSupported` without a primary key. */
  delete(keys: Table | RowTypesOf<R>['key'][], opts?: { signal?: AbortSignal }): Promise<PutResult>;
  /** The newest version of the row with this key, or `undefined`. `NotSupported` without a primary key. */
  get(key: RowTypesOf<R>['key']): Promise<RowTypesOf<R>['output'] | undefined>;
  /**
   * Many point reads in one call (one message each way from the page): `out[i]` answers
   * `keys[i]` (`undefined` when absent or deleted; duplicates allowed), all from one consistent
   * snapshot. At most `MAX_GET_MANY_KEYS` (10,000) keys; a bad key rejects `InvalidArgument`
   * naming its index, and nothing is read. `NotSupported` without a primary key.
   */
  getMany(keys: readonly RowTypesOf<R>['key'][]): Promise<(RowTypesOf<R>['output'] | undefined)[]>;
  /**
   * Rows of an ordered index (SPEC §17.1; `'primary'`: the primary key) matching one of
   * `equals`, `range: { gt?, gte?, lt?, lte? }` or `prefix` (a value for the index's first column,
   * or an array for a leading prefix of a compound index's columns), as plain rows (as `get`
   * returns them) in index order, ties by primary key; `reverse` is the exact reverse; `limit`
   * caps the rows; `after` (the last row of the previous page) starts past it; `columns`
   * projects. Never an overwritten or deleted version; a multi-entry row once. `InvalidArgument`
   * for an unknown index, a value of the wrong type or a contradictory filter.
   */
  query(index: string, opts?: QueryOptions): Promise<RowTypesOf<R>['output'][]>;
  /** How many rows `query(index, filter)` returns (no limit). */
  count(index: string, filter?: QueryFilter): Promise<number>;
  /**
   * The `k` rows nearest to `vector` on a vector index (SPEC §17.3), nearest first, as
   * `{ row, distance }` (cosine: 1 − cos; l2: Euclidean; dot: −dot). `ef` widens the graph
   * search (default max(k, 64)); `where: { index, equals | range | prefix }` keeps the rows an
   * ordered index's filter matches, never fewer than k when k match. Only the newest version of
   * each row, never a deleted one. `InvalidArgument` for an unknown index, a vector of the wrong
   * length or with a NaN or infinity, a bad k, ef or where.
   */
  nearest(index: string, vector: readonly number[] | Float32Array, opts: NearestOptions): Promise<NearestHit<RowTypesOf<R>['output']>[]>;
  /**
   * Full-text search (SPEC §17.2) over a text index: the rows whose text holds every term of
   * `text` (tokenized as the index's documents are: data/tokenize.ts), with `prefix` the last term
   * as a prefix, best first by BM25 (k1 1.2, b 0.75, Lucene's IDF) with corpus statistics over the
   * live rows of every tier, ties by primary key; `where` keeps only rows an ordered query
   * (`{ index, equals | range | prefix }`) returns; `limit` (default 10, at most 10,000). Never an
   * overwritten or deleted version. `InvalidArgument` for an unknown index, a bad option, a text
   * of more than 4,096 characters or 32 terms.
   */
  search(index: string, text: string, opts?: SearchOptions): Promise<SearchHit<RowTypesOf<R>['output']>[]>;
  /**
   * Per declared index: entries and estimated bytes (memtables and the table-file sections built so
   * far); ordered indexes also their background build (`filesBuilt`, `filesPending`).
   */
  indexStats(): Promise<Record<string, IndexStats>>;
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
  /**
   * Every stat in one consistent snapshot taken at one moment (SPEC §15.3): `memtable`,
   * `backpressure` (waits in progress included, and `maxWaitMsSinceLast`: the longest wait since
   * this caller's previous snapshot), `wal`, `write`, `compaction`, `read`, `storage`, `indexes`,
   * plus `unflushedBytes`. The accessors below and `metrics()` are views of it. Answers on a
   * poisoned writer. From the page it answers from the snapshot the engine published last, which
   * is never older than the state any reply already received showed (no round trip once
   * published).
   */
  stats(): Promise<StatsSnapshot>;
  /**
   * Push a snapshot to `listener` at once and then every `intervalMs` (default 1000) until the
   * returned unsubscribe is called or the store closes; a backpressure wait that began and ended
   * between two pushes shows in `backpressure.maxWaitMsSinceLast`. `InvalidArgument` (thrown) for
   * a bad `intervalMs`.
   */
  onStats(listener: (s: StatsSnapshot) => void, opts?: OnStatsOptions): () => void;
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
  /**
   * The store's schema as stored (SPEC §9.1): its current version and schema (every kept column,
   * hidden ones included), every recorded version, the stored columns this opener does not see,
   * and this opener's columns that read a stored column under another name.
   */
  schemaInfo(): Promise<SchemaInfo>;
  /**
   * Keep the read `spec` names live: `listener` gets its result at once, then a new one after each
   * committed change (a WAL commit group, once durable, from any tab) that can alter it, decided
   * from what the read touched (the keys of `get` / `getMany`; everything for `scan`), not on
   * every write; at most once per commit group (commits landing while the read runs again are
   * taken into that run), never a result older than one it already got (a new result may equal
   * the previous one: a put of the same values). Returns the unsubscribe; `signal` stops it too,
   * and so does the store's close. Throws `InvalidArgument` for a spec that names no read (or
   * more than one) and `Closed` on a closed store; a read that fails goes to `onError`. Under
   * `tabs: 'share'` it works from every tab and goes on at the next leader.
   */
  watch<S extends WatchSpec<R>>(spec: S, listener: (result: WatchResult<R, S>, info: WatchInfo) => void, opts?: WatchOptions): () => void;
  /** Call `listener` on every later state change; returns the unsubscribe function. */
  onStateChange(listener: (s: WriterState) => void): () => void;
  /** Where this store's calls are served (see `Role`). */
  role(): Role;
  /** Stop admitting, make accepted puts durable, flush, release. Idempotent. */
  close(): Promise<void>;
  /** Stop now, without I/O (accepted puts replay at the next open). Idempotent, never rejects. */
  abort(): Promise<void>;
}
