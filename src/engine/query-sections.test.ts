// Queries over table files' index sections (SPEC §17 "Maintaining", docs/format.md §8 "Index
// sections"): flushes and compactions write a section per declared index, queries read it instead
// of building one from the file's rows, a file whose section was built for another definition of
// the index (or that has none: format 2) is read from its rows — and in every case a query returns
// the newest version of each row across memtable, level 0 and level 1, never a deleted one.

import { cp, mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, Float64, Int32, List, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { NodeFileStorage } from '../node.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MemWal } from './memwal.js';

const quiet = { warn: () => undefined };
const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('title', new Utf8(), true),
  new Field('qty', new Float64(), true),
  new Field('tags', new List(new Field('item', new Utf8(), true)), true),
]);
const indexes = { byTitle: { column: 'title' }, byTag: { column: 'tags', multiEntry: true }, byQtyTitle: { columns: ['qty', 'title'] } };
type Row = { id: number; title: string | null; qty: number | null; tags: string[] | null };

/** The fixture's rows (test/fixtures/format-2-indexed/make-fixture.ts.txt): version `v` of id `id`. */
const row = (id: number, v: number): Row => ({
  id,
  title: `t${(id + v) % 5}`,
  qty: (id * v) % 7,
  tags: [`g${id % 3}`, `g${(id + v) % 4}`],
});

/** Ids of `model`'s live rows an index's equals-filter returns, in index order (ties by id). */
function byTitle(model: Map<number, Row>, title: string): number[] {
  return [...model.values()]
    .filter((r) => r.title === title)
    .map((r) => r.id)
    .sort((a, b) => a - b);
}
function byTag(model: Map<number, Row>, tag: string): number[] {
  return [...model.values()]
    .filter((r) => r.tags?.includes(tag))
    .map((r) => r.id)
    .sort((a, b) => a - b);
}
/** `byQtyTitle` with qty in [lo, hi): (qty, title, id) order. */
function byQty(model: Map<number, Row>, lo: number, hi: number): number[] {
  return [...model.values()]
    .filter((r) => r.qty !== null && r.title !== null && r.qty >= lo && r.qty < hi)
    .sort((a, b) => a.qty! - b.qty! || (a.title! < b.title! ? -1 : a.title! > b.title! ? 1 : a.id - b.id))
    .map((r) => r.id);
}

/** Every query kind the test asks, against the model. */
async function check(w: MemWal, model: Map<number, Row>, where: string): Promise<void> {
  const ids = (rows: Record<string, unknown>[]): number[] => rows.map((r) => r.id as number);
  for (let t = 0; t < 5; t++) {
    expect(ids(await w.query('byTitle', { equals: `t${t}` })), `${where}: byTitle t${t}`).toEqual(byTitle(model, `t${t}`));
    expect(ids(await w.query('byTitle', { equals: `t${t}`, reverse: true })), `${where}: byTitle t${t} reverse`).toEqual(
      byTitle(model, `t${t}`).reverse(),
    );
  }
  for (let g = 0; g < 4; g++) {
    expect(ids(await w.query('byTag', { equals: `g${g}` })), `${where}: byTag g${g}`).toEqual(byTag(model, `g${g}`));
    expect(await w.count('byTag', { equals: `g${g}` }), `${where}: count byTag g${g}`).toBe(byTag(model, `g${g}`).length);
  }
  expect(ids(await w.query('byQtyTitle', { range: { gte: 2, lt: 5 } })), `${where}: byQtyTitle [2, 5)`).toEqual(byQty(model, 2, 5));
  // Every returned row is the model's newest version, whole.
  for (const r of (await w.query('byTitle', { prefix: 't' })) as Row[]) expect(r, `${where}: row ${r.id}`).toEqual(model.get(r.id));
}

const indexStats = async (w: MemWal) => (await w.indexStats()).byTitle!;

