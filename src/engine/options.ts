// MemWalOptions, their defaults (each with its reason), and resolveOptions(), which validates
// everything once, before anything is claimed or written.

import { Schema } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { StorageAdapter } from '../storage/adapter.js';
import type { Logger } from '../util/logger.js';
import { type IndexSpec, type ResolvedIndex, resolveIndexes } from '../data/index-keys.js';
import { type ResolvedVectorIndex, resolveVectorIndexes } from '../data/vector-spec.js';
import { type ResolvedTextIndex, resolveTextIndex } from '../data/tokenize.js';
import type { SchemaChange } from '../format/schema-versions.js';
import type { WriterState } from '../metrics/stats.js';
import type { CompactionPolicy } from './compaction.js';

const MiB = 1024 * 1024;

/** Backoff of a retried operation: delay `baseMs * 2^k`, capped at `maxMs`. */
export interface RetryOptions {
  baseMs?: number;
  maxMs?: number;
}

/** Flush retry: as RetryOptions, plus when a hung attempt is given up. */
export interface FlushRetryOptions extends RetryOptions {
  /**
   * A flush attempt whose table-file write has not finished after this long counts as failed
   * (its file is abandoned and swept later) and is retried under a new name. Default 60 s:
   * far above a healthy write, it turns a storage call that never settles into a retry. Keep it
   * well above the time one table file takes to write (tens of milliseconds for a 16 MiB
   * memtable on OPFS, more on a loaded machine): below it every attempt is cut off, the flush is
   * retried for ever, and `waitForFlushDrain` waits until its own signal gives up.
   */
  stallMs?: number;
}

/** WAL append retry: as RetryOptions, plus how long in total before the writer poisons. */
export interface WalRetryOptions extends RetryOptions {
  /** Give up (poison with the append's error) once a failing append has been retried this long. */
  timeoutMs?: number;
}

export type StorageOption = 'opfs' | 'indexeddb' | 'memory' | StorageAdapter;

