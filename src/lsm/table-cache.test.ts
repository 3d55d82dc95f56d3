// The table cache's point-read machinery: a block that misses the cache is searched through its
// key columns (about log2(rows) keys encoded), never by encoding every key of the block.

import { Field, Int64, Int32, Schema, Utf8, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { TABLE_FORMAT_V2 } from '../format/table/format.js';
import { cutBlocks, encodeTable } from '../format/table/writer.js';
import { type Key, type KeyEncoder, keyString, makeKeyEncoder } from '../data/keys.js';
import { rowObject } from '../data/rows.js';
import { makeStoreSchema, type StoreSchema } from '../data/schema.js';
import { makeBatch } from '../data/select.js';
import { findBlock, TableCache } from './table-cache.js';

/** A one-file cache over `columns` (rows already in key order) whose key encoder counts its rows. */
async function cacheOver(storeSchema: StoreSchema, columns: unknown[][], types: ConstructorParameters<typeof Field>[1][]) {
  const n = columns[0]!.length;
  const data = [
    ...columns.map((c, i) => vectorFromArray(c, types[i]!).data[0]!),
    vectorFromArray(Array.from({ length: n }, () => false)).data[0]!,
  ];
  const batch = makeBatch(storeSchema.internal, data, n);
  const real = makeKeyEncoder(storeSchema);
  const built = encodeTable(storeSchema, storeSchema.internal, real, cutBlocks(storeSchema.internal, [batch]), 1, 1);
  const encoded = { rows: 0 };
  const counting: KeyEncoder = (b) => {
    encoded.rows += b.numRows;
    return real(b);
  };
  const bytes = built.bytes;
  const reads = {
    range: (_: string, o: number, l: number) => Promise.resolve(bytes.slice(o, o + l)),
    whole: () => Promise.resolve(bytes.slice()),
  };
  const cache = new TableCache(storeSchema, storeSchema.internal, counting, reads, 1 << 20);
  const entry: TableFileEntry = {
    generation: 1,
    name: 't',
    bytes: bytes.length,
    rows: n,
    checksum: built.crc.toString(16).padStart(8, '0'),
    format: TABLE_FORMAT_V2,
  };
  return { cache, open: await cache.open(entry), encoded, keys: real(batch), built };
}

describe('table cache point reads', () => {
  it('a block that misses the cache is searched by its key column: no key of the block is encoded whole', async () => {
    const s = makeStoreSchema(new Schema([new Field('id', new Utf8(), false), new Field('v', new Int32(), false)]), ['id']);
    const n = 10_000;
    const ids = Array.from({ length: n }, (_, i) => `user-${String(i * 2).padStart(6, '0')}`);
    const { cache, open, encoded, keys } = await cacheOver(s, [ids, Array.from({ length: n }, (_, i) => i)], [new Utf8(), new Int32()]);
    expect(open.blocks.length).toBeGreaterThan(2);
    for (let i = 0; i < n; i += 97) {
      const probe = keyString(keys[i]!, s);
      const block = await open.block(findBlock(open, probe));
      const row = block.find(probe);
      expect(rowObject(block.batch, row)).toEqual({ id: ids[i], v: i });
      // Absent keys between and around present ones.
      expect(block.find(keyString(`user-${String(i * 2 + 1).padStart(6, '0')}`, s))).toBe(-1);
    }
    expect(cache.stats.blockReads).toBe(open.blocks.length);
    expect(encoded.rows).toBe(0);
    // A scan (or a compaction) still gets every key, encoded once and kept with the cached block.
    const first = await open.block(0);
    expect(Array.from(first.keys!)).toEqual(Array.from(keys).slice(0, first.batch.numRows));
    expect(first.keys).toBe(first.keys);
    expect(encoded.rows).toBe(first.batch.numRows);
  });

  it('the search agrees with key order for Int64 keys: negative, beyond 2^53 (the string form), and absent', async () => {
    const s = makeStoreSchema(new Schema([new Field('id', new Int64(), false)]), ['id']);
    const ids = [-(2n ** 62n), -(2n ** 53n), -(2n ** 53n) + 1n, -5n, 0n, 7n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n - 1n];
    const { open, keys } = await cacheOver(s, [ids], [new Int64()]);
    const block = await open.block(0);
    for (let i = 0; i < ids.length; i++) expect(block.find(keyString(keys[i] as Key, s))).toBe(i);
    for (const absent of [-(2n ** 63n), -6n, 1n, 2n ** 53n + 1n]) {
      const k = makeKeyEncoder(s)(
        makeBatch(s.internal, [vectorFromArray([absent], new Int64()).data[0]!, vectorFromArray([false]).data[0]!], 1),
      )[0]!;
      expect(block.find(keyString(k, s))).toBe(-1);
    }
  });

  it('the search agrees with key order for composite keys', async () => {
    const s = makeStoreSchema(new Schema([new Field('a', new Utf8(), false), new Field('b', new Int32(), false)]), ['a', 'b']);
    // "a" < "a\0" < "ab" in key order: a shorter value sorts first even with a column after it.
    const a = ['a', 'a', 'a\0', 'ab', 'ab', 'b'];
    const b = [-3, 5, -100, 0, 1, 2];
    const { open, keys } = await cacheOver(s, [a, b], [new Utf8(), new Int32()]);
    const block = await open.block(0);
    for (let i = 0; i < a.length; i++) expect(block.find(keyString(keys[i]!, s))).toBe(i);
    expect(block.find(keyString(keys[0]!, s).slice(0, -1))).toBe(-1);
  });
});
