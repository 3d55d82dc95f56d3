// Plain rows (`put([{...}])`) -> one record batch, built column by column straight into typed
// arrays (the common types by row-columns.ts, which the page's client shares), and the scalar coercion plain rows and get() keys share (coerceScalar, expectedFor).
// The rules per column type are those of rows.ts `toBatches`. Any runtime.

import { Bool, Data, type RecordBatch, Type, makeBuilder } from 'apache-arrow';
import type { DataType, Field } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { StoreSchema } from './schema.js';
import { makeBatch, type ArrayCtor } from './select.js';
import { buildColumnBuffers, builtHere, type ColumnFaults, EMPTY } from './row-columns.js';

/** A plain row: column name -> value. */
export type Row = Record<string, unknown>;

export { EMPTY };

// ---------------------------------------------------------------------------------------------
// Plain rows -> one batch, column by column into typed arrays

export function rowsToBatch(rows: Row[], storeSchema: StoreSchema, what: string): RecordBatch {
  const n = rows.length;
  const known: Record<string, true> = Object.create(null) as Record<string, true>;
  for (const f of storeSchema.base.fields) if (!storeSchema.hidden?.has(f.name)) known[f.name] = true;
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
  const t = field.type;
  if (builtHere(t)) {
    const c = buildColumnBuffers(rows, field, new FieldFaults(field, what));
    return new Data(t, 0, rows.length, c.nullCount, [c.valueOffsets, c.values, c.nullBitmap] as never);
  }
  switch (t.typeId) {
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

/** The errors of a column built by row-columns.ts: InvalidArgument naming the column and row. */
class FieldFaults implements ColumnFaults {
  constructor(
    private readonly field: Field,
    private readonly what: string,
  ) {}
  bad(i: number, v: unknown): MemWalError {
    return invalid(`${this.what}: row ${i}: column "${this.field.name}": expected ${expectedFor(this.field.type)}, got ${describe(v)}`);
  }
  missing(i: number): MemWalError {
    return missingValue(this.what, i, this.field);
  }
  tooBig(): MemWalError {
    return invalid(`${this.what}: column "${this.field.name}" holds more than 2 GiB in one put; split the put`);
  }
}

function missingValue(what: string, i: number, field: Field): MemWalError {
  return invalid(`${what}: row ${i}: column "${field.name}" is non-nullable but has no value`);
}

/** Fixed-width columns through {@link coerceScalar}: dates, times, durations, FixedSizeBinary. */
function buildFlat(rows: Row[], field: Field, what: string): Data {
  const n = rows.length;
  const name = field.name;
  const type = field.type;
  const stride = type.typeId === Type.FixedSizeBinary ? (type as unknown as { byteWidth: number }).byteWidth : 1;
  const values = new (type.ArrayType as ArrayCtor)(n * stride);
  let bitmap: Uint8Array | undefined;
  let nullCount = 0;
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (v === null || v === undefined) {
      if (!field.nullable) throw missingValue(what, i, field);
      bitmap ??= new Uint8Array((n + 7) >> 3).fill(0xff);
      bitmap[i >> 3]! &= ~(1 << (i & 7));
      nullCount++;
      continue;
    }
    const raw = coerceScalar(type, v);
    if (raw === undefined) throw invalid(`${what}: row ${i}: column "${name}": expected ${expectedFor(type)}, got ${describe(v)}`);
    if (stride === 1) values[i] = raw as number | bigint;
    else values.set(raw as Uint8Array, i * stride);
  }
  return new Data(type, 0, n, nullCount, [undefined, values, bitmap ?? EMPTY]);
}

/**
 * Null and undefined as nulls on every builder of `b`'s tree. apache-arrow compiles its
 * `nullValues` option with `new Function`, which workerd (and a page whose CSP lacks
 * 'unsafe-eval') refuses: every put of a List or Struct column failed there.
 */
function nullsAsNull<B>(b: B): B {
  const t = b as unknown as { _isValid: (x: unknown) => boolean; children?: unknown[]; indices?: unknown };
  t._isValid = (x) => x !== null && x !== undefined;
  for (const c of t.children ?? []) nullsAsNull(c);
  if (t.indices) nullsAsNull(t.indices);
  return b;
}

/** Types without a hand-written builder: apache-arrow's builder with the declared type. */
function buildFallback(rows: Row[], field: Field, what: string): Data {
  const builder = nullsAsNull(makeBuilder({ type: field.type }));
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i]![field.name];
    if ((v === null || v === undefined) && !field.nullable) throw missingValue(what, i, field);
    const fault = nestedFault(field.type, v, `column "${field.name}"`);
    if (fault) throw invalid(`${what}: row ${i}: ${fault}`);
    try {
      builder.append(v);
    } catch (e) {
      throw invalid(`${what}: row ${i}: column "${field.name}" (${String(field.type)}): ${describe(v)} rejected: ${String(e)}`);
    }
  }
  const data = builder.finish().flush();
  return data.type === field.type ? data : data.clone(field.type);
}

/**
 * Why `v` is not a value of `type` in a column apache-arrow's builder builds (a List, a Struct),
 * or undefined: a list is an array (or a typed array), a struct an object, and each scalar inside
 * one what {@link coerceScalar} takes, else the builder would coerce it ('abc' as a list of Int32
 * stores [0, 0, 0]). Null/undefined pass (the builder checks them); other types are the builder's.
 */
function nestedFault(type: DataType, v: unknown, path: string): string | undefined {
  if (v === null || v === undefined) return undefined;
  switch (type.typeId) {
    case Type.List:
    case Type.LargeList:
    case Type.FixedSizeList: {
      if (!Array.isArray(v) && !(ArrayBuffer.isView(v) && !(v instanceof DataView))) {
        return `${path}: expected an array (${String(type)}), got ${describe(v)}`;
      }
      const items = v as ArrayLike<unknown>;
      const size = (type as unknown as { listSize?: number }).listSize;
      if (type.typeId === Type.FixedSizeList && items.length !== size) {
        return `${path}: expected ${size} items (${String(type)}), got ${items.length}`; // the builder would shift every later row
      }
      const child = type.children[0]!.type as DataType;
      for (let i = 0; i < items.length; i++) {
        const fault = nestedFault(child, items[i], `${path}[${i}]`);
        if (fault) return fault;
      }
      return undefined;
    }
    case Type.Struct: {
      if (typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v))
        return `${path}: expected an object (${String(type)}), got ${describe(v)}`;
      for (const f of type.children as Field[]) {
        const fault = nestedFault(f.type, (v as Record<string, unknown>)[f.name], `${path}.${f.name}`);
        if (fault) return fault;
      }
      return undefined;
    }
    case Type.Int:
    case Type.Float:
    case Type.Bool:
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
    case Type.FixedSizeBinary:
    case Type.Date:
    case Type.Timestamp:
    case Type.Time:
    case Type.Duration:
      return coerceScalar(type, v) === undefined ? `${path}: expected ${expectedFor(type)}, got ${describe(v)}` : undefined;
    default:
      return undefined;
  }
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
  const known = storeSchema.base.fields
    .filter((f) => !storeSchema.hidden?.has(f.name))
    .map((f) => f.name)
    .join(', ');
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
