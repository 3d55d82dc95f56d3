// Rows in key order: the newest visible row of each key of a memtable, sorted (what a flush writes
// and what a scan merges), and the sort itself. Pure; any runtime.

import type { RecordBatch, Schema } from 'apache-arrow';
import type { KeyIndex } from '../data/key-index.js';
import { type Key, keyString } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import { allRows, gather, gatherBatch, makeBatch } from '../data/select.js';

/** A run of rows in key order: one batch, its keys in order, and where it came from. */
export interface SortedRun {
  batch: RecordBatch;
  keys: ArrayLike<Key>;
}

/**
 * Sort `keys` (unique) into key order. Numbers sort natively; strings (bytes as char codes) with
 * the default string order; a mix through `keyString`. Returns the keys in order.
 */
export function sortKeys(keys: Key[], storeSchema: StoreSchema): Key[] {
  let numbers = 0;
  for (const k of keys) if (typeof k === 'number') numbers++;
  if (numbers === keys.length) return Array.from(Float64Array.from(keys as number[]).sort());
  if (numbers === 0) return (keys as string[]).sort();
  const enc = keys.map((k) => ({ k, s: typeof k === 'string' ? k : keyString(k, storeSchema) }));
  enc.sort((a, b) => (a.s < b.s ? -1 : a.s > b.s ? 1 : 0));
  return enc.map((e) => e.k);
}

/**
 * A key index's entries, copied (cheap: no hashing), so later puts cannot change them: key `i`
 * points at row `ordinals[i]`. Without `ordinals`, `keys` has one key per row (key `i` is row
 * `i`'s, repeats allowed) and the newest row of each key is the one meant.
 */
export interface IndexEntries {
  keys: ArrayLike<Key>;
  ordinals?: ArrayLike<number>;
}

export function indexEntries(index: KeyIndex): { keys: Key[]; ordinals: number[] } {
  const keys: Key[] = [];
  const ordinals: number[] = [];
  for (const [k, loc] of index) {
    keys.push(k);
    ordinals.push(loc);
  }
  return { keys, ordinals };
}

/**
 * The newest visible row of each key in key order, before gathering: `keys[i]`'s row is row
 * `ordinals[i]` of `rows` (numbered consecutively across them).
 */
export interface SortedOrder {
  /** The visible batches, in insertion order. */
  rows: readonly RecordBatch[];
  ordinals: Int32Array;
  keys: Key[];
}

/**
 * The order of the rows `entries` point at: `batches` are the indexed batches in order (their
 * rows numbered consecutively, as RowOrdinals does), and only the first `visible` of them may be
 * pointed at.
 */
export function sortedOrder(
  storeSchema: StoreSchema,
  batches: readonly RecordBatch[],
  visible: number,
  entries: IndexEntries,
): SortedOrder {
  const { keys, ordinals } = newestInKeyOrder(entries.keys, entries.ordinals, storeSchema);
  return { rows: batches.slice(0, visible), ordinals, keys };
}

/**
 * The rows of `keys` in key order, the newest of each key only: key `i` is row `ordinals[i]`'s
 * (row `i`'s when `ordinals` is omitted: a memtable's rows in insertion order, repeats allowed,
 * the last of each key winning as in its key index). Where a key repeats, its last position
 * wins, so `ordinals` must grow with position there (a key index's entries have no repeats).
 * Keys already in order (ids put in order) are not sorted. Otherwise number keys: one stable
 * radix sort of the positions by key, no hashing. Strings (bytes as char
 * codes), and a mix through `keyString` (each key value has one form, so equal keys compare
 * equal either way): one Map of each key's last position and the native sort of its keys.
 */
export function newestInKeyOrder(
  keys: ArrayLike<Key>,
  ordinals: ArrayLike<number> | undefined,
  storeSchema: StoreSchema,
): { keys: Key[]; ordinals: Int32Array } {
  const n = keys.length;
  let numbers = 0;
  for (let i = 0; i < n; i++) if (typeof keys[i] === 'number') numbers++;
  const k = numbers === n || numbers === 0 ? (keys as ArrayLike<number | string>) : Array.from(keys, (x) => keyString(x, storeSchema));
  if (inOrder(k)) return newestOfRuns(keys, ordinals, identity(n)); // ids put in order: nothing to sort
  if (numbers === n) return newestOfRuns(keys, ordinals, numberOrder(keys as ArrayLike<number>));
  return newestByString(k as ArrayLike<string>, keys, ordinals);
}

