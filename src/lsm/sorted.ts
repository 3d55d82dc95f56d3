// Rows in key order: the newest visible row of each key of a memtable, sorted (what a flush writes
// and what a scan merges), and the sort itself. Pure; any runtime.

import type { RecordBatch, Schema } from 'apache-arrow';
import { KeyIndex } from '../data/key-index.js';
import { type Key, keyString } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import { allRows, gather, gatherBatch, makeBatch } from '../data/select.js';
import { runSteps, type Steps } from '../util/schedule.js';

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

/** A key index's entries, copied (cheap: no hashing), so later puts cannot change them. */
export interface IndexEntries {
  keys: Key[];
  ordinals: number[];
}

export function indexEntries(index: KeyIndex): IndexEntries {
  const keys: Key[] = [];
  const ordinals: number[] = [];
  for (const [k, loc] of index) {
    keys.push(k);
    ordinals.push(loc);
  }
  return { keys, ordinals };
}

/** The newest visible row of each key in key order, before gathering: `keys[i]`'s row is row `ordinals[i]` of `flat`. */
export interface SortedOrder {
  /** Every visible row, in insertion order (one batch). */
  flat: RecordBatch;
  ordinals: Int32Array;
  keys: Key[];
}

/**
 * The order of the rows `entries` point at: `batches` are the indexed batches in order (their
 * rows numbered consecutively, as RowOrdinals does), and only the first `visible` of them may be
 * pointed at.
 */
export function sortedOrder(
  schema: Schema,
  storeSchema: StoreSchema,
  batches: readonly RecordBatch[],
  visible: number,
  entries: IndexEntries,
): SortedOrder {
  return runSteps(sortedOrderSteps(schema, storeSchema, batches, visible, entries));
}

/** {@link sortedOrder} as four steps (index, sort, look-up, gather), so a table build can pause between them. */
export function* sortedOrderSteps(
  schema: Schema,
  storeSchema: StoreSchema,
  batches: readonly RecordBatch[],
  visible: number,
  entries: IndexEntries,
): Steps<SortedOrder> {
  const where = indexOf(entries);
  yield;
  const keys = sortKeys([...entries.keys], storeSchema);
  yield;
  const ordinals = ordinalsOf(where, keys);
  yield;
  const shown = batches.slice(0, visible);
  let total = 0;
  for (const b of shown) total += b.numRows;
  const flat = shown.length === 1 ? shown[0]! : gatherBatch(schema, shown.map(allRows), total);
  return { flat, ordinals, keys };
}

// Per-row loops stay out of the steps: V8 cannot optimize a hot loop inside a generator while it runs.
function indexOf(entries: IndexEntries): KeyIndex {
  const where = new KeyIndex();
  for (let i = 0; i < entries.keys.length; i++) where.set(entries.keys[i]!, entries.ordinals[i]!);
  return where;
}

function ordinalsOf(where: KeyIndex, keys: readonly Key[]): Int32Array {
  const ordinals = new Int32Array(keys.length);
  for (let i = 0; i < keys.length; i++) ordinals[i] = where.get(keys[i]!)!;
  return ordinals;
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
  const { flat, ordinals, keys } = sortedOrder(schema, storeSchema, batches, visible, entries);
  const children = schema.fields.map((f, j) =>
    gather(f.type, [{ data: flat.data.children[j]!, idx: ordinals, start: 0, count: ordinals.length }]),
  );
  return { batch: makeBatch(schema, children, ordinals.length), keys };
}
