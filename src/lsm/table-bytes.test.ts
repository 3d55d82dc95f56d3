// The table file a flush builds is byte for byte what main built before the table build was made
// cheaper (docs/impl.md §11, bench/results/HISTORY.md "Table file build: passes per byte"): for many
// schemas (every column type a store takes, nulls, empty strings, all-null columns, keyed and
// append-only, schema versions with added and dropped columns) and batch shapes (one row, many
// tiny batches, ≈1 MiB batches, blocks spanning batches, sliced batches), the SHA-256 of each
// table's blocks equals what main built of the same input (GOLDEN_BLOCKS, main c66d05d, format 2,
// whose whole files still hashed as main 99c8d28's), and the whole file is this build's format-3
// file (GOLDEN; both written to FILE by `TABLE_BYTES_PRINT=FILE npx vitest run
// src/lsm/table-bytes.test.ts`).

import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import {
  Binary,
  Bool,
  DateMillisecond,
  Field,
  FixedSizeBinary,
  Float32,
  Float64,
  Int8,
  Int32,
  Int64,
  LargeBinary,
  LargeUtf8,
  List,
  type RecordBatch,
  Schema,
  Struct,
  Table,
  tableToIPC,
  TimestampMillisecond,
  Uint16,
  Uint64,
  Utf8,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { makeKeyEncoder } from '../data/keys.js';
import { toBatches, tombstoneBatch } from '../data/rows.js';
import { encodeSchema, makeStoreSchema, type StoreSchema } from '../data/schema.js';
import { SchemaVersions } from '../format/schema-versions.js';
import { buildFlushFromWal, buildFlushTable } from './jobs.js';
import { readFooter } from '../format/table/footer.js';

function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

type Row = Record<string, unknown>;

const wide = new Schema([
  new Field('id', new Int64(), false),
  new Field('i8', new Int8(), true),
  new Field('i32', new Int32(), true),
  new Field('u16', new Uint16(), true),
  new Field('u64', new Uint64(), true),
  new Field('f32', new Float32(), true),
  new Field('f64', new Float64(), true),
  new Field('flag', new Bool(), true),
  new Field('s', new Utf8(), true),
  new Field('ls', new LargeUtf8(), true),
  new Field('bin', new Binary(), true),
  new Field('lbin', new LargeBinary(), true),
  new Field('fsb', new FixedSizeBinary(4), true),
  new Field('day', new DateMillisecond(), true),
  new Field('ts', new TimestampMillisecond(), true),
  new Field('list', new List(new Field('item', new Int32(), true)), true),
  new Field('st', new Struct([new Field('x', new Int32(), true), new Field('y', new Utf8(), true)]), true),
  new Field('nothing', new Utf8(), true),
]);

/** A row of `wide` (`nothing` always null; some empty strings and nulls). */
function wideRow(rnd: () => number, id: number, nulls: boolean): Row {
  const n = (): boolean => nulls && rnd() < 0.2;
  const str = (): string => 'abcdefghijklmnopqrstuvwxyz'.slice(0, Math.floor(rnd() * 27));
  const bytes = (k: number): Uint8Array => Uint8Array.from({ length: k }, () => Math.floor(rnd() * 256));
  return {
    id: BigInt(id),
    i8: n() ? null : Math.floor(rnd() * 256) - 128,
    i32: n() ? null : Math.floor(rnd() * 2 ** 31),
    u16: n() ? null : Math.floor(rnd() * 65536),
    u64: n() ? null : BigInt(Math.floor(rnd() * 2 ** 53)),
    f32: n() ? null : rnd(),
    f64: n() ? null : rnd() * 1e9,
    flag: n() ? null : rnd() < 0.5,
    s: n() ? null : str(),
    ls: n() ? null : str(),
    bin: n() ? null : bytes(Math.floor(rnd() * 9)),
    lbin: n() ? null : bytes(Math.floor(rnd() * 9)),
    fsb: n() ? null : bytes(4),
    day: n() ? null : new Date(Math.floor(rnd() * 1e12)),
    ts: n() ? null : Math.floor(rnd() * 1e12),
    list: n() ? null : Array.from({ length: Math.floor(rnd() * 4) }, () => Math.floor(rnd() * 100)),
    st: n() ? null : { x: Math.floor(rnd() * 100), y: str() },
    nothing: null,
  };
}

const narrow = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);
const byName = new Schema([
  new Field('name', new Utf8(), false),
  new Field('n', new Int32(), false),
  new Field('b', new LargeBinary(), true),
]);

