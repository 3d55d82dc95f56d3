// Outside tester (issue 23): keyed flush builds gathered straight from the memtable's
// batches in stretches, run copies, ranged Bloom inserts (docs/impl.md §3), attacked through the
// public API only and checked against a plain JS model. Overwrites and deletes of the same keys
// across puts of many sizes (Arrow batches, sliced batches, plain rows), keys repeated inside one
// put, nulls, empty/short/long strings and binary, Int32, string and two-column keys, in random,
// ascending and mostly-ascending orders; flushed at random points, compacted, closed and reopened
// on NodeFileStorage. scan, scanBatches (paged with `after`), get and getMany must all give
// exactly the newest rows.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Binary,
  Int64,
  LargeUtf8,
  List,
  TimestampMillisecond,
  FixedSizeBinary,
  Bool,
  type DataType,
  Field,
  Float64,
  Int32,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { MemWal } from '../src/index.js';
import { NodeFileStorage } from '../src/node.js';

const quiet = { warn: () => {} };
const root = mkdtempSync(join(tmpdir(), 'memwal-keyed-flush-model-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A small seeded PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Row = Record<string, unknown>;

interface Case {
  name: string;
  schema: Schema;
  primaryKey: string[];
  key(i: number): Row;
  value(r: () => number, i: number, version: number): Row;
}

const str = (r: () => number, version: number): string | null => {
  const x = r();
  if (x < 0.1) return null;
  if (x < 0.2) return '';
  if (x < 0.7) return `v${version}`;
  return `long-${version}-${'x'.repeat(Math.floor(r() * 200))}`;
};
const bin = (r: () => number, version: number): Uint8Array | null => {
  const x = r();
  if (x < 0.15) return null;
  if (x < 0.25) return new Uint8Array(0);
  const n = x < 0.8 ? 1 + (version % 5) : 40 + Math.floor(r() * 60);
  return Uint8Array.from({ length: n }, (_, k) => (version * 7 + k) & 0xff);
};

const cases: Case[] = [
  {
    name: 'an Int32 key, nullable string, binary, float and bool values',
    schema: new Schema([
      new Field('id', new Int32(), false),
      new Field('s', new Utf8(), true),
      new Field('b', new Binary(), true),
      new Field('n', new Float64(), true),
      new Field('f', new Bool(), true),
    ]),
    primaryKey: ['id'],
    key: (i) => ({ id: i }),
    value: (r, _i, v) => ({ s: str(r, v), b: bin(r, v), n: r() < 0.2 ? null : v + 0.5, f: r() < 0.2 ? null : v % 2 === 0 }),
  },
  {
    name: 'a string key (short and long keys), a nullable string value',
    schema: new Schema([new Field('k', new Utf8(), false), new Field('s', new Utf8(), true)]),
    primaryKey: ['k'],
    key: (i) => ({ k: i % 3 === 0 ? `key-${String(i).padStart(6, '0')}-${'k'.repeat(i % 50)}` : `key-${String(i).padStart(6, '0')}` }),
    value: (r, _i, v) => ({ s: str(r, v) }),
  },
  {
    name: 'a two-column key (string, Int32), binary and string values',
    schema: new Schema([
      new Field('a', new Utf8(), false),
      new Field('c', new Int32(), false),
      new Field('b', new Binary(), true),
      new Field('s', new Utf8(), true),
    ]),
    primaryKey: ['a', 'c'],
    key: (i) => ({ a: `g${Math.floor(i / 7)}`, c: i % 7 }),
    value: (r, _i, v) => ({ b: bin(r, v), s: str(r, v) }),
  },
  {
    name: 'a string key of mixed scripts (ASCII, U+FF01, emoji, empty), UTF-8 and UTF-16 orders disagreeing',
    schema: new Schema([new Field('k', new Utf8(), false), new Field('s', new Utf8(), true)]),
    primaryKey: ['k'],
    key: (i) => ({
      k: i === 0 ? '' : `${['a', '\uff01', '\u{1f600}', '\u00e9', 'Z', '\ud7ff'][i % 6]}${i}${['', '\u{1f600}', '\uff01'][i % 3]}`,
    }),
    value: (r, _i, v) => ({ s: str(r, v) }),
  },
  {
    name: 'a binary key (empty, short, with zero bytes), a string value',
    schema: new Schema([new Field('k', new Binary(), false), new Field('s', new Utf8(), true)]),
    primaryKey: ['k'],
    key: (i) => ({ k: i === 0 ? new Uint8Array(0) : Uint8Array.from([i & 0xff, 0, (i >> 8) & 0xff, ...(i % 2 ? [255] : [])]) }),
    value: (r, _i, v) => ({ s: str(r, v) }),
  },
  {
    name: 'an Int32 key around zero and the extremes, a nullable string value',
    schema: new Schema([new Field('id', new Int32(), false), new Field('s', new Utf8(), true)]),
    primaryKey: ['id'],
    key: (i) => ({ id: i % 4 === 0 ? -2147483648 + i : i % 4 === 1 ? 2147483647 - i : i % 4 === 2 ? -i : i }),
    value: (r, _i, v) => ({ s: str(r, v) }),
  },
  {
    name: 'an Int64 key, LargeUtf8, timestamp, fixed-size binary, list and struct values',
    schema: new Schema([
      new Field('id', new Int64(), false),
      new Field('ls', new LargeUtf8(), true),
      new Field('ts', new TimestampMillisecond(), true),
      new Field('fb', new FixedSizeBinary(3), true),
      new Field('li', new List(new Field('item', new Int32(), true)), true),
      new Field('st', new Struct([new Field('a', new Int32(), true), new Field('t', new Utf8(), true)]), true),
    ]),
    primaryKey: ['id'],
    key: (i) => ({ id: BigInt(i) * 3_000_000_000n - 5n }),
    value: (r, _i, v) => ({
      ls: str(r, v),
      ts: r() < 0.2 ? null : 1_700_000_000_000 + v,
      fb: r() < 0.2 ? null : Uint8Array.from([v & 0xff, 1, 2]),
      li: r() < 0.2 ? null : Array.from({ length: v % 4 }, (_, k) => v + k),
      st: r() < 0.2 ? null : { a: v, t: r() < 0.3 ? null : `t${v}` },
    }),
  },
];

/** Rows as an Arrow batch of `schema` (so a put can be sliced), every column typed by the schema. */
function arrowBatch(schema: Schema, rows: Row[]): RecordBatch {
  const children = schema.fields.map(
    (f) => vectorFromArray(rows.map((row) => row[f.name] ?? null) as never[], f.type as DataType).data[0]!,
  );
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children }));
}

