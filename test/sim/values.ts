// Column types, values and keys of the simulation: Arrow schemas built from column specs, values
// drawn with their edge cases (±2^53, Int64 and Int32 limits, -0, NaN, ±Infinity, empty and
// non-ASCII strings, NUL bytes), and an order of keys computed independently of the engine's
// encoding (numbers by value, strings by their UTF-8 bytes, composite keys column by column).

import { Binary, Bool, type DataType, Field, Float64, Int32, Int64, List, Schema, Uint64, Utf8 } from 'apache-arrow';
import { int, rng } from '../../src/testing/rng.js';

/** `list`: a list of strings (a multi-entry index's column, test/sim/queries.ts). */
export type ColType = 'int32' | 'int64' | 'uint64' | 'float64' | 'utf8' | 'bool' | 'binary' | 'list';

/**
 * One column of the store's schema. `inc` names its incarnation: a column dropped and added again
 * is a new incarnation, whose value in rows written before is null whatever the type.
 */
export interface ColumnSpec {
  name: string;
  type: ColType;
  nullable: boolean;
  inc: number;
  /** A binary column's values are this many bytes (the sizes dimension: many blocks, many segments). */
  width?: number;
}

export type KeyType = 'int64' | 'int32' | 'uint64' | 'utf8' | 'composite';
export type Value = null | number | bigint | string | boolean | Uint8Array | (string | null)[];

export function arrowType(t: ColType): DataType {
  switch (t) {
    case 'int32':
      return new Int32();
    case 'int64':
      return new Int64();
    case 'uint64':
      return new Uint64();
    case 'float64':
      return new Float64();
    case 'utf8':
      return new Utf8();
    case 'bool':
      return new Bool();
    case 'binary':
      return new Binary();
    case 'list':
      return new List(new Field('item', new Utf8(), true));
  }
}

/** The key columns of a key type (non-nullable). */
export function keyColumns(t: KeyType): { name: string; type: ColType }[] {
  if (t === 'composite') {
    return [
      { name: 'k1', type: 'utf8' },
      { name: 'k2', type: 'int32' },
    ];
  }
  return [{ name: 'id', type: t }];
}

/** The store's Arrow schema: key columns, the tag column `v`, then the value columns. */
export function storeSchema(keyType: KeyType | undefined, columns: readonly ColumnSpec[]): Schema {
  const fields: Field[] = [];
  if (keyType) for (const k of keyColumns(keyType)) fields.push(new Field(k.name, arrowType(k.type), false));
  fields.push(new Field('v', new Utf8(), false));
  for (const c of columns) fields.push(new Field(c.name, arrowType(c.type), c.nullable));
  return new Schema(fields);
}

const INT32_EDGES = [0, 1, -1, 2147483647, -2147483648, 7, 1000];
const INT64_EDGES = [0n, 1n, -1n, 2n ** 53n, -(2n ** 53n), 2n ** 53n - 1n, -(2n ** 53n - 1n), 2n ** 63n - 1n, -(2n ** 63n), 42n];
const UINT64_EDGES = [0n, 1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 32n];
const FLOAT_EDGES = [0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, -2.25, Number.MAX_VALUE, 5e-324];
const LIST_ITEMS = ['', 'a', 'ab', 'b', 'é', '\u0000', 'z'];
const STRING_EDGES = ['', 'a', 'A', 'é', 'ß', '日本語', '😀', '\uFFFF', '\u0000', 'a\u0000b', 'z', ' ', 'ab', 'a'.repeat(70)];

/** A value of `t` from `r`, edge cases often. */
export function drawValue(r: () => number, t: ColType): Exclude<Value, null> {
  const edge = r() < 0.4;
  switch (t) {
    case 'int32':
      return edge ? INT32_EDGES[int(r, INT32_EDGES.length)]! : int(r, 2 ** 31) - 2 ** 30;
    case 'int64':
      return edge ? INT64_EDGES[int(r, INT64_EDGES.length)]! : BigInt(int(r, 2 ** 31)) * BigInt(int(r, 2 ** 31) + 1) - 2n ** 60n;
    case 'uint64':
      return edge ? UINT64_EDGES[int(r, UINT64_EDGES.length)]! : BigInt(int(r, 2 ** 31)) * BigInt(int(r, 2 ** 30));
    case 'float64':
      return edge ? FLOAT_EDGES[int(r, FLOAT_EDGES.length)]! : (r() - 0.5) * 10 ** int(r, 12);
    case 'utf8':
      return edge ? STRING_EDGES[int(r, STRING_EDGES.length)]! : randomString(r);
    case 'bool':
      return r() < 0.5;
    case 'binary':
      return Uint8Array.from({ length: int(r, edge ? 3 : 24) }, () => int(r, 256));
    case 'list':
      // Few distinct elements (ties, repeats within a row), a null element now and then.
      return Array.from({ length: int(r, 5) }, () => (r() < 0.05 ? null : LIST_ITEMS[int(r, LIST_ITEMS.length)]!));
  }
}

