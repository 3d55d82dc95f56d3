// Arrow <-> Arrow IPC stream bytes for the worker boundary, with the transfer lists that make the
// bytes move instead of being copied. Any runtime with postMessage.

import { RecordBatch, Table, tableFromIPC, tableToIPC, type Schema } from 'apache-arrow';
import type { WireArrow, WireData } from './protocol.js';

/**
 * The IPC bytes of `data`, in a buffer of their own (safe to transfer: nothing else views it).
 * A RecordBatch travels as a one-batch stream and comes back as a RecordBatch.
 */
export function encodeArrow(data: Table | RecordBatch): WireArrow {
  const isBatch = data instanceof RecordBatch;
  const table = isBatch ? new Table([data]) : data;
  return { kind: isBatch ? 'batch' : 'table', ipc: ownBuffer(tableToIPC(table, 'stream')) };
}

/** A schema as an IPC stream without record batches (how the schema option crosses). */
export function encodeSchema(schema: Schema): Uint8Array {
  return ownBuffer(tableToIPC(new Table(schema), 'stream'));
}

/** The schema of `encodeSchema`'s bytes. */
export function decodeSchema(ipc: Uint8Array): Schema {
  return (tableFromIPC(ipc) as Table).schema;
}

/** The Table of `w` (zero-copy views over the received bytes). */
export function decodeTable(w: WireArrow): Table {
  return tableFromIPC(w.ipc) as Table;
}

/** `w` as it was sent: a RecordBatch for `kind: 'batch'`, else a Table. */
export function decodeArrow(w: WireArrow): Table | RecordBatch {
  const t = decodeTable(w);
  if (w.kind === 'table') return t;
  return t.batches[0] ?? new RecordBatch(t.schema, undefined as never);
}

/** Put/delete input for the wire: Arrow as IPC bytes, anything else as is (structured clone). */
export function encodeData(data: unknown): WireData {
  if (data instanceof Table || data instanceof RecordBatch) return encodeArrow(data);
  return data as WireData;
}

/** What `encodeData` encoded: Arrow back to Arrow, rows as they arrived. */
export function decodeData(w: WireData): Table | RecordBatch | Record<string, unknown>[] {
  return isWireArrow(w) ? decodeArrow(w) : w;
}

function isWireArrow(w: unknown): w is WireArrow {
  return typeof w === 'object' && w !== null && !Array.isArray(w) && (w as WireArrow).ipc instanceof Uint8Array;
}

/** The buffers to transfer with `values` (the IPC bytes of each WireArrow among them). */
export function transfersOf(...values: unknown[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const v of values) if (isWireArrow(v) && v.ipc.buffer instanceof ArrayBuffer) out.push(v.ipc.buffer);
  return out;
}

/** `bytes` itself when it spans its whole buffer, else a compact copy (a transfer moves the whole buffer). */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}
