// memwal: the public entry point (re-exports only). Nothing reachable from here imports node:*.
// The drain wire, which only an endpoint's author needs, is `memwal/drain` (src/drain.ts).

export { MemWal, MAX_GET_MANY_KEYS, type OpenHooks, type SchemaChange, type SchemaReset } from './engine/memwal.js';
export { MemWalClient, type WorkerLike } from './rpc/client.js';
export { openMemWal, type OpenMemWalOptions, type TypedOpenMemWalOptions } from './rpc/open-memwal.js';
export { destroyMemWal, type DestroyMemWalOptions } from './rpc/destroy.js';
export {
  defineSchema,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float32,
  float64,
  bool,
  utf8,
  largeUtf8,
  binary,
  largeBinary,
  fixedSizeBinary,
  vector,
  dateDay,
  dateMillisecond,
  timestamp,
  type Column,
  type Columns,
  type InputRow,
  type OutputRow,
  type TypedSchema,
  type RowTypes,
  type RowsParam,
  type RowTypesOf,
  type UntypedRows,
  type RowsOf,
  type ColumnName,
  type SchemaColumn,
} from './data/define-schema.js';
export { MemWalError, isMemWalError, type MemWalErrorCode } from './util/errors.js';
export { MemoryStorage, sharedMemoryStorage } from './storage/memory.js';
export type {
  StorageAdapter,
  StoreHandle,
  LockOptions,
  WalSegmentInfo,
  StorageEstimate,
} from './storage/adapter.js';
export type { Manifest, TableFileEntry, StoreMode } from './format/manifest/manifest.js';
export type { MemTableStats, BackpressureStats, WalStats, WriteStats, StorageStats, WriterState } from './metrics/stats.js';
export type {
  MemWalApi,
  PutResult,
  WalEntry,
  Role,
  SchemaInfo,
  SchemaVersionInfo,
  WatchSpec,
  WatchResult,
  WatchOptions,
  WatchInfo,
} from './engine/api.js';
export type { NearestHit, NearestOptions, NearestWhere } from './engine/nearest.js';
export type { VectorIndexSpec, VectorDistanceName } from './data/vector-spec.js';
export type { MemWalOptions, RetryOptions, FlushRetryOptions, WalRetryOptions, StorageOption } from './engine/options.js';
export type { Logger } from './util/logger.js';
export {
  DEFAULT_MAX_WAL_BUFFER_BYTES,
  DEFAULT_MAX_WAL_FLUSH_INTERVAL_MS,
  DEFAULT_MAX_MEMTABLE_BYTES,
  DEFAULT_MAX_MEMTABLE_ROWS,
  DEFAULT_MAX_MEMTABLE_BATCHES,
  DEFAULT_MAX_UNFLUSHED_MEMTABLE_BYTES,
} from './engine/options.js';
export { TOMBSTONE_COLUMN } from './data/schema.js';
export {
  drain,
  DEFAULT_DRAIN_BATCH_BYTES,
  type DrainSink,
  type DrainOptions,
  type DrainHandle,
  type DrainStats,
  type DrainState,
} from './drain/drain.js';