/** Batches of `sizes[b]` rows each, rows from `row`, ids from 0 in order (`shuffle`: permuted within each batch). */
function batchesOf(storeSchema: StoreSchema, sizes: number[], row: (id: number) => Row, shuffle = false): RecordBatch[] {
  const out: RecordBatch[] = [];
  let id = 0;
  for (const size of sizes) {
    const rows = Array.from({ length: size }, (_, i) => row(shuffle ? id + ((i * 7919) % size) : id + i));
    id += size;
    out.push(...toBatches(rows, storeSchema));
  }
  return out;
}

interface Case {
  name: string;
  schema: Schema;
  key: string[];
  batches: (s: StoreSchema) => RecordBatch[];
}

const rep = (n: number, size: number): number[] => Array.from({ length: n }, () => size);

function cases(): Case[] {
  const out: Case[] = [];
  for (const key of [[], ['id']]) {
    const k = key.length > 0 ? 'keyed' : 'append';
    const rnd = lcg(key.length + 1);
    out.push(
      { name: `${k} wide, 1 row`, schema: wide, key, batches: (s) => batchesOf(s, [1], (id) => wideRow(rnd, id, true)) },
      { name: `${k} wide, 300 tiny batches`, schema: wide, key, batches: (s) => batchesOf(s, rep(300, 3), (id) => wideRow(rnd, id, true)) },
      {
        name: `${k} wide, blocks spanning batches`,
        schema: wide,
        key,
        batches: (s) => batchesOf(s, [700, 1, 1500, 33, 2500, 900], (id) => wideRow(rnd, id, true), true),
      },
      { name: `${k} wide, no nulls`, schema: wide, key, batches: (s) => batchesOf(s, rep(3, 2000), (id) => wideRow(rnd, id, false)) },
      {
        name: `${k} wide, sliced batches`,
        schema: wide,
        key,
        batches: (s) => batchesOf(s, rep(4, 1200), (id) => wideRow(rnd, id, true)).map((b, i) => b.slice(7 * i + 3, 1100 - i)),
      },
      {
        name: `${k} narrow, ≈1 MiB batches`,
        schema: narrow,
        key,
        batches: (s) =>
          batchesOf(s, rep(3, 40_000), (id) => ({ id: BigInt(id), value: id / 3, name: `name-${id}-${'x'.repeat(id % 13)}` }), true),
      },
      {
        name: `${k} narrow, all-null columns`,
        schema: narrow,
        key,
        batches: (s) => batchesOf(s, rep(5, 999), (id) => ({ id: BigInt(id), value: null, name: null })),
      },
    );
  }
  const rnd = lcg(9);
  out.push({
    name: 'keyed by name, repeats and deletes',
    schema: byName,
    key: ['name'],
    batches: (s) => {
      const bs = batchesOf(s, rep(20, 400), () => {
        const k = Math.floor(rnd() * 3000);
        return { name: `k${k}`, n: k, b: rnd() < 0.1 ? null : new Uint8Array(k % 7) };
      });
      const del = tombstoneBatch(
        Array.from({ length: 200 }, (_, i) => ({ name: `k${i * 13}` })),
        s,
      );
      return del ? [...bs.slice(0, 10), del, ...bs.slice(10)] : bs;
    },
  });
  return out;
}

const shaOf = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex').slice(0, 24);

/** Hashes of a table's bytes, whole and of its blocks (first block to the end of the end-of-stream marker). */
function sha(bytes: Uint8Array, blocks: Record<string, string>, name: string): string {
  const footerLength = new DataView(bytes.buffer, bytes.byteOffset).getInt32(bytes.length - 10, true);
  const f = readFooter(bytes.subarray(bytes.length - 10 - footerLength, bytes.length - 10));
  const first = f.blocks[0]?.offset ?? 8;
  const last = f.blocks.length > 0 ? f.blocks[f.blocks.length - 1]! : undefined;
  const end = (last ? last.offset + last.metaDataLength + last.bodyLength : first) + 8;
  blocks[name] = shaOf(bytes.subarray(first, end));
  return shaOf(bytes);
}

