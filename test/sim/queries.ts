// Ordered indexes and queries in the simulation (SPEC §17, §17.1). A keyed seed often declares
// ordered indexes: one on a column `q` of its own (a scalar type drawn per seed), sometimes one on
// a drawn value column, a compound one of two, and a multi-entry one on a list column `tags`. Each
// open declares those whose columns its view has (an evolution can hide, drop or retype them).
// Query steps, drawn from a stream of their own (the other steps stay as they were), run `query`
// (equals, range, prefix or none; forward or reverse; a limit; pages with `after`) and `count` on
// a declared index or 'primary', and check the answer against the model: for every key, the
// versions a read may show (Model.candidates), their index entries computed here from the values
// (numbers by value, -0 as 0, NaN not indexed; strings by UTF-8 bytes; booleans false first; lists
// one entry per distinct non-null element), never from memwal's encoding. A row returned must be a
// version its key may show, matching the filter, once, in index order with ties by primary key
// (reverse: both descending), past `after`; a key every version of which matches, and sorts before
// the last row returned (or anywhere when the limit did not cut), must be there; `count` lies
// between the keys every version of which matches and those any version of which does.

import type { IndexSpec } from '../../src/data/index-keys.js';
import type { MemWal } from '../../src/engine/memwal.js';
import { int, rng } from '../../src/testing/rng.js';
import { type Action, drawFault, type FaultSpec, type SimConfig, type Step } from './gen.js';
import { diffRow, type Model } from './model.js';
import { type ColType, type ColumnSpec, compareKeyValues, drawValue, keyColumns, keyId, keyOfRow, type KeyValue, show } from './values.js';

/** An index the seed declares (by column names; each open declares it when its view has them, of indexable types). */
export interface IndexDecl {
  name: string;
  columns: string[];
  multiEntry: boolean;
}

export interface QueryAction {
  a: 'query';
  /** Which index: of those the open declared, `index` modulo (their count + 1); the last is 'primary'. */
  index: number;
  filter: 'none' | 'equals' | 'range' | 'prefix';
  /** Seeds for the filter's values (picked at run time among values rows hold, or drawn). */
  picks: number[];
  /** On a compound index: 0 a scalar for its first column, else an array of this many leading columns. */
  depth: number;
  lower: 'gt' | 'gte' | undefined;
  upper: 'lt' | 'lte' | undefined;
  reverse: boolean;
  limit: number | undefined;
  /** Pages asked for (each from the last row of the one before), while each comes back full. */
  pages: number;
  /** Also `count` with the same filter. */
  count: boolean;
  /** Project the rows to the key, `v`, the indexed columns and some others. */
  someColumns: boolean;
}

const SCALARS: ColType[] = ['int32', 'int64', 'uint64', 'float64', 'utf8', 'bool'];
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[int(r, xs.length)]!;

/**
 * The seed's indexes (keyed stores, from a stream of their own): the column `q` and maybe a list
 * column `tags` appended to the first open's columns, and the indexes on them and the drawn columns.
 */
export function withIndexes(config: SimConfig, seed: number): SimConfig {
  const r = rng(seed * 17 + 3);
  if (config.mode !== 'keyed' || r() < 0.3) return config;
  const columns = [...config.columns];
  const scalars = columns.filter((c) => SCALARS.includes(c.type)).map((c) => c.name);
  columns.push({ name: 'q', type: pick(r, SCALARS), nullable: r() < 0.7, inc: columns.length + 1 });
  const indexes: IndexDecl[] = [{ name: 'byQ', columns: ['q'], multiEntry: false }];
  if (r() < 0.6) {
    columns.push({ name: 'tags', type: 'list', nullable: r() < 0.8, inc: columns.length + 1 });
    indexes.push({ name: 'byTag', columns: ['tags'], multiEntry: true });
  }
  const other = scalars.length > 0 ? pick(r, scalars) : undefined;
  if (other && r() < 0.6) indexes.push({ name: 'byC', columns: [other], multiEntry: false });
  if (r() < 0.6) {
    const second = other && r() < 0.6 ? other : 'v';
    indexes.push({ name: 'byQC', columns: r() < 0.5 ? ['q', second] : [second, 'q'], multiEntry: false });
  }
  return { ...config, columns, indexes };
}

