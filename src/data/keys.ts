// Order-preserving primary-key encoding. A key is a JS string whose char codes are bytes
// 0..255, so JS `<` on two keys is unsigned byte-wise comparison of the encodings.

import { Type } from 'apache-arrow';
import type { Data, DataType, Field, RecordBatch } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import { coerceScalar, expectedFor } from './plain-rows.js';
import type { StoreSchema } from './schema.js';

/**
 * A primary key as memwal indexes it. For a single integer-like key column (Int*, Uint*, Date,
 * Time, Timestamp, Duration) whose value is a safe integer ({@link numberKey}): that number, so
 * that indexing needs no per-row string. Otherwise: the order-preserving encoding as a string. Each key value
 * has exactly one form, so `===` on keys is key equality. {@link keyString} gives the encoding
 * of either form (for ordering and key bounds).
 */
export type Key = string | number;

/**
 * The number form of a single integer-like key column's value `v`, or undefined when the value
 * takes the string form: exactly the safe integers (|v| ≤ 2^53 − 1; so not ±2^53), with -0 as 0.
 * `v` may be rounded only beyond 2^53 (rounding never brings a value into the safe range). The
 * one rule the batch encoder and `encodeKey` both follow: each value has one form.
 */
export function numberKey(v: number): number | undefined {
  return Number.isSafeInteger(v) ? v + 0 : undefined; // -0 + 0 is 0
}

/**
 * One key per row of a batch in the store's base or internal schema (key columns at
 * `storeSchema.keyIndices`, no nulls in them, as `toBatches`/`tombstoneBatch` guarantee). A
 * `Float64Array` when every key of the batch is a number.
 */
export type KeyEncoder = (batch: RecordBatch) => ArrayLike<Key>;

/**
 * How one key column is encoded (columns concatenated in `primaryKey` order):
 * - `int`: signed integers as big-endian two's complement of their width with the sign bit
 *   flipped; unsigned as big-endian. Int64/Uint64 are 8 bytes. Temporal types are their stored
 *   integer: Date<Day> and Time32 as signed 4 bytes; Date<Millisecond>, Timestamp, Time64 and
 *   Duration as signed 8 bytes.
 * - `bool`: one byte, 0 or 1.
 * - `var` (Utf8, LargeUtf8 as UTF-8; Binary, LargeBinary as bytes): each 0x00 written as
 *   0x00 0xFF, then the terminator 0x00 0x01. So "a" < "a\0" < "ab" and a shorter value sorts
 *   before its extensions even when more columns follow.
 * - `fixed` (FixedSizeBinary): the bytes as they are (equal widths need no terminator).
 */
type ColumnKind = { kind: 'int'; width: number; signed: boolean } | { kind: 'bool' } | { kind: 'var' } | { kind: 'fixed'; width: number };

function kindOf(type: DataType): ColumnKind {
  const t = type as DataType & { bitWidth: number; isSigned: boolean; unit: number; byteWidth: number };
  switch (t.typeId) {
    case Type.Int:
      return { kind: 'int', width: t.bitWidth / 8, signed: t.isSigned };
    case Type.Date:
      return { kind: 'int', width: t.unit === 0 ? 4 : 8, signed: true }; // 0: DateUnit.DAY
    case Type.Time:
      return { kind: 'int', width: t.bitWidth / 8, signed: true };
    case Type.Timestamp:
    case Type.Duration:
      return { kind: 'int', width: 8, signed: true };
    case Type.Bool:
      return { kind: 'bool' };
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
      return { kind: 'var' };
    case Type.FixedSizeBinary:
      return { kind: 'fixed', width: t.byteWidth };
    default:
      throw new MemWalError('InvalidArgument', `type ${String(type)} cannot be a primary key`);
  }
}

/** A growable byte buffer that keys are written into. */
class KeyWriter {
  buf: Uint8Array;
  pos = 0;