describe('index sections of table files', () => {
  it('flushes and compactions write them, queries read them, and overwrites and deletes across tiers are never returned stale', async () => {
    const storage = new MemoryStorage();
    const opts = { name: 's', schema, primaryKey: ['id'], storage, indexes, logger: quiet } as never;
    const model = new Map<number, Row>();
    let w = await MemWal.open(opts);
    const put = async (rows: Row[]): Promise<void> => {
      await w.put(rows);
      for (const r of rows) model.set(r.id, r);
    };
    const del = async (ids: number[]): Promise<void> => {
      await w.delete(ids.map((id) => ({ id })));
      for (const id of ids) model.delete(id);
    };
    const seal = async (): Promise<void> => {
      await w.forceSealActive();
      await w.waitForFlushDrain();
    };
    await put(Array.from({ length: 80 }, (_, i) => row(i, 0)));
    await seal();
    await w.compact(); // level 1
    await put(Array.from({ length: 30 }, (_, i) => row(i * 2, 1))); // overwrites into level 0
    await del([1, 3, 5, 40]);
    await seal();
    await put([row(0, 2), row(7, 2), row(100, 2)]); // the memtable over both
    await del([2, 9]);
    await check(w, model, 'memtable over level 0 over level 1');
    let s = await indexStats(w);
    expect(s.tableSectionsBuilt).toBe(0);
    expect(s.tableSectionsRead).toBeGreaterThan(0);

    await w.close();
    w = await MemWal.open(opts);
    await check(w, model, 'after reopen');
    s = await indexStats(w);
    expect([s.tableSectionsRead! > 0, s.tableSectionsBuilt]).toEqual([true, 0]);

    await put([row(2, 3), row(11, 3)]);
    await del([0]);
    await seal();
    await w.compact(); // every file into level 1: the outputs carry their sections
    await check(w, model, 'after compaction');
    s = await indexStats(w);
    expect([s.tableSectionsRead! > 0, s.tableSectionsBuilt]).toEqual([true, 0]);
    expect(s.tableEntries).toBe([...model.values()].filter((r) => r.title !== null).length);
    await w.close();
  });

  it('a file whose section was built for another definition of the index is read from its rows', async () => {
    const storage = new MemoryStorage();
    const model = new Map<number, Row>();
    const rows = Array.from({ length: 50 }, (_, i) => row(i, 0));
    for (const r of rows) model.set(r.id, r);
    const w = await MemWal.open({ name: 's', schema, primaryKey: ['id'], storage, indexes, logger: quiet } as never);
    await w.put(rows);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.close();
    // The same names, other columns: byTitle now orders by tags' elements, byTag by title.
    const swapped = {
      byTitle: { column: 'tags', multiEntry: true },
      byTag: { column: 'title' },
      byQtyTitle: { columns: ['title', 'qty'] },
    };
    // The background build (index-build.ts) cannot write meanwhile: the file stays as it was.
    const held = new FaultInjectingStorage(storage);
    held.failNext('tableWrite', 1_000);
    const again = await MemWal.open({ name: 's', schema, primaryKey: ['id'], storage: held, indexes: swapped, logger: quiet } as never);
    const ids = (rs: Record<string, unknown>[]): number[] => rs.map((r) => r.id as number);
    expect(ids(await again.query('byTitle', { equals: 'g1' }))).toEqual(byTag(model, 'g1'));
    expect(ids(await again.query('byTag', { equals: 't3' }))).toEqual(byTitle(model, 't3'));
    expect(await again.count('byQtyTitle', { equals: ['t2'] })).toBe(byTitle(model, 't2').length);
    const s = await again.indexStats();
    expect([s.byTitle!.tableSectionsRead, s.byTitle!.tableSectionsBuilt]).toEqual([0, 1]);
    await again.close();
  });

  it('a store of format-2 files (no sections) queries right from their rows, and compaction writes them in format 3 with sections', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-sections-'));
    await cp(join(import.meta.dirname, '../../test/fixtures/format-2-indexed'), root, { recursive: true });
    // The fixture's model (make-fixture.ts.txt).
    const model = new Map<number, Row>();
    for (let i = 0; i < 60; i++) model.set(i, row(i, 0));
    for (let i = 0; i < 20; i++) model.set(i * 3, row(i * 3, 1));
    for (const id of [1, 4, 30]) model.delete(id);
    model.set(2, row(2, 2));
    model.set(61, row(61, 2));
    model.delete(3);
    // The background build (index-build.ts) cannot write until the stats below are read.
    const storage = new FaultInjectingStorage(new NodeFileStorage(root));
    storage.failNext('tableWrite', 1_000);
    const opts = { name: 'indexed', schema, primaryKey: ['id'], storage, indexes, logger: quiet } as never;
    const w = await MemWal.open(opts);
    await check(w, model, 'format-2 files');
    let s = await indexStats(w);
    expect([s.tableSectionsRead, s.tableSectionsBuilt]).toEqual([0, 2]);
    storage.clearFaults();
    await w.put([row(5, 4)]);
    model.set(5, row(5, 4));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    await check(w, model, 'compacted into format 3');
    s = await indexStats(w);
    expect([s.tableSectionsRead! > 0, s.tableSectionsBuilt]).toEqual([true, 0]);
    await w.close();
    const dir = join(root, 'indexed', 'manifest');
    const newest = Math.max(...(await readdir(dir)).filter((f) => /^\d+\.json$/.test(f)).map((f) => Number.parseInt(f, 10)));
    const m = JSON.parse(await readFile(join(dir, `${newest}.json`), 'utf8')) as { tables: { format: number }[] };
    expect(m.tables.length).toBeGreaterThan(0);
    expect(m.tables.every((t) => t.format === 3)).toBe(true);
  });
});