/** True when `k` (all numbers or all strings) never decreases. */
function inOrder(k: ArrayLike<number | string>): boolean {
  for (let i = 1; i < k.length; i++) if (k[i]! < k[i - 1]!) return false;
  return true;
}

function identity(n: number): Int32Array<ArrayBuffer> {
  const perm = new Int32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  return perm;
}

/**
 * {@link newestInKeyOrder} for keys in string form `k` (`keys` their original forms): the last
 * position of each key in one Map, its keys sorted by the native string sort (a sort with a
 * comparator, a call per comparison, was slower than this for random keys), positions looked up
 * in that same Map.
 */
function newestByString(
  k: ArrayLike<string>,
  keys: ArrayLike<Key>,
  ordinals: ArrayLike<number> | undefined,
): { keys: Key[]; ordinals: Int32Array } {
  const last = new Map<string, number>();
  for (let i = 0; i < k.length; i++) last.set(k[i]!, i);
  const sorted = [...last.keys()].sort();
  const out: Key[] = new Array(sorted.length);
  const at = new Int32Array(sorted.length);
  for (let j = 0; j < sorted.length; j++) {
    const i = last.get(sorted[j]!)!;
    out[j] = keys[i]!;
    at[j] = ordinals ? ordinals[i]! : i;
  }
  return { keys: out, ordinals: at };
}

/**
 * The positions of `keys` (safe integers) in numeric order, equal keys in position order: an LSD
 * radix sort by bytes of the key as (high word + 2^21, low word), a pass skipped where every key
 * has the same byte. Linear, where a sort with a comparator (a call per comparison) was slower
 * than the native sort plus the hashing it replaces.
 */
function numberOrder(keys: ArrayLike<number>): Int32Array {
  const n = keys.length;
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const k = keys[i]!;
    const l = k >>> 0; // k modulo 2^32, exact for any safe integer
    lo[i] = l;
    hi[i] = (k - l) / 4294967296 + 2097152; // |k| < 2^53, so the high word is within ±2^21
  }
  let perm = identity(n);
  let next = new Int32Array(n);
  const count = new Int32Array(257);
  for (const [words, shift] of RADIX_PASSES(lo, hi)) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[((words[i]! >>> shift) & 255) + 1]!++;
    let same = false;
    for (let b = 1; b <= 256; b++) {
      if (count[b] === n) same = true;
      count[b]! += count[b - 1]!;
    }
    if (same) continue;
    for (let i = 0; i < n; i++) {
      const p = perm[i]!;
      next[count[(words[p]! >>> shift) & 255]!++] = p;
    }
    [perm, next] = [next, perm];
  }
  return perm;
}

/** The radix passes, least significant byte first: four of the low word, three of the high (22 bits). */
const RADIX_PASSES = (lo: Uint32Array, hi: Uint32Array): [Uint32Array, number][] => [
  [lo, 0],
  [lo, 8],
  [lo, 16],
  [lo, 24],
  [hi, 0],
  [hi, 8],
  [hi, 16],
];

/** The last of each run of equal keys in `perm` (sorted by key, stably). */
function newestOfRuns(
  keys: ArrayLike<Key>,
  ordinals: ArrayLike<number> | undefined,
  perm: Int32Array,
): { keys: Key[]; ordinals: Int32Array } {
  const out: Key[] = [];
  const at = new Int32Array(perm.length);
  for (let i = 0; i < perm.length; i++) {
    const p = perm[i]!;
    if (i + 1 < perm.length && keys[perm[i + 1]!] === keys[p]) continue;
    at[out.length] = ordinals ? ordinals[p]! : p;
    out.push(keys[p]!);
  }
  return { keys: out, ordinals: at.slice(0, out.length) };
}

/**
 * The rows `entries` point at, in key order, as one compact batch in `schema` (see
 * {@link sortedOrder}). Returns the batch and its keys.
 */
export function sortedNewest(
  schema: Schema,
  storeSchema: StoreSchema,
  batches: readonly RecordBatch[],
  visible: number,
  entries: IndexEntries,
): SortedRun {
  const { rows, ordinals, keys } = sortedOrder(storeSchema, batches, visible, entries);
  let total = 0;
  for (const b of rows) total += b.numRows;
  const flat = rows.length === 1 ? rows[0]! : gatherBatch(schema, rows.map(allRows), total);
  const children = schema.fields.map((f, j) =>
    gather(f.type, [{ data: flat.data.children[j]!, idx: ordinals, start: 0, count: ordinals.length }]),
  );
  return { batch: makeBatch(schema, children, ordinals.length), keys };
}