  constructor(capacity = 64) {
    this.buf = new Uint8Array(Math.max(64, capacity));
  }

  ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + extra));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  /** A 32-bit word, big-endian. */
  u32(x: number): void {
    this.ensure(4);
    const b = this.buf;
    const p = this.pos;
    b[p] = x >>> 24;
    b[p + 1] = x >>> 16;
    b[p + 2] = x >>> 8;
    b[p + 3] = x;
    this.pos = p + 4;
  }

  /** An integer of `width` 1, 2 or 4 bytes (already unsigned, sign flip applied), big-endian. */
  small(u: number, width: number): void {
    this.ensure(width);
    for (let s = (width - 1) * 8; s >= 0; s -= 8) this.buf[this.pos++] = u >>> s;
  }

  /** Escaped variable-width bytes plus the 0x00 0x01 terminator. */
  escaped(src: Uint8Array, a: number, b: number): void {
    this.ensure(2 * (b - a) + 2);
    const buf = this.buf;
    let p = this.pos;
    for (let i = a; i < b; i++) {
      const c = src[i]!;
      buf[p++] = c;
      if (c === 0) buf[p++] = 0xff;
    }
    buf[p++] = 0;
    buf[p++] = 1;
    this.pos = p;
  }

  raw(src: Uint8Array): void {
    this.ensure(src.length);
    this.buf.set(src, this.pos);
    this.pos += src.length;
  }

  take(): string {
    const key = bytesToKey(this.buf, this.pos);
    this.pos = 0;
    return key;
  }
}

/** Bytes -> a string with one char (code 0..255) per byte; chunked to stay under argument limits. */
function bytesToKey(buf: Uint8Array, len: number): string {
  if (len <= 8192) return String.fromCharCode.apply(null, buf.subarray(0, len) as unknown as number[]);
  const parts: string[] = [];
  for (let i = 0; i < len; i += 8192) {
    parts.push(String.fromCharCode.apply(null, buf.subarray(i, Math.min(len, i + 8192)) as unknown as number[]));
  }
  return parts.join('');
}

/** Appends the key bytes of row `r` of one column to a writer. */
type ColumnWriter = (w: KeyWriter, r: number) => void;

function columnWriter(data: Data, kind: ColumnKind): ColumnWriter {
  switch (kind.kind) {
    case 'int': {
      if (kind.width === 8) {
        // Read the two 32-bit halves (little-endian platform, as apache-arrow assumes).
        const v = data.values as BigInt64Array;
        const words = new Uint32Array(v.buffer, v.byteOffset, v.length * 2);
        const flip = kind.signed ? 0x80000000 : 0;
        return (w, r) => {
          w.u32((words[2 * r + 1]! ^ flip) >>> 0);
          w.u32(words[2 * r]!);
        };
      }
      const v = data.values as Int32Array;
      const width = kind.width;
      const bias = kind.signed ? 2 ** (width * 8 - 1) : 0;
      return (w, r) => w.small(v[r]! + bias, width);
    }
    case 'bool': {
      const bits = data.values as Uint8Array;
      const offset = data.offset;
      return (w, r) => w.small((bits[(offset + r) >> 3]! >> ((offset + r) & 7)) & 1, 1);
    }
    case 'var': {
      const offsets = data.valueOffsets as Int32Array | BigInt64Array;
      const bytes = data.values as Uint8Array;
      if (offsets instanceof Int32Array) return (w, r) => w.escaped(bytes, offsets[r]!, offsets[r + 1]!);
      return (w, r) => w.escaped(bytes, Number(offsets[r]!), Number(offsets[r + 1]!));
    }
    case 'fixed': {
      const bytes = data.values as Uint8Array;
      const width = kind.width;
      return (w, r) => w.raw(bytes.subarray(r * width, (r + 1) * width));
    }
  }
}

/**
 * An encoder of `storeSchema`'s primary key for whole batches (see {@link ColumnKind} for the byte
 * format). Single Int64-like keys take a fast path. Throws `NotSupported` when the store has
 * no primary key. Any runtime.
 */
