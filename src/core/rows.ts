// Put input -> record batches in the store's internal schema (validated, reordered, dictionary
// strings decoded, plain rows built straight into typed arrays), tombstone batches for deletes,
// and the row-level tools of reads and flushes: rowObject, concatRows, projectBatch.

import { Bool, Data, RecordBatch, Schema, Struct, Table, Type, makeBuilder, makeData, makeVector } from 'apache-arrow';
import type { DataType, Field } from 'apache-arrow';
import { MemWalError } from '../errors.js';
import { TOMBSTONE_COLUMN, typesEqual } from './schema.js';
import type { StoreSchema } from './schema.js';
import { backingBytes, estimateBatchBytes } from './size.js';

type Row = Record<string, unknown>;
type AnyArray = {
  length: number;
  [i: number]: number | bigint;
  set(a: ArrayLike<number | bigint>, offset?: number): void;
  subarray(a: number, b?: number): AnyArray;
};
type ArrayCtor = new (n: number) => AnyArray;

const EMPTY = new Uint8Array(0);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const INT32_MAX_BYTES = 2147483647;
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// toBatches

/**
 * Convert put input into record batches in `ss.internal` (the very schema object, so batches of
 * different puts encode into one IPC stream), with `_tombstone` false when the store has one.
 * Any runtime.
 *
 * - `RecordBatch` / `Table`: columns are matched by name in any order and checked against
 *   `ss.base` (types per `typesEqual`; metadata ignored). A `Dictionary<_, Utf8|LargeUtf8>`
 *   column where the schema says `Utf8`/`LargeUtf8` is decoded. A missing nullable column
 *   becomes all-null. Nullability is checked on the data: a column may be declared nullable in
 *   the input as long as it holds no null where the schema forbids one. Empty batches are
 *   dropped. A batch whose views use less than half of their backing buffers (a small slice of
 *   a big batch) is copied into compact buffers so the memtable estimate is what is resident.
 * - Plain rows (`Record<string, unknown>[]`): one batch. Accepted values per column type:
 *   Int64/Uint64 a bigint or a safe-integer number; Int8..Int32/Uint8..Uint32 an integer number
 *   (or bigint) in range; Float any number; Bool a boolean; Utf8 a string; Binary a Uint8Array;
 *   FixedSizeBinary a Uint8Array of exactly the width; Date a `Date` or epoch milliseconds;
 *   Timestamp a `Date` or epoch milliseconds (number, floored to the unit) or a bigint already
 *   in the column's unit; Time32 an integer in the unit; Time64 and Duration a bigint or
 *   safe-integer number in the unit; `null`/`undefined`/absent = null. Other types (List,
 *   Struct, Decimal, ...) go through apache-arrow's builder with the declared type.
 *
 * Throws `MemWalError('InvalidArgument')` naming the column (and row) and the reason: unknown
 * column, missing non-nullable column, type mismatch, null in a non-nullable column, a value
 * of the wrong kind or out of range, or no rows at all ("put has no rows").
 */
export function toBatches(data: RecordBatch | Table | Row[], ss: StoreSchema): RecordBatch[] {
  return convertInput(data, ss, 'put');
}

function convertInput(data: RecordBatch | Table | Row[], ss: StoreSchema, what: 'put' | 'delete'): RecordBatch[] {
  let out: RecordBatch[];
  if (Array.isArray(data)) {
    out = data.length === 0 ? [] : [rowsToBatch(data, ss, what)];
  } else if (RecordBatch.isRecordBatch(data)) {
    const b = conformBatch(data, ss, what);
    out = b ? [b] : [];
  } else if (Table.isTable(data)) {
    checkColumns(data.schema, ss, what);
    out = [];
    for (const batch of data.batches) {
      const b = conformBatch(batch, ss, what);
      if (b) out.push(b);
    }
  } else {
    throw invalid(`${what} expects an apache-arrow RecordBatch, a Table or an array of row objects`);
  }
  if (out.length === 0) throw invalid(what === 'put' ? 'put has no rows' : 'delete has no keys');
  return out;
}

/** Names in `input` that the store does not have, or that appear twice: InvalidArgument. */
function checkColumns(input: Schema, ss: StoreSchema, what: string): Map<string, number> {
  const byName = new Map<string, number>();
  input.fields.forEach((f, j) => {
    if (byName.has(f.name)) throw invalid(`${what}: the input has two columns named "${f.name}"`);
    if (!ss.base.fields.some((b) => b.name === f.name)) throw unknownColumn(f.name, ss, what);
    byName.set(f.name, j);
  });
  return byName;
}

function unknownColumn(name: string, ss: StoreSchema, what: string): MemWalError {
  const known = ss.base.fields.map((f) => f.name).join(', ');
  return invalid(`${what}: unknown column "${name}" (${what === 'delete' ? 'primary key columns' : 'columns'}: ${known})`);
}

