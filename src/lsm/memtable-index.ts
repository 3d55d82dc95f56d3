// The ordered indexes of one memtable (SPEC §17): per index, an entry (encoded index key, encoded
// primary key, row ordinal) for each indexed value of each row appended, in append order, and a
// sorted order of them kept up to date on read (the new tail is sorted and merged in). Entries
// are made as rows are appended — before they are visible — and a reader keeps those below its
// captured visible ordinal, so a visible row is always indexed. An entry of an overwritten or
// deleted version stays; readers check each hit against the newest version of its key.

import type { RecordBatch } from 'apache-arrow';
import { type ResolvedIndex, indexKeysOfRow } from '../data/index-keys.js';
import { type Key, keyString } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';

/** Estimated bytes of one entry besides its two strings: three array slots and two string headers. */
export const INDEX_ENTRY_BYTES = 40;

/** The indexed values of `batch`'s rows, as `indexKeysOfRow` wants them (list columns as iterables). */
function columnGetters(batch: RecordBatch, ix: ResolvedIndex): ((row: number) => unknown)[] {
  return ix.columns.map((c) => {
    const v = batch.getChild(c);
    return v ? (row: number) => v.get(row) : () => null;
  });
}

/**
 * The entries one batch adds to an ordered index, made once (before the put is admitted, then
 * handed to `MemIndex.add`): per row its index keys, or undefined (a delete marker, no key); and
 * `bytes`, exactly what they add: INDEX_ENTRY_BYTES + 2 × (index key + primary key characters)
 * an entry — a multi-entry index's row of n distinct values is n entries.
 */
export interface OrderedBatchEntries {
  rowKeys: (string[] | undefined)[];
  /** Per row with keys, its encoded primary key (`keyString`). */
  rowPks: (string | undefined)[];
  bytes: number;
}

/** The entries of `batch` (keys `keys`) in ordered index `ix` (see OrderedBatchEntries). */
export function orderedBatchEntries(
  ix: ResolvedIndex,
  batch: RecordBatch,
  keys: ArrayLike<Key>,
  storeSchema: StoreSchema,
): OrderedBatchEntries {
  const get = columnGetters(batch, ix);
  const tomb = storeSchema.hasTombstone ? batch.getChildAt(storeSchema.internal.fields.length - 1) : null;
  const row: Record<string, unknown> = {};
  const rowKeys: (string[] | undefined)[] = new Array(batch.numRows);
  const rowPks: (string | undefined)[] = new Array(batch.numRows);
  let bytes = 0;
  for (let r = 0; r < batch.numRows; r++) {
    if (tomb?.get(r) === true) continue;
    for (let c = 0; c < get.length; c++) row[ix.columns[c]!] = get[c]!(r);
    const ks = indexKeysOfRow(ix, row);
    if (ks.length === 0) continue;
    const pkStr = keyString(keys[r]!, storeSchema);
    rowKeys[r] = ks;
    rowPks[r] = pkStr;
    for (const k of ks) bytes += INDEX_ENTRY_BYTES + 2 * (k.length + pkStr.length);
  }
  return { rowKeys, rowPks, bytes };
}

/** One index of one memtable. */
export class MemIndex {
  readonly keys: string[] = [];
  readonly pks: string[] = [];
  readonly pkKeys: Key[] = [];
  readonly ordinals: number[] = [];
  bytes = 0;
  /** Entry numbers in (key, primary key) order, covering entries [0, order.length). */
  private order: number[] = [];

  constructor(readonly spec: ResolvedIndex) {}

  /**
   * Index the rows of `batch` (keys `keys`, first ordinal `base`); returns the bytes added.
   * Tombstones are not indexed. `prepared`: the batch's entries, made by `orderedBatchEntries`
   * when the put was checked.
   */
  add(batch: RecordBatch, keys: ArrayLike<Key>, base: number, storeSchema: StoreSchema, prepared?: OrderedBatchEntries): number {
    const { rowKeys, rowPks, bytes } = prepared ?? orderedBatchEntries(this.spec, batch, keys, storeSchema);
    for (let r = 0; r < batch.numRows; r++) {
      const ks = rowKeys[r];
      if (ks === undefined) continue;
      const pk = keys[r]!;
      const pkStr = rowPks[r]!;
      for (const k of ks) {
        this.keys.push(k);
        this.pks.push(pkStr);
        this.pkKeys.push(pk);
        this.ordinals.push(base + r);
      }
    }
    this.bytes += bytes;
    return bytes;
  }

  /** Entry numbers in (key, primary key) order: the sorted order, with entries added since merged in. */
  sorted(): readonly number[] {
    const n = this.keys.length;
    if (this.order.length === n) return this.order;
    const { keys, pks } = this;
    const cmp = (a: number, b: number): number => {
      const ka = keys[a]!;
      const kb = keys[b]!;
      if (ka !== kb) return ka < kb ? -1 : 1;
      const pa = pks[a]!;
      const pb = pks[b]!;
      return pa < pb ? -1 : pa > pb ? 1 : a - b;
    };
    const tail: number[] = [];
    for (let i = this.order.length; i < n; i++) tail.push(i);
    tail.sort(cmp);
    const old = this.order;
    const merged: number[] = new Array(n);
    let i = 0;
    let j = 0;
    let o = 0;
    while (i < old.length && j < tail.length) merged[o++] = cmp(old[i]!, tail[j]!) <= 0 ? old[i++]! : tail[j++]!;
    while (i < old.length) merged[o++] = old[i++]!;
    while (j < tail.length) merged[o++] = tail[j++]!;
    this.order = merged; // a new array: an order a reader holds stays as it was
    return merged;
  }
}
