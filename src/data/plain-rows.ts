// Plain rows (`put([{...}])`) -> one record batch, built column by column straight into typed
// arrays, and the scalar coercion plain rows and get() keys share (coerceScalar, expectedFor).
// The rules per column type are those of rows.ts `toBatches`. Any runtime.

import { Bool, Data, type RecordBatch, Type, makeBuilder } from 'apache-arrow';
import type { DataType, Field } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { StoreSchema } from './schema.js';
import { makeBatch, type ArrayCtor } from './select.js';

/** A plain row: column name -> value. */
export type Row = Record<string, unknown>;

export const EMPTY = new Uint8Array(0);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const INT32_MAX_BYTES = 2147483647;
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Plain rows -> one batch, column by column into typed arrays

export function rowsToBatch(rows: Row[], storeSchema: StoreSchema, what: string): RecordBatch {
  const n = rows.length;
  const known: Record<string, true> = Object.create(null) as Record<string, true>;
  for (const f of storeSchema.base.fields) known[f.name] = true;
  for (let i = 0; i < n; i++) {
    const row = rows[i];
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw invalid(`${what}: row ${i} is not an object (got ${describe(row)})`);
    }
    for (const k in row) {
      if (known[k] !== true && Object.hasOwn(row, k)) throw unknownColumn(k, storeSchema, what);
    }
  }
  const children = storeSchema.base.fields.map((f) => buildColumn(rows, f, what));
  if (storeSchema.hasTombstone) children.push(boolData(n, false));
  return makeBatch(storeSchema.internal, children, n);
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

/** The error of a column the store does not have. */
export function unknownColumn(name: string, storeSchema: StoreSchema, what: string): MemWalError {
  const known = storeSchema.base.fields.map((f) => f.name).join(', ');
  return invalid(`${what}: unknown column "${name}" (${what === 'delete' ? 'primary key columns' : 'columns'}: ${known})`);
}

/** A Bool column of `n` values, all `value`. */
export function boolData(n: number, value: boolean): Data {
  const bits = new Uint8Array((n + 7) >> 3);
  if (value) bits.fill(0xff);
  return new Data(new Bool(), 0, n, 0, [undefined, bits, EMPTY]);
}

// ---------------------------------------------------------------------------------------------
// Helpers

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  if (typeof v === 'bigint') return `bigint ${String(v)}n`;
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}

export function invalid(message: string): MemWalError {
  return new MemWalError('InvalidArgument', message);
}
