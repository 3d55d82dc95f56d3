// The wire protocol between a store's engine thread and its I/O worker (storage/remote.ts and
// storage/remote-host.ts): requests with an id, replies, and events. Types and tiny codecs only.

import type { SchemaVersion } from '../format/manifest/manifest.js';

/** A request from the engine thread. `bytes` are transferred (the sender keeps no view of them). */
export interface IoRequest {
  id: number;
  op: string;
  /** Handle id for handle operations and jobs. */
  handle?: number;
  args: unknown[];
}

/** A reply to request `id`. */
export type IoReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { code: string; message: string } };

/** Something the I/O worker reports unasked. */
export type IoEvent =
  | { event: 'lost'; handle: number; reason: string }
  | { event: 'waiting'; request: number }
  | { event: 'warn'; message: string };

/** A store's schema versions, for jobs that read data written in older ones. */
export interface WireSchemaVersions {
  versions: SchemaVersion[];
  currentVersion: number;
}

/** A built table file crossing the boundary (bytes transferred). */
export interface WireBuiltTable {
  bytes: Uint8Array;
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