/**
 * Whether session `session` leaves the seed's `i`-th index out of its declaration (about one in
 * five per index and open, so indexes are dropped and added back across reopens: the manifest's
 * index set changes and the background index build runs, SPEC §17).
 */
const leftOut = (session: number, i: number): boolean => (session * 7 + i * 13) % 5 === 0;

/** The `indexes` option of session `session`'s open whose view is `columns`: the declared indexes it can have. */
export function indexOption(config: SimConfig, columns: readonly ColumnSpec[], session = 0): { indexes?: Record<string, IndexSpec> } {
  const out: Record<string, IndexSpec> = {};
  for (const ix of usable(config, columns, session)) {
    out[ix.name] = ix.multiEntry
      ? { column: ix.columns[0]!, multiEntry: true }
      : ix.columns.length > 1
        ? { columns: ix.columns }
        : { column: ix.columns[0]! };
  }
  return Object.keys(out).length > 0 ? { indexes: out } : {};
}

function usable(config: SimConfig, columns: readonly ColumnSpec[], session: number): IndexDecl[] {
  const typeOf = (name: string): ColType | undefined => (name === 'v' ? 'utf8' : columns.find((c) => c.name === name)?.type);
  return config.indexes.filter(
    (ix, i) =>
      !leftOut(session, i) &&
      ix.columns.every((n) => {
        const t = typeOf(n);
        return t !== undefined && (ix.multiEntry ? t === 'list' : SCALARS.includes(t));
      }),
  );
}

/** Maybe a query step after a step (keyed stores with indexes declared, or 'primary' alone). */
export function drawQueryStep(r: () => number, config: SimConfig, keys: number): Step | undefined {
  if (config.mode !== 'keyed' || r() >= (config.indexes.length > 0 ? 0.25 : 0.08)) return undefined;
  const x = r();
  const filter = x < 0.2 ? 'none' : x < 0.5 ? 'equals' : x < 0.85 ? 'range' : 'prefix';
  const action: QueryAction = {
    a: 'query',
    index: int(r, 16),
    filter,
    picks: Array.from({ length: 6 }, () => int(r, keys * 64 + 1000)),
    depth: int(r, 3),
    lower: r() < 0.3 ? undefined : r() < 0.5 ? 'gt' : 'gte',
    upper: r() < 0.3 ? undefined : r() < 0.5 ? 'lt' : 'lte',
    reverse: r() < 0.5,
    limit: r() < 0.3 ? undefined : 1 + int(r, 8),
    pages: 1 + int(r, 4),
    count: r() < 0.5,
    someColumns: r() < 0.25,
  };
  const faults: FaultSpec[] = r() < 0.2 ? [drawFault(r, action as Action)] : [];
  return { faults, action, window: pick(r, [0, 0, 1, 20, 1000]) };
}

export function describeQuery(a: QueryAction): string {
  const bounds = a.filter === 'range' ? ` ${a.lower ?? '-'}/${a.upper ?? '-'}` : '';
  return `query index #${a.index} ${a.filter}${bounds}${a.reverse ? ' reverse' : ''} limit ${a.limit ?? '-'} pages ${a.pages}${a.count ? ' + count' : ''}${a.someColumns ? ' some columns' : ''}`;
}

// ------------------------------------------------------------------------------------------
// The model's side

type Scalar = number | bigint | string | boolean;
/** An index entry: the indexed values, in the index's column order (the key's values for 'primary'). */
type Entry = Scalar[];

const utf8 = new TextEncoder();

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function compareScalar(a: Scalar, b: Scalar): number {
  if (typeof a === 'string') return compareBytes(utf8.encode(a), utf8.encode(b as string));
  if (typeof a === 'boolean') return Number(a) - Number(b);
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    const x = BigInt(a as bigint);
    const y = BigInt(b as bigint);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0; // -0 equals 0
}

