// The column builders of plain rows for the common types (Int, Float32/64, Bool, Utf8, Binary
// and their Large forms): rows -> a column's buffers, with no Arrow class, so the page's client
// builds a put's columns with the very code the engine uses (plain-rows.ts wraps them in Arrow
// `Data`; rpc/client-rows.ts sends them as a WireArrow). A value that does not fit goes to the
// caller's `faults`, which throw. Any runtime.

/** apache-arrow's `Type` ids of the types built here (data/row-columns.test.ts checks them). */
export const TYPE_ID = { Int: 2, Float: 3, Binary: 4, Utf8: 5, Bool: 6, LargeBinary: 19, LargeUtf8: 20 } as const;

/** A column as the builders need it: an Arrow Field's name, nullability and type parameters. */
export interface ColumnSpec {
  name: string;
  nullable: boolean;
  type: { typeId: number; bitWidth?: number; isSigned?: boolean; precision?: number };
}

/** What a builder does with a value that does not fit; each must throw. */
export interface ColumnFaults {
  /** Row `i` holds `v`, which the column's type does not accept. */
  bad(i: number, v: unknown): Error;
  /** Row `i` has no value (null, undefined or absent) in a non-nullable column. */
  missing(i: number): Error;
  /** A variable-width column passes 2 GiB. */
  tooBig(): Error;
}

/** A built column: apache-arrow's buffers (value offsets, values, validity) and its null count. */
export interface ColumnBuffers {
  valueOffsets: Int32Array | BigInt64Array | undefined;
  values: ArrayBufferView;
  /** Empty when the column has no null. */
  nullBitmap: Uint8Array;
  nullCount: number;
}

export const EMPTY = new Uint8Array(0);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const INT32_MAX_BYTES = 2147483647;
const encoder = new TextEncoder();

/** Can {@link buildColumnBuffers} build a column of this type? (Float16 cannot: precision 0.) */
export function builtHere(type: ColumnSpec['type']): boolean {
  switch (type.typeId) {
    case TYPE_ID.Int:
    case TYPE_ID.Bool:
    case TYPE_ID.Utf8:
    case TYPE_ID.LargeUtf8:
    case TYPE_ID.Binary:
    case TYPE_ID.LargeBinary:
      return true;
    case TYPE_ID.Float:
      return type.precision === 1 || type.precision === 2;
    default:
      return false;
  }
}

/**
 * Column `spec` of `rows` (each row read as `rows[i][spec.name]`), for a type {@link builtHere}
 * accepts. Values: Int64/Uint64 a bigint or a safe-integer number; narrower ints an integer
 * number (or bigint) in range; Float any number; Bool a boolean; Utf8 a string; Binary a
 * Uint8Array; null/undefined/absent = null. Throws what `faults` gives.
 */
export function buildColumnBuffers(rows: readonly Record<string, unknown>[], spec: ColumnSpec, faults: ColumnFaults): ColumnBuffers {
  const t = spec.type;
  switch (t.typeId) {
    case TYPE_ID.Int:
      return t.bitWidth === 64 ? buildInt64(rows, spec, faults) : buildInt(rows, spec, faults);
    case TYPE_ID.Float:
      return buildFloat(rows, spec, faults);
    case TYPE_ID.Bool:
      return buildBool(rows, spec, faults);
    default:
      return buildVarWidth(rows, spec, faults);
  }
}

/** Lazily allocated validity bitmap of a column being built. */
class Nulls {
  bitmap: Uint8Array | undefined;
  count = 0;
  constructor(
    private readonly n: number,
    private readonly nullable: boolean,
    private readonly faults: ColumnFaults,
  ) {}
  /** Row `i` has no value: null it, or throw when the column is non-nullable. */
  mark(i: number): void {
    if (!this.nullable) throw this.faults.missing(i);
    this.bitmap ??= new Uint8Array((this.n + 7) >> 3).fill(0xff);
    this.bitmap[i >> 3]! &= ~(1 << (i & 7));
    this.count++;
  }
  get buffer(): Uint8Array {
    return this.bitmap ?? EMPTY;
  }
}

