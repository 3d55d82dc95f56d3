// The storage adapter interface: everything runtime-specific the core needs, and nothing more.
// One interface, one reference implementation (MemoryStorage), one conformance suite
// (memwal/testing conformanceCases) that every backend passes. Where a store's bytes and
// background work go is not the adapter's to say here: that is the I/O plane (lsm/io-plane.ts).

import { MemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { Logger } from '../util/logger.js';
import { yieldToEventLoop } from '../util/schedule.js';

/**
 * Options for claiming a store's writer lock.
 */
export interface LockOptions {
  /** How long to wait for another writer. `undefined`: wait for ever; `0`: fail at once (`Locked`). */
  timeoutMs?: number;
  /** Take the lock from the current holder, whose `onLost` fires; it must stop writing at once. */
  steal?: boolean;
  /** Called once if the open has to wait for another holder. */
  onWaiting?: () => void;
  /**
   * Where a waiting open warns, every few seconds (`LOCK_WAIT_WARN_MS`), that it still waits and
   * what the adapter knows about the holder. Absent: the wait is silent.
   */
  logger?: Logger;
  /**
   * Called at most once when this holder loses the lock without releasing it (stolen, or the
   * platform revoked it). The writer treats it as being fenced.
   */
  onLost?: (reason: string) => void;
  /** Aborts a waiting open (`Aborted`). */
  signal?: AbortSignal;
}

/** A WAL segment as listed by `walList`. */
export interface WalSegmentInfo {
  /** `"{epoch}-{firstPosition}"`, both decimal; the adapter stores it under `wal/{name}`. */
  name: string;
  epoch: number;
  firstPosition: number;
  /** Current length in bytes. */
  bytes: number;
}

/** Usage figures of one store, where the adapter can tell. */
export interface StorageEstimate {
  /**
   * Bytes the store keeps in storage: its WAL segments, table files and manifest, as the adapter
   * counts them (file sizes, stored byte lengths; not the file system's or database's own
   * overhead), never another store's. Memory, file and Durable Object adapters. The browser
   * adapters (`'opfs'`, `'indexeddb'`) report the whole origin's usage instead
   * (`navigator.storage.estimate()`: every store and everything else the origin keeps).
   */
  usageBytes?: number;
  /**
   * Files: `usageBytes` plus the bytes still available to this process on the file system (shared
   * with everything else there). Browser: the origin's quota. Absent where the runtime does not
   * tell (memory, Durable Objects, Deno).
   */
  quotaBytes?: number;
  /** True when the runtime will not evict the data (files; a persisted origin). */
  persisted?: boolean;
}

/**
 * A storage backend. One adapter serves many stores (`name`). Adapters are used by one writer
 * at a time per store; `openStore` claims that store's writer lock.
 */
export interface StorageAdapter {
  /**
   * The layout this adapter writes (`'memory'`, `'opfs'`, `'indexeddb'`, `'node-fs'`, ...).
   * Recorded in the manifest: a reopen through an adapter with another layout fails.
   */
  readonly layout: string;
  /**
   * Claim the writer lock of store `name` and return a handle for its operations.
   * Rejects `Locked` (timeout), `Aborted` (signal), or the adapter's I/O error.
   */
  openStore(name: string, options: LockOptions): Promise<StoreHandle>;
  /** Remove every file and record of store `name`. Rejects `Locked` while a writer holds it. */
  destroyStore(name: string): Promise<void>;
  /**
   * Usage figures of store `name` (see StorageEstimate), whether it is open or not; a store that
   * does not exist uses 0 bytes. Rejects with the adapter's I/O error.
   */
  estimate?(name: string): Promise<StorageEstimate>;
}

/**
 * The operations of one open store, valid until `release()` (or until the lock is lost).
 * Every mutating operation is durable when its promise resolves. Errors are MemWalErrors
 * (mapped with `toMemWalError`); `Fenced` when a newer writer epoch forbids the operation.
 */
export interface StoreHandle {
  /** The committed manifest, or `undefined` for a store that was never opened. */
  manifestLoad(): Promise<Manifest | undefined>;
  /**
   * Compare-and-set: store `next` only if the stored manifest's `version` is `expectedVersion`
   * (0: no manifest yet), all or nothing. If the stored `writerEpoch` is greater than
   * `next.writerEpoch` rejects `Fenced`; any other mismatch rejects `IOError`.
   */
  manifestCommit(expectedVersion: number, next: Manifest): Promise<void>;

  /** Every WAL segment of the store, in no particular order. */
  walList(): Promise<WalSegmentInfo[]>;
  /** Bytes of segment `name` from `offset` (default 0) to its end. */
  walRead(name: string, offset?: number): Promise<Uint8Array>;
  /**
   * Append `bytes` at `offset` of segment `name` (created when `offset` is 0), durable on
   * resolve. `offset` must equal the segment's current length. Rejects `Fenced` if the
   * manifest's epoch is newer than the segment's epoch, so no append of a stale writer lands.
   */
  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void>;
  /** Cut segment `name` to `length` bytes, durably (torn-tail repair). */
  walTruncate(name: string, length: number): Promise<void>;
  /** Delete segment `name` (retention). Missing segments are not an error. */
  walRemove(name: string): Promise<void>;

  /**
   * Write table file `name` from `chunks`, durable on resolve. The file is new: an existing
   * file of that name is an error. The adapter may yield between chunks.
   */
  tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void>;
  /** The whole table file. Rejects `IOError` when it is missing. */
  tableRead(name: string): Promise<Uint8Array>;
  /**
   * `length` bytes of table file `name` from byte `offset` (a block or a footer), read without
   * reading the rest of the file. Rejects `IOError` when the file is missing or the range is not
   * inside it, `InvalidArgument` for a negative or non-integer offset or length.
   */
  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array>;
  /** Every table file name of the store, committed or orphaned. */
  tableList(): Promise<string[]>;
  /** Delete table file `name`. Missing files are not an error. */
  tableRemove(name: string): Promise<void>;

  /** Close every handle and release the writer lock. Idempotent; never throws. */
  release(): Promise<void>;
}

/** Table files are handed to `tableWrite` in chunks of this size, with a yield between. */
export const TABLE_WRITE_CHUNK_BYTES = 1024 * 1024;

/**
 * `bytes` as `tableWrite` chunks of {@link TABLE_WRITE_CHUNK_BYTES} (views, not copies), with a
 * turn of the event loop between them, so the thread that writes a table file still answers
 * other calls meanwhile (stats, WAL appends).
 */
export async function* tableChunks(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let off = 0; off < bytes.length; off += TABLE_WRITE_CHUNK_BYTES) {
    if (off > 0) await yieldToEventLoop();
    yield bytes.subarray(off, Math.min(bytes.length, off + TABLE_WRITE_CHUNK_BYTES));
  }
}

