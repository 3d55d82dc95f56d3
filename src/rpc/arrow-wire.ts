// Arrow from its buffers for the worker boundary (WireArrow: the schema as plain data, each
// batch's Data tree with its buffers; client-wire.ts encodes it), and the rebuilding of a schema
// sent as plain data. No Arrow IPC code, so the main thread's chunk of it carries only Arrow's
// data classes. The worker imports it; the main thread loads it only when it decodes a Table.
// Any runtime with postMessage.

import {
  Binary,
  BinaryView,
  Bool,
  Data,
  type DataType,
  Date_,
  Decimal,
  Dictionary,
  Duration,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float,
  Int,
  Interval,
  LargeBinary,
  LargeList,
  LargeUtf8,
  List,
  Map_,
  Null,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Time,
  Timestamp,
  Type,
  Union,
  Utf8,
  Utf8View,
  Vector,
} from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import { EMPTY, builtHere } from '../data/row-columns.js';
import { encodeArrow, isArrowBatch, isArrowTable, isWireArrow, isWireColumns } from './client-wire.js';
import type { WireArrow, WireColumnData, WireColumns, WireData, WireField, WireSchema, WireType } from './protocol.js';

export { encodeArrow, transfersOf } from './client-wire.js';

/** The Table of `w` (views over the received buffers). */
export function decodeTable(w: WireArrow): Table {
  const schema = schemaFromWire(w.schema);
  const type = new Struct(schema.fields);
  return new Table(
    schema,
    w.batches.map((b) => new RecordBatch(schema, dataFromWire(type, b) as Data<Struct>)),
  );
}

function dataFromWire(type: DataType, w: WireColumnData): Data {
  const children = w.children.map((c, i) => dataFromWire(type.children[i]!.type, c));
  const dictionary = w.dictionary && new Vector(w.dictionary.map((d) => dataFromWire((type as Dictionary).dictionary, d)));
  return new Data(type, w.offset, w.length, w.nullCount, w.buffers as never, children, dictionary, w.variadic);
}

/** `w` as it was sent: a RecordBatch for `kind: 'batch'`, else a Table. */
export function decodeArrow(w: WireArrow): Table | RecordBatch {
  const t = decodeTable(w);
  if (w.kind === 'table') return t;
  return t.batches[0] ?? new RecordBatch(t.schema, undefined as never);
}

/** Put/delete input for the wire: Arrow as its buffers, anything else as is (structured clone). */
export function encodeData(data: unknown): WireData {
  if (isArrowTable(data) || isArrowBatch(data)) return encodeArrow(data);
  return data as WireData;
}

/**
 * What `encodeData` encoded: Arrow back to Arrow, rows as they arrived, a put's columns
 * (WireColumns) as a RecordBatch of `schema` (`decodeColumns`; without a schema they are refused).
 */
export function decodeData(w: WireData, schema?: Schema): Table | RecordBatch | Record<string, unknown>[] {
  if (isWireArrow(w)) return decodeArrow(w);
  if (isWireColumns(w)) {
    if (!schema) throw new MemWalError('InvalidArgument', 'columns built on the page are taken by put only');
    return decodeColumns(w, schema);
  }
  return w;
}

const isView = (b: unknown): b is ArrayBufferView => ArrayBuffer.isView(b);

/** Cleared bits among the first `n` of `bitmap` (-1 when it is shorter than `n` bits). */
function nullsIn(bitmap: Uint8Array, n: number): number {
  if (bitmap.length < (n + 7) >> 3) return -1;
  let valid = 0;
  for (let i = 0; i < n >> 3; i++) {
    let b = bitmap[i]!;
    while (b) {
      b &= b - 1;
      valid++;
    }
  }
  for (let i = n & ~7; i < n; i++) valid += (bitmap[i >> 3]! >> (i & 7)) & 1;
  return n - valid;
}

/**
 * The RecordBatch of `w`, a put's rows the page built into columns of `schema` (the store's),
 * named by `w.names` in any order (views over the received buffers, nothing copied). The engine's
 * put checks it as any RecordBatch (names, types, nulls in non-nullable columns); first each
 * buffer's shape is checked here, so that a page that sends what the builders would not (an
 * unknown name, a short buffer, offsets out of bounds or decreasing, a wrong array type, a null
 * count its bitmap does not hold) is refused `InvalidArgument` before anything is written:
 * O(columns + rows / 8), and O(rows) over a variable-width column's offsets. Worker side.
 */
