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
import { encodeArrow, isArrowBatch, isArrowTable, isWireArrow, isWireColumns } from './client-wire.js';
import type { WireArrow, WireColumnData, WireData, WireField, WireSchema, WireType } from './protocol.js';

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
 * What `encodeData` encoded: Arrow back to Arrow, rows as they arrived. A put's columns
 * (WireColumns) are columns-wire.ts's to read; here they are refused.
 */
export function decodeData(w: WireData): Table | RecordBatch | Record<string, unknown>[] {
  if (isWireArrow(w)) return decodeArrow(w);
  if (isWireColumns(w)) throw new MemWalError('InvalidArgument', 'columns built on the page are taken by put only');
  return w;
}

/** The schema `schemaToWire` described. Throws `InvalidArgument` for a type it cannot rebuild. */
export function schemaFromWire(w: WireSchema): Schema {
  return new Schema(w.fields.map(fieldFromWire), new Map(w.metadata));
}

function fieldFromWire(w: WireField): Field {
  return new Field(w.name, typeFromWire(w.type), w.nullable, new Map(w.metadata));
}

/** The type parameters a `WireType` carries beside its id (each type reads its own). */
interface WireTypeParams {
  isSigned: never;
  bitWidth: never;
  precision: never;
  scale: never;
  unit: never;
  timezone: never;
  byteWidth: never;
  listSize: never;
  keysSorted: never;
  mode: never;
  typeIds: never;
  dictionary: never;
  indices: never;
  id: never;
  isOrdered: never;
}

function typeFromWire(w: WireType): DataType {
  const p = w as unknown as WireTypeParams;
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
