// The wire protocol between a store's engine thread (remote-storage.ts) and its I/O worker
// (io-host.ts): requests with an id, replies, and events. Types only, derived from the host's API
// (`makeIoHost`), as rpc/protocol.ts derives the page's from its host: a request names a method
// of the host and carries exactly its parameters, so the two sides cannot drift.

import type { ResolvedIndex } from '../data/index-keys.js';
import type { SchemaVersion } from '../format/manifest/manifest.js';
import type { WireError } from '../util/errors.js';
import type { makeIoHost } from './io-host.js';

/** Every method the I/O worker answers, exactly as `makeIoHost` implements it. */
export type IoApi = ReturnType<typeof makeIoHost>;
export type IoOp = keyof IoApi;
/** What a request for `op` resolves. */
export type IoResult<K extends IoOp> = Awaited<ReturnType<IoApi[K]>>;

/**
 * A request from the engine thread: method `op` of the host with its parameters. Uint8Arrays
 * among `args` that own their whole buffer are transferred (the sender keeps no view of them).
 */
export type IoRequest<K extends IoOp = IoOp> = { [P in K]: { id: number; op: P; args: Parameters<IoApi[P]> } }[K];

/** A reply to request `id`. */
export type IoReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };

/** Something the I/O worker reports unasked: a handle's lost lock, an open that waits (`open` as the engine named it), a warning. */
export type IoEvent =
  | { event: 'lost'; handle: number; reason: string }
  | { event: 'waiting'; open: number }
  | { event: 'warn'; message: string };

/** A store's schema and key, for jobs (`schema`: base64 of its Arrow IPC schema message). */
export interface WireStoreSchema {
  schema: string;
  primaryKey: string[];
  /** The indexes whose sections its table builds write (`StoreSchema.indexes`). Absent: none. */
  indexes?: ResolvedIndex[];
}

/** A store's schema versions, for jobs that read data written in older ones. */
export interface WireSchemaVersions {
  versions: SchemaVersion[];
  currentVersion: number;
}

/** A flush job as the I/O worker needs it: which WAL entries hold the generation, and where. */
export interface WireFlushJob {
  generation: number;
  firstPosition: number;
  lastPosition: number;
  segments: { name: string }[];
}

/**
 * A table built in the I/O worker and kept there under `id` until written (`tableWriteBuilt`) or
 * released (`builtRelease`): what the manifest records of it.
 */
export interface WireBuiltTable {
  id: number;
  /** The file's length in bytes. */
  length: number;
  crc: number;
  rows: number;
  blocks: number;
  minKey?: string;
  maxKey?: string;
}

/** The buffers of `values` that can be transferred: Uint8Arrays that own their whole buffer. */
export function transferables(values: readonly unknown[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const v of values) {
    if (v instanceof Uint8Array && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && v.buffer instanceof ArrayBuffer) {
      out.push(v.buffer);
    }
  }
  return out;
}
