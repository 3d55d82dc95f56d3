// The order a keyed flush writes: the newest row of each key, in key order, found by one sort of
// (key, ordinal) pairs, whether from a memtable's key index or from every row decoded from the WAL.

import { Field, Float64, Int64, type RecordBatch, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { KeyIndex } from '../data/key-index.js';
import { type Key, keyString, makeKeyEncoder } from '../data/keys.js';
import { rowObject, toBatches, tombstoneBatch } from '../data/rows.js';
import { makeStoreSchema, TOMBSTONE_COLUMN } from '../data/schema.js';
import { decodeBlock, readTableIndex } from '../format/table/reader.js';
import { buildFlushTable } from './jobs.js';
import { indexEntries, newestInKeyOrder } from './sorted.js';

const single = makeStoreSchema(
  new Schema([new Field('id', new Int64(), false), new Field('value', new Float64(), true), new Field('name', new Utf8(), true)]),
  ['id'],
);
const composite = makeStoreSchema(
  new Schema([new Field('a', new Utf8(), false), new Field('b', new Int64(), false), new Field('v', new Float64(), true)]),
  ['a', 'b'],
);

/** A tiny deterministic generator (the tests must not depend on Math.random). */
function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

/** What a key index would hold after inserting `keys` in order: key → last position, in key order. */
function model(keys: ArrayLike<Key>, storeSchema: typeof single): { keys: Key[]; ordinals: number[] } {
  const last = new Map<Key, number>();
  for (let i = 0; i < keys.length; i++) last.set(keys[i]!, i);
  const sorted = [...last.keys()].sort((x, y) => {
    const a = keyString(x, storeSchema);
    const b = keyString(y, storeSchema);
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return { keys: sorted, ordinals: sorted.map((k) => last.get(k)!) };
}

/** Row `r` of `batch` with its tombstone flag (`rowObject` leaves the flag out). */
function withTombstone(batch: RecordBatch, r: number): Record<string, unknown> {
  return { ...rowObject(batch, r), _tombstone: batch.getChild(TOMBSTONE_COLUMN)!.get(r) };
}

/** Every row of a built table file, block after block, with its tombstone flag. */
async function tableRows(bytes: Uint8Array, storeSchema: typeof single): Promise<Record<string, unknown>[]> {
  const index = await readTableIndex('t', bytes.length, (o, l) => Promise.resolve(bytes.slice(o, o + l)), storeSchema.internal);
  const rows: Record<string, unknown>[] = [];
  for (let i = 0; i < index.blocks.length; i++) {
    const info = index.blocks[i]!;
    const b = decodeBlock('t', index, i, bytes.slice(info.offset, info.offset + info.length));
    for (let r = 0; r < b.numRows; r++) rows.push(withTombstone(b, r));
  }
  return rows;
}

describe('a keyed flush sorts once: the newest row of each key, in key order', () => {
  it('number keys with repeats: the newest (highest ordinal) row of each key wins', () => {
    const rnd = lcg(7);
    const keys = Float64Array.from({ length: 5_000 }, () => Math.floor(rnd() * 1_000) - 500);
    const got = newestInKeyOrder(keys, undefined, single);
    const want = model(keys, single);
    expect(got.keys).toEqual(want.keys);
    expect([...got.ordinals]).toEqual(want.ordinals);
  });

  it('number keys across the whole safe range (negative, beyond 2^32, ±(2^53 − 1)) in numeric order', () => {
    const rnd = lcg(5);
    const edges = [0, -1, 1, 2 ** 32 - 1, 2 ** 32, -(2 ** 32), -(2 ** 32) - 1, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 40 + 3, -(2 ** 45) + 7];
    const keys = Float64Array.from({ length: 4_000 }, (_, i) =>
      i % 3 === 0 ? edges[i % edges.length]! : Math.round((rnd() - 0.5) * 2 ** (1 + Math.floor(rnd() * 53))),
    );
    const got = newestInKeyOrder(keys, undefined, single);
    const want = model(keys, single);
    expect(got.keys).toEqual(want.keys);
    expect([...got.ordinals]).toEqual(want.ordinals);
    expect(got.keys).toEqual([...new Set(keys)].sort((a, b) => a - b));
  });

  it("string keys with repeats, and a key index's entries (unique keys, ordinals of their own)", () => {
    const rnd = lcg(11);
    const keys = Array.from({ length: 3_000 }, () => `k\u0000${Math.floor(rnd() * 700)}`);
    const want = model(keys, single);
    const got = newestInKeyOrder(keys, undefined, single);
    expect(got.keys).toEqual(want.keys);
    expect([...got.ordinals]).toEqual(want.ordinals);
    const index = new KeyIndex();
    for (let i = 0; i < keys.length; i++) index.set(keys[i]!, i);
    const entries = indexEntries(index);
    const fromIndex = newestInKeyOrder(entries.keys, entries.ordinals, single);
    expect(fromIndex.keys).toEqual(want.keys);
    expect([...fromIndex.ordinals]).toEqual(want.ordinals);
  });

  it('keys already in order (ids put in order, repeats next to each other): the last of each run wins', () => {
    const numbers = newestInKeyOrder(Float64Array.from([1, 1, 2, 3, 3, 3, 9]), undefined, single);
    expect(numbers.keys).toEqual([1, 2, 3, 9]);
    expect([...numbers.ordinals]).toEqual([1, 2, 5, 6]);
    const strings = newestInKeyOrder(['a', 'b', 'b', 'c'], [10, 20, 30, 40], single);
    expect(strings.keys).toEqual(['a', 'b', 'c']);
    expect([...strings.ordinals]).toEqual([10, 30, 40]);
  });

  it('a mix of number and string keys (Int64 beyond 2^53) sorts by the keys’ encodings', () => {
    const big = keyString(0, single).replace(/^./, '\u00ff'); // encodes above every safe integer
    const negBig = keyString(0, single).replace(/^./, '\u0000'); // below every safe integer
    const keys: Key[] = [5, big, -3, negBig, 5, big, 0];
    const got = newestInKeyOrder(keys, undefined, single);
    expect(got.keys).toEqual([negBig, -3, 0, 5, big]);
    expect([...got.ordinals]).toEqual([3, 2, 6, 4, 5]);
  });

  it('a flush from the rows decoded from the WAL writes what a flush from the key index writes: duplicates across batches, deletes', async () => {
    const rnd = lcg(3);
    const batches = [];
    const index = new KeyIndex();
    const enc = makeKeyEncoder(single);
    let base = 0;
    for (let b = 0; b < 12; b++) {
      const batch =
        b % 4 === 3
          ? tombstoneBatch(
              Array.from({ length: 40 }, () => ({ id: Math.floor(rnd() * 300) })),
              single,
            )!
          : toBatches(
              Array.from({ length: 200 }, (_, i) => ({ id: Math.floor(rnd() * 300), value: b * 1000 + i, name: `r${b}-${i}` })),
              single,
            )[0]!;
      const keys = enc(batch);
      for (let r = 0; r < keys.length; r++) index.set(keys[r]!, base + r);
      base += batch.numRows;
      batches.push(batch);
    }
    const fromWal = await buildFlushTable(single, enc, batches, 4);
    const fromIndex = await buildFlushTable(single, enc, batches, 4, indexEntries(index));
    expect(fromWal.bytes).toEqual(fromIndex.bytes);
    // And what it holds is the model's: the newest version of each key, a delete as a tombstone row.
    const newest = new Map<bigint, Record<string, unknown>>();
    for (const b of batches) for (let r = 0; r < b.numRows; r++) newest.set(rowObject(b, r).id as bigint, withTombstone(b, r));
    const rows = await tableRows(fromWal.bytes, single);
    expect(rows).toEqual([...newest.keys()].sort((x, y) => (x < y ? -1 : 1)).map((k) => newest.get(k)));
    expect(rows.some((r) => r._tombstone === true)).toBe(true);
  });

  it('composite keys: newest wins across batches, rows in the order of the key encoding', async () => {
    const enc = makeKeyEncoder(composite);
    const batches = [
      toBatches(
        [
          { a: 'b', b: 1, v: 1 },
          { a: 'a', b: 2, v: 2 },
          { a: 'a', b: -1, v: 3 },
          { a: 'a\u0000', b: 0, v: 4 },
        ],
        composite,
      )[0]!,
      toBatches(
        [
          { a: 'b', b: 1, v: 5 },
          { a: 'a', b: 2, v: 6 },
        ],
        composite,
      )[0]!,
      tombstoneBatch([{ a: 'a', b: -1 }], composite)!,
    ];
    const rows = await tableRows((await buildFlushTable(composite, enc, batches, 1)).bytes, composite);
    expect(rows.map((r) => [r.a, r.b, r.v, r._tombstone])).toEqual([
      ['a', -1n, null, true],
      ['a', 2n, 6, false],
      ['a\u0000', 0n, 4, false],
      ['b', 1n, 5, false],
    ]);
  });
});