export function makeKeyEncoder(storeSchema: StoreSchema): KeyEncoder {
  if (storeSchema.keyIndices.length === 0) throw new MemWalError('NotSupported', 'this store has no primary key');
  const kinds = storeSchema.keyIndices.map((i) => kindOf(storeSchema.base.fields[i]!.type));
  const first = kinds[0]!;
  if (kinds.length === 1 && first.kind === 'int') {
    const col = storeSchema.keyIndices[0]!;
    if (first.width < 8) {
      // Int8..32, Uint8..32, Date<Day>, Time32: always safe integers. Decoded IPC buffers are
      // padded to 8 bytes, so `values` may hold more elements than the batch has rows.
      return (batch) => Float64Array.from((batch.data.children[col]!.values as Int32Array).subarray(0, batch.numRows));
    }
    const signed = first.signed;
    const flip = signed ? 0x80000000 : 0;
    return (batch) => {
      const v = batch.data.children[col]!.values as BigInt64Array;
      const n = batch.numRows;
      const words = new Uint32Array(v.buffer, v.byteOffset, n * 2);
      const nums = new Float64Array(n);
      let mixed: Key[] | undefined;
      for (let r = 0; r < n; r++) {
        const hiRaw = words[2 * r + 1]!;
        const lo = words[2 * r]!;
        const hi = signed ? hiRaw | 0 : hiRaw;
        const value = numberKey(hi * 4294967296 + lo);
        if (value !== undefined) {
          if (mixed) mixed[r] = value;
          else nums[r] = value;
        } else {
          mixed ??= Array.from(nums.subarray(0, r));
          const h = (hiRaw ^ flip) >>> 0;
          mixed[r] = String.fromCharCode(
            h >>> 24,
            (h >>> 16) & 255,
            (h >>> 8) & 255,
            h & 255,
            lo >>> 24,
            (lo >>> 16) & 255,
            (lo >>> 8) & 255,
            lo & 255,
          );
        }
      }
      return mixed ?? nums;
    };
  }
  return (batch) => {
    // All keys go into one buffer that becomes one string; each key is a substring of it (one
    // string conversion per batch instead of one per row: several times faster).
    const writers = storeSchema.keyIndices.map((i, k) => columnWriter(batch.data.children[i]!, kinds[k]!));
    const n = batch.numRows;
    const w = new KeyWriter(n * 16);
    const ends = new Float64Array(n);
    for (let r = 0; r < n; r++) {
      for (const write of writers) write(w, r);
      ends[r] = w.pos;
    }
    const all = w.take();
    const keys = new Array<string>(n);
    let start = 0;
    for (let r = 0; r < n; r++) {
      keys[r] = all.substring(start, ends[r]!);
      start = ends[r]!;
    }
    return keys;
  };
}

/**
 * Compares the key of one row of a batch with an encoded key ({@link keyString} form): negative,
 * zero or positive as the row's key sorts before, equal to or after it. For searching a sorted
 * batch without encoding every key: a binary search encodes about log2(rows) keys, into a reused
 * buffer, and builds no string.
 */
export type RowKeyComparer = (batch: RecordBatch) => (row: number, probe: string) => number;

/** A {@link RowKeyComparer} of `storeSchema`'s primary key. Throws `NotSupported` without one. Any runtime. */
export function makeRowKeyComparer(storeSchema: StoreSchema): RowKeyComparer {
  if (storeSchema.keyIndices.length === 0) throw new MemWalError('NotSupported', 'this store has no primary key');
  const kinds = storeSchema.keyIndices.map((i) => kindOf(storeSchema.base.fields[i]!.type));
  const w = new KeyWriter();
  return (batch) => {
    const writers = storeSchema.keyIndices.map((i, k) => columnWriter(batch.data.children[i]!, kinds[k]!));
    return (row, probe) => {
      w.pos = 0;
      for (const write of writers) write(w, row);
      const buf = w.buf;
      const n = Math.min(w.pos, probe.length);
      for (let i = 0; i < n; i++) {
        const d = buf[i]! - probe.charCodeAt(i);
        if (d !== 0) return d;
      }
      return w.pos - probe.length;
    };
  };
}

const utf8 = new TextEncoder();

/**
 * The encoded key of a `get()` argument: an object with exactly the primary-key columns, values
 * as `toBatches` accepts them for plain rows (Int64 as bigint or safe-integer number, ...).
 * Equals what {@link makeKeyEncoder} yields for the same row. Throws `NotSupported` without a
 * primary key; `InvalidArgument` for a missing key column, a value of the wrong kind, or any
 * non-key field. Any runtime.
 */
export function encodeKey(key: Record<string, unknown>, storeSchema: StoreSchema): Key {
  if (storeSchema.keyIndices.length === 0) throw new MemWalError('NotSupported', 'this store has no primary key');
  if (typeof key !== 'object' || key === null || Array.isArray(key)) {
    throw new MemWalError('InvalidArgument', 'a key must be an object with the primary key columns');
  }
  for (const name of Object.keys(key)) {
    if (!storeSchema.primaryKey.includes(name)) {
      throw new MemWalError('InvalidArgument', `"${name}" is not a primary key column (primary key: ${storeSchema.primaryKey.join(', ')})`);
    }
  }
  const w = new KeyWriter();
  for (const i of storeSchema.keyIndices) {
    const field: Field = storeSchema.base.fields[i]!;
    const v = key[field.name];
    if (v === undefined || v === null) throw new MemWalError('InvalidArgument', `key column "${field.name}" is missing`);
    const raw = coerceScalar(field.type, v);
    if (raw === undefined) {
      throw new MemWalError('InvalidArgument', `key column "${field.name}": expected ${expectedFor(field.type)}, got ${typeof v}`);
    }
    const kind = kindOf(field.type);
    if (storeSchema.keyIndices.length === 1 && kind.kind === 'int') {
      const n = numberKey(Number(raw));
      if (n !== undefined) return n; // the number form, as makeKeyEncoder gives it
    }
    writeScalar(w, kind, raw);
  }
  return w.take();
}

