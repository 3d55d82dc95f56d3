// The reads `watch` keeps live (`WatchSpec`, api.ts), each as its run and its footprint
// (watch.ts), and the registration of one watch with the writer's `Watches`. MemWal.watch
// (memwal.ts) routes here.

import type { Table } from 'apache-arrow';
import type { QueryFilter } from '../data/index-keys.js';
import type { Key } from '../data/keys.js';
import { MemWalError } from '../util/errors.js';
import type { WatchInfo, WatchOptions, WatchSpec } from './api.js';
import type { QueryOptions } from './query.js';
import type { NearestHit, NearestOptions } from './nearest.js';
import type { SearchHit, SearchOptions } from './search.js';
import type { ReadFootprint, WatchRead, Watches } from './watch.js';

/** The reads of a writer a watch runs (MemWal's). */
export interface WatchableReads {
  get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined>;
  getMany(keys: readonly Record<string, unknown>[]): Promise<(Record<string, unknown> | undefined)[]>;
  scan(opts: { columns?: string[] }): Promise<Table>;
  query(index: string, opts?: QueryOptions): Promise<Record<string, unknown>[]>;
  nearest(index: string, vector: readonly number[] | Float32Array, opts: NearestOptions): Promise<NearestHit[]>;
  search(index: string, text: string, opts?: SearchOptions): Promise<SearchHit[]>;
  /** The primary key's columns. */
  readonly primaryKeyColumns: readonly string[];
  /** What a watched query covers besides its rows (`IndexQueries.watchFootprint`). */
  queryFootprint(index: string, filter: QueryFilter | undefined): ReadFootprint;
  /** A key as the watches compare it. */
  encodeWatchKey(key: Record<string, unknown>): Key;
}

/**
 * The reads `watch` can keep live. Adding one is an entry here and a member of `WatchSpec`
 * (api.ts): run the read, and say what it touched — `keys` (the keys it looked up, or the keys
 * of the rows it returned, so a change or delete of one is seen) and `ranges` (each index range
 * it covered, so a row written into one is seen), or `all`.
 */
export const WATCH_READS = {
  get: (db: WatchableReads, key: Record<string, unknown>) => async () => {
    const value = await db.get(key);
    return { value, touched: { keys: [db.encodeWatchKey(key)] } satisfies ReadFootprint };
  },
  getMany: (db: WatchableReads, keys: readonly Record<string, unknown>[]) => async () => {
    const value = await db.getMany(keys);
    return { value, touched: { keys: keys.map((k) => db.encodeWatchKey(k)) } satisfies ReadFootprint };
  },
  scan: (db: WatchableReads, opts: { columns?: string[] } | undefined) => async () => {
    const value = await db.scan(opts ?? {});
    return { value, touched: { all: true } satisfies ReadFootprint };
  },
  // The rows it returned (their keys: an overwrite moving one out of the range, or its delete,
  // is seen) and the filter's range (a row written into it is seen).
  query: (db: WatchableReads, spec: { query: string } & QueryOptions) => async () => {
    const { query: index, ...opts } = spec;
    const rows = await queryWithKeys(db, index, opts);
    return { value: rows.value, touched: { keys: rows.keys, ...db.queryFootprint(index, opts) } satisfies ReadFootprint };
  },
  // As a query of the same filter, without limit: the count is its number of rows.
  count: (db: WatchableReads, spec: { count: string } & QueryFilter) => async () => {
    const { count: index, ...filter } = spec;
    const pk = db.primaryKeyColumns as string[];
    const rows = await db.query(index, { ...filter, columns: pk });
    const keys = rows.map((r) => keyOfRow(db, r));
    return { value: rows.length, touched: { keys, ...db.queryFootprint(index, filter) } satisfies ReadFootprint };
  },
  // Any written row may come nearer than the k-th (or move away): every commit.
  nearest: (db: WatchableReads, spec: { nearest: string; vector: readonly number[] | Float32Array } & NearestOptions) => async () => {
    const { nearest: index, vector, ...opts } = spec;
    return { value: await db.nearest(index, vector, opts), touched: { all: true } satisfies ReadFootprint };
  },
  // Every commit: any row written or deleted moves the corpus statistics, so every score.
  search: (db: WatchableReads, spec: { search: string; text: string } & SearchOptions) => async () => {
    const { search: index, text, ...opts } = spec;
    return { value: await db.search(index, text, opts), touched: { all: true } satisfies ReadFootprint };
  },
} satisfies Record<string, (db: WatchableReads, arg: never) => WatchRead<unknown>>;

/** Reads whose spec carries options beside the read's name (`{ query: index, ...options }`): handed the whole spec. */
const WITH_OPTIONS: ReadonlySet<string> = new Set(['query', 'count', 'nearest', 'search']);

/** The encoded primary key of a row a query returned. */
function keyOfRow(db: WatchableReads, row: Record<string, unknown>): Key {
  return db.encodeWatchKey(Object.fromEntries(db.primaryKeyColumns.map((c) => [c, row[c]])));
}

/** `query(index, opts)` with the primary keys of its rows, even when `opts.columns` leaves them out. */
async function queryWithKeys(
  db: WatchableReads,
  index: string,
  opts: QueryOptions,
): Promise<{ value: Record<string, unknown>[]; keys: Key[] }> {
  const missing = opts.columns ? db.primaryKeyColumns.filter((c) => !opts.columns!.includes(c)) : [];
  if (missing.length === 0) {
    const value = await db.query(index, opts);
    return { value, keys: value.map((r) => keyOfRow(db, r)) };
  }
  const rows = await db.query(index, { ...opts, columns: [...opts.columns!, ...missing] });
  const keys = rows.map((r) => keyOfRow(db, r));
  for (const r of rows) for (const c of missing) delete r[c];
  return { value: rows, keys };
}

/** The run of the read `spec` names, or `InvalidArgument` when it names not exactly one. */
export function watchReadOf(db: WatchableReads, spec: WatchSpec): WatchRead<unknown> {
  const named = typeof spec === 'object' && spec !== null ? Object.keys(spec).filter((k) => Object.hasOwn(WATCH_READS, k)) : [];
  if (named.length !== 1 || (!WITH_OPTIONS.has(named[0]!) && Object.keys(spec).length !== 1)) {
    throw new MemWalError('InvalidArgument', `watch: spec must name one read (${Object.keys(WATCH_READS).join(', ')}), as { get: key }`);
  }
  const kind = named[0] as keyof typeof WATCH_READS;
  return WATCH_READS[kind](db, (WITH_OPTIONS.has(kind) ? spec : (spec as Record<string, unknown>)[kind]) as never);
}

/**
 * Register `read` with `watches`: results to `listener` (one that throws is logged), failures to
 * `opts.onError` (or logged); `opts.signal` stops it. Returns the unsubscribe function.
 */
export function addWatch(
  watches: Watches,
  read: WatchRead<unknown>,
  listener: (result: unknown, info: WatchInfo) => void,
  opts: WatchOptions,
  logger: { warn(message: string, ...details: unknown[]): void },
): () => void {
  if (opts.signal?.aborted) return () => undefined;
  const stop = watches.add(read, {
    deliver: (value, position) => {
      try {
        listener(value, { position });
      } catch (e) {
        logger.warn('memwal: a watch listener threw', e);
      }
    },
    fail: (error, final) => {
      if (opts.onError) opts.onError(error, final);
      else logger.warn(`memwal: a watched read failed${final ? '; the watch stopped' : ''}`, error);
    },
  });
  const signal = opts.signal;
  const onAbort = (): void => stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  return () => {
    signal?.removeEventListener('abort', onAbort);
    stop();
  };
}