export interface MemWalOptions {
  /** Which store (Lance: shard id). Non-empty; at most 200 characters of `[A-Za-z0-9._-]`. */
  name: string;
  /**
   * The Arrow schema. On reopen it may differ from the stored one as SPEC §9/§9.1 allow (added
   * nullable columns; stored columns it lacks are kept hidden; renames): docs/impl.md §12.
   */
  schema: Schema;
  /** Primary-key columns: non-nullable integer, string, binary, bool or temporal. */
  primaryKey?: string[];
  /**
   * Where data lives. In-process (`MemWal.open`) it must be named: `'memory'` (a per-process
   * registry, so a reopen finds the data) or a `StorageAdapter`. `openMemWal` defaults to
   * `'opfs'` where sync access handles exist, else `'indexeddb'`.
   */
  storage?: StorageOption;
  /** `false`: WAL-only mode, a durable queue without memtables (docs/impl.md §4). Default true. */
  enableMemtable?: boolean;
  /** Default true: a put resolves only once its WAL entry is durable. */
  durableWrite?: boolean;
  /**
   * Caps one WAL entry; a put is never split. Default 2 MiB: one append (encode, CRC, write,
   * flush) stays a slice of a few ms, so the worker keeps answering stats under load.
   */
  maxWalBufferBytes?: number;
  /**
   * Longest a non-durable put waits for its WAL append. Durable puts never wait for a timer.
   * Default 100 ms (Lance's default).
   */
  maxWalFlushIntervalMs?: number;
  /** Freeze the active memtable at this many estimated bytes. Default 16 MiB: a tab-sized tier. */
  maxMemtableBytes?: number;
  /**
   * The largest put (or delete) accepted, in estimated bytes (as memtables count them, with what
   * the put adds to their indexes: ordered entries exactly, a text index's postings and terms and
   * a vector index's entries as an upper bound); a larger one rejects `InvalidArgument` before
   * anything is applied or written (split it). One put is one WAL entry
   * and sits in memory whole, so this bounds the memory a single call can take. Default 32 MiB
   * (half the default budget) in a browser or on Node; `DURABLE_OBJECT_DEFAULTS` of
   * `memwal/cloudflare` set 4 MiB for a 128 MB isolate.
   */
  maxPutBytes?: number;
  /** Freeze at this many rows. Default 500,000 (bounds the key index of one memtable). */
  maxMemtableRows?: number;
  /** Freeze at this many record batches. Default 4,096 (one per put at least). */
  maxMemtableBatches?: number;
  /**
   * Backpressure budget: active + frozen-uncommitted bytes. Default 64 MiB, which fits a
   * browser tab and a 128 MB edge isolate alike (Lance: 1 GiB on servers).
   */
  maxUnflushedMemtableBytes?: number;
  /**
   * Bytes of decoded table-file blocks kept for reads (point reads and scans of the same keys hit
   * it instead of storage). Block indexes and Bloom filters of open files are kept besides
   * (`readStats().indexBytes`). Default: sized from the data and the device — the bytes of the
   * table files reads have opened plus a quarter, at least 8 MiB, at most an eighth of the
   * device's memory (`navigator.deviceMemory`) between 64 MiB and 1 GiB, or 64 MiB where the
   * memory is not exposed (Node, Firefox, Safari, edge isolates). On an 8 GiB device a store of up
   * to about 800 MiB of table files is thus read from memory once warm (about 50 MiB where the
   * ceiling is 64 MiB); `readStats().blockCacheLimitBytes` shows the bound in force and
   * `readStats().blockCacheBytes` what the cache holds.
   */
  blockCacheBytes?: number;
  /**
   * Compaction debt at which flushes wait for compaction (bytes the pending compaction would
   * read); flushes also wait at 12 level-0 files. Puts feel it through the unflushed budget, and
   * `backpressureStats().cause` says `'compaction'`. Default 1 GiB.
   */
  maxPendingCompactionBytes?: number;
  /**
   * What open does when the store's recorded schema cannot evolve into `schema` (added nullable
   * columns, kept columns it lacks — hidden — and renames can; docs/impl.md §12): `'throw'` (default) rejects
   * `InvalidArgument` naming the column and the rule; `'reset'` destroys the store and creates it
   * anew with `schema`, warning through `logger` — every row of the old store is gone.
   */
  onSchemaMismatch?: 'throw' | 'reset';
  /**
   * Stored columns to drop, with their values, at this open (SPEC §9.1). A stored column the
   * schema lacks is otherwise kept, hidden from this opener (reads leave it out, puts write null
   * to it). A name must not be a key column nor a column of `schema`, and on an existing store it
   * must be a column of some recorded schema version (`InvalidArgument` otherwise); naming a
   * column already dropped is a no-op, so a release may keep the option.
   */
  dropColumns?: string[];
  /**
   * Renames of stored columns, old name → new name (`{ title: 'name' }`): the column keeps its
   * identity and values under the new name, which must be a column of `schema` (the old one must
   * not be). For a `defineSchema` schema, `utf8().renamedFrom('title')` says the same. Once done,
   * a rename is recorded in the manifest (docs/format.md §9) and naming it again is a no-op.
   */
  renameColumns?: Record<string, string>;
  /** How long a flushed memtable stays readable in memory. Default 0 (evicted on commit). */
  frozenMemtableGraceMs?: number;
  /** How often a blocked writer warns through `logger`. Default 10 s. */
  backpressureLogIntervalMs?: number;
  /** A blocked put rejects `BackpressureTimeout` after this long. Default: none (waits). */
  backpressureTimeoutMs?: number;
  /** Backoff of failed flushes, retried in place. Default base 50 ms, cap 2 s, stall 60 s. */
  flushRetry?: FlushRetryOptions;
  /** Retry of failed WAL appends. Default base 20 ms, cap 1 s, poison after 5 s. */
  walRetry?: WalRetryOptions;
  /** How long open waits for another writer; `0` fails at once with `Locked`. Default: wait. */
  lockTimeoutMs?: number;
  /** Take the writer lock from a writer that will not let go; it is fenced. Default false. */
  steal?: boolean;
  /** Browser main thread: request `navigator.storage.persist()`. Default false. */
  persist?: boolean;
  /** Default `console`. */
  logger?: Logger;
  /**
   * Ordered (BTree) indexes by name (SPEC §17): `{ column }`, `{ column, multiEntry: true }` (one
   * entry per element of a list column) or `{ columns: [...] }` (compound, in the order given).
   * `'primary'` is reserved (the primary key as an index). Keyed MemTable-mode stores only;
   * validated before the writer lock is claimed. Queried with `query` and `count`.
   * `{ column, kind: 'vector', distance, m?, efConstruction? }` on a `vector(dim)` column: an HNSW
   * index queried with `nearest` (SPEC §17.3, data/vector-spec.ts). Full-text indexes (SPEC
   * §17.2): `{ column, kind: 'text', locale?, stopWords? }` on a Utf8 column, searched with
   * `search` (data/tokenize.ts states the tokenizer's rule and limits).
   */
  indexes?: Record<string, IndexSpec>;
}