/** Int64/Uint64, the hot path: safe-integer numbers are written as two 32-bit words, no BigInt. */
function buildInt64(rows: readonly Record<string, unknown>[], spec: ColumnSpec, faults: ColumnFaults): ColumnBuffers {
  const n = rows.length;
  const name = spec.name;
  const signed = spec.type.isSigned === true;
  const buf = new ArrayBuffer(n * 8);
  const words = new Int32Array(buf);
  const big = signed ? new BigInt64Array(buf) : new BigUint64Array(buf);
  const nulls = new Nulls(n, spec.nullable, faults);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v) || (!signed && v < 0)) throw faults.bad(i, v);
      if (LITTLE_ENDIAN) {
        words[2 * i] = v | 0;
        words[2 * i + 1] = Math.floor(v / 4294967296) | 0;
      } else {
        big[i] = BigInt(v);
      }
    } else if (typeof v === 'bigint') {
      if ((signed ? BigInt.asIntN(64, v) : BigInt.asUintN(64, v)) !== v) throw faults.bad(i, v);
      big[i] = v;
    } else if (v === null || v === undefined) {
      nulls.mark(i);
    } else {
      throw faults.bad(i, v);
    }
  }
  return { valueOffsets: undefined, values: big, nullBitmap: nulls.buffer, nullCount: nulls.count };
}

const INT_ARRAYS = {
  8: [Int8Array, Uint8Array],
  16: [Int16Array, Uint16Array],
  32: [Int32Array, Uint32Array],
} as const;

/** Int8..Int32 and Uint8..Uint32: an integer number, or a bigint, in the type's range. */
function buildInt(rows: readonly Record<string, unknown>[], spec: ColumnSpec, faults: ColumnFaults): ColumnBuffers {
  const n = rows.length;
  const name = spec.name;
  const bits = spec.type.bitWidth as 8 | 16 | 32;
  const signed = spec.type.isSigned === true;
  const min = signed ? -(2 ** (bits - 1)) : 0;
  const max = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
  const values = new INT_ARRAYS[bits][signed ? 0 : 1](n);
  const nulls = new Nulls(n, spec.nullable, faults);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (v === null || v === undefined) {
      nulls.mark(i);
      continue;
    }
    const x = typeof v === 'bigint' ? Number(v) : v;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x > max) throw faults.bad(i, v);
    values[i] = x;
  }
  return { valueOffsets: undefined, values, nullBitmap: nulls.buffer, nullCount: nulls.count };
}

/** Float32/Float64: any number, no conversion. */
function buildFloat(rows: readonly Record<string, unknown>[], spec: ColumnSpec, faults: ColumnFaults): ColumnBuffers {
  const n = rows.length;
  const name = spec.name;
  const values = spec.type.precision === 1 ? new Float32Array(n) : new Float64Array(n);
  const nulls = new Nulls(n, spec.nullable, faults);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (typeof v === 'number') values[i] = v;
    else if (v === null || v === undefined) nulls.mark(i);
    else throw faults.bad(i, v);
  }
  return { valueOffsets: undefined, values, nullBitmap: nulls.buffer, nullCount: nulls.count };
}

function buildBool(rows: readonly Record<string, unknown>[], spec: ColumnSpec, faults: ColumnFaults): ColumnBuffers {
  const n = rows.length;
  const name = spec.name;
  const bits = new Uint8Array((n + 7) >> 3);
  const nulls = new Nulls(n, spec.nullable, faults);
  for (let i = 0; i < n; i++) {
    const v = rows[i]![name];
    if (v === true) bits[i >> 3]! |= 1 << (i & 7);
    else if (v === null || v === undefined) nulls.mark(i);
    else if (v !== false) throw faults.bad(i, v);
  }
  return { valueOffsets: undefined, values: bits, nullBitmap: nulls.buffer, nullCount: nulls.count };
}

/** Utf8/LargeUtf8/Binary/LargeBinary: bytes into one growing buffer (ASCII strings copied by hand). */
function buildVarWidth(rows: readonly Record<string, unknown>[], spec: ColumnSpec, faults: ColumnFaults): ColumnBuffers {
  const n = rows.length;
  const name = spec.name;
  const typeId = spec.type.typeId;
  const strings = typeId === TYPE_ID.Utf8 || typeId === TYPE_ID.LargeUtf8;
  const offsets = new Int32Array(n + 1);
  let buf: Uint8Array = new Uint8Array(Math.max(1024, n * 16));
  let pos = 0;
  const nulls = new Nulls(n, spec.nullable, faults);
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
      throw faults.bad(i, v);
    }
    if (pos > INT32_MAX_BYTES) throw faults.tooBig();
    offsets[i + 1] = pos;
  }
  const values = pos < buf.length * 0.9 ? buf.slice(0, pos) : buf.subarray(0, pos);
  const large = typeId === TYPE_ID.LargeUtf8 || typeId === TYPE_ID.LargeBinary;
  const valueOffsets = large ? BigInt64Array.from(offsets, (o) => BigInt(o)) : offsets;
  return { valueOffsets, values, nullBitmap: nulls.buffer, nullCount: nulls.count };
}

function grow(buf: Uint8Array, used: number, need: number): Uint8Array {
  const next = new Uint8Array(Math.max(buf.length * 2, used + need + 1024));
  next.set(buf.subarray(0, used));
  return next;
}