export function decodeColumns(w: WireColumns, schema: Schema): RecordBatch {
  const n = w.length;
  const bad = (why: string): never => {
    throw new MemWalError(
      'InvalidArgument',
      `put: the columns sent by the page do not fit the store's schema: ${why}; nothing was written`,
    );
  };
  if (!Number.isSafeInteger(n) || n < 1) bad(`length ${String(n)}`);
  const k = Array.isArray(w.names) ? w.names.length : -1;
  if (k < 0 || !Array.isArray(w.nullCounts) || w.nullCounts.length !== k || !Array.isArray(w.buffers) || w.buffers.length !== 3 * k) {
    bad('names, null counts and buffers do not match');
  }
  const fields = w.names.map((name) => schema.fields.find((f) => f.name === name) ?? bad(`no column ${JSON.stringify(name)}`));
  const children = new Array<Data>(k);
  for (let j = 0; j < k; j++) {
    const field = fields[j]!;
    const type = field.type;
    const varWidth =
      type.typeId === Type.Utf8 || type.typeId === Type.LargeUtf8 || type.typeId === Type.Binary || type.typeId === Type.LargeBinary;
    const at = (why: string): never => bad(`column "${field.name}": ${why}`);
    if (!builtHere(type as never)) at(`type ${String(type)} is not built on the page`);
    const nullCount = w.nullCounts[j];
    if (!Number.isSafeInteger(nullCount) || nullCount! < 0 || nullCount! > n) at(`null count ${String(nullCount)}`);
    const offsets = w.buffers[3 * j];
    const values = w.buffers[3 * j + 1];
    const validity = w.buffers[3 * j + 2];
    if (!isView(values) || values.constructor !== type.ArrayType) at('values of the wrong array type');
    if (validity !== undefined && !(validity instanceof Uint8Array)) at('a validity bitmap that is not a Uint8Array');
    const hasBitmap = validity !== undefined && validity.byteLength > 0;
    if ((nullCount! > 0 || hasBitmap) && (!hasBitmap || nullsIn(validity as Uint8Array, n) !== nullCount)) {
      at(`a validity bitmap that does not hold ${String(nullCount)} nulls in ${n} rows`);
    }
    const v = values as ArrayBufferView & { length: number };
    if (!varWidth) {
      if (offsets !== undefined) at('value offsets in a fixed-width column');
      const need = type.typeId === Type.Bool ? (n + 7) >> 3 : n;
      if (v.length < need) at(`${v.length} values for ${n} rows`);
    } else {
      if (!isView(offsets) || offsets.constructor !== (type as Utf8 | LargeUtf8).OffsetArrayType)
        at('value offsets of the wrong array type');
      const o = offsets as unknown as ArrayLike<number | bigint>;
      if (o.length < n + 1 || Number(o[0]) !== 0) at('value offsets that do not start at 0 for every row');
      for (let i = 0; i < n; i++) if (o[i]! > o[i + 1]!) at(`value offsets that decrease at row ${i}`);
      if (Number(o[n]) > v.length) at(`value offsets past the ${v.length} value bytes`);
    }
    children[j] = new Data(type, 0, n, nullCount!, [offsets, values, validity ?? EMPTY] as never);
  }
  const sent = new Schema(fields);
  return new RecordBatch(sent, new Data(new Struct(fields), 0, n, 0, [undefined, undefined, undefined] as never, children) as Data<Struct>);
}

/** The schema `schemaToWire` described. Throws `InvalidArgument` for a type it cannot rebuild. */
export function schemaFromWire(w: WireSchema): Schema {
  return new Schema(w.fields.map(fieldFromWire), new Map(w.metadata));
}

function fieldFromWire(w: WireField): Field {
  return new Field(w.name, typeFromWire(w.type), w.nullable, new Map(w.metadata));
}

function typeFromWire(w: WireType): DataType {
  const p = w as unknown as Record<string, never>;
  const children = (w.children ?? []).map(fieldFromWire);
  switch (w.typeId) {
    case Type.Null:
      return new Null();
    case Type.Int:
      return new Int(p.isSigned, p.bitWidth);
    case Type.Float:
      return new Float(p.precision);
    case Type.Binary:
      return new Binary();
    case Type.LargeBinary:
      return new LargeBinary();
    case Type.BinaryView:
      return new BinaryView();
    case Type.Utf8:
      return new Utf8();
    case Type.LargeUtf8:
      return new LargeUtf8();
    case Type.Utf8View:
      return new Utf8View();
    case Type.Bool:
      return new Bool();
    case Type.Decimal:
      return new Decimal(p.scale, p.precision, p.bitWidth);
    case Type.Date:
      return new Date_(p.unit);
    case Type.Time:
      return new Time(p.unit, p.bitWidth);
    case Type.Timestamp:
      return new Timestamp(p.unit, p.timezone);
    case Type.Interval:
      return new Interval(p.unit);
    case Type.Duration:
      return new Duration(p.unit);
    case Type.FixedSizeBinary:
      return new FixedSizeBinary(p.byteWidth);
    case Type.List:
      return new List(children[0]!);
    case Type.LargeList:
      return new LargeList(children[0]!);
    case Type.FixedSizeList:
      return new FixedSizeList(p.listSize, children[0]!);
    case Type.Struct:
      return new Struct(children);
    case Type.Map:
      return new Map_(children[0]! as never, p.keysSorted);
    case Type.Union:
      return new Union(p.mode, p.typeIds, children);
    case Type.Dictionary:
      return new Dictionary(typeFromWire(p.dictionary), typeFromWire(p.indices) as never, p.id, p.isOrdered);
    default:
      throw new MemWalError('InvalidArgument', `option schema: Arrow type id ${String(w.typeId)} is not supported`);
  }
}