function conformBatch(batch: RecordBatch, ss: StoreSchema, what: string): RecordBatch | null {
  const byName = checkColumns(batch.schema, ss, what);
  const n = batch.numRows;
  const children = ss.base.fields.map((field) => {
    const j = byName.get(field.name);
    if (j === undefined) {
      if (!field.nullable) throw invalid(`${what}: missing non-nullable column "${field.name}"`);
      return zeroData(field.type, n, true);
    }
    let data = batch.data.children[j]!;
    const got = batch.schema.fields[j]!.type;
    if (typesEqual(field.type, got)) {
      if (data.type !== field.type) data = data.clone(field.type);
    } else if (isStringType(field.type) && got.typeId === Type.Dictionary && isStringType(got.dictionary)) {
      data = n === 0 ? zeroData(field.type, 0, false) : decodeDictionaryStrings(data, field.type);
    } else {
      throw invalid(`${what}: column "${field.name}" has type ${String(got)}, expected ${String(field.type)}`);
    }
    if (!field.nullable && n > 0 && data.nullCount > 0) {
      throw invalid(`${what}: column "${field.name}" is non-nullable but holds ${data.nullCount} null value(s)`);
    }
    return data;
  });
  if (n === 0) return null;
  if (ss.hasTombstone) children.push(boolData(n, false));
  return compactIfSparse(makeBatch(ss.internal, children, n));
}

function isStringType(t: DataType | undefined): boolean {
  return t?.typeId === Type.Utf8 || t?.typeId === Type.LargeUtf8;
}

/** Dictionary<_, Utf8|LargeUtf8> -> plain `target` (Utf8 or LargeUtf8) strings, bytes copied. */
function decodeDictionaryStrings(data: Data, target: DataType): Data {
  const n = data.length;
  const chunks = data.dictionary?.data ?? [];
  const dict =
    chunks.length === 1 ? chunks[0]! : gather(target, chunks.map((d) => ({ data: d, idx: null, start: 0, count: d.length })));
  const indices = data.values as unknown as AnyArray;
  const idx = new Int32Array(n);
  const checkNulls = data.nullCount > 0 || dict.nullCount > 0;
  let nullCount = 0;
  let bitmap: Uint8Array | undefined;
  for (let i = 0; i < n; i++) {
    const k = Number(indices[i]);
    if (checkNulls && (!data.getValid(i) || !dict.getValid(k))) {
      bitmap ??= new Uint8Array((n + 7) >> 3).fill(0xff);
      bitmap[i >> 3]! &= ~(1 << (i & 7));
      nullCount++;
      idx[i] = -1;
    } else {
      idx[i] = k;
    }
  }
  const out = gatherVarWidth(target, [{ data: dict, idx, start: 0, count: n }], n);
  return new Data(target, 0, n, nullCount, [out.valueOffsets, out.values, bitmap ?? EMPTY]);
}

// ---------------------------------------------------------------------------------------------
// Plain rows -> one batch, column by column into typed arrays

function rowsToBatch(rows: Row[], ss: StoreSchema, what: string): RecordBatch {
  const n = rows.length;
  const known: Record<string, true> = Object.create(null) as Record<string, true>;
  for (const f of ss.base.fields) known[f.name] = true;
  for (let i = 0; i < n; i++) {
    const row = rows[i];
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw invalid(`${what}: row ${i} is not an object (got ${describe(row)})`);
    }
    for (const k in row) {
      if (known[k] !== true && Object.prototype.hasOwnProperty.call(row, k)) throw unknownColumn(k, ss, what);
    }
  }
  const children = ss.base.fields.map((f) => buildColumn(rows, f, what));
  if (ss.hasTombstone) children.push(boolData(n, false));
  return makeBatch(ss.internal, children, n);
}

function buildColumn(rows: Row[], field: Field, what: string): Data {
  const t = field.type as DataType & { bitWidth?: number; precision?: number };
  switch (t.typeId) {
    case Type.Int:
      return t.bitWidth === 64 ? buildInt64(rows, field, what) : buildFlat(rows, field, what);
    case Type.Float:
      return t.precision === 0 ? buildFallback(rows, field, what) : buildFlat(rows, field, what); // 0: HALF
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
      return buildVarWidth(rows, field, what);
    case Type.Bool:
      return buildBool(rows, field, what);
    case Type.FixedSizeBinary:
    case Type.Date:
    case Type.Timestamp:
    case Type.Time:
    case Type.Duration:
      return buildFlat(rows, field, what);
    default:
      return buildFallback(rows, field, what);
  }
}

/** Lazily allocated validity bitmap of a column being built. */
class Nulls {
  bitmap: Uint8Array | undefined;
  count = 0;
  constructor(
    private readonly n: number,
    private readonly field: Field,
    private readonly what: string,
  ) {}
  /** Row `i` has no value: null it, or throw when the column is non-nullable. */
  mark(i: number): void {
    if (!this.field.nullable) {
      throw invalid(`${this.what}: row ${i}: column "${this.field.name}" is non-nullable but has no value`);
    }
    this.bitmap ??= new Uint8Array((this.n + 7) >> 3).fill(0xff);
    this.bitmap[i >> 3]! &= ~(1 << (i & 7));
    this.count++;
  }
  get buffer(): Uint8Array {
    return this.bitmap ?? EMPTY;
  }
}

function badValue(what: string, i: number, field: Field, v: unknown): MemWalError {
  return invalid(`${what}: row ${i}: column "${field.name}": expected ${expectedFor(field.type)}, got ${describe(v)}`);
}