/** SHA-256 of each case's table, built in memory and from WAL payloads (`name` then `name (wal)`). */
async function hashes(blocks: Record<string, string>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const c of cases()) {
    const storeSchema = makeStoreSchema(c.schema, c.key);
    const enc = c.key.length > 0 ? makeKeyEncoder(storeSchema) : undefined;
    const batches = c.batches(storeSchema);
    const built = await buildFlushTable(storeSchema, enc, batches, 5);
    out[c.name] = sha(built.bytes, blocks, c.name);
    const versions = new SchemaVersions(storeSchema, 1, [{ version: 1, schema: encodeSchema(c.schema) }]);
    const entries = batches.map((b, i) => ({
      position: i + 1,
      epoch: 1,
      payload: tableToIPC(new Table(storeSchema.internal, [b]), 'stream'),
    }));
    const fromWal = await buildFlushFromWal(storeSchema, versions, entries, 5);
    out[`${c.name} (wal)`] = sha(fromWal.bytes, blocks, `${c.name} (wal)`);
    expect(fromWal.crc).toBe(built.crc);
  }
  // Schema versions: v1 (id, gone, kept), v2 (id, kept, added); entries of both, flushed in v2.
  for (const key of [[], ['id']]) {
    const v1 = new Schema([
      new Field('id', new Int64(), false),
      new Field('gone', new Utf8(), true),
      new Field('kept', new Float64(), true),
    ]);
    const v2 = new Schema([
      new Field('id', new Int64(), false),
      new Field('kept', new Float64(), true),
      new Field('added', new LargeUtf8(), true),
    ]);
    const s1 = makeStoreSchema(v1, key);
    const s2 = makeStoreSchema(v2, key);
    const versions = new SchemaVersions(s2, 2, [
      { version: 1, schema: encodeSchema(v1), writerEpoch: 1 },
      { version: 2, schema: encodeSchema(v2), writerEpoch: 2 },
    ]);
    const entries = [];
    for (let e = 0; e < 12; e++) {
      const old = e < 6;
      const rows = Array.from({ length: 300 + e }, (_, i) => {
        const id = BigInt((e * 997 + i * 31) % 4000);
        return old ? { id, gone: `g${i}`, kept: i / 7 } : { id, kept: i / 5, added: i % 3 === 0 ? null : `a${i}` };
      });
      const s = old ? s1 : s2;
      entries.push({ position: e + 1, epoch: old ? 1 : 2, payload: tableToIPC(new Table(s.internal, toBatches(rows, s)), 'stream') });
    }
    const built = await buildFlushFromWal(s2, versions, entries, 7);
    const name = `${key.length > 0 ? 'keyed' : 'append'} schema versions (wal)`;
    out[name] = sha(built.bytes, blocks, name);
  }
  return out;
}

/**
 * The tables' SHA-256 (first 24 hex digits) at table format 3 (an empty section directory in the
 * metadata, no sections: these stores declare no indexes), as this build writes them.
 */
const GOLDEN: Record<string, string> = {
  'append wide, 1 row': '354077cd5c3e400006c8176b',
  'append wide, 1 row (wal)': '354077cd5c3e400006c8176b',
  'append wide, 300 tiny batches': 'd0d98d73e61f89b9ddd04faa',
  'append wide, 300 tiny batches (wal)': 'd0d98d73e61f89b9ddd04faa',
  'append wide, blocks spanning batches': '594295477f654cbbea29ea5f',
  'append wide, blocks spanning batches (wal)': '594295477f654cbbea29ea5f',
  'append wide, no nulls': '1bfaae67af847b86b893ca43',
  'append wide, no nulls (wal)': '1bfaae67af847b86b893ca43',
  'append wide, sliced batches': '73b3d3e1bf2f8ae7a3b7c812',
  'append wide, sliced batches (wal)': '73b3d3e1bf2f8ae7a3b7c812',
  'append narrow, ≈1 MiB batches': '2aa8ef0f852d70af696dbe04',
  'append narrow, ≈1 MiB batches (wal)': '2aa8ef0f852d70af696dbe04',
  'append narrow, all-null columns': '2fe7e88aabe9bd40c1323f2f',
  'append narrow, all-null columns (wal)': '2fe7e88aabe9bd40c1323f2f',
  'keyed wide, 1 row': 'b734f09ab16ce15caea03d5a',
  'keyed wide, 1 row (wal)': 'b734f09ab16ce15caea03d5a',
  'keyed wide, 300 tiny batches': '19ce905a30907569780825f5',
  'keyed wide, 300 tiny batches (wal)': '19ce905a30907569780825f5',
  'keyed wide, blocks spanning batches': 'a3d6db5f35b555e0601d9cb6',
  'keyed wide, blocks spanning batches (wal)': 'a3d6db5f35b555e0601d9cb6',
  'keyed wide, no nulls': '7b4b020306a3c727ff533b83',
  'keyed wide, no nulls (wal)': '7b4b020306a3c727ff533b83',
  'keyed wide, sliced batches': 'f9bcf0b5f7d6af6563ee2d2c',
  'keyed wide, sliced batches (wal)': 'f9bcf0b5f7d6af6563ee2d2c',
  'keyed narrow, ≈1 MiB batches': '11819fe3bea519114ba867e4',
  'keyed narrow, ≈1 MiB batches (wal)': '11819fe3bea519114ba867e4',
  'keyed narrow, all-null columns': '8eda668474f0748945d21df1',
  'keyed narrow, all-null columns (wal)': '8eda668474f0748945d21df1',
  'keyed by name, repeats and deletes': '1914f8bbca34a466dc93f4be',
  'keyed by name, repeats and deletes (wal)': '1914f8bbca34a466dc93f4be',
  'append schema versions (wal)': '1a4a5499682613cbf027314f',
  'keyed schema versions (wal)': '0fcad6ad868b511fc5fc6515',
};

