// memwal: the public entry point (re-exports only). Nothing reachable from here imports node:*.

export { MemWal, type OpenHooks, type SchemaReset } from './core/memwal.js';
export { openMemWal, MemWalClient, type OpenMemWalOptions, type TypedOpenMemWalOptions, type WorkerLike } from './rpc/client.js';
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
} from './define-schema.js';
export { MemWalError, isMemWalError, type MemWalErrorCode } from './errors.js';
export { MemoryStorage, sharedMemoryStorage } from './storage/memory.js';
export type {
  StorageAdapter,
  StoreHandle,
  LockOptions,
  WalSegmentInfo,
  StorageEstimate,
} from './storage/adapter.js';
export type { Manifest, TableFileEntry, StoreMode } from './manifest/manifest.js';
export type {
  MemWalApi,
  MemTableStats,
  BackpressureStats,
  WalStats,
  WriteStats,
  StorageStats,
  PutResult,
  WalEntry,
  WriterState,
  Role,
} from './core/stats.js';
export type { MemWalOptions, RetryOptions, FlushRetryOptions, WalRetryOptions, Logger, StorageOption } from './options.js';
export {
  DEFAULT_MAX_WAL_BUFFER_BYTES,
  DEFAULT_MAX_WAL_FLUSH_INTERVAL_MS,
  DEFAULT_MAX_MEMTABLE_BYTES,
  DEFAULT_MAX_MEMTABLE_ROWS,
  DEFAULT_MAX_MEMTABLE_BATCHES,
  DEFAULT_MAX_UNFLUSHED_MEMTABLE_BYTES,
} from './options.js';
export { TOMBSTONE_COLUMN } from './core/schema.js';
export {
  drain,
  DEFAULT_DRAIN_BATCH_BYTES,
  type DrainSink,
  type DrainOptions,
  type DrainHandle,
  type DrainStats,
  type DrainState,
} from './drain/drain.js';
export {
  encodeDrainBatch,
  drainRequestHeaders,
  parseDrainHeaders,
  checkDrainBody,
  DRAIN_WIRE_VERSION,
  DRAIN_CONTENT_TYPE,
  DRAIN_HEADERS,
  POSITION_COLUMN,
  STORE_ID_PATTERN,
  type DrainRequestMeta,
  type EncodedDrainBatch,
} from './drain/wire.js';