/** `InvalidArgument` unless `offset` and `length` are non-negative integers (a ranged table read). */
export function checkRange(name: string, offset: number, length: number): void {
  if (!(Number.isSafeInteger(offset) && offset >= 0 && Number.isSafeInteger(length) && length >= 0)) {
    throw new MemWalError('InvalidArgument', `table file ${name}: bad range offset ${offset} length ${length}`);
  }
}

/** `IOError` unless `[offset, offset + length)` lies inside a file of `size` bytes. */
export function checkInside(name: string, offset: number, length: number, size: number): void {
  if (offset + length > size) {
    throw new MemWalError('IOError', `table file ${name}: range ${offset}+${length} is outside its ${size} bytes`);
  }
}

/** `IOError` unless an append to segment `name` at `offset` starts at its end (`length`; undefined: the segment is missing, so 0). */
export function checkAppendOffset(name: string, offset: number, length: number | undefined): void {
  if (offset !== (length ?? 0)) {
    throw new MemWalError('IOError', `WAL segment ${name}: append at offset ${offset}, but its length is ${length ?? 'none (missing)'}`);
  }
}

/** Segment names: `{epoch}-{firstPosition}`; parse returns undefined for foreign names. */
export function segmentName(epoch: number, firstPosition: number): string {
  return `${epoch}-${firstPosition}`;
}

export function parseSegmentName(name: string): { epoch: number; firstPosition: number } | undefined {
  const m = /^(\d+)-(\d+)$/.exec(name);
  if (!m) return undefined;
  return { epoch: Number(m[1]), firstPosition: Number(m[2]) };
}
