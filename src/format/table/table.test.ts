// Table file format 2 at the byte level: written, read back block by block through ranged reads,
// checked (CRCs, Bloom filter, key order), and read by a non-JS Arrow reader (Polars).

import { createRequire } from 'node:module';
import {
  Bool,
  DateMillisecond,
  Field,
  FixedSizeBinary,
  Float64,
  Int32,
  Int64,
  LargeUtf8,
  List,
  Schema,
  Struct,
  TimestampMicrosecond,
  Utf8,
  tableFromIPC,
  vectorFromArray,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { buildFlushTable } from '../../lsm/jobs.js';
import { makeKeyEncoder } from '../../data/keys.js';
import { rowObject, toBatches, tombstoneBatch } from '../../data/rows.js';
import { makeStoreSchema } from '../../data/schema.js';
import { resolveIndexes } from '../../data/index-keys.js';
import { makeBatch } from '../../data/select.js';
import { crc32c } from '../../util/crc32c.js';
import { BloomFilter } from './bloom.js';
import { readFooter } from './footer.js';
import { BLOCK_MAX_ROWS, META_BLOCKS, META_BLOOM, META_GENERATIONS } from './format.js';
import { decodeBlock, readTableIndex } from './reader.js';
import { cutBlockSteps, cutBlocks, encodeTable } from './writer.js';
import { runSteps } from '../../util/schedule.js';

const storeSchema = makeStoreSchema(new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]), ['id']);
const keyEncoder = makeKeyEncoder(storeSchema);

/** n rows with ids 0, 2, 4, … (sorted), tombstone false. */
function sortedBatch(n: number) {
  const ids = Array.from({ length: n }, (_, i) => BigInt(2 * i));
  const names = Array.from({ length: n }, (_, i) => `name-${i}`);
  const tomb = Array.from({ length: n }, () => false);
  return makeBatch(
    storeSchema.internal,
    [vectorFromArray(ids, new Int64()).data[0]!, vectorFromArray(names, new Utf8()).data[0]!, vectorFromArray(tomb).data[0]!],
    n,
  );
}

const reader = (bytes: Uint8Array) => (offset: number, length: number) => Promise.resolve(bytes.slice(offset, offset + length));

/** A batch of `n` rows of nullable and nested columns, 64-bit offsets, fixed widths (sorted by key), and its store schema. */
function wideBatch(n: number) {
  // Nullable and nested columns, 64-bit offsets, fixed widths: what the own loader builds.
  const wide = makeStoreSchema(
    new Schema([
      new Field('id', new Utf8(), false),
      new Field('n', new Int32(), true),
      new Field('f', new Float64(), true),
      new Field('big', new LargeUtf8(), true),
      new Field('ok', new Bool(), true),
      new Field('at', new TimestampMicrosecond(), true),
      new Field('day', new DateMillisecond(), true),
      new Field('hash', new FixedSizeBinary(2), true),
      new Field('tags', new List(new Field('item', new Utf8(), true)), true),
      new Field('pos', new Struct([new Field('x', new Int32(), true), new Field('y', new Utf8(), true)]), true),
    ]),
    ['id'],
  );
  const odd = (i: number) => i % 3 === 1;
  const cols = [
    vectorFromArray(
      Array.from({ length: n }, (_, i) => `k${String(i).padStart(5, '0')}`),
      new Utf8(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : i - 1500)),
      new Int32(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : i / 7)),
      new Float64(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (i % 5 === 0 ? null : `large-${i}`)),
      new LargeUtf8(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : i % 2 === 0)),
      new Bool(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : 1_700_000_000_000_000 + i)),
      new TimestampMicrosecond(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : new Date(86_400_000 * i))),
      new DateMillisecond(),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : new Uint8Array([i & 255, i >> 8]))),
      new FixedSizeBinary(2),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : Array.from({ length: i % 4 }, (_, j) => (j === 1 ? null : `t${i}.${j}`)))),
      new List(new Field('item', new Utf8(), true)),
    ),
    vectorFromArray(
      Array.from({ length: n }, (_, i) => (odd(i) ? null : { x: i, y: i % 2 ? null : `y${i}` })),
      new Struct([new Field('x', new Int32(), true), new Field('y', new Utf8(), true)]),
    ),
    vectorFromArray(Array.from({ length: n }, () => false)),
  ];
  const batch = makeBatch(
    wide.internal,
    cols.map((c) => c.data[0]!),
    n,
  );
  return { wide, batch };
}