/**
 * SHA-256 of each table's blocks (first block to the end of the end-of-stream marker), as main
 * c66d05d built them at format 2 (its whole files still had main 99c8d28's hashes): format 3
 * changed the metadata around the blocks, not one byte of them.
 */
const GOLDEN_BLOCKS: Record<string, string> = {
  'append wide, 1 row': '82fad7e9a5e237f030ef3031',
  'append wide, 1 row (wal)': '82fad7e9a5e237f030ef3031',
  'append wide, 300 tiny batches': '5ee206b0d2b6ae1b136f1df9',
  'append wide, 300 tiny batches (wal)': '5ee206b0d2b6ae1b136f1df9',
  'append wide, blocks spanning batches': 'ae896f6ebe12923c7d7b7e9c',
  'append wide, blocks spanning batches (wal)': 'ae896f6ebe12923c7d7b7e9c',
  'append wide, no nulls': '3be4f764c08d8019d4382353',
  'append wide, no nulls (wal)': '3be4f764c08d8019d4382353',
  'append wide, sliced batches': '46bb9faf5117c8cf08e510ee',
  'append wide, sliced batches (wal)': '46bb9faf5117c8cf08e510ee',
  'append narrow, ≈1 MiB batches': 'a43b09a6e0911140489493ca',
  'append narrow, ≈1 MiB batches (wal)': 'a43b09a6e0911140489493ca',
  'append narrow, all-null columns': '0be0ed0941c103da89075ad5',
  'append narrow, all-null columns (wal)': '0be0ed0941c103da89075ad5',
  'keyed wide, 1 row': '03ab4ffb7cbaacb4475c5742',
  'keyed wide, 1 row (wal)': '03ab4ffb7cbaacb4475c5742',
  'keyed wide, 300 tiny batches': '3e360fc6d0c80d6ecd676dc0',
  'keyed wide, 300 tiny batches (wal)': '3e360fc6d0c80d6ecd676dc0',
  'keyed wide, blocks spanning batches': '8079f1c4d31294ee926a00ab',
  'keyed wide, blocks spanning batches (wal)': '8079f1c4d31294ee926a00ab',
  'keyed wide, no nulls': 'e078a887ec0e314ce4911f12',
  'keyed wide, no nulls (wal)': 'e078a887ec0e314ce4911f12',
  'keyed wide, sliced batches': '2e8e53e5516949cd8e48d338',
  'keyed wide, sliced batches (wal)': '2e8e53e5516949cd8e48d338',
  'keyed narrow, ≈1 MiB batches': '66615c6cb9f2b9fb43d9e1aa',
  'keyed narrow, ≈1 MiB batches (wal)': '66615c6cb9f2b9fb43d9e1aa',
  'keyed narrow, all-null columns': '59e6440b2dfe7b3d665ce431',
  'keyed narrow, all-null columns (wal)': '59e6440b2dfe7b3d665ce431',
  'keyed by name, repeats and deletes': 'a60ad78e32d9d5307d8111a9',
  'keyed by name, repeats and deletes (wal)': 'a60ad78e32d9d5307d8111a9',
  'append schema versions (wal)': 'e29d5aea02370fc5eb1463ff',
  'keyed schema versions (wal)': 'ee8c9627f5d737b48d9be050',
};

describe('table file bytes', () => {
  it('are what main built, for every schema and batch shape', { timeout: 120_000 }, async () => {
    const blocks: Record<string, string> = {};
    const got = await hashes(blocks);
    if (process.env.TABLE_BYTES_PRINT) writeFileSync(process.env.TABLE_BYTES_PRINT, JSON.stringify({ got, blocks }, null, 2));
    expect(blocks).toEqual(GOLDEN_BLOCKS);
    expect(got).toEqual(GOLDEN);
  });
});
