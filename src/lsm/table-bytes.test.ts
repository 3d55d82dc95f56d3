// The table file a flush builds is byte for byte what main built before the table build was made
// cheaper (docs/impl.md §11, bench/results/HISTORY.md "Table file build: passes per byte"): for many
// schemas (every column type a store takes, nulls, empty strings, all-null columns, keyed and
// append-only, schema versions with added and dropped columns) and batch shapes (one row, many
// tiny batches, ≈1 MiB batches, blocks spanning batches, sliced batches), the SHA-256 of each
// table equals the one main 99c8d28 built of the same input (GOLDEN, written to FILE by
// `TABLE_BYTES_PRINT=FILE npx vitest run src/lsm/table-bytes.test.ts` on that commit).

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

const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex').slice(0, 24);

/** SHA-256 of each case's table, built in memory and from WAL payloads (`name` then `name (wal)`). */
async function hashes(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const c of cases()) {
    const storeSchema = makeStoreSchema(c.schema, c.key);
    const enc = c.key.length > 0 ? makeKeyEncoder(storeSchema) : undefined;
    const batches = c.batches(storeSchema);
    const built = await buildFlushTable(storeSchema, enc, batches, 5);
    out[c.name] = sha(built.bytes);
    const versions = new SchemaVersions(storeSchema, 1, [{ version: 1, schema: encodeSchema(c.schema) }]);
    const entries = batches.map((b, i) => ({
      position: i + 1,
      epoch: 1,
      payload: tableToIPC(new Table(storeSchema.internal, [b]), 'stream'),
    }));
    const fromWal = await buildFlushFromWal(storeSchema, versions, entries, 5);
    out[`${c.name} (wal)`] = sha(fromWal.bytes);
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
    out[`${key.length > 0 ? 'keyed' : 'append'} schema versions (wal)`] = sha(built.bytes);
  }
  return out;
}

/** The tables' SHA-256 (first 24 hex digits) as main 99c8d28 built them. */
const GOLDEN: Record<string, string> = {
  'append wide, 1 row': '69ecf82b385bf1bfea13bcb1',
  'append wide, 1 row (wal)': '69ecf82b385bf1bfea13bcb1',
  'append wide, 300 tiny batches': '9bc9a2519285021c62081826',
  'append wide, 300 tiny batches (wal)': '9bc9a2519285021c62081826',
  'append wide, blocks spanning batches': '3af4f47affaf5fb92e30d785',
  'append wide, blocks spanning batches (wal)': '3af4f47affaf5fb92e30d785',
  'append wide, no nulls': 'c444edbd5c5e0e687f75ba4e',
  'append wide, no nulls (wal)': 'c444edbd5c5e0e687f75ba4e',
  'append wide, sliced batches': 'fd4670866901ace963b0b8d6',
  'append wide, sliced batches (wal)': 'fd4670866901ace963b0b8d6',
  'append narrow, ≈1 MiB batches': '1d4a32503947233d185c9ffd',
  'append narrow, ≈1 MiB batches (wal)': '1d4a32503947233d185c9ffd',
  'append narrow, all-null columns': 'db7f596869faee232bc04c27',
  'append narrow, all-null columns (wal)': 'db7f596869faee232bc04c27',
  'keyed wide, 1 row': '93c3b25e699d393ceae59260',
  'keyed wide, 1 row (wal)': '93c3b25e699d393ceae59260',
  'keyed wide, 300 tiny batches': '6a9f394f6ebdb37c49f27938',
  'keyed wide, 300 tiny batches (wal)': '6a9f394f6ebdb37c49f27938',
  'keyed wide, blocks spanning batches': '841aaf2b23005adfb2ef0898',
  'keyed wide, blocks spanning batches (wal)': '841aaf2b23005adfb2ef0898',
  'keyed wide, no nulls': 'b37813983de2eb345d95d0c1',
  'keyed wide, no nulls (wal)': 'b37813983de2eb345d95d0c1',
  'keyed wide, sliced batches': '108a3bdb910bbce0b4cd0771',
  'keyed wide, sliced batches (wal)': '108a3bdb910bbce0b4cd0771',
  'keyed narrow, ≈1 MiB batches': '85d6d31f93934b67f2d61526',
  'keyed narrow, ≈1 MiB batches (wal)': '85d6d31f93934b67f2d61526',
  'keyed narrow, all-null columns': '103594fd6a0b1951511acce3',
  'keyed narrow, all-null columns (wal)': '103594fd6a0b1951511acce3',
  'keyed by name, repeats and deletes': '17c4805ee3d394f63808539b',
  'keyed by name, repeats and deletes (wal)': '17c4805ee3d394f63808539b',
  'append schema versions (wal)': 'c7c9e4497161d69c667ddf19',
  'keyed schema versions (wal)': 'fdac21939c4f840768b3a276',
};

describe('table file bytes', () => {
  it('are what main built, for every schema and batch shape', { timeout: 120_000 }, async () => {
    const got = await hashes();
    if (process.env.TABLE_BYTES_PRINT) writeFileSync(process.env.TABLE_BYTES_PRINT, JSON.stringify(got, null, 2));
    expect(got).toEqual(GOLDEN);
  });
});
