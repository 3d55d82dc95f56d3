// Secondary indexes (SPEC §17, §17.1): their declaration (`IndexSpec`, validated against the schema
// once, before anything is claimed), the order-preserving encoding of index values, and a query
// filter as a range of encoded keys. Any runtime.
//
// An index key is a string of chars 0..255 (one per byte), so comparing two as strings compares
// the values. Per column: numbers (every integer type but 64-bit, floats, dates, times,
// timestamps, durations) as 8 bytes of the IEEE-754 double, sign bit flipped for positives and
// every bit flipped for negatives; Int64 as 8 bytes of `v + 2^63`, Uint64 as 8 bytes of `v` (both
// exact beyond 2^53);
// bools as one byte; strings as UTF-8 with each 0x00 written 0x00 0xFF, then 0x00 0x01 (as
// keys.ts). Every column's encoding delimits itself, so a compound key is their concatenation and
// a leading prefix of its columns is a prefix of its key.

import { type DataType, type Field, type Schema, Type } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { TextIndexSpec } from './tokenize.js';
import { isVectorSpec, type VectorIndexSpec } from './vector-spec.js';

/**
 * An ordered index on one column (`multiEntry`: one entry per element of a list column) or on
 * several, compound in the order given; or a full-text index (`kind: 'text'`, data/tokenize.ts);
 * or a vector index (`kind: 'vector'`, data/vector-spec.ts).
 */
export type IndexSpec<C extends string = string> =
  | { column: C; multiEntry?: boolean }
  | { columns: readonly C[] }
  | TextIndexSpec<C>
  | VectorIndexSpec<C>;

/** The name reserved for the primary key as an ordered index. */
export const PRIMARY_INDEX = 'primary';

/** How one indexed value is encoded. */
type Kind = 'num' | 'int64' | 'uint64' | 'bool' | 'str';

/** One index, resolved against the schema. */
export interface ResolvedIndex {
  name: string;
  columns: string[];
  kinds: Kind[];
  multiEntry: boolean;
}

const invalid = (why: string): MemWalError => new MemWalError('InvalidArgument', why);

function kindOf(t: DataType): Kind | undefined {
  switch (t.typeId) {
    case Type.Int:
      if ((t as unknown as { bitWidth: number }).bitWidth !== 64) return 'num';
      return (t as unknown as { isSigned: boolean }).isSigned ? 'int64' : 'uint64';
    case Type.Float:
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
      return 'num';
    case Type.Bool:
      return 'bool';
    case Type.Utf8:
    case Type.LargeUtf8:
      return 'str';
    default:
      return undefined;
  }
}

/**
 * The indexes of option `indexes`, checked against `schema`: `InvalidArgument` naming the index
 * and the problem (reserved or bad name, unknown column, a type that cannot be ordered, a
 * multi-entry index not on one list column, an append-only store). Runs in options resolution.
 */
