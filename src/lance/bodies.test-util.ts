// Drain request bodies as any client could craft them, for the sink's tests: columns of any Arrow
// type with any field and schema metadata (in LanceDB's apache-arrow module instance, so that the
// tests can take a type straight from the Lance table), random values of any type the sink
// admits, and rows in one comparable form for both sides of a check (what a store sent, what a
// Lance query returns). Node only (tests).

import { POSITION_COLUMN } from '../drain/wire.js';
import type { DrainRequestMeta } from '../drain/wire.js';
import { crc32c } from '../util/crc32c.js';
import { type ArrowData, type ArrowField, type ArrowTable, type ArrowType, arrow } from './lancedb.js';

const { Type } = arrow;

/** One column of a crafted body. */
export interface BodyColumn {
  field: ArrowField;
  data: ArrowData;
}

/** An encoded drain request. */
export interface CraftedRequest {
  meta: DrainRequestMeta;
  body: Uint8Array;
  /** The rows as sent (without `_memwal_position`). */
  table: ArrowTable;
}

/**
 * A drain request of `columns` whose rows all have `position` (plus `_tombstone` false when
 * `keyed`), the schema carrying `schemaMetadata`.
 */
export function craftRequest(
  columns: BodyColumn[],
  rows: number,
  position: number,
  opts: { keyed?: boolean; schemaMetadata?: Map<string, string> } = {},
): CraftedRequest {
  const own: BodyColumn[] = [
    ...(opts.keyed ? [{ field: new arrow.Field('_tombstone', new arrow.Bool(), false), data: bools(rows, false) }] : []),
    {
      field: new arrow.Field(POSITION_COLUMN, new arrow.Int64(), false),
      data: arrow.makeData({ type: new arrow.Int64(), length: rows, nullCount: 0, data: new BigInt64Array(rows).fill(BigInt(position)) }),
    },
  ];
  const all = [...columns, ...own];
  const schema = new arrow.Schema(
    all.map((c) => c.field),
    opts.schemaMetadata,
  );
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length: rows, nullCount: 0, children: all.map((c) => c.data) });
  const table = new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
  const body = arrow.tableToIPC(table, 'stream');
  const userSchema = new arrow.Schema(columns.map((c) => c.field));
  const userData = arrow.makeData({
    type: new arrow.Struct(userSchema.fields),
    length: rows,
    nullCount: 0,
    children: columns.map((c) => c.data),
  });
  return {
    meta: { firstPosition: position, lastPosition: position, epoch: 1, rows, crc32c: crc32c(body) },
    body,
    table: new arrow.Table(userSchema, [new arrow.RecordBatch(userSchema, userData)]),
  };
}

function bools(rows: number, value: boolean): ArrowData {
  return arrow.makeData({
    type: new arrow.Bool(),
    length: rows,
    nullCount: 0,
    data: new Uint8Array(Math.ceil(rows / 8)).fill(value ? 0xff : 0),
  });
}

/** `rows` nulls of `type` (its nested fields' slots null too). */
export function nulls(type: ArrowType, rows: number): ArrowData {
  return arrow.vectorFromArray(new Array(rows).fill(null), type).data[0]!;
}

/** Bytes of one value of a fixed-width `type`. */
function width(t: ArrowType & Record<string, number>): number {
  switch (t.typeId) {
    case Type.Int:
    case Type.Decimal:
    case Type.Time:
      return t.bitWidth! / 8;
    case Type.Float:
      return [2, 4, 8][t.precision!]!;
    case Type.Date:
      return t.unit === arrow.DateUnit.DAY ? 4 : 8;
    case Type.FixedSizeBinary:
      return t.byteWidth!;
    default:
      return 8; // Timestamp, Duration
  }
}

/**
 * `rows` non-null values of `type` at every depth, drawn from `r`: integers and floats small
 * (exact in a double, and no NaN, so that both sides of a comparison read alike), strings ASCII,
 * lists of 0-2 items.
 */
