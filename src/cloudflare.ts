// memwal/cloudflare: the Cloudflare Workers entry point. DurableObjectStorageAdapter keeps stores
// in a SQLite-backed Durable Object's storage (docs/format.md). Imports no
// `cloudflare:*` module: the storage it needs is typed structurally.

import type { MemWalOptions } from './engine/options.js';

export {
  DurableObjectStorageAdapter,
  DURABLE_OBJECT_MAX_CHUNK_BYTES,
  type DurableObjectStorageLike,
  type DurableObjectStorageOptions,
  type SqlStorageLike,
  type SqlValue,
} from './storage/durable-object.js';

/**
 * Engine options that fit a Durable Object's 128 MB isolate, to spread into `MemWal.open`
 * (later keys override them). Resident memory runs at a few times the unflushed budget: a flush
 * holds a memtable, its Arrow IPC encoding and the chunks being written at once, and recovery
 * reads whole WAL segments (up to 8 MiB). Measured under a sustained load of 64 KiB puts (Node,
 * in-memory storage, forced GC): about 60 MiB live at peak with these values, about 130 MiB with
 * the general defaults (16 MiB memtables, 64 MiB budget). So: 4 MiB memtables, a 16 MiB unflushed
 * budget, WAL entries capped at 2 MiB, puts of at most 4 MiB, and a block cache of 8 MiB (the
 * general default grows with the data up to 64 MiB).
 */
export const DURABLE_OBJECT_DEFAULTS = {
  maxMemtableBytes: 4 * 1024 * 1024,
  maxUnflushedMemtableBytes: 16 * 1024 * 1024,
  maxWalBufferBytes: 2 * 1024 * 1024,
  maxPutBytes: 4 * 1024 * 1024,
  blockCacheBytes: 8 * 1024 * 1024,
} as const satisfies Partial<MemWalOptions>;
