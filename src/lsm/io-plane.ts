// The I/O plane (docs/impl.md §11, SPEC §16.1): where a store's bytes and background work go —
// appending WAL entries; building, writing, keeping and releasing table files. One interface,
// chosen once, when the store is opened: the inline plane (every runtime: the work runs on the
// engine's thread, through the store's handle) or the plane its adapter was placed with
// (`placeStorage`: the browser's I/O worker, io-worker/remote-storage.ts; the OPFS table writer
// thread, io-worker/opfs-plane.ts). The engine never asks a handle what it can do.

import type { SchemaVersion, TableFileEntry } from '../format/manifest/manifest.js';
import { encodeFrameHeader, encodeFrameHeaderFromCrc, joinFrame } from '../format/wal/codec.js';
import { FRAME_HEADER_BYTES } from '../format/wal/format.js';
import { type LockOptions, type StorageAdapter, type StoreHandle, tableChunks } from '../storage/adapter.js';
import type { KeyEncoder } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import { type BackgroundJobs, InlineJobs } from './jobs.js';
import type { OpenTable } from './table-cache.js';

/** What a store's jobs need to know of it (`IoPlane.jobs`). */
export interface JobsStore {
  schema: StoreSchema;
  keyEncoder: KeyEncoder | undefined;
  /** Every recorded schema version; data in older ones is projected onto `currentVersion`. */
  versions: SchemaVersion[];
  currentVersion: number;
  /** Opens a table file of the store (through the engine's table cache): inline compactions read their inputs here. */
  open(entry: TableFileEntry): Promise<OpenTable>;
}

/** Where one open store's bytes and background work go. */
export interface IoPlane {
  /**
   * Append one WAL entry, framed (`encodeFrame(epoch, position, payload)`, docs/format.md §4), at
   * `offset` of segment `name`, with the semantics of `StoreHandle.walAppend` (durable on resolve,
   * fenced, the segment unchanged on rejection); resolves the frame's length. The plane may take
   * `payload` over (transfer its buffer to another thread): the caller must not use it after the
   * call. `payloadCrc`, when given, is `crc32c(payload)`: the header is built from it, without a
   * pass over the payload.
   */
  appendEntry(name: string, offset: number, epoch: number, position: number, payload: Uint8Array, payloadCrc?: number): Promise<number>;
  /**
   * Write table file `name` from `bytes`, which the caller hands over (the plane may transfer
   * their buffer), with the semantics of `StoreHandle.tableWrite`.
   */
  writeTable(name: string, bytes: Uint8Array): Promise<void>;
  /**
   * The store's background jobs (built where this plane runs them; each `JobTable` is written
   * and released through this plane). Asked once, by a store that flushes memtables; a remote
   * plane starts keeping the WAL payloads it appends from then on.
   */
  jobs(store: JobsStore): BackgroundJobs;
}

/** An open store: its handle, and the plane its bytes and work go through. */
export interface PlacedStore {
  handle: StoreHandle;
  plane: IoPlane;
}

/** How the stores of an adapter are opened onto their plane. */
export interface IoPlacement {
  /** `StorageAdapter.openStore`, with the store's plane. */
  openStore(name: string, options: LockOptions): Promise<PlacedStore>;
}

/**
 * The header of `payload`'s WAL frame (docs/format.md §4): its CRC-32C combined from `payloadCrc`
 * (the payload's) where given, else a pass over the payload.
 */
export function frameHeader(epoch: number, position: number, payload: Uint8Array, payloadCrc: number | undefined): Uint8Array {
  return payloadCrc === undefined
    ? encodeFrameHeader(epoch, position, payload)
    : encodeFrameHeaderFromCrc(epoch, position, payload.length, payloadCrc);
}

/** The inline plane over `handle`: frames here, writes through `handle`, jobs on this thread. */
export function inlinePlane(handle: StoreHandle): IoPlane {
  const writeTable = (name: string, bytes: Uint8Array): Promise<void> => handle.tableWrite(name, tableChunks(bytes));
  return {
    async appendEntry(name, offset, epoch, position, payload, payloadCrc) {
      await handle.walAppend(name, offset, joinFrame(frameHeader(epoch, position, payload, payloadCrc), payload));
      return FRAME_HEADER_BYTES + payload.length;
    },
    writeTable,
    jobs: (store) => new InlineJobs(store.schema, store.keyEncoder, store.open, writeTable),
  };
}

/** The inline placement of `adapter`: its handles, each on the inline plane. */
export function inlinePlacement(adapter: StorageAdapter): IoPlacement {
  return {
    async openStore(name, options) {
      const handle = await adapter.openStore(name, options);
      return { handle, plane: inlinePlane(handle) };
    },
  };
}

const placements = new WeakMap<StorageAdapter, IoPlacement>();

/**
 * Say, once, where the stores of `adapter` run their I/O (called by the code that builds the
 * adapter: RemoteStorage, the browser's OPFS adapter). An adapter never placed is inline.
 */
export function placeStorage(adapter: StorageAdapter, placement: IoPlacement): void {
  placements.set(adapter, placement);
}

/**
 * The placement of `adapter`: the one it was placed with, else inline. A wrapper of an adapter
 * (fault injection, tracing) is an adapter of its own: its stores are inline over its handles,
 * so every byte they write passes through it.
 */
export function placementOf(adapter: StorageAdapter): IoPlacement {
  return placements.get(adapter) ?? inlinePlacement(adapter);
}