export function randomData(type: ArrowType, rows: number, r: () => number): ArrowData {
  const t = type as ArrowType & Record<string, number>;
  const base = { type, length: rows, nullCount: 0 };
  const small = (): number => Math.floor(r() * 2000) - 1000;
  switch (t.typeId) {
    case Type.Bool: {
      const bits = new Uint8Array(Math.ceil(rows / 8));
      for (let i = 0; i < bits.length; i++) bits[i] = Math.floor(r() * 256);
      return arrow.makeData({ ...base, data: bits } as never);
    }
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary: {
      const wide = t.typeId === Type.LargeUtf8 || t.typeId === Type.LargeBinary;
      const parts: number[] = [];
      const offsets = wide ? new BigInt64Array(rows + 1) : new Int32Array(rows + 1);
      for (let i = 0; i < rows; i++) {
        const n = Math.floor(r() * 6);
        for (let k = 0; k < n; k++) parts.push(97 + Math.floor(r() * 26));
        offsets[i + 1] = (wide ? BigInt(parts.length) : parts.length) as never;
      }
      return arrow.makeData({ ...base, valueOffsets: offsets, data: Uint8Array.from(parts) } as never);
    }
    case Type.List:
    case Type.LargeList: {
      const wide = t.typeId === Type.LargeList;
      const offsets = wide ? new BigInt64Array(rows + 1) : new Int32Array(rows + 1);
      let total = 0;
      for (let i = 0; i < rows; i++) {
        total += Math.floor(r() * 3);
        offsets[i + 1] = (wide ? BigInt(total) : total) as never;
      }
      return arrow.makeData({ ...base, valueOffsets: offsets, child: randomData(t.children[0]!.type, total, r) } as never);
    }
    case Type.FixedSizeList:
      return arrow.makeData({ ...base, child: randomData(t.children[0]!.type, rows * t.listSize!, r) } as never);
    case Type.Struct:
      return arrow.makeData({ ...base, children: (t.children as ArrowField[]).map((c) => randomData(c.type, rows, r)) } as never);
    case Type.Float: {
      if (t.precision === 0) return arrow.makeData({ ...base, data: new Uint16Array(rows).fill(0x3c00) } as never); // 1.0
      const values = t.precision === 1 ? new Float32Array(rows) : new Float64Array(rows);
      for (let i = 0; i < rows; i++) values[i] = small() / 4;
      return arrow.makeData({ ...base, data: values } as never);
    }
    default: {
      // Fixed width: small little-endian integers (sign-extended), whatever the type reads them as.
      const w = width(t);
      const bytes = new Uint8Array(rows * w);
      const view = new DataView(bytes.buffer);
      for (let i = 0; i < rows; i++) {
        const v = small();
        for (let k = 0; k < w; k++) view.setUint8(i * w + k, k < 4 ? (v >> (8 * k)) & 0xff : v < 0 ? 0xff : 0);
      }
      return arrow.makeData({ ...base, data: bytes } as never);
    }
  }
}

/** A value as JSON can hold it, the same whichever module or buffer it came from. */
export function plain(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : v;
  if (v instanceof Date) return v.getTime();
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<unknown>, plain);
  if (typeof v === 'object') {
    const o = v as { toArray?: () => unknown; toJSON?: () => unknown; [Symbol.iterator]?: unknown };
    if (typeof o.toJSON === 'function' && !(Symbol.iterator in o && typeof o.toArray === 'function')) {
      const j = o.toJSON() as Record<string, unknown>;
      return Object.fromEntries(Object.entries(j).map(([k, x]) => [k, plain(x)]));
    }
    if (typeof o.toArray === 'function') return Array.from(o.toArray() as ArrayLike<unknown>, plain);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** Rows of `t` restricted to `columns`, each as JSON, sorted. */
export function rowsOf(t: ArrowTable, columns: readonly string[]): string[] {
  const cols = columns.map((c) => t.getChild(c));
  const out: string[] = [];
  for (let i = 0; i < t.numRows; i++) out.push(JSON.stringify(cols.map((c) => plain(c?.get(i)))));
  return out.sort();
}
