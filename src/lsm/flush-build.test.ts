// A keyed flush builds the same table file bytes however its memtable's rows are split into
// batches: gathered straight from the batches (stretches of rows in one batch, runs copied whole)
// or from their concatenation, which is what every flush did before (docs/impl.md §11).

import { Field, Float64, Int64, type RecordBatch, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { makeKeyEncoder } from '../data/keys.js';
import { rowObject, toBatches, tombstoneBatch } from '../data/rows.js';
import { makeStoreSchema, type StoreSchema } from '../data/schema.js';
import { allRows, gatherBatch } from '../data/select.js';
import { BloomFilter } from '../format/table/bloom.js';
import { decodeBlock, readTableIndex } from '../format/table/reader.js';
import { buildFlushTable } from './jobs.js';

const single = makeStoreSchema(
  new Schema([new Field('id', new Int64(), false), new Field('value', new Float64(), true), new Field('name', new Utf8(), true)]),
  ['id'],
);
const byName = makeStoreSchema(
  new Schema([new Field('id', new Int64(), false), new Field('value', new Float64(), true), new Field('name', new Utf8(), false)]),
  ['name'],
);
const composite = makeStoreSchema(
  new Schema([new Field('a', new Utf8(), false), new Field('b', new Int64(), false), new Field('v', new Float64(), true)]),
  ['a', 'b'],
);

function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

type Row = Record<string, unknown>;

/** Batches of `rowsPer` rows, the `b`-th batch's `i`-th row from `row(b, i)`. */
function batchesOf(storeSchema: StoreSchema, count: number, rowsPer: number, row: (b: number, i: number) => Row): RecordBatch[] {
  const out: RecordBatch[] = [];
  for (let b = 0; b < count; b++)
    out.push(
      ...toBatches(
        Array.from({ length: rowsPer }, (_, i) => row(b, i)),
        storeSchema,
      ),
    );
  return out;
}

/** The table a flush of `batches` builds, and the one it builds of them concatenated into one batch. */
async function bothWays(storeSchema: StoreSchema, batches: RecordBatch[]): Promise<[Uint8Array, Uint8Array]> {
  const enc = makeKeyEncoder(storeSchema);
  let total = 0;
  for (const b of batches) total += b.numRows;
  const one = gatherBatch(storeSchema.internal, batches.map(allRows), total);
  const split = await buildFlushTable(storeSchema, enc, batches, 3);
  const whole = await buildFlushTable(storeSchema, enc, [one], 3);
  expect(split.crc).toBe(whole.crc);
  expect(split.blocks).toBeGreaterThan(4);
  return [split.bytes, whole.bytes];
}

/** Every row of a built table file, block after block (`rowObject`: read without any gather). */
async function tableRows(bytes: Uint8Array, storeSchema: StoreSchema): Promise<Row[]> {
  const index = await readTableIndex('t', bytes.length, (o, l) => Promise.resolve(bytes.slice(o, o + l)), storeSchema.internal);
  const rows: Row[] = [];
  for (let i = 0; i < index.blocks.length; i++) {
    const info = index.blocks[i]!;
    const b = decodeBlock('t', index, i, bytes.slice(info.offset, info.offset + info.length));
    for (let r = 0; r < b.numRows; r++) rows.push(rowObject(b, r));
  }
  return rows;
}

const name = (r: () => number): string => 'n'.repeat(1 + Math.floor(r() * 20)) + Math.floor(r() * 1e6);

describe('a keyed flush built from many batches', () => {
  it('equals the flush of them concatenated, byte for byte: ids in order (runs copied whole)', async () => {
    const r = lcg(1);
    const batches = batchesOf(single, 12, 1000, (b, i) => ({ id: b * 1000 + i, value: r(), name: name(r) }));
    const [a, b] = await bothWays(single, batches);
    expect(a).toEqual(b);
    // Ids unique and in order: the table holds every row as put.
    expect(await tableRows(a, single)).toEqual(
      batches.flatMap((batch) => Array.from({ length: batch.numRows }, (_, r) => rowObject(batch, r))),
    );
  });

  it('equals it with repeats (the newest wins), nulls in some batches, deletes and sliced batches', async () => {
    const r = lcg(2);
    const batches = batchesOf(single, 10, 900, (b, i) => ({
      id: i % 50 === 49 ? Math.floor(r() * b * 900) : b * 900 + i,
      value: b % 3 === 0 && i % 7 === 0 ? null : r(),
      name: b % 2 === 0 && i % 5 === 0 ? null : name(r),
    }));
    batches.push(tombstoneBatch([{ id: 5 }, { id: 901 }], single)!);
    const big = batchesOf(single, 1, 3000, (_, i) => ({ id: 20_000 + i, value: i % 9 === 0 ? null : r(), name: name(r) }))[0]!;
    batches.push(big.slice(17, 1500), big.slice(1500, 2990));
    const [a, b] = await bothWays(single, batches);
    expect(a).toEqual(b);
  });

  it('equals it with ids in random order (gathered from the concatenation)', async () => {
    const r = lcg(3);
    const batches = batchesOf(single, 8, 1000, () => ({ id: Math.floor(r() * 6000), value: r(), name: name(r) }));
    const [a, b] = await bothWays(single, batches);
    expect(a).toEqual(b);
  });

  it('equals it with a string key and with a key of two columns', async () => {
    const r = lcg(4);
    const strings = batchesOf(byName, 8, 1000, (b, i) => ({ id: i, value: r(), name: `k${String(b * 1000 + i).padStart(6, '0')}` }));
    const [a, b] = await bothWays(byName, strings);
    expect(a).toEqual(b);
    const two = batchesOf(composite, 8, 1000, (b, i) => ({ a: `p${b % 3}`, b: i % 40 === 0 ? 7 : b * 1000 + i, v: r() }));
    const [c, d] = await bothWays(composite, two);
    expect(c).toEqual(d);
  });
});

/** The filter's bits as docs/format.md §8 defines them, computed one key at a time. */
function referenceBits(keys: (number | string)[], bytes: number): Uint8Array {
  const bits = new Uint8Array(bytes);
  const m = bytes * 8;
  for (const k of keys) {
    let h1: number;
    let h2: number;
    if (typeof k === 'number') {
      const lo = k | 0;
      const hi = Math.floor(k / 4294967296) | 0;
      let a = Math.imul(lo ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(hi, 0xc2b2ae35);
      a ^= a >>> 16;
      a = Math.imul(a, 0x7feb352d);
      a ^= a >>> 15;
      let b = Math.imul(hi ^ 0x27d4eb2f, 0x165667b1) ^ Math.imul(lo, 0x9e3779b1);
      b ^= b >>> 13;
      b = Math.imul(b, 0x846ca68b);
      b ^= b >>> 16;
      h1 = a >>> 0;
      h2 = (b | 1) >>> 0;
    } else {
      let a = 0x811c9dc5;
      let b = 0x01000193 ^ 0x5bd1e995;
      for (let i = 0; i < k.length; i++) {
        a = Math.imul(a ^ k.charCodeAt(i), 0x01000193);
        b = Math.imul(b ^ k.charCodeAt(i), 0x5bd1e995);
      }
      a ^= a >>> 15;
      b ^= b >>> 13;
      h1 = a >>> 0;
      h2 = (Math.imul(b, 0x85ebca6b) | 1) >>> 0;
    }
    for (let i = 0; i < 7; i++) {
      const at = ((h1 + i * h2) % 2 ** 32) % m;
      bits[Math.floor(at / 8)]! |= 1 << (at % 8);
    }
  }
  return bits;
}

describe('the Bloom filter of a table', () => {
  it('sets the bits the format defines, for number and string keys, added in ranges or one by one', () => {
    const r = lcg(5);
    const keys: (number | string)[] = [];
    for (let i = 0; i < 3000; i++) keys.push(i % 3 === 0 ? `key${Math.floor(r() * 1e9)}` : Math.floor((r() - 0.5) * 2 ** 53));
    const ranged = BloomFilter.forKeys(keys.length);
    ranged.addRange(keys, 0, 1000);
    ranged.addRange(keys, 1000, keys.length);
    const single = BloomFilter.forKeys(keys.length);
    for (const k of keys) single.add(k);
    const expected = referenceBits(keys, ranged.bits.length);
    expect(ranged.bits).toEqual(expected);
    expect(single.bits).toEqual(expected);
  });
});