/** Every option with its default applied, as the engine uses them. */
export interface ResolvedOptions {
  name: string;
  schema: Schema;
  primaryKey: string[];
  storage: StorageOption | undefined;
  enableMemtable: boolean;
  durableWrite: boolean;
  maxWalBufferBytes: number;
  maxWalFlushIntervalMs: number;
  maxMemtableBytes: number;
  maxPutBytes: number;
  maxMemtableRows: number;
  maxMemtableBatches: number;
  maxUnflushedMemtableBytes: number;
  /** Undefined: sized from the open table files (the default). */
  blockCacheBytes: number | undefined;
  maxPendingCompactionBytes: number;
  onSchemaMismatch: 'throw' | 'reset';
  dropColumns: string[];
  /** Old name → new name. */
  renameColumns: Record<string, string>;
  frozenMemtableGraceMs: number;
  backpressureLogIntervalMs: number;
  backpressureTimeoutMs: number | undefined;
  flushRetry: Required<FlushRetryOptions>;
  walRetry: Required<WalRetryOptions>;
  lockTimeoutMs: number | undefined;
  steal: boolean;
  persist: boolean;
  logger: Logger;
  /** The declared indexes, checked against the schema. */
  indexes: ResolvedIndex[];
  /** The declared vector indexes (`kind: 'vector'`), checked against the schema. */
  vectorIndexes: ResolvedVectorIndex[];
  /** The declared full-text indexes (`kind: 'text'`), checked against the schema. */
  textIndexes: ResolvedTextIndex[];
}

export const DEFAULT_MAX_WAL_BUFFER_BYTES = 2 * MiB;
export const DEFAULT_MAX_WAL_FLUSH_INTERVAL_MS = 100;
export const DEFAULT_MAX_MEMTABLE_BYTES = 16 * MiB;
export const DEFAULT_MAX_PUT_BYTES = 32 * MiB;
export const DEFAULT_MAX_PENDING_COMPACTION_BYTES = 1024 * MiB;
export const DEFAULT_MAX_MEMTABLE_ROWS = 500_000;
export const DEFAULT_MAX_MEMTABLE_BATCHES = 4096;
export const DEFAULT_MAX_UNFLUSHED_MEMTABLE_BYTES = 64 * MiB;
export const DEFAULT_BACKPRESSURE_LOG_INTERVAL_MS = 10_000;
export const DEFAULT_FLUSH_RETRY: Required<FlushRetryOptions> = { baseMs: 50, maxMs: 2000, stallMs: 60_000 };
export const DEFAULT_WAL_RETRY: Required<WalRetryOptions> = { baseMs: 20, maxMs: 1000, timeoutMs: 5000 };

const NAME_RE = /^[A-Za-z0-9._-]{1,200}$/;

function invalid(option: string, why: string): never {
  throw new MemWalError('InvalidArgument', `option ${option}: ${why}`);
}

function nonNegativeInt(option: string, v: unknown, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || !Number.isInteger(v) || v < min) {
    invalid(option, `must be an integer >= ${min}, got ${String(v)}`);
  }
  return v;
}