/** Int64/Uint64, the hot path: safe-integer numbers are written as two 32-bit words, no BigInt. */
function buildInt64(rows: Row[], field: Field, what: string): Data {
  const n = rows.length;
  const name = field.name;
  const signed = (field.type as { isSigned: boolean }).isSigned;
  const buf = new ArrayBuffer(n * 8);
  const words = new Int32Array(buf);
  const big = signed ? new BigInt64Array(buf) : new BigUint64Array(buf);
  const nulls = new Nulls(n, field, what);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v) || (!signed && v < 0)) throw badValue(what, i, field, v);
      if (LITTLE_ENDIAN) {
        words[2 * i] = v | 0;
        words[2 * i + 1] = Math.floor(v / 4294967296) | 0;
      } else {
        big[i] = BigInt(v);
      }
    } else if (typeof v === 'bigint') {
      if ((signed ? BigInt.asIntN(64, v) : BigInt.asUintN(64, v)) !== v) throw badValue(what, i, field, v);
      big[i] = v;
    } else if (v === null || v === undefined) {
      nulls.mark(i);
    } else {
      throw badValue(what, i, field, v);
    }
  }
  return new Data(field.type, 0, n, nulls.count, [undefined, big, nulls.buffer]);
}

/** Fixed-width columns through {@link coerceScalar}: Int8-32, Float32/64, dates, times, durations, FixedSizeBinary. */
function buildFlat(rows: Row[], field: Field, what: string): Data {
  const n = rows.length;
  const name = field.name;
  const type = field.type;
  const stride = type.typeId === Type.FixedSizeBinary ? (type as unknown as { byteWidth: number }).byteWidth : 1;
  const values = new (type.ArrayType as ArrayCtor)(n * stride);
  const nulls = new Nulls(n, field, what);
  if (type.typeId === Type.Float) {
    // Floats: any number, no conversion.
    for (let i = 0; i < n; i++) {
      const v = rows[i]![name];
      if (typeof v === 'number') values[i] = v;
      else if (v === null || v === undefined) nulls.mark(i);
      else throw badValue(what, i, field, v);
    }
  } else {
    for (let i = 0; i < n; i++) {
      const v = rows[i]![name];
      if (v === null || v === undefined) {
        nulls.mark(i);
        continue;
      }
      const raw = coerceScalar(type, v);
      if (raw === undefined) throw badValue(what, i, field, v);
      if (stride === 1) values[i] = raw as number | bigint;
      else values.set(raw as Uint8Array, i * stride);
    }
  }
  return new Data(type, 0, n, nulls.count, [undefined, values, nulls.buffer]);
}

function buildBool(rows: Row[], field: Field, what: string): Data {
  const n = rows.length;
  const bits = new Uint8Array((n + 7) >> 3);
  const nulls = new Nulls(n, field, what);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![field.name];
    if (v === true) bits[i >> 3]! |= 1 << (i & 7);
    else if (v === null || v === undefined) nulls.mark(i);
    else if (v !== false) throw badValue(what, i, field, v);
  }
  return new Data(field.type, 0, n, nulls.count, [undefined, bits, nulls.buffer]);
}

/** Utf8/LargeUtf8/Binary/LargeBinary: bytes into one growing buffer (ASCII strings copied by hand). */
function buildVarWidth(rows: Row[], field: Field, what: string): Data {
  const n = rows.length;
  const name = field.name;
  const strings = field.type.typeId === Type.Utf8 || field.type.typeId === Type.LargeUtf8;
  const offsets = new Int32Array(n + 1);
  let buf: Uint8Array = new Uint8Array(Math.max(1024, n * 16));
  let pos = 0;
  const nulls = new Nulls(n, field, what);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (strings && typeof v === 'string') {
      const len = v.length;
      if (pos + len > buf.length) buf = grow(buf, pos, len);
      let j = 0;
      for (; j < len; j++) {
        const c = v.charCodeAt(j);
        if (c >= 0x80) break;
        buf[pos + j] = c;
      }
      if (j === len) {
        pos += len;
      } else {
        if (pos + 3 * len > buf.length) buf = grow(buf, pos, 3 * len);
        pos += encoder.encodeInto(v, buf.subarray(pos)).written;
      }
    } else if (!strings && v instanceof Uint8Array) {
      if (pos + v.length > buf.length) buf = grow(buf, pos, v.length);
      buf.set(v, pos);
      pos += v.length;
    } else if (v === null || v === undefined) {
      nulls.mark(i);
    } else {
      throw badValue(what, i, field, v);
    }
    if (pos > INT32_MAX_BYTES) {
      throw invalid(`${what}: column "${name}" holds more than 2 GiB in one put; split the put`);
    }
    offsets[i + 1] = pos;
  }
  const values = pos < buf.length * 0.9 ? buf.slice(0, pos) : buf.subarray(0, pos);
  const large = field.type.typeId === Type.LargeUtf8 || field.type.typeId === Type.LargeBinary;
  const valueOffsets = large ? BigInt64Array.from(offsets, (o) => BigInt(o)) : offsets;
  return new Data(field.type, 0, n, nulls.count, [valueOffsets, values, nulls.buffer]);
}

function grow(buf: Uint8Array, used: number, need: number): Uint8Array {
  const next = new Uint8Array(Math.max(buf.length * 2, used + need + 1024));
  next.set(buf.subarray(0, used));
  return next;
}

