// What the main thread needs to put data on the wire without loading Arrow's classes: Arrow input
// as a copy of its buffers, taken at once (the caller may reuse its table as soon as a put
// returns), a schema as plain data (the worker rebuilds both, arrow-wire.ts), Arrow input told
// apart from plain rows by apache-arrow's own global symbols, and transfer lists. Arrow's data
// classes load (a separate chunk, arrow-wire.ts) only when a client decodes a Table; Arrow's IPC
// code never does. Any runtime.

import type { Data, DataType, Field, RecordBatch, Schema, Table } from 'apache-arrow';
import type { WireArrow, WireColumnData, WireColumns, WireField, WireSchema, WireType } from './protocol.js';

/**
 * `data` as its schema and a copy of its buffers, each in a buffer of its own (safe to transfer:
 * nothing else views it; the caller's buffers are never detached). A RecordBatch comes back as a
 * RecordBatch. Batches without rows are left out: they hold nothing, and Arrow's own empty
 * batches may lack a list column's child data.
 */
export function encodeArrow(data: Table | RecordBatch): WireArrow {
  const isBatch = isArrowBatch(data);
  const batches = (isBatch ? [data as RecordBatch] : (data as Table).batches).filter((b) => b.numRows > 0);
  return { kind: isBatch ? 'batch' : 'table', schema: schemaToWire(data.schema), batches: batches.map((b) => dataToWire(b.data)) };
}

function dataToWire(d: Data): WireColumnData {
  const own = <T extends ArrayBufferView | undefined>(b: T): T =>
    b === undefined ? b : ((b as unknown as Uint8Array).slice() as unknown as T);
  return {
    offset: d.offset,
    length: d.length,
    nullCount: d.nullCount,
    buffers: [d.valueOffsets, d.values, d.nullBitmap, d.typeIds].map(own),
    variadic: (d.variadicBuffers ?? []).map(own),
    children: d.children.map(dataToWire),
    dictionary: d.dictionary?.data.map(dataToWire),
  };
}

/** `schema` as plain data: field names, nullability, metadata and types with their parameters. */
export function schemaToWire(schema: Schema): WireSchema {
  return { fields: schema.fields.map(fieldToWire), metadata: [...schema.metadata] };
}

function fieldToWire(field: Field): WireField {
  return { name: field.name, nullable: field.nullable, type: typeToWire(field.type), metadata: [...field.metadata] };
}

/** A type's id and its own parameters (bitWidth, unit, timezone, children, ...), nested types included. */
function typeToWire(type: DataType): WireType {
  const wire: WireType = { typeId: type.typeId };
  for (const [key, value] of Object.entries(type)) {
    if (key === 'typeId' || key === 'typeIdToChildIndex') continue; // the latter is derived from typeIds
    if (key === 'children') wire.children = (value as Field[]).map(fieldToWire);
    else if (key === 'dictionary' || key === 'indices') wire[key] = typeToWire(value as DataType);
    else if (value instanceof Int32Array) wire[key] = [...value];
    else wire[key] = value;
  }
  return wire;
}

/** A `Table` of any apache-arrow copy (they mark instances with a global symbol). */
export function isArrowTable(x: unknown): x is Table {
  return (x as Record<symbol, unknown> | null)?.[Symbol.for('apache-arrow/Table')] === true;
}

/** A `RecordBatch` of any apache-arrow copy. */
export function isArrowBatch(x: unknown): x is RecordBatch {
  return (x as Record<symbol, unknown> | null)?.[Symbol.for('apache-arrow/RecordBatch')] === true;
}

export function isWireArrow(w: unknown): w is WireArrow {
  return typeof w === 'object' && w !== null && !Array.isArray(w) && Array.isArray((w as WireArrow).batches);
}

/** Every buffer of `w`. */
export function wireBuffers(w: WireArrow): ArrayBufferView[] {
  const out: ArrayBufferView[] = [];
  const add = (d: WireColumnData): void => {
    for (const b of [...d.buffers, ...d.variadic]) if (b !== undefined) out.push(b);
    for (const c of [...d.children, ...(d.dictionary ?? [])]) add(c);
  };
  for (const b of w.batches) add(b);
  return out;
}

/** A put's rows built on the page (client-rows.ts)? */
export function isWireColumns(w: unknown): w is WireColumns {
  return typeof w === 'object' && w !== null && (w as { kind?: unknown }).kind === 'columns';
}

/** The buffers to transfer with `values` (each buffer of each WireArrow or WireColumns among them). */
export function transfersOf(...values: unknown[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  const add = (b: ArrayBufferView | undefined): void => {
    if (b !== undefined && b.buffer instanceof ArrayBuffer && b.buffer.byteLength > 0) out.add(b.buffer);
  };
  for (const v of values) {
    if (isWireArrow(v)) for (const b of wireBuffers(v)) add(b);
    else if (isWireColumns(v)) for (const b of v.buffers) add(b);
  }
  return [...out];
}

/** The Arrow codec (arrow-wire.ts), loaded on first use. */
export function arrowCodec(): Promise<typeof import('./arrow-wire.js')> {
  return import('./arrow-wire.js');
}