function oneOf<T extends string>(option: string, v: unknown, allowed: readonly T[], dflt: T): T {
  if (v === undefined) return dflt;
  if (!allowed.includes(v as T)) invalid(option, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${String(v)}`);
  return v as T;
}

function retry(option: string, v: RetryOptions | undefined, dflt: Required<RetryOptions>): Required<RetryOptions> {
  if (v === undefined) return { ...dflt };
  if (typeof v !== 'object' || v === null) invalid(option, 'must be an object');
  const baseMs = nonNegativeInt(`${option}.baseMs`, v.baseMs, dflt.baseMs);
  const maxMs = nonNegativeInt(`${option}.maxMs`, v.maxMs, Math.max(dflt.maxMs, baseMs));
  if (maxMs < baseMs) invalid(`${option}.maxMs`, 'must be >= baseMs');
  return { baseMs, maxMs };
}

const KNOWN = new Set<string>([
  'name',
  'schema',
  'primaryKey',
  'storage',
  'enableMemtable',
  'durableWrite',
  'maxWalBufferBytes',
  'maxWalFlushIntervalMs',
  'maxMemtableBytes',
  'maxPutBytes',
  'blockCacheBytes',
  'maxPendingCompactionBytes',
  'onSchemaMismatch',
  'dropColumns',
  'renameColumns',
  'maxMemtableRows',
  'maxMemtableBatches',
  'maxUnflushedMemtableBytes',
  'frozenMemtableGraceMs',
  'backpressureLogIntervalMs',
  'backpressureTimeoutMs',
  'flushRetry',
  'walRetry',
  'lockTimeoutMs',
  'steal',
  'persist',
  'logger',
  'indexes',
]);

/**
 * Validate and complete options. Throws `InvalidArgument` naming the first bad option. Schema
 * and primary-key checks beyond shape happen in `data/schema.ts` (also before any I/O).
 */
export function resolveOptions(o: MemWalOptions, extraKnown: readonly string[] = []): ResolvedOptions {
  if (typeof o !== 'object' || o === null) throw new MemWalError('InvalidArgument', 'options must be an object');
  for (const k of Object.keys(o)) {
    if (!KNOWN.has(k) && !extraKnown.includes(k)) invalid(k, 'unknown option');
  }
  if (typeof o.name !== 'string' || !NAME_RE.test(o.name)) {
    invalid('name', 'must be 1-200 characters of A-Z a-z 0-9 . _ -');
  }
  if (!(o.schema instanceof Schema)) invalid('schema', 'must be an apache-arrow Schema');
  if (o.schema.fields.length === 0) invalid('schema', 'must have at least one field');
  const primaryKey = o.primaryKey ?? [];
  if (!Array.isArray(primaryKey) || primaryKey.some((k) => typeof k !== 'string')) {
    invalid('primaryKey', 'must be an array of column names');
  }
  if (new Set(primaryKey).size !== primaryKey.length) invalid('primaryKey', 'lists a column twice');
  const storage = o.storage;
  if (
    storage !== undefined &&
    storage !== 'opfs' &&
    storage !== 'indexeddb' &&
    storage !== 'memory' &&
    (typeof storage !== 'object' || storage === null || typeof (storage as StorageAdapter).openStore !== 'function')
  ) {
    invalid('storage', "must be 'opfs', 'indexeddb', 'memory' or a StorageAdapter");
  }
  const bool = (k: 'enableMemtable' | 'durableWrite' | 'steal' | 'persist', d: boolean): boolean => {
    const v = o[k];
    if (v === undefined) return d;
    if (typeof v !== 'boolean') invalid(k, 'must be a boolean');
    return v;
  };
  const enableMemtable = bool('enableMemtable', true);
  if (!enableMemtable && primaryKey.length > 0) {
    invalid('primaryKey', 'is not supported in WAL-only mode (enableMemtable: false)');
  }
  const maxWalFlushIntervalMs = nonNegativeInt('maxWalFlushIntervalMs', o.maxWalFlushIntervalMs, DEFAULT_MAX_WAL_FLUSH_INTERVAL_MS, 1);
  const maxMemtableBytes = nonNegativeInt('maxMemtableBytes', o.maxMemtableBytes, DEFAULT_MAX_MEMTABLE_BYTES, 1);
  const walRetryIn = o.walRetry;
  const walRetryBase = retry('walRetry', walRetryIn, DEFAULT_WAL_RETRY);
  const walRetry = {
    ...walRetryBase,
    timeoutMs: nonNegativeInt('walRetry.timeoutMs', walRetryIn?.timeoutMs, DEFAULT_WAL_RETRY.timeoutMs),
  };
  const lockTimeoutMs = o.lockTimeoutMs === undefined ? undefined : nonNegativeInt('lockTimeoutMs', o.lockTimeoutMs, 0);
  const backpressureTimeoutMs =
    o.backpressureTimeoutMs === undefined ? undefined : nonNegativeInt('backpressureTimeoutMs', o.backpressureTimeoutMs, 0);
  const indexes = resolveIndexes(o.indexes, o.schema, primaryKey);
  const vectorIndexes = resolveVectorIndexes(o.indexes, o.schema, primaryKey);
  const textIndexes = Object.entries((o.indexes ?? {}) as Record<string, Record<string, unknown>>)
    .filter(([, spec]) => spec.kind === 'text')
    .map(([name, spec]) => resolveTextIndex(name, spec, o.schema));
  if (indexes.length + vectorIndexes.length + textIndexes.length > 0 && !enableMemtable)
    invalid('indexes', 'are not supported in WAL-only mode (enableMemtable: false)');
  const dropColumns = o.dropColumns ?? [];
  if (!Array.isArray(dropColumns) || dropColumns.some((c) => typeof c !== 'string' || c === '')) {
    invalid('dropColumns', 'must be an array of column names');
  }
  const renameColumns = o.renameColumns ?? {};
  if (typeof renameColumns !== 'object' || renameColumns === null || Array.isArray(renameColumns)) {
    invalid('renameColumns', 'must be an object of old name → new name');
  }
  const renamedTo = new Set<string>();
  for (const [from, to] of Object.entries(renameColumns)) {
    if (typeof to !== 'string' || to === '' || from === '') invalid('renameColumns', `"${from}" must map to a column name`);
    if (from === to) invalid('renameColumns', `renames "${from}" to itself`);
    if (renamedTo.has(to)) invalid('renameColumns', `renames two columns to "${to}"`);
    renamedTo.add(to);
  }
  const logger = o.logger ?? console;
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function') {
    invalid('logger', 'must have a warn(message) function');
  }
  return {
    name: o.name,
    schema: o.schema,
    primaryKey: [...primaryKey],
    storage,
    enableMemtable,
    durableWrite: bool('durableWrite', true),
    maxWalBufferBytes: nonNegativeInt('maxWalBufferBytes', o.maxWalBufferBytes, DEFAULT_MAX_WAL_BUFFER_BYTES, 1),
    maxWalFlushIntervalMs,
    maxMemtableBytes,
    maxPutBytes: nonNegativeInt('maxPutBytes', o.maxPutBytes, DEFAULT_MAX_PUT_BYTES, 1),
    maxMemtableRows: nonNegativeInt('maxMemtableRows', o.maxMemtableRows, DEFAULT_MAX_MEMTABLE_ROWS, 1),
    maxMemtableBatches: nonNegativeInt('maxMemtableBatches', o.maxMemtableBatches, DEFAULT_MAX_MEMTABLE_BATCHES, 1),
    maxUnflushedMemtableBytes: nonNegativeInt(
      'maxUnflushedMemtableBytes',
      o.maxUnflushedMemtableBytes,
      DEFAULT_MAX_UNFLUSHED_MEMTABLE_BYTES,
      1,
    ),
    blockCacheBytes: o.blockCacheBytes === undefined ? undefined : nonNegativeInt('blockCacheBytes', o.blockCacheBytes, 0),
    maxPendingCompactionBytes: nonNegativeInt(
      'maxPendingCompactionBytes',
      o.maxPendingCompactionBytes,
      DEFAULT_MAX_PENDING_COMPACTION_BYTES,
      1,
    ),
    onSchemaMismatch: oneOf('onSchemaMismatch', o.onSchemaMismatch, ['throw', 'reset'] as const, 'throw'),
    dropColumns: [...new Set(dropColumns)],
    renameColumns: { ...renameColumns },
    frozenMemtableGraceMs: nonNegativeInt('frozenMemtableGraceMs', o.frozenMemtableGraceMs, 0),
    backpressureLogIntervalMs: nonNegativeInt(
      'backpressureLogIntervalMs',
      o.backpressureLogIntervalMs,
      DEFAULT_BACKPRESSURE_LOG_INTERVAL_MS,
      1,
    ),
    backpressureTimeoutMs,
    flushRetry: {
      ...retry('flushRetry', o.flushRetry, DEFAULT_FLUSH_RETRY),
      stallMs: nonNegativeInt('flushRetry.stallMs', o.flushRetry?.stallMs, DEFAULT_FLUSH_RETRY.stallMs, 1),
    },
    walRetry,
    lockTimeoutMs,
    steal: bool('steal', false),
    persist: bool('persist', false),
    logger,
    indexes,
    vectorIndexes,
    textIndexes,
  };
}

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
  /**
   * Called once the open resolved, when it changed the store's schema or hid stored columns from
   * this opener (SPEC §9.1): the versions before and after, the columns added, hidden (kept with
   * their values, not read nor written by this opener), dropped (`dropColumns`) and renamed. A
   * hook that throws is logged and does not fail the open.
   */
  onSchemaChange?: (change: SchemaChange) => void;
  /** Replace numbers of the compaction policy (for the policy benchmark, bench/compaction-policy.ts; not for apps). */
  compactionPolicy?: Partial<CompactionPolicy>;
  /**
   * The size at which the writer starts its next WAL segment, instead of `WAL_SEGMENT_TARGET_BYTES`
   * (8 MiB). A test knob, not an option: the simulation draws small ones so that a writer's WAL
   * spans many segments (test/sim, docs/testing.md §7); not for apps.
   */
  walSegmentTargetBytes?: number;
}