/** Types without a hand-written builder: apache-arrow's builder with the declared type. */
function buildFallback(rows: Row[], field: Field, what: string): Data {
  const builder = makeBuilder({ type: field.type, nullValues: [null, undefined] });
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i]![field.name];
    if ((v === null || v === undefined) && !field.nullable) {
      throw invalid(`${what}: row ${i}: column "${field.name}" is non-nullable but has no value`);
    }
    try {
      builder.append(v);
    } catch (e) {
      throw invalid(`${what}: row ${i}: column "${field.name}" (${String(field.type)}): ${describe(v)} rejected: ${String(e)}`);
    }
  }
  const data = builder.finish().flush();
  return data.type === field.type ? data : data.clone(field.type);
}

// ---------------------------------------------------------------------------------------------
// Scalar coercion (plain rows and get() keys share it)

/**
 * Convert a JS value to the raw storage value of a column of type `type`, or `undefined` when
 * the value is not acceptable (see {@link toBatches} for the rules). Raw values: number for
 * Int8-32/Uint8-32/Float/Date<Day>/Time32; bigint for 64-bit integers, Date<Millisecond>,
 * Timestamp, Time64 and Duration (in the column's unit); string, boolean, Uint8Array as is.
 * Null/undefined are not handled here. Any runtime.
 */
export function coerceScalar(type: DataType, v: unknown): number | bigint | string | boolean | Uint8Array | undefined {
  const t = type as DataType & { bitWidth: number; isSigned: boolean; unit: number; byteWidth: number };
  switch (t.typeId) {
    case Type.Int: {
      if (t.bitWidth === 64) return toInt64(v, t.isSigned);
      const min = t.isSigned ? -(2 ** (t.bitWidth - 1)) : 0;
      const max = t.isSigned ? 2 ** (t.bitWidth - 1) - 1 : 2 ** t.bitWidth - 1;
      const x = typeof v === 'bigint' ? Number(v) : v;
      return typeof x === 'number' && Number.isInteger(x) && x >= min && x <= max ? x : undefined;
    }
    case Type.Float:
      return typeof v === 'number' ? v : undefined;
    case Type.Bool:
      return typeof v === 'boolean' ? v : undefined;
    case Type.Utf8:
    case Type.LargeUtf8:
      return typeof v === 'string' ? v : undefined;
    case Type.Binary:
    case Type.LargeBinary:
      return v instanceof Uint8Array ? v : undefined;
    case Type.FixedSizeBinary:
      return v instanceof Uint8Array && v.length === t.byteWidth ? v : undefined;
    case Type.Date: {
      const ms = v instanceof Date ? v.getTime() : v;
      if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) return undefined;
      return t.unit === 0 ? Math.floor(ms / 86400000) : BigInt(ms); // 0: DateUnit.DAY
    }
    case Type.Timestamp: {
      if (typeof v === 'bigint') return toInt64(v, true);
      const ms = v instanceof Date ? v.getTime() : v;
      if (typeof ms !== 'number' || !Number.isFinite(ms)) return undefined;
      const x = t.unit === 0 ? Math.floor(ms / 1000) : Math.floor(ms * [1, 1, 1e3, 1e6][t.unit]!); // TimeUnit SECOND..NANOSECOND
      return Math.abs(x) < 2 ** 63 ? BigInt(x) : undefined;
    }
    case Type.Time: {
      if (t.bitWidth === 64) return toInt64(v, true);
      const x = typeof v === 'bigint' ? Number(v) : v;
      return typeof x === 'number' && Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31 ? x : undefined;
    }
    case Type.Duration:
      return toInt64(v, true);
    default:
      return undefined;
  }
}

function toInt64(v: unknown, signed: boolean): bigint | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && (signed || v >= 0) ? BigInt(v) : undefined;
  if (typeof v === 'bigint') return (signed ? BigInt.asIntN(64, v) : BigInt.asUintN(64, v)) === v ? v : undefined;
  return undefined;
}

const UNITS = ['second', 'millisecond', 'microsecond', 'nanosecond'];