const norm = (v: unknown): unknown => {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array) return `bin:${Array.from(v).join(',')}`;
  if (typeof v === 'bigint') return String(v);
  if (v instanceof Date) return v.getTime();
  if (Array.isArray(v)) return v.map(norm);
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<unknown>, norm);
  if (typeof v === 'object') {
    const o = v as { toJSON?: () => unknown };
    if (typeof o.toJSON === 'function') return norm(o.toJSON()); // Arrow vectors (arrays) and struct rows (objects)
    const plain = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(plain)
        .sort()
        .map((k) => [k, norm(plain[k])]),
    );
  }
  return v;
};
const normRow = (schema: Schema, row: Row | undefined): Row | undefined => {
  if (row === undefined) return undefined;
  const out: Row = {};
  for (const f of schema.fields) out[f.name] = norm(row[f.name]);
  return out;
};

type Order = 'random' | 'ascending' | 'mostly-ascending';

async function run(c: Case, order: Order, seed: number): Promise<string[]> {
  const r = rng(seed);
  const keyCount = 3000;
  const model = new Map<number, Row>();
  const storage = new NodeFileStorage(root);
  const name = `a6-${c.primaryKey.join('-')}-${order}-${seed}`;
  const opts = {
    name,
    schema: c.schema,
    primaryKey: c.primaryKey,
    storage,
    logger: quiet,
    maxMemtableRows: 1500 + Math.floor(r() * 3000),
  };
  let db = await MemWal.open(opts);
  let cursor = 0;
  let version = 0;
  const nextKey = (): number => {
    if (order === 'random') return Math.floor(r() * keyCount);
    if (order === 'ascending') return cursor++ % keyCount;
    return r() < 0.1 ? Math.floor(r() * keyCount) : cursor++ % keyCount;
  };
  const problems: string[] = [];
  const check = async (when: string): Promise<void> => {
    const ids = [...model.keys()].sort((x, y) => x - y);
    const expected = new Map(ids.map((i) => [JSON.stringify(normRow(c.schema, { ...c.key(i) })), normRow(c.schema, model.get(i))]));
    const scanned = (await db.scan()).toArray().map((row) => normRow(c.schema, row.toJSON() as Row)!);
    if (scanned.length !== expected.size) problems.push(`${when}: scan ${scanned.length} rows, model ${expected.size}`);
    const seen = new Set<string>();
    for (const row of scanned) {
      const k = JSON.stringify(normRow(c.schema, Object.fromEntries(c.primaryKey.map((p) => [p, row[p]]))));
      if (seen.has(k)) problems.push(`${when}: scan repeats ${k}`);
      seen.add(k);
      const want = expected.get(k);
      if (!want) problems.push(`${when}: scan has ${k}, deleted or never put`);
      else if (JSON.stringify(want) !== JSON.stringify(row))
        problems.push(`${when}: scan ${k} = ${JSON.stringify(row)}, model ${JSON.stringify(want)}`);
      if (problems.length > 20) return;
    }
    // paged scanBatches with `after`
    let after: Row | undefined;
    let paged = 0;
    for (;;) {
      let last: Row | undefined;
      let got = 0;
      for await (const b of db.scanBatches({ limit: 337, ...(after ? { after } : {}) })) {
        for (const row of b.toArray()) {
          last = row.toJSON() as Row;
          got++;
        }
      }
      paged += got;
      if (got === 0 || !last) break;
      after = Object.fromEntries(c.primaryKey.map((p) => [p, last![p]]));
      if (paged > expected.size + 10) break;
    }
    if (paged !== expected.size) problems.push(`${when}: scanBatches paged ${paged} rows, model ${expected.size}`);
    const probe = Array.from({ length: 600 }, () => Math.floor(r() * (keyCount + 50)));
    const many = await db.getMany(probe.map((i) => c.key(i) as never));
    for (let k = 0; k < probe.length; k++) {
      const want = model.has(probe[k]!) ? normRow(c.schema, model.get(probe[k]!)) : undefined;
      const got = normRow(c.schema, many[k] as Row | undefined);
      if (JSON.stringify(want) !== JSON.stringify(got))
        problems.push(`${when}: getMany ${JSON.stringify(c.key(probe[k]!))} = ${JSON.stringify(got)}, model ${JSON.stringify(want)}`);
      if (problems.length > 20) return;
    }
    for (const i of probe.slice(0, 60)) {
      const want = model.has(i) ? normRow(c.schema, model.get(i)) : undefined;
      const got = normRow(c.schema, (await db.get(c.key(i) as never)) as Row | undefined);
      if (JSON.stringify(want) !== JSON.stringify(got))
        problems.push(`${when}: get ${JSON.stringify(c.key(i))} = ${JSON.stringify(got)}, model ${JSON.stringify(want)}`);
    }
  };

  for (let step = 0; step < 120 && problems.length === 0; step++) {
    const x = r();
    if (x < 0.12) {
      // a delete of some keys (some absent, some repeated)
      const n = 1 + Math.floor(r() * 80);
      const keys = Array.from({ length: n }, nextKey);
      await db.delete(keys.map((i) => c.key(i) as never));
      for (const i of keys) model.delete(i);
      continue;
    }
    const size = r() < 0.3 ? 1 + Math.floor(r() * 5) : r() < 0.8 ? 20 + Math.floor(r() * 300) : 500 + Math.floor(r() * 1500);
    const ids = Array.from({ length: size }, nextKey);
    // a key repeated within the put
    if (size > 4 && r() < 0.4) for (let k = 0; k < 3; k++) ids[Math.floor(r() * size)] = ids[Math.floor(r() * size)]!;
    const rows = ids.map((i) => ({ ...c.key(i), ...c.value(r, i, ++version) }));
    const how = r();
    if (how < 0.3) {
      await db.put(rows as never);
      for (let k = 0; k < rows.length; k++) model.set(ids[k]!, rows[k]!);
    } else if (how < 0.6 && size > 10) {
      // a slice of a bigger batch: only the slice is put
      const pad = Math.floor(r() * 20);
      const lead = Array.from({ length: pad }, () => ({ ...c.key(keyCount + 100), ...c.value(r, 0, 0) }));
      const whole = arrowBatch(c.schema, [...lead, ...rows, ...lead]);
      await db.put(whole.slice(pad, pad + rows.length));
      for (let k = 0; k < rows.length; k++) model.set(ids[k]!, rows[k]!);
    } else {
      await db.put(arrowBatch(c.schema, rows));
      for (let k = 0; k < rows.length; k++) model.set(ids[k]!, rows[k]!);
    }
    const y = r();
    if (y < 0.1) {
      await db.forceSealActive();
      await db.waitForFlushDrain();
    } else if (y < 0.13) {
      await db.compact();
    } else if (y < 0.16) {
      await check(`step ${step}`);
    } else if (y < 0.18) {
      await db.close();
      db = await MemWal.open(opts);
    }
  }
  await check('before close');
  await db.forceSealActive();
  await db.waitForFlushDrain();
  await check('flushed');
  await db.close();
  db = await MemWal.open(opts);
  await check('reopened');
  await db.compact();
  await check('compacted');
  await db.close();
  await MemWal.destroy(name, { storage });
  return problems;
}

describe('keyed flush builds against a plain JS model', () => {
  for (const c of cases)
    for (const order of ['random', 'ascending', 'mostly-ascending'] as const)
      it(`${c.name}, keys ${order}: every read gives exactly the newest rows`, { timeout: 120_000 }, async () => {
        const problems: string[] = [];
        for (const seed of [1, 2]) problems.push(...(await run(c, order, seed)));
        expect(problems).toEqual([]);
      });
});