/**
 * The order-preserving encoding of a key in either form (see {@link Key}): comparing two
 * results as strings compares the keys. Any runtime.
 */
export function keyString(key: Key, storeSchema: StoreSchema): string {
  if (typeof key === 'string') return key;
  const w = new KeyWriter(8);
  const kind = kindOf(storeSchema.base.fields[storeSchema.keyIndices[0]!]!.type);
  writeScalar(w, kind, kind.kind === 'int' && kind.width === 8 ? BigInt(key) : key);
  return w.take();
}

function writeScalar(w: KeyWriter, kind: ColumnKind, raw: number | bigint | string | boolean | Uint8Array): void {
  switch (kind.kind) {
    case 'int':
      if (kind.width === 8) {
        let u = BigInt.asUintN(64, raw as bigint);
        if (kind.signed) u ^= 0x8000000000000000n;
        w.u32(Number(u >> 32n));
        w.u32(Number(u & 0xffffffffn));
      } else {
        w.small((raw as number) + (kind.signed ? 2 ** (kind.width * 8 - 1) : 0), kind.width);
      }
      return;
    case 'bool':
      w.small(raw ? 1 : 0, 1);
      return;
    case 'var': {
      const bytes = typeof raw === 'string' ? utf8.encode(raw) : (raw as Uint8Array);
      w.escaped(bytes, 0, bytes.length);
      return;
    }
    case 'fixed':
      w.raw(raw as Uint8Array);
      return;
  }
}

/** Lower-case hex of a key's bytes (for the manifest's key bounds). */
export function keyToHex(key: string): string {
  let s = '';
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    s += (c < 16 ? '0' : '') + c.toString(16);
  }
  return s;
}

/** Inverse of {@link keyToHex}. Throws `InvalidArgument` for an odd length or a non-hex digit. */
export function keyFromHex(hex: string): string {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new MemWalError('InvalidArgument', `not a hex key: ${JSON.stringify(hex.slice(0, 40))}`);
  }
  const codes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < codes.length; i++) codes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytesToKey(codes, codes.length);
}

/**
 * Key order (the order of their encodings): negative, zero or positive like `a - b`. Numbers
 * compare as numbers (their encodings sort the same way), strings as strings (char codes are
 * bytes), and the rare mix (an Int64 key beyond 2^53 next to a safe one) through `keyString`.
 * Any runtime.
 */
export function compareKeys(a: Key, b: Key, storeSchema: StoreSchema): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = typeof a === 'string' ? a : keyString(a, storeSchema);
  const y = typeof b === 'string' ? b : keyString(b, storeSchema);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The bytes of a key string (one byte per char), e.g. to store it. */
export function keyBytes(key: string): Uint8Array {
  const out = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) out[i] = key.charCodeAt(i);
  return out;
}

/** A key string from its bytes (the inverse of {@link keyBytes}). */
export function keyFromBytes(bytes: Uint8Array): string {
  return bytesToKey(bytes, bytes.length);
}

/**
 * A key in its one {@link Key} form from its encoding (the inverse of {@link keyString}): the
 * number form for a single integer-like key column whose value is a safe integer, else the
 * encoding itself. For keys stored encoded (a table file's index sections). Any runtime.
 */
export function keyFromString(s: string, storeSchema: StoreSchema): Key {
  if (storeSchema.keyIndices.length !== 1) return s;
  const kind = kindOf(storeSchema.base.fields[storeSchema.keyIndices[0]!]!.type);
  if (kind.kind !== 'int' || s.length !== kind.width) return s;
  let u = 0n;
  for (let i = 0; i < s.length; i++) u = (u << 8n) | BigInt(s.charCodeAt(i));
  const bits = BigInt(kind.width * 8);
  const v = kind.signed ? u - (1n << (bits - 1n)) : u;
  const n = numberKey(Number(v));
  return n !== undefined && BigInt(n) === v ? n : s;
}
