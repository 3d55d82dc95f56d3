// Put input -> record batches in the store's internal schema (validated, reordered, dictionary
// strings decoded, plain rows built straight into typed arrays), tombstone batches for deletes,
// and reading one row (rowObject). Row selection and projection live in select.ts.

import { Bool, Data, RecordBatch, Schema, Table, Type, makeBuilder, makeVector } from 'apache-arrow';
import type { DataType, Field } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import { TOMBSTONE_COLUMN, typesEqual } from './schema.js';
import type { StoreSchema } from './schema.js';
import { allRows, compactIfSparse, gather, gatherBatch, gatherVarWidth, makeBatch, type AnyArray, type ArrayCtor } from './select.js';

export { compactIfSparse, concatRows, projectBatch } from './select.js';

type Row = Record<string, unknown>;

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
 * of the wrong kind or out of range. Input without rows gives no batches (`[]`): a no-op put.
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
    chunks.length === 1
      ? chunks[0]!
      : gather(
          target,
          chunks.map((d) => ({ data: d, idx: null, start: 0, count: d.length })),
        );
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
      if (known[k] !== true && Object.hasOwn(row, k)) throw unknownColumn(k, ss, what);
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
 * non-key column, a missing key column or a bad value (`NotSupported` too for a store with a
 * Union column, which has no null or default to fill). Undefined when there are no keys (a
 * no-op delete). Any runtime.
 */
export function tombstoneBatch(keys: Table | RecordBatch | Row[], ss: StoreSchema): RecordBatch | undefined {
  if (!ss.hasTombstone) throw new MemWalError('NotSupported', 'delete needs a primary key; this store has none');
  let kss = keySchemas.get(ss);
  if (!kss) {
    const base = new Schema(ss.keyIndices.map((i) => ss.base.fields[i]!));
    kss = { base, internal: base, primaryKey: [], keyIndices: [], hasTombstone: false };
    keySchemas.set(ss, kss);
  }
  const parts = convertInput(keys, kss, 'delete');
  if (parts.length === 0) return undefined;
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
/** `n` nulls of `type` (a column added by schema evolution, for rows written before it). */
export function nullData(type: DataType, n: number): Data {
  return zeroData(type, n, true);
}

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
      return new Data(
        type,
        0,
        n,
        nulls,
        [undefined, undefined, bitmap],
        children.map((c) => zeroData(c.type, n, c.nullable)),
      );
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
// Helpers

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
