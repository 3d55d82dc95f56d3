// What stores write lands in Lance as they wrote it, whatever their keys and nested columns: a
// LanceSink fed by real memwal stores (in-process drain), checked against scan(), and stores whose
// columns differ sharing one table. Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, FixedSizeList, Float32, Float64, Int64, List, Schema, Struct, Utf8 } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import type { WalEntry } from '../engine/api.js';
import { drain } from '../drain/drain.js';
import { NodeFileStorage } from '../node.js';
import { LanceSink } from './sink.js';
import { lanceRows, scanRows } from './testkit.test-util.js';

const dirs: string[] = [];
const tempDir = (tag: string): string => {
  const d = mkdtempSync(join(tmpdir(), `memwal-lance-data-${tag}-`));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const quiet = { warn: () => undefined };

async function openStore(root: string, name: string, schema: Schema, primaryKey: string[]): Promise<MemWal> {
  return MemWal.open({ name, schema, primaryKey, storage: new NodeFileStorage(root), logger: quiet });
}

async function entries(store: MemWal, from = 1): Promise<WalEntry[]> {
  const out: WalEntry[] = [];
  for await (const e of store.tail(from)) out.push(e);
  return out;
}

/** A nullable struct whose fields are not nullable: a point that is there whole or not at all. */
const point = new Struct([new Field('lat', new Float64(), false), new Field('lon', new Float64(), false)]);
const withPoint = new Schema([new Field('id', new Int64(), false), new Field('loc', point, true)]);
/** Every nested kind whose inner field is not nullable. */
const nestedKinds = new Schema([...withPoint.fields, new Field('tags', new List(new Field('item', new Utf8(), false)), true)]);
const plain = new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]);

describe('keys', () => {
  it('two composite keys whose parts hold "\\u0000" stay two rows: Lance equals scan()', async () => {
    const schema = new Schema([new Field('a', new Utf8(), false), new Field('b', new Utf8(), false), new Field('v', new Int64(), true)]);
    const store = await openStore(tempDir('store'), 'pairs', schema, ['a', 'b']);
    const uri = tempDir('lance');
    const sink = new LanceSink({ uri, table: 'pairs', primaryKey: ['a', 'b'] });
    const d = drain(store, { sink, storeId: 'pairs', logger: quiet });
    const { position } = await store.put([
      { a: 'x\u0000', b: 'y', v: 1 },
      { a: 'x', b: '\u0000y', v: 2 },
    ]);
    await d.waitForApplied(position);
    expect(await scanRows(store, schema)).toHaveLength(2);
    expect(await lanceRows(uri, 'pairs', 'pairs', schema)).toEqual(await scanRows(store, schema));
    await d.stop();
    await store.close();
    await sink.close();
  });
});

describe('nested columns whose fields are not nullable', () => {
  it('a store that puts a null struct or list drains it: Lance reads null there, as scan() does', async () => {
    const store = await openStore(tempDir('store'), 'places', nestedKinds, ['id']);
    const uri = tempDir('lance');
    const sink = new LanceSink({ uri, table: 'places', primaryKey: ['id'] });
    const d = drain(store, { sink, storeId: 'places', logger: quiet });
    await store.put([{ id: 1, loc: { lat: 1.5, lon: 2.5 }, tags: ['a', 'b'] }]);
    const { position } = await store.put([
      { id: 2, loc: null, tags: null },
      { id: 3, loc: { lat: 0, lon: 0 }, tags: [] },
    ]);
    await d.waitForApplied(position);
    expect(await lanceRows(uri, 'places', 'places', nestedKinds)).toEqual(await scanRows(store, nestedKinds));
    await d.stop();
    await store.close();
    await sink.close();
  });

  it('a store without a nested column the table has still drains: its rows read null there', async () => {
    const root = tempDir('store');
    const uri = tempDir('lance');
    const sink = new LanceSink({ uri, table: 'mixed', primaryKey: ['id'] });
    const first = await openStore(root, 'first', withPoint, ['id']);
    await first.put([{ id: 1, loc: { lat: 1, lon: 2 } }]);
    await sink.apply('first', await entries(first)); // creates the table with loc
    const other = await openStore(root, 'other', plain, ['id']);
    await other.put([{ id: 7, name: 'n' }]);
    await sink.apply('other', await entries(other));
    const both = new Schema([...plain.fields, withPoint.fields[1]!]);
    expect(await lanceRows(uri, 'mixed', 'other', both)).toEqual(['["7","n",null]']);
    await Promise.all([first.close(), other.close()]);
    await sink.close();
  });

  it('a store that would add a nested column with non-nullable fields to an existing table is refused with InvalidArgument, changing nothing', async () => {
    const root = tempDir('store');
    const uri = tempDir('lance');
    const sink = new LanceSink({ uri, table: 'late', primaryKey: ['id'] });
    const first = await openStore(root, 'first', plain, ['id']);
    await first.put([{ id: 1, name: 'a' }]);
    await sink.apply('first', await entries(first));
    const columns = async () => (await (await sink.table())!.schema()).fields.map((f) => f.name);
    const before = await columns();
    const late = await openStore(root, 'late', withPoint, ['id']);
    await late.put([{ id: 2, loc: { lat: 1, lon: 2 } }]);
    await expect(sink.apply('late', await entries(late))).rejects.toMatchObject({ code: 'InvalidArgument', message: /loc/ });
    expect(await columns()).toEqual(before);
    await Promise.all([first.close(), late.close()]);
    await sink.close();
  });
});

describe('fixed-size lists (vectors)', () => {
  /** An embedding as apps declare it: `new Field('item', new Float32())` is not nullable. */
  const vectors = new Schema([
    new Field('id', new Int64(), false),
    new Field('vec', new FixedSizeList(3, new Field('item', new Float32())), true),
  ]);

  it('a store with a vector column whose items are not nullable drains every put, not only the first', async () => {
    const store = await openStore(tempDir('store'), 'vectors', vectors, ['id']);
    const uri = tempDir('lance');
    const sink = new LanceSink({ uri, table: 'vectors', primaryKey: ['id'] });
    const d = drain(store, { sink, storeId: 'vectors', logger: quiet });
    await d.waitForApplied((await store.put([{ id: 1, vec: [1, 2, 3] }])).position);
    const { position } = await store.put([
      { id: 2, vec: [4, 5, 6] },
      { id: 3, vec: null },
    ]);
    await d.waitForApplied(position);
    expect(await lanceRows(uri, 'vectors', 'vectors', vectors)).toEqual(await scanRows(store, vectors));
    await d.stop();
    await store.close();
    await sink.close();
  });

  it('with an operator’s schema holding a vector column, stores drain after the table exists', async () => {
    const root = tempDir('store');
    const uri = tempDir('lance');
    const sink = new LanceSink({ uri, table: 'owned', primaryKey: ['id'], schema: vectors });
    for (const name of ['a', 'b']) {
      const store = await openStore(root, name, vectors, ['id']);
      await store.put([{ id: 1, vec: [1, 2, 3] }]);
      await sink.apply(name, await entries(store));
      expect(await lanceRows(uri, 'owned', name, vectors)).toEqual(await scanRows(store, vectors));
      await store.close();
    }
    await sink.close();
  });
});