function randomString(r: () => number): string {
  const alphabet = ['a', 'b', 'x', '0', 'é', 'Ω', '中', '😀', '\u0000', '-'];
  let s = '';
  const n = int(r, 8);
  for (let i = 0; i < n; i++) s += alphabet[int(r, alphabet.length)];
  return s;
}

/**
 * The value of column `c` in a row drafted with seed `rowSeed`: drawn at run time from the row's
 * seed and the column's incarnation, so a row fits whatever schema is current when it is written.
 */
export function columnValue(rowSeed: number, c: ColumnSpec): Value {
  const r = rng((rowSeed ^ Math.imul(c.inc + 1, 0x9e3779b1)) >>> 0);
  if (c.nullable && r() < 0.2) return null;
  if (c.width !== undefined && c.type === 'binary') {
    const out = new Uint8Array(c.width);
    const x = (r() * 2 ** 32) >>> 0;
    for (let i = 0; i < out.length; i += 4) out[i] = (x + i) & 0xff; // cheap, and unlike its neighbours
    return out;
  }
  return drawValue(r, c.type);
}

/** A key: one value per key column. */
export type KeyValue = readonly Exclude<Value, null>[];

/** The pool of keys a seed writes, edge values first. */
export function drawKeyPool(r: () => number, t: KeyType, size: number): KeyValue[] {
  const seen = new Set<string>();
  const pool: KeyValue[] = [];
  const add = (k: KeyValue): void => {
    const id = keyId(k);
    if (seen.has(id)) return;
    seen.add(id);
    pool.push(k);
  };
  const edges: KeyValue[] =
    t === 'int64'
      ? INT64_EDGES.map((v) => [v])
      : t === 'uint64'
        ? UINT64_EDGES.map((v) => [v])
        : t === 'int32'
          ? INT32_EDGES.map((v) => [v])
          : t === 'utf8'
            ? STRING_EDGES.map((v) => [v])
            : STRING_EDGES.slice(0, 6).flatMap((s) => [
                [s, 0],
                [s, -1],
                [s, 2147483647],
              ]);
  for (const e of edges) if (r() < 0.6) add(e);
  for (let tries = 0; pool.length < size && tries < size * 10; tries++) {
    if (t === 'composite') add([drawValue(r, 'utf8'), drawValue(r, 'int32')]);
    else add([drawValue(r, t)]);
  }
  return pool;
}

/** A canonical id of a key (equal keys, equal ids; -0 is 0). */
export function keyId(k: KeyValue): string {
  return k.map((v) => (typeof v === 'number' && v === 0 ? '0' : typeof v === 'string' ? JSON.stringify(v) : String(v))).join('|');
}

/** The key as `get` takes it; `altForm` writes safe 64-bit integers as numbers and 0 as -0. */
export function keyObject(t: KeyType, k: KeyValue, altForm = false): Record<string, unknown> {
  const cols = keyColumns(t);
  const out: Record<string, unknown> = {};
  cols.forEach((c, i) => {
    let v = k[i]!;
    if (altForm && typeof v === 'bigint' && v >= -(2n ** 53n - 1n) && v <= 2n ** 53n - 1n) v = Number(v);
    if (altForm && v === 0) v = -0;
    out[c.name] = v;
  });
  return out;
}

/** The key of a row as read back (`get`/`scan` output). */
export function keyOfRow(t: KeyType, row: Record<string, unknown>): KeyValue {
  return keyColumns(t).map((c) => row[c.name] as Exclude<Value, null>);
}

const utf8 = new TextEncoder();

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Key order, computed from the values (not from memwal's encoding). */
export function compareKeyValues(a: KeyValue, b: KeyValue): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    let c = 0;
    if (typeof x === 'string') c = compareBytes(utf8.encode(x), utf8.encode(y as string));
    else {
      const bx = BigInt(x as number | bigint);
      const by = BigInt(y as number | bigint);
      c = bx < by ? -1 : bx > by ? 1 : 0;
    }
    if (c !== 0) return c;
  }
  return 0;
}

/** Are two values the same (NaN equals NaN, -0 differs from 0, bytes by content, 64-bit integers as bigint)? */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b) === 0;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  return Object.is(a, b);
}

/** A short printable form of a value, for traces. */
export function show(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v.length > 12 ? `${v.slice(0, 12)}…` : v);
  if (v instanceof Uint8Array) return `bytes[${v.length}]`;
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`;
  if (Object.is(v, -0)) return '-0';
  return String(v);
}