/** Compare `e`'s first `b.length` values with `b`. */
function comparePrefix(e: Entry, b: Entry): number {
  for (let i = 0; i < b.length; i++) {
    const c = compareScalar(e[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return 0;
}

/** The index as one query sees it: its columns' types, or 'primary'. */
interface QIndex {
  name: string;
  columns: string[];
  types: ColType[];
  multiEntry: boolean;
  primary: boolean;
}

/** A value that cannot be indexed (a null, NaN): the row has no entry. */
function indexable(v: unknown): v is Scalar {
  return v !== null && v !== undefined && !(typeof v === 'number' && Number.isNaN(v));
}

/** The index entries of a row (plain values by column), sorted ascending, distinct. */
function entriesOf(ix: QIndex, row: Record<string, unknown>, key: KeyValue): Entry[] {
  if (ix.primary) return [[...(key as Scalar[])]];
  if (ix.multiEntry) {
    const list = row[ix.columns[0]!];
    if (!Array.isArray(list)) return [];
    const out: Entry[] = [];
    for (const e of list) if (indexable(e) && !out.some((o) => compareScalar(o[0]!, e) === 0)) out.push([e]);
    return out.sort((a, b) => compareScalar(a[0]!, b[0]!));
  }
  const e: Entry = [];
  for (const c of ix.columns) {
    const v = row[c];
    if (!indexable(v)) return [];
    e.push(v);
  }
  return [e];
}

/** A filter as the model applies it to an entry, with the value the query passes. */
interface Filter {
  test(e: Entry): boolean;
  arg: Record<string, unknown>;
  text: string;
}

/** A position in a query's order: an entry and the primary key. */
interface Pos {
  e: Entry;
  key: KeyValue;
}

function comparePos(a: Pos, b: Pos): number {
  for (let i = 0; i < Math.min(a.e.length, b.e.length); i++) {
    const c = compareScalar(a.e[i]!, b.e[i]!);
    if (c !== 0) return c;
  }
  return compareKeyValues(a.key, b.key);
}

export interface QueryHost {
  model: Model;
  config: SimConfig;
  live: { session: number; columns: ColumnSpec[]; w: MemWal };
  call<T>(label: string, p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }>;
  failed(what: string, error: unknown): void;
  flag(kind: string, message: string): void;
  log(line: string): void;
  count(what: string): void;
}

/** Run one query step against the current writer and check it (pages, then count). */
export async function runQuery(host: QueryHost, a: QueryAction): Promise<void> {
  const { model, config, live } = host;
  const declared = usable(config, live.columns, live.session);
  const i = a.index % (declared.length + 1);
  const keyCols = keyColumns(config.keyType!);
  const typeOf = (n: string): ColType => (n === 'v' ? 'utf8' : live.columns.find((c) => c.name === n)!.type);
  const ix: QIndex =
    i < declared.length
      ? { ...declared[i]!, types: declared[i]!.columns.map(typeOf), primary: false }
      : { name: 'primary', columns: keyCols.map((k) => k.name), types: keyCols.map((k) => k.type), multiEntry: false, primary: true };
  const filter = drawFilter(host, ix, a);
  if (!filter) return;
  const reverse = a.reverse;
  const first = (es: Entry[]): Entry | undefined => (reverse ? es[es.length - 1] : es[0]);
  // The position of a row (values by column) in this query: its first matching entry in the query's order.
  const posOf = (row: Record<string, unknown>, key: KeyValue): Pos | undefined => {
    const e = first(entriesOf(ix, row, key).filter(filter.test));
    return e ? { e, key } : undefined;
  };
  const before = (p: Pos, q: Pos): boolean => (reverse ? comparePos(p, q) > 0 : comparePos(p, q) < 0);
  let columns: string[] | undefined;
  if (a.someColumns) {
    columns = [...keyCols.map((k) => k.name), 'v'];
    for (const c of live.columns) if (ix.columns.includes(c.name) || (a.picks[0]! + c.inc) % 2 === 0) columns.push(c.name);
  }
  let after: Record<string, unknown> | undefined;
  const label = `query ${ix.name} ${filter.text}${reverse ? ' reverse' : ''}`;
  host.count('query');
  for (let page = 0; page < a.pages; page++) {
    const opts: Record<string, unknown> = { ...filter.arg, reverse };
    if (a.limit !== undefined) opts.limit = a.limit;
    if (after) opts.after = after;
    if (columns) opts.columns = columns;
    const from = model.tick();
    const res = await host.call(`${label} page ${page} (session ${live.session})`, live.w.query(ix.name as never, opts as never));
    const to = model.tick();
    if (!res.ok) return host.failed(`${label} page ${page}`, res.error);
    const rows = res.value as Record<string, unknown>[];
    const where = `${label} limit ${a.limit ?? '-'} page ${page}${after ? ` after ${show(after.v)}` : ''}`;
    const fromPos = after ? posOf(after, keyOfRow(config.keyType!, after)) : undefined;
    host.log(`  ${where}: ${rows.length} rows ${rows.map((r) => show(r.v)).join(' ')}`);
    if (!checkPage(host, rows, a.limit ?? Number.POSITIVE_INFINITY, columns, posOf, before, fromPos, from, to, where)) return;
    if (a.limit === undefined || rows.length < a.limit || rows.length === 0) break;
    after = rows[rows.length - 1];
  }
  if (a.count) {
    const from = model.tick();
    const res = await host.call(`count ${ix.name} (session ${live.session})`, live.w.count(ix.name as never, filter.arg as never));
    const to = model.tick();
    if (!res.ok) return host.failed(`count ${ix.name}`, res.error);
    const n = res.value as number;
    let least = 0;
    let most = 0;
    for (const id of model.keyIds()) {
      const cands = model.candidates(id, from, to);
      const matches = cands.map((c) => !c.absent && posOf(model.expectedRow(c.row!, live.columns, c.row!.key), c.row!.key!) !== undefined);
      if (matches.every(Boolean)) least++;
      if (matches.some(Boolean)) most++;
    }
    host.log(`  count ${ix.name} ${filter.text}: ${n} (model ${least}..${most})`);
    if (n < least || n > most) host.flag('query', `count ${ix.name} ${filter.text} = ${n}; the model allows ${least}..${most}`);
  }
}

/** One page against the model; false when a violation was flagged. */
function checkPage(
  host: QueryHost,
  rows: Record<string, unknown>[],
  limit: number,
  columns: string[] | undefined,
  posOf: (row: Record<string, unknown>, key: KeyValue) => Pos | undefined,
  before: (p: Pos, q: Pos) => boolean,
  fromPos: Pos | undefined,
  from: number,
  to: number,
  where: string,
): boolean {
  const { model, live, config } = host;
  const bad = (m: string): false => {
    host.flag('query', `${where}: ${m}`);
    return false;
  };
  if (rows.length > limit) return bad(`${rows.length} rows past the limit ${limit}`);
  const seen = new Set<string>();
  let prev: Pos | undefined;
  for (const row of rows) {
    const key = keyOfRow(config.keyType!, row);
    const id = keyId(key);
    if (seen.has(id)) return bad(`key ${show(key)} returned twice`);
    seen.add(id);
    const cands = model.candidates(id, from, to);
    const match = cands.find((c) => !c.absent && c.row!.tag === row.v);
    const shown = cands.map((c) => (c.op ? `${c.absent ? 'deleted' : c.row!.tag} (op ${c.op.id} ${c.op.state})` : 'absent')).join(' | ');
    if (!match) return bad(`key ${show(key)} has tag ${show(row.v)}; the key may show ${shown}`);
    const want = model.expectedRow(match.row!, live.columns, key);
    const diff = diffRow(row, want, columns);
    if (diff) return bad(`key ${show(key)} (op ${match.op!.id}): ${diff}`);
    const p = posOf(want, key);
    if (!p) return bad(`key ${show(key)} (tag ${show(row.v)}) does not match the filter`);
    if (fromPos && !before(fromPos, p))
      return bad(`key ${show(key)} at ${show(p.e)} is not past after (${show(fromPos.e)}, ${show(fromPos.key)})`);
    if (prev && !before(prev, p))
      return bad(`key ${show(key)} at ${show(p.e)} comes after key ${show(prev.key)} at ${show(prev.e)} (out of order)`);
    prev = p;
  }
  const cut = rows.length >= limit;
  for (const id of model.keyIds()) {
    if (seen.has(id)) continue;
    const cands = model.candidates(id, from, to);
    // Missing only when every version the key may show is in this page's span.
    const owed = cands.every((c) => {
      if (c.absent) return false;
      const p = posOf(model.expectedRow(c.row!, live.columns, c.row!.key), c.row!.key!);
      return p !== undefined && (!fromPos || before(fromPos, p)) && (!cut || (prev !== undefined && before(p, prev)));
    });
    if (owed) {
      const key = model.keyOf(id)!;
      const shown = cands.map((c) => `${c.row!.tag} (op ${c.op!.id} ${c.op!.state})`).join(' | ');
      return bad(`key ${show(key)} is missing; it shows ${shown}`);
    }
  }
  return true;
}

/**
 * The filter of `a` on `ix`, its values picked among those the model's rows hold (so that equals
 * and prefix find rows), or drawn when none hold one; undefined when the index has nothing to
 * filter on in this way (a prefix on a column that is not a string).
 */
function drawFilter(host: QueryHost, ix: QIndex, a: QueryAction): Filter | undefined {
  const { model, live } = host;
  // The values at hand: entries of every version written (deleted keys' too).
  const pool: Entry[] = [];
  for (const versions of model.byKey.values()) {
    for (const v of versions) if (v.op.kind === 'put') pool.push(...entriesOf(ix, model.expectedRow(v, live.columns, v.key), v.key!));
  }
  const r = rng(a.picks[5]!);
  const value = (k: number): Entry =>
    pool.length > 0 && k % 5 !== 0 ? pool[k % pool.length]! : ix.types.map((t) => drawValue(r, t === 'list' ? 'utf8' : t) as Scalar);
  // How many leading columns a filter value gives, and how the query passes it.
  const n = ix.columns.length;
  const depth = ix.primary ? n : n > 1 ? (a.depth === 0 ? 1 : Math.min(a.depth, n)) : 1;
  const asArray = ix.primary ? n > 1 : n > 1 && a.depth > 0;
  const arg = (e: Entry): unknown => (asArray ? e.slice(0, depth) : e[0]);
  const text = (e: Entry): string => (asArray ? `[${e.slice(0, depth).map(show).join(', ')}]` : show(e[0]));
  const valid = (e: Entry): boolean => e.slice(0, depth).every((v) => !(typeof v === 'number' && Number.isNaN(v)));
  switch (a.filter) {
    case 'none':
      return { test: () => true, arg: {}, text: 'all' };
    case 'equals': {
      const v = value(a.picks[0]!);
      if (!valid(v)) return undefined;
      return { test: (e) => comparePrefix(e, v.slice(0, depth)) === 0, arg: { equals: arg(v) }, text: `= ${text(v)}` };
    }
    case 'prefix': {
      if (ix.primary || (ix.types[depth - 1] !== 'utf8' && ix.types[depth - 1] !== 'list')) return undefined;
      const v = value(a.picks[0]!);
      if (!valid(v)) return undefined;
      const chars = Array.from(v[depth - 1] as string);
      const p = chars.slice(0, a.picks[1]! % (chars.length + 1)).join('');
      const full = [...v.slice(0, depth - 1), p];
      const bytes = utf8.encode(p);
      return {
        test: (e) =>
          comparePrefix(e, full.slice(0, depth - 1)) === 0 &&
          compareBytes(utf8.encode(e[depth - 1] as string).subarray(0, bytes.length), bytes) === 0,
        arg: { prefix: arg(full) },
        text: `prefix ${text(full)}`,
      };
    }
    case 'range': {
      let lo = value(a.picks[2]!).slice(0, depth);
      let hi = value(a.picks[3]!).slice(0, depth);
      if (!valid(lo) || !valid(hi)) return undefined;
      if (comparePrefix(lo, hi) > 0) [lo, hi] = [hi, lo];
      const range: Record<string, unknown> = {};
      if (a.lower) range[a.lower] = arg(lo);
      if (a.upper) range[a.upper] = arg(hi);
      const lower = a.lower;
      const upper = a.upper;
      return {
        test: (e) => {
          if (lower) {
            const c = comparePrefix(e, lo);
            if (lower === 'gt' ? c <= 0 : c < 0) return false;
          }
          if (upper) {
            const c = comparePrefix(e, hi);
            if (upper === 'lt' ? c >= 0 : c > 0) return false;
          }
          return true;
        },
        arg: { range },
        text: `${lower ? `${lower} ${text(lo)}` : ''}${lower && upper ? ' and ' : ''}${upper ? `${upper} ${text(hi)}` : ''}` || 'range {}',
      };
    }
  }
}