describe('table file format 2', () => {
  it('cuts rows into blocks of at most 4,096 rows and about 64 KiB', () => {
    const blocks = cutBlocks(storeSchema.internal, [sortedBatch(10_000)]);
    expect(blocks.reduce((n, b) => n + b.numRows, 0)).toBe(10_000);
    expect(Math.max(...blocks.map((b) => b.numRows))).toBeLessThanOrEqual(BLOCK_MAX_ROWS);
  });

  it('blocks that are runs of one batch are slices of it (views, no copy), and the file is byte for byte the gathered one', async () => {
    const { wide, batch } = wideBatch(3000);
    const small = wideBatch(40).batch; // gathered into a block with the next batch's first rows
    for (const target of [16 * 1024, 4 * 1024, 1024]) {
      const input = [batch, small, batch.slice(1, 2900)];
      const gathered = cutBlocks(wide.internal, input, target);
      const sliced = runSteps(cutBlockSteps(wide.internal, input, target, true));
      expect(sliced.map((b) => b.numRows)).toEqual(gathered.map((b) => b.numRows));
      const firstId = (b: (typeof sliced)[number]) => b.data.children[0]!.values.buffer;
      expect(firstId(sliced[0]!)).toBe(firstId(batch)); // a view of the put's buffer
      expect(firstId(gathered[0]!)).not.toBe(firstId(batch));
      const a = encodeTable(wide, wide.internal, makeKeyEncoder(wide), gathered, 1, 1);
      const b = encodeTable(wide, wide.internal, makeKeyEncoder(wide), sliced, 1, 1);
      expect(b.crc).toBe(a.crc);
      expect(Buffer.from(b.bytes).equals(Buffer.from(a.bytes))).toBe(true);
    }
  });

  it("a built table's checksum is the CRC-32C of its bytes (combined from its blocks' checksums)", () => {
    for (const rows of [0, 10, 9_000, 20_000]) {
      const built = encodeTable(storeSchema, storeSchema.internal, keyEncoder, cutBlocks(storeSchema.internal, [sortedBatch(rows)]), 1, 1);
      expect(built.crc).toBe(crc32c(built.bytes));
    }
  });

  it('reads back every block from its index alone, in key order, with the generation range', async () => {
    const built = encodeTable(storeSchema, storeSchema.internal, keyEncoder, cutBlocks(storeSchema.internal, [sortedBatch(10_000)]), 3, 7);
    const index = await readTableIndex('t', built.bytes.length, reader(built.bytes), storeSchema.internal);
    expect([index.minGeneration, index.maxGeneration]).toEqual([3, 7]);
    expect(index.blocks.length).toBe(built.blocks);
    let expected = 0;
    for (let i = 0; i < index.blocks.length; i++) {
      const info = index.blocks[i]!;
      const b = decodeBlock('t', index, i, built.bytes.slice(info.offset, info.offset + info.length));
      for (let r = 0; r < b.numRows; r++) expect(rowObject(b, r).id).toBe(BigInt(2 * expected++));
    }
    expect(expected).toBe(10_000);
    expect(built.minKey! < built.maxKey!).toBe(true);
  });

  it('a flipped byte inside a block fails that block with Corruption, not a wrong row', async () => {
    const built = encodeTable(storeSchema, storeSchema.internal, keyEncoder, cutBlocks(storeSchema.internal, [sortedBatch(5_000)]), 1, 1);
    const index = await readTableIndex('t', built.bytes.length, reader(built.bytes), storeSchema.internal);
    const info = index.blocks[1]!;
    const bytes = built.bytes.slice(info.offset, info.offset + info.length);
    bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0x40;
    expect(() => decodeBlock('t', index, 1, bytes)).toThrow(/checksum/);
  });

  it('a damaged trailer or a file of another format is Corruption', async () => {
    const built = encodeTable(storeSchema, storeSchema.internal, keyEncoder, cutBlocks(storeSchema.internal, [sortedBatch(10)]), 1, 1);
    const cut = built.bytes.slice(0, built.bytes.length - 3);
    await expect(readTableIndex('t', cut.length, reader(cut), storeSchema.internal)).rejects.toMatchObject({ code: 'Corruption' });
  });

  it("the footer reader agrees with apache-arrow's own footer decoder", async () => {
    const { Footer } = await import('apache-arrow/ipc/metadata/file');
    const built = encodeTable(storeSchema, storeSchema.internal, keyEncoder, cutBlocks(storeSchema.internal, [sortedBatch(9_000)]), 4, 9);
    const len = new DataView(built.bytes.buffer).getInt32(built.bytes.length - 10, true);
    const footerBytes = built.bytes.subarray(built.bytes.length - 10 - len, built.bytes.length - 10);
    const ours = readFooter(footerBytes);
    const theirs = Footer.decode(footerBytes);
    expect(ours.blocks).toEqual(
      [...theirs.recordBatches()].map((b) => ({
        offset: Number(b.offset),
        metaDataLength: b.metaDataLength,
        bodyLength: Number(b.bodyLength),
      })),
    );
    expect([...ours.metadata]).toEqual([...theirs.schema.metadata]);
  });

  it('encodes the worked example of docs/format.md §8 byte for byte', async () => {
    const base = makeStoreSchema(new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]), ['id']);
    const example = { ...base, indexes: resolveIndexes({ byName: { column: 'name' } }, base.base, ['id']) };
    const puts = toBatches(
      [
        { id: 3, name: 'c' },
        { id: 1, name: 'a' },
        { id: 2, name: 'b' },
      ],
      example,
    );
    const built = await buildFlushTable(example, makeKeyEncoder(example), [...puts, tombstoneBatch([{ id: 2 }], example)!], 7);
    const b = built.bytes;
    const footerLength = new DataView(b.buffer, b.byteOffset).getInt32(b.length - 10, true);
    const f = readFooter(b.subarray(b.length - 10 - footerLength, b.length - 10));
    expect([b.length, footerLength, built.rows]).toEqual([1138, 752, 3]);
    expect(f.blocks).toEqual([{ offset: 8, metaDataLength: 256, bodyLength: 64 }]);
    expect(Object.fromEntries(f.metadata)).toEqual({
      'memwal.table.format': '3',
      'memwal.table.generations': '7-7',
      'memwal.table.blocks': 'AQAAAAMAAACTxi2eCAAAAIAAAAAAAAABCAAAAIAAAAAAAAAD',
      'memwal.table.bloom': 'B2KIZSiOABRD',
      'memwal.table.sections':
        'KAAAAIizwHwBAAAABwBvcmRlcmVkBgBieU5hbWU3AAAAeyJjb2x1bW5zIjpbIm5hbWUiXSwia2luZHMiOlsic3RyIl0sIm11bHRpRW50cnkiOmZhbHNlfQAAAAAiAAAAs8v1vg==',
    });
    expect(crc32c(b.subarray(8, 8 + 256 + 64))).toBe(0x9e2dc693);
    // The end-of-stream marker between the last block and the section area (§8's grammar).
    expect(Array.from(b.subarray(328, 336))).toEqual([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    // The section area: the byName section (34 bytes: rows 0 'a' and 2 'c'; row 1 is the delete), 6 bytes of padding.
    expect(Buffer.from(b.subarray(336, 376)).toString('hex')).toBe(
      '02000000' +
        '00' +
        '03' +
        '610001' +
        '08' +
        '8000000000000001' +
        '00' +
        '00' +
        '03' +
        '630001' +
        '08' +
        '8000000000000003' +
        '02' +
        '000000000000',
    );
    expect(crc32c(b.subarray(336, 370))).toBe(0xbef5cbb3);
    expect(b.length - 10 - footerLength).toBe(376);
    expect(built.crc).toBe(crc32c(b));
  });

  it('the Bloom filter has no false negatives and about 1 % false positives', () => {
    const bloom = BloomFilter.forKeys(20_000);
    for (let i = 0; i < 20_000; i++) bloom.add(i * 3);
    for (let i = 0; i < 20_000; i++) expect(bloom.mayContain(i * 3)).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 20_000; i++) if (bloom.mayContain(i * 3 + 1)) falsePositives++;
    expect(falsePositives / 20_000).toBeLessThan(0.03);
    const strings = BloomFilter.forKeys(1000);
    for (let i = 0; i < 1000; i++) strings.add(`k${i}`);
    for (let i = 0; i < 1000; i++) expect(strings.mayContain(`k${i}`)).toBe(true);
    expect(BloomFilter.decode(strings.encode()).mayContain('k7')).toBe(true);
  });

  it('Polars (a non-JS Arrow reader) reads a format-2 file: every row, in key order, and the footer metadata', () => {
    const pl = createRequire(import.meta.url)('nodejs-polars') as {
      readIPC(data: Buffer): { height: number; getColumn(n: string): { toArray(): unknown[] } };
    };
    const built = encodeTable(storeSchema, storeSchema.internal, keyEncoder, cutBlocks(storeSchema.internal, [sortedBatch(9_000)]), 1, 2);
    const df = pl.readIPC(Buffer.from(built.bytes));
    expect(df.height).toBe(9_000);
    const ids = df.getColumn('id').toArray().map(Number);
    expect(ids.slice(0, 3)).toEqual([0, 2, 4]);
    expect(ids[8_999]).toBe(17_998);
    expect(
      df
        .getColumn('_tombstone')
        .toArray()
        .every((t) => t === false),
    ).toBe(true);
    // The index is plain Arrow footer metadata: any reader sees the keys.
    const text = new TextDecoder('latin1').decode(built.bytes);
    for (const key of [META_GENERATIONS, META_BLOCKS, META_BLOOM]) expect(text).toContain(key);
  });

  it('a block decodes as views of its bytes, without copying, and equals what apache-arrow decodes', async () => {
    const { wide, batch } = wideBatch(3000);
    const n = batch.numRows;
    const built = encodeTable(wide, wide.internal, makeKeyEncoder(wide), cutBlocks(wide.internal, [batch]), 1, 1);
    const index = await readTableIndex('t', built.bytes.length, reader(built.bytes), wide.internal);
    const theirs = tableFromIPC(built.bytes);
    let row = 0;
    for (let i = 0; i < index.blocks.length; i++) {
      const info = index.blocks[i]!;
      const bytes = built.bytes.slice(info.offset, info.offset + info.length);
      const b = decodeBlock('t', index, i, bytes);
      // Every column's buffers are the block's own bytes: nothing was copied or re-encoded.
      for (const child of b.data.children) expect((child.values as Uint8Array | undefined)?.buffer ?? bytes.buffer).toBe(bytes.buffer);
      // Not 8-byte aligned (a storage that hands out a view into a larger buffer): copied once, same rows.
      const shifted = new Uint8Array(bytes.length + 3);
      shifted.set(bytes, 3);
      const moved = decodeBlock('t', index, i, shifted.subarray(3));
      for (let r = 0; r < b.numRows; r++, row++) {
        const expected = rowObject(theirs.batches[i]!, r);
        expect(rowObject(b, r)).toEqual(expected);
        expect(rowObject(moved, r)).toEqual(expected);
      }
    }
    expect(row).toBe(n);
  });
});