/** What {@link coerceScalar} accepts for `type`, for error messages. */
export function expectedFor(type: DataType): string {
  const t = type as DataType & { bitWidth: number; isSigned: boolean; unit: number; byteWidth: number };
  switch (t.typeId) {
    case Type.Int:
      if (t.bitWidth === 64) {
        return t.isSigned ? 'a bigint or a safe-integer number (Int64)' : 'a non-negative bigint or safe-integer number (Uint64)';
      }
      return t.isSigned
        ? `an integer in [${-(2 ** (t.bitWidth - 1))}, ${2 ** (t.bitWidth - 1) - 1}] (Int${t.bitWidth})`
        : `an integer in [0, ${2 ** t.bitWidth - 1}] (Uint${t.bitWidth})`;
    case Type.Float:
      return 'a number';
    case Type.Bool:
      return 'a boolean';
    case Type.Utf8:
    case Type.LargeUtf8:
      return 'a string';
    case Type.Binary:
    case Type.LargeBinary:
      return 'a Uint8Array';
    case Type.FixedSizeBinary:
      return `a Uint8Array of ${t.byteWidth} bytes`;
    case Type.Date:
      return 'a Date or integer epoch milliseconds';
    case Type.Timestamp:
      return `a Date, epoch milliseconds (number) or a bigint in ${UNITS[t.unit]}s`;
    case Type.Time:
      return t.bitWidth === 64 ? `a bigint or safe-integer number of ${UNITS[t.unit]}s` : `an int32 number of ${UNITS[t.unit]}s`;
    case Type.Duration:
      return `a bigint or safe-integer number of ${UNITS[t.unit]}s`;
    default:
      return `a value apache-arrow can build as ${String(type)}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Tombstones

const keySchemas = new WeakMap<StoreSchema, StoreSchema>();

/**
 * A batch in `ss.internal` with one row per given key: key columns copied, `_tombstone` true,
 * every other column null (non-nullable ones get the type's default: 0, '', false, empty bytes,
 * epoch 0). Only key columns may be given, in any order; values follow {@link toBatches}'s
 * rules. Throws `NotSupported` when the store has no primary key, `InvalidArgument` for a
 * non-key column, a missing key column, a bad value, or no keys (`NotSupported` too for a
 * store with a Union column, which has no null or default to fill). Any runtime.
 */
export function tombstoneBatch(keys: Table | RecordBatch | Row[], ss: StoreSchema): RecordBatch {
  if (!ss.hasTombstone) throw new MemWalError('NotSupported', 'delete needs a primary key; this store has none');
  let kss = keySchemas.get(ss);
  if (!kss) {
    const base = new Schema(ss.keyIndices.map((i) => ss.base.fields[i]!));
    kss = { base, internal: base, primaryKey: [], keyIndices: [], hasTombstone: false };
    keySchemas.set(ss, kss);
  }
  const parts = convertInput(keys, kss, 'delete');
  const n = parts.reduce((s, b) => s + b.numRows, 0);
  const keyData = parts.length === 1 ? parts[0]!.data.children : gatherBatch(kss.base, parts.map(allRows), n).data.children;
  const children = ss.internal.fields.map((f, j) => {
    const k = ss.keyIndices.indexOf(j);
    if (k >= 0) return keyData[k]!;
    if (f.name === TOMBSTONE_COLUMN) return boolData(n, true);
    return zeroData(f.type, n, f.nullable);
  });
  return makeBatch(ss.internal, children, n);
}

/** Is row `row` of an internal-schema batch a delete marker? False when there is no `_tombstone`. */
export function isTombstoneRow(batch: RecordBatch, row: number): boolean {
  const fields = batch.schema.fields;
  const last = fields.length - 1;
  const j = fields[last]?.name === TOMBSTONE_COLUMN ? last : fields.findIndex((f) => f.name === TOMBSTONE_COLUMN);
  if (j < 0) return false;
  const d = batch.data.children[j]!;
  const bit = d.offset + row;
  return ((d.values as Uint8Array)[bit >> 3]! & (1 << (bit & 7))) !== 0;
}

/** A Bool column of `n` values, all `value`, no nulls. */
function boolData(n: number, value: boolean): Data {
  const bits = new Uint8Array((n + 7) >> 3);
  if (value) bits.fill(0xff);
  return new Data(new Bool(), 0, n, 0, [undefined, bits, EMPTY]);
}

/**
 * `n` rows of `type`, all null (`allNull`) or all the type's default: zero bytes, so 0, '',
 * false, empty bytes/lists, epoch 0; struct children are null where nullable.
 */
function zeroData(type: DataType, n: number, allNull: boolean): Data {
  const bitmap = allNull ? new Uint8Array((n + 7) >> 3) : EMPTY;
  const nulls = allNull ? n : 0;
  const children: Field[] = type.children ?? [];
  switch (type.typeId) {
    case Type.Null:
      return new Data(type, 0, n, n);
    case Type.Bool:
      return new Data(type, 0, n, nulls, [undefined, new Uint8Array((n + 7) >> 3), bitmap]);
    case Type.Utf8:
    case Type.Binary:
      return new Data(type, 0, n, nulls, [new Int32Array(n + 1), EMPTY, bitmap]);
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return new Data(type, 0, n, nulls, [new BigInt64Array(n + 1), EMPTY, bitmap]);
    case Type.List:
    case Type.Map:
      return new Data(type, 0, n, nulls, [new Int32Array(n + 1), undefined, bitmap], [zeroData(children[0]!.type, 0, false)]);
    case Type.LargeList:
      return new Data(type, 0, n, nulls, [new BigInt64Array(n + 1), undefined, bitmap], [zeroData(children[0]!.type, 0, false)]);
    case Type.FixedSizeList: {
      const size = (type as unknown as { listSize: number }).listSize;
      return new Data(type, 0, n, nulls, [undefined, undefined, bitmap], [zeroData(children[0]!.type, n * size, false)]);
    }
    case Type.Struct:
      return new Data(type, 0, n, nulls, [undefined, undefined, bitmap], children.map((c) => zeroData(c.type, n, c.nullable)));
    case Type.Utf8View:
    case Type.BinaryView:
      return new Data(type, 0, n, nulls, [undefined, new Uint8Array(n * 16), bitmap]);
    case Type.Dictionary: // not in store schemas (makeStoreSchema rejects them)
    case Type.Union:
      throw new MemWalError('NotSupported', `no default value for a column of type ${String(type)}`);
    default: {
      const stride = new Data(type, 0, 0).stride;
      return new Data(type, 0, n, nulls, [undefined, new (type.ArrayType as ArrayCtor)(n * stride) as never, bitmap]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reading rows

/**
 * One row as a plain object (without `_tombstone` unless `columns` names it), with
 * apache-arrow's natural values: Int64 as bigint, Timestamp/Date as epoch milliseconds,
 * Time64/Duration as bigint, Binary copied into a new Uint8Array (never a view into the
 * memtable), Struct as a plain object, List as an array, null as `null`.
 * Throws `InvalidArgument` for an unknown column. Any runtime.
 */
export function rowObject(batch: RecordBatch, row: number, columns?: string[]): Row {
  const fields = batch.schema.fields;
  const out: Row = {};
  if (columns === undefined) {
    for (let j = 0; j < fields.length; j++) {
      const name = fields[j]!.name;
      if (name !== TOMBSTONE_COLUMN) out[name] = plainValue(batch.data.children[j]!, row);
    }
  } else {
    for (const name of columns) {
      const j = fields.findIndex((f) => f.name === name);
      if (j < 0) throw invalid(`unknown column "${name}"`);
      out[name] = plainValue(batch.data.children[j]!, row);
    }
  }
  return out;
}

function plainValue(data: Data, row: number): unknown {
  if (!data.getValid(row)) return null;
  const v: unknown = makeVector(data).get(row);
  switch (data.typeId) {
    case Type.Binary:
    case Type.LargeBinary:
    case Type.FixedSizeBinary:
    case Type.BinaryView:
      return (v as Uint8Array).slice();
    case Type.Struct:
    case Type.Map:
      return (v as { toJSON(): unknown }).toJSON();
    case Type.List:
    case Type.LargeList:
    case Type.FixedSizeList:
      return [...(v as Iterable<unknown>)];
    default:
      return v;
  }
}

// ---------------------------------------------------------------------------------------------
// Selecting rows

/** Batches of at least this many rows selected whole are passed through, not copied. */
const REUSE_MIN_ROWS = 1024;
/** Copied rows are cut into output batches of about this many rows. */
const MAX_BATCH_ROWS = 65536;

interface Sel {
  data: Data;
  /** Rows to take, in order; -1 = a null row (dictionary decode only). `null`: the range below. */
  idx: ArrayLike<number> | null;
  start: number;
  count: number;
}
interface BatchSel {
  batch: RecordBatch;
  idx: ArrayLike<number> | null;
  start: number;
  count: number;
}

function allRows(batch: RecordBatch): BatchSel {
  return { batch, idx: null, start: 0, count: batch.numRows };
}

/**
 * Select rows from batches that all have `schema`'s layout, in order, into batches that use
 * the `schema` object. A part with `'all'` rows and at least 1,024 rows is passed through
 * without copying; everything else is copied column by column (typed-array gathers; exotic
 * types through apache-arrow's builder) and coalesced into batches of about 65,536 rows. Output
 * rows keep the order of `parts` and of each index list. Any runtime.
 */
export function concatRows(parts: { batch: RecordBatch; rows: number[] | 'all' }[], schema: Schema): RecordBatch[] {
  const out: RecordBatch[] = [];
  let pending: BatchSel[] = [];
  let pendingRows = 0;
  const flush = (): void => {
    if (pendingRows > 0) out.push(gatherBatch(schema, pending, pendingRows));
    pending = [];
    pendingRows = 0;
  };
  for (const { batch, rows } of parts) {
    if (batch.schema.fields.length !== schema.fields.length) {
      throw invalid(`concatRows: a batch has ${batch.schema.fields.length} columns, the schema ${schema.fields.length}`);
    }
    if (rows === 'all') {
      if (batch.numRows === 0) continue;
      if (batch.numRows >= REUSE_MIN_ROWS) {
        flush();
        out.push(batch.schema === schema ? batch : makeBatch(schema, batch.data.children, batch.numRows));
        continue;
      }
      pending.push(allRows(batch));
      pendingRows += batch.numRows;
    } else {
      if (rows.length === 0) continue;
      pending.push({ batch, idx: rows, start: 0, count: rows.length });
      pendingRows += rows.length;
    }
    if (pendingRows >= MAX_BATCH_ROWS) flush();
  }
  flush();
  return out;
}

/**
 * `batch` itself (re-wrapped to use `schema` when given) when its views use at least half of
 * their backing buffers, else a compact copy, so that its estimate is what keeping it costs.
 * Use it for batches decoded from a larger buffer (WAL replay). Any runtime.
 */
export function compactIfSparse(batch: RecordBatch, schema: Schema = batch.schema): RecordBatch {
  if (batch.numRows > 0 && estimateBatchBytes(batch) * 2 < backingBytes(batch)) {
    return gatherBatch(schema, [allRows(batch)], batch.numRows);
  }
  return batch.schema === schema ? batch : makeBatch(schema, batch.data.children, batch.numRows);
}

function gatherBatch(schema: Schema, sels: BatchSel[], n: number): RecordBatch {
  const children = schema.fields.map((f, j) =>
    gather(f.type, sels.map((s) => ({ data: s.batch.data.children[j]!, idx: s.idx, start: s.start, count: s.count }))),
  );
  return makeBatch(schema, children, n);
}

function getBit(bits: Uint8Array, i: number): number {
  return (bits[i >> 3]! >> (i & 7)) & 1;
}

/** Copy the selected rows of `sels` (same type) into one compact Data of `type`. */
function gather(type: DataType, sels: Sel[]): Data {
  let n = 0;
  for (const s of sels) n += s.count;
  // Validity first: only when some source has nulls.
  let bitmap: Uint8Array = EMPTY;
  let nullCount = 0;
  if (type.typeId !== Type.Null && type.typeId !== Type.Union && sels.some((s) => s.data.nullCount > 0)) {
    bitmap = new Uint8Array((n + 7) >> 3);
    let pos = 0;
    for (const { data, idx, start, count } of sels) {
      const src = data.nullCount > 0 ? data.nullBitmap : undefined;
      for (let k = 0; k < count; k++, pos++) {
        const r = idx ? idx[k]! : start + k;
        if (!src || getBit(src, data.offset + r)) bitmap[pos >> 3]! |= 1 << (pos & 7);
        else nullCount++;
      }
    }
  }
  const children: Field[] = type.children ?? [];
  switch (type.typeId) {
    case Type.Null:
      return new Data(type, 0, n, n);
    case Type.Bool: {
      const bits = new Uint8Array((n + 7) >> 3);
      let pos = 0;
      for (const { data, idx, start, count } of sels) {
        const src = data.values as Uint8Array;
        for (let k = 0; k < count; k++, pos++) {
          if (getBit(src, data.offset + (idx ? idx[k]! : start + k))) bits[pos >> 3]! |= 1 << (pos & 7);
        }
      }
      return new Data(type, 0, n, nullCount, [undefined, bits, bitmap]);
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary: {
      const out = gatherVarWidth(type, sels, n);
      return new Data(type, 0, n, nullCount, [out.valueOffsets, out.values, bitmap]);
    }
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const large = type.typeId === Type.LargeList;
      const offsets = large ? new BigInt64Array(n + 1) : new Int32Array(n + 1);
      const childSels: Sel[] = [];
      let pos = 0;
      let total = 0;
      for (const { data, idx, start, count } of sels) {
        const so = data.valueOffsets as unknown as AnyArray;
        if (!idx) {
          const a = Number(so[start]);
          childSels.push({ data: data.children[0]!, idx: null, start: a, count: Number(so[start + count]) - a });
        }
        const childIdx: number[] = [];
        for (let k = 0; k < count; k++) {
          const r = idx ? idx[k]! : start + k;
          const a = Number(so[r]);
          const b = Number(so[r + 1]);
          if (idx) for (let c = a; c < b; c++) childIdx.push(c);
          total += b - a;
          offsets[++pos] = large ? BigInt(total) : total;
        }
        if (idx) childSels.push({ data: data.children[0]!, idx: childIdx, start: 0, count: childIdx.length });
      }
      return new Data(type, 0, n, nullCount, [offsets, undefined, bitmap], [gather(children[0]!.type, childSels)]);
    }
    case Type.FixedSizeList: {
      const size = (type as unknown as { listSize: number }).listSize;
      const childSels = sels.map(({ data, idx, start, count }): Sel => {
        if (!idx) return { data: data.children[0]!, idx: null, start: start * size, count: count * size };
        const childIdx = new Int32Array(count * size);
        for (let k = 0; k < count; k++) for (let c = 0; c < size; c++) childIdx[k * size + c] = idx[k]! * size + c;
        return { data: data.children[0]!, idx: childIdx, start: 0, count: childIdx.length };
      });
      return new Data(type, 0, n, nullCount, [undefined, undefined, bitmap], [gather(children[0]!.type, childSels)]);
    }
    case Type.Struct:
      return new Data(
        type,
        0,
        n,
        nullCount,
        [undefined, undefined, bitmap],
        children.map((c, j) => gather(c.type, sels.map((s) => ({ ...s, data: s.data.children[j]! })))),
      );
    case Type.Union:
    case Type.Utf8View:
    case Type.BinaryView:
    case Type.Dictionary:
      return gatherByBuilder(type, sels);
    default:
      return new Data(type, 0, n, nullCount, [undefined, gatherFixed(type, sels, n) as never, bitmap]);
  }
}

/** Fixed-width values (stride-aware: Decimal, FixedSizeBinary, Interval). */
function gatherFixed(type: DataType, sels: Sel[], n: number): AnyArray {
  const stride = new Data(type, 0, 0).stride;
  const out = new (type.ArrayType as ArrayCtor)(n * stride);
  let pos = 0;
  for (const { data, idx, start, count } of sels) {
    const src = data.values as unknown as AnyArray;
    if (!idx) {
      out.set(src.subarray(start * stride, (start + count) * stride), pos * stride);
    } else if (stride === 1) {
      for (let k = 0; k < count; k++) out[pos + k] = src[idx[k]!]!;
    } else {
      for (let k = 0; k < count; k++) out.set(src.subarray(idx[k]! * stride, (idx[k]! + 1) * stride), (pos + k) * stride);
    }
    pos += count;
  }
  return out;
}

/** Offsets + bytes of variable-width rows; a -1 index is an empty (null) row. */
function gatherVarWidth(type: DataType, sels: Sel[], n: number): { valueOffsets: Int32Array | BigInt64Array; values: Uint8Array } {
  let total = 0;
  for (const { data, idx, start, count } of sels) {
    const so = data.valueOffsets as unknown as AnyArray;
    if (!idx) {
      total += Number(so[start + count]) - Number(so[start]);
    } else {
      for (let k = 0; k < count; k++) {
        const r = idx[k]!;
        if (r >= 0) total += Number(so[r + 1]) - Number(so[r]);
      }
    }
  }
  const large = type.typeId === Type.LargeUtf8 || type.typeId === Type.LargeBinary;
  if (!large && total > INT32_MAX_BYTES) throw invalid(`more than 2 GiB of ${String(type)} data in one batch`);
  const offsets = new Float64Array(n + 1);
  const values = new Uint8Array(total);
  let pos = 0;
  let row = 0;
  for (const { data, idx, start, count } of sels) {
    const so = data.valueOffsets as unknown as AnyArray;
    const src = data.values as Uint8Array;
    if (!idx) {
      const base = Number(so[start]);
      values.set(src.subarray(base, Number(so[start + count])), pos);
      for (let k = 1; k <= count; k++) offsets[row + k] = pos + Number(so[start + k]) - base;
      pos = offsets[row + count]!;
    } else {
      for (let k = 0; k < count; k++) {
        const r = idx[k]!;
        if (r >= 0) {
          const a = Number(so[r]);
          const b = Number(so[r + 1]);
          values.set(src.subarray(a, b), pos);
          pos += b - a;
        }
        offsets[row + k + 1] = pos;
      }
    }
    row += count;
  }
  const valueOffsets = large ? BigInt64Array.from(offsets, (o) => BigInt(o)) : new Int32Array(offsets);
  return { valueOffsets, values };
}

/** Last resort: values through apache-arrow's Vector getter and builder. */
function gatherByBuilder(type: DataType, sels: Sel[]): Data {
  const builder = makeBuilder({ type, nullValues: [null, undefined] });
  for (const { data, idx, start, count } of sels) {
    const v = makeVector(data);
    for (let k = 0; k < count; k++) builder.append(v.get(idx ? idx[k]! : start + k));
  }
  return builder.finish().flush();
}

// ---------------------------------------------------------------------------------------------
// Projection

const projections = new WeakMap<Schema, Map<string, Schema>>();

/**
 * Keep `columns` (all when `undefined`) in the given order, without `_tombstone` when
 * `dropTombstone`, else with it appended last if the batch has it. Shares column data; the
 * projected schema object is cached per (schema, columns), so projections of batches with one
 * schema share one schema. Throws `InvalidArgument` for an unknown or repeated column. Any runtime.
 */
export function projectBatch(batch: RecordBatch, columns: string[] | undefined, dropTombstone: boolean): RecordBatch {
  const fields = batch.schema.fields;
  let names: string[];
  if (columns === undefined) {
    names = fields.map((f) => f.name).filter((name) => !dropTombstone || name !== TOMBSTONE_COLUMN);
  } else {
    if (dropTombstone && columns.includes(TOMBSTONE_COLUMN)) throw invalid(`unknown column "${TOMBSTONE_COLUMN}"`);
    names = [...columns];
    const hasTombstone = fields.some((f) => f.name === TOMBSTONE_COLUMN);
    if (!dropTombstone && hasTombstone && !names.includes(TOMBSTONE_COLUMN)) names.push(TOMBSTONE_COLUMN);
  }
  if (names.length === fields.length && names.every((name, j) => fields[j]!.name === name)) return batch;
  const idx = names.map((name, k) => {
    const j = fields.findIndex((f) => f.name === name);
    if (j < 0) throw invalid(`unknown column "${name}"`);
    if (names.indexOf(name) !== k) throw invalid(`column "${name}" is listed twice`);
    return j;
  });
  let cache = projections.get(batch.schema);
  if (!cache) projections.set(batch.schema, (cache = new Map()));
  const cacheKey = JSON.stringify(names);
  let schema = cache.get(cacheKey);
  if (!schema) cache.set(cacheKey, (schema = new Schema(idx.map((j) => fields[j]!))));
  return makeBatch(
    schema,
    idx.map((j) => batch.data.children[j]!),
    batch.numRows,
  );
}

// ---------------------------------------------------------------------------------------------
// Helpers

const structTypes = new WeakMap<Schema, Struct>();

/** A RecordBatch that uses `schema` itself (RecordBatch's constructor would re-wrap it). */
function makeBatch(schema: Schema, children: Data[], length: number): RecordBatch {
  let type = structTypes.get(schema);
  if (!type) structTypes.set(schema, (type = new Struct(schema.fields)));
  const batch = new RecordBatch(schema, makeData({ type, length, nullCount: 0, children }));
  (batch as { schema: Schema }).schema = schema;
  return batch;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  if (typeof v === 'bigint') return `bigint ${String(v)}n`;
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}

function invalid(message: string): MemWalError {
  return new MemWalError('InvalidArgument', message);
}
