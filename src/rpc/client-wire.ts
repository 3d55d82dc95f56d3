// What the main thread needs to put data on the wire without loading Arrow's IPC code: a schema
// as plain data (the worker rebuilds it, arrow-wire.ts), Arrow input told apart from plain rows
// by apache-arrow's own global symbols, and transfer lists. Arrow's IPC reader and writer load
// (a separate chunk) only when a client decodes a Table or encodes Arrow input. Any runtime.

import type { DataType, Field, RecordBatch, Schema, Table } from 'apache-arrow';
import type { WireArrow, WireField, WireSchema, WireType } from './protocol.js';

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
  return typeof w === 'object' && w !== null && !Array.isArray(w) && (w as WireArrow).ipc instanceof Uint8Array;
}

/** The buffers to transfer with `values` (the IPC bytes of each WireArrow among them). */
export function transfersOf(...values: unknown[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const v of values) if (isWireArrow(v) && v.ipc.buffer instanceof ArrayBuffer) out.push(v.ipc.buffer);
  return out;
}

/** The Arrow codec (IPC reader and writer), loaded on first use. */
export function arrowCodec(): Promise<typeof import('./arrow-wire.js')> {
  return import('./arrow-wire.js');
}