export function resolveIndexes(indexes: unknown, schema: Schema, primaryKey: readonly string[]): ResolvedIndex[] {
  if (indexes === undefined) return [];
  if (typeof indexes !== 'object' || indexes === null || Array.isArray(indexes)) {
    throw invalid('option indexes: must be an object of index name -> { column } or { columns }');
  }
  const out: ResolvedIndex[] = [];
  for (const [name, spec] of Object.entries(indexes as Record<string, unknown>)) {
    const what = `option indexes: index "${name}"`;
    if (name === PRIMARY_INDEX) throw invalid(`${what}: the name 'primary' is reserved for the primary key`);
    if (!/^[A-Za-z0-9_.-]{1,100}$/.test(name)) throw invalid(`${what}: a name is 1-100 characters of A-Z a-z 0-9 _ . -`);
    // Per-index stats are plain objects: `out['__proto__'] = …` would set their prototype, not add the index.
    if (name === '__proto__') throw invalid(`${what}: the name '__proto__' is reserved`);
    if (primaryKey.length === 0) throw invalid(`${what}: indexes need a primary key (ties are ordered by it)`);
    if (typeof spec !== 'object' || spec === null) throw invalid(`${what}: must be { column } or { columns: [...] }`);
    if (isVectorSpec(spec)) continue; // resolveVectorIndexes (data/vector-spec.ts)
    const kind = (spec as { kind?: unknown }).kind;
    if (kind === 'text') continue; // resolveTextIndex (data/tokenize.ts)
    if (kind !== undefined) throw invalid(`${what}: unknown kind ${JSON.stringify(kind)} (an ordered index has none; 'text', 'vector')`);
    const s = spec as { column?: unknown; columns?: unknown; multiEntry?: unknown };
    for (const k of Object.keys(s)) {
      if (k !== 'column' && k !== 'columns' && k !== 'multiEntry') throw invalid(`${what}: unknown field "${k}"`);
    }
    if ((s.column === undefined) === (s.columns === undefined)) throw invalid(`${what}: give exactly one of column and columns`);
    const multiEntry = s.multiEntry ?? false;
    if (typeof multiEntry !== 'boolean') throw invalid(`${what}: multiEntry must be a boolean`);
    const columns = s.column !== undefined ? [s.column] : s.columns;
    if (!Array.isArray(columns) || columns.length === 0 || columns.some((c) => typeof c !== 'string')) {
      throw invalid(`${what}: columns must be a non-empty array of column names`);
    }
    if (new Set(columns).size !== columns.length) throw invalid(`${what}: lists a column twice`);
    if (multiEntry && s.columns !== undefined) throw invalid(`${what}: multiEntry needs a single column`);
    const kinds: Kind[] = [];
    for (const c of columns as string[]) {
      const field: Field | undefined = schema.fields.find((f) => f.name === c);
      if (!field) throw invalid(`${what}: no column "${c}" in the schema`);
      let t = field.type;
      if (multiEntry) {
        if (t.typeId !== Type.List && t.typeId !== Type.LargeList) throw invalid(`${what}: multiEntry needs a list column, "${c}" is ${t}`);
        t = (t as unknown as { children: Field[] }).children[0]!.type;
      }
      const kind = kindOf(t);
      if (!kind) throw invalid(`${what}: column "${c}" of type ${t} cannot be indexed (numbers, dates, times, booleans and strings can)`);
      kinds.push(kind);
    }
    out.push({ name, columns: columns as string[], kinds, multiEntry });
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Encoding

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const utf8 = new TextEncoder();

function num(v: number): string {
  f64[0] = v === 0 ? 0 : v; // -0 as 0
  const b = f64Bytes; // little-endian on every platform memwal runs on
  const neg = (b[7]! & 0x80) !== 0;
  let s = '';
  for (let i = 7; i >= 0; i--) s += String.fromCharCode(neg ? b[i]! ^ 0xff : i === 7 ? b[i]! ^ 0x80 : b[i]!);
  return s;
}

/** 8 bytes of `u` (0 <= u < 2^64), most significant first. */
function u64(u: bigint): string {
  const out: number[] = new Array(8);
  for (let i = 7; i >= 0; i--) {
    out[i] = Number(u & 0xffn);
    u >>= 8n;
  }
  return String.fromCharCode(...out);
}

function str(v: string, terminate: boolean): string {
  const bytes = utf8.encode(v);
  let s = '';
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    s += c === 0 ? '\u0000\u00ff' : String.fromCharCode(c);
  }
  return terminate ? `${s}\u0000\u0001` : s;
}

/** The value as `kind` wants it, or undefined when it is of the wrong type. */
function encodeValue(v: unknown, kind: Kind, terminate = true): string | undefined {
  switch (kind) {
    case 'num':
      if (typeof v === 'number' && !Number.isNaN(v)) return num(v);
      if (typeof v === 'bigint') return num(Number(v));
      if (v instanceof Date && !Number.isNaN(v.getTime())) return num(v.getTime());
      return undefined;
    case 'int64':
    case 'uint64': {
      const b = typeof v === 'bigint' ? v : typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : undefined;
      if (b === undefined) return undefined;
      // Uint64 values from 2^63 up would wrap if offset as Int64's are: they sort past every other.
      const u = kind === 'int64' ? b + (1n << 63n) : b;
      return u >= 0n && u < 1n << 64n ? u64(u) : undefined;
    }
    case 'bool':
      return typeof v === 'boolean' ? (v ? '\u0001' : '\u0000') : undefined;
    case 'str':
      return typeof v === 'string' ? str(v, terminate) : undefined;
  }
}

/**
 * The index keys of one row (its plain values by column name): none when an indexed value is
 * null (such rows are not in the index); one per distinct element for a multi-entry index,
 * sorted. Values come from the store, so their types are the schema's.
 */
export function indexKeysOfRow(ix: ResolvedIndex, row: Record<string, unknown>): string[] {
  if (ix.multiEntry) {
    const list = row[ix.columns[0]!];
    if (list === null || list === undefined) return [];
    const keys = new Set<string>();
    for (const e of list as Iterable<unknown>) {
      if (e === null || e === undefined) continue;
      const k = encodeValue(e, ix.kinds[0]!);
      if (k !== undefined) keys.add(k);
    }
    return [...keys].sort();
  }
  let key = '';
  for (let i = 0; i < ix.columns.length; i++) {
    const v = row[ix.columns[i]!];
    if (v === null || v === undefined) return [];
    const k = encodeValue(v, ix.kinds[i]!);
    if (k === undefined) return [];
    key += k;
  }
  return [key];
}

// ------------------------------------------------------------------------------------------
// Filters

/** Above every char of an encoded key: `p + HIGH` is past every key that starts with `p`. */
export const HIGH = '\u0100';

/** An ordered query's filter (SPEC §17.1). */
export interface QueryFilter {
  equals?: unknown;
  range?: { gt?: unknown; gte?: unknown; lt?: unknown; lte?: unknown };
  prefix?: unknown;
}

/** The keys a filter admits: `lo <= key < hi` (each bound optional). */
export interface KeyBounds {
  lo: string | undefined;
  hi: string | undefined;
}

/**
 * The bounds of `filter` on an index whose columns encode as `encode(values, partialLast)` — a
 * value for the first column or an array for a leading prefix of the columns. `InvalidArgument`
 * for a value of the wrong type or a contradictory filter (two of equals, range, prefix; gt with
 * gte; lower bound above upper).
 */
export function filterBounds(
  filter: QueryFilter | undefined,
  encode: (v: unknown, partialLast: boolean, what: string) => string,
): KeyBounds {
  if (filter === undefined || filter === null) return { lo: undefined, hi: undefined };
  if (typeof filter !== 'object') throw invalid('query: the filter must be an object');
  const given = (['equals', 'range', 'prefix'] as const).filter((k) => filter[k] !== undefined);
  if (given.length > 1) throw invalid(`query: give one of equals, range and prefix, not ${given.join(' and ')}`);
  if (filter.equals !== undefined) {
    const k = encode(filter.equals, false, 'equals');
    return { lo: k, hi: k + HIGH };
  }
  if (filter.prefix !== undefined) {
    const k = encode(filter.prefix, true, 'prefix');
    return { lo: k, hi: k + HIGH };
  }
  const r = filter.range;
  if (r === undefined) return { lo: undefined, hi: undefined };
  if (typeof r !== 'object' || r === null) throw invalid('query: range must be an object of gt, gte, lt, lte');
  for (const k of Object.keys(r)) if (!['gt', 'gte', 'lt', 'lte'].includes(k)) throw invalid(`query: range has an unknown bound "${k}"`);
  if (r.gt !== undefined && r.gte !== undefined) throw invalid('query: range gives both gt and gte');
  if (r.lt !== undefined && r.lte !== undefined) throw invalid('query: range gives both lt and lte');
  const lower = r.gt !== undefined ? encode(r.gt, false, 'range.gt') : r.gte !== undefined ? encode(r.gte, false, 'range.gte') : undefined;
  const upper = r.lt !== undefined ? encode(r.lt, false, 'range.lt') : r.lte !== undefined ? encode(r.lte, false, 'range.lte') : undefined;
  if (lower !== undefined && upper !== undefined && lower > upper) throw invalid('query: range has its lower bound above its upper bound');
  // Equal bounds with one exclusive give lo > hi: an empty range, not an error.
  const lo = lower === undefined ? undefined : r.gt !== undefined ? lower + HIGH : lower;
  const hi = upper === undefined ? undefined : r.lte !== undefined ? upper + HIGH : upper;
  return { lo, hi };
}

/**
 * The encoder of filter values of a secondary index: a value for its first column or an array
 * for a leading prefix of its columns; with `partialLast` (a prefix filter) the last value is a
 * string whose encoding is left open.
 */
export function indexValueEncoder(ix: ResolvedIndex): (v: unknown, partialLast: boolean, what: string) => string {
  return (v, partialLast, what) => {
    const values = ix.columns.length > 1 && Array.isArray(v) ? v : [v];
    if (values.length === 0 || values.length > ix.columns.length) {
      throw invalid(`query ${ix.name}: ${what} gives ${values.length} values for an index of ${ix.columns.length} columns`);
    }
    let key = '';
    values.forEach((x, i) => {
      const last = i === values.length - 1;
      const kind = ix.kinds[i]!;
      if (partialLast && last && kind !== 'str') throw invalid(`query ${ix.name}: prefix needs a string column, "${ix.columns[i]}" is not`);
      const k = encodeValue(x, kind, !(partialLast && last));
      if (k === undefined) {
        throw invalid(`query ${ix.name}: ${what} value for column "${ix.columns[i]}" must be ${expected(kind)}, got ${describe(x)}`);
      }
      key += k;
    });
    return key;
  };
}

function expected(kind: Kind): string {
  if (kind === 'uint64') return 'a bigint or safe integer from 0 to 2^64 - 1';
  return kind === 'num' ? 'a number or Date' : kind === 'int64' ? 'a bigint or safe integer' : kind === 'bool' ? 'a boolean' : 'a string';
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v;
}
