// Migrations that never lose data (SPEC §9.1, issue 36): a stored column an opener lacks is kept
// and hidden from it, dropped only when dropColumns names it; a rename keeps the column's values;
// schemaInfo() and hooks.onSchemaChange say what the store holds and what an open changed.

import { Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { defineSchema, int64, utf8 } from '../data/define-schema.js';
import { MemoryStorage } from '../storage/memory.js';
import { MemWal, type OpenHooks, type SchemaChange } from './memwal.js';
import { rejection, storeName } from './testkit.test-util.js';

const quiet = { warn: () => undefined };
/** Release 1 of the field-notes app. */
const release1 = defineSchema({ id: int64(), title: utf8() });
/** Release 2 adds `location`. */
const release2 = defineSchema({ id: int64(), title: utf8(), location: utf8().nullable() });
/** Release 3 renames `title` to `name`. */
const release3 = defineSchema({ id: int64(), name: utf8().renamedFrom('title'), location: utf8().nullable() });

function open(storage: MemoryStorage, name: string, schema: Schema, extra: object = {}, hooks: OpenHooks = {}): Promise<MemWal> {
  return MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableRows: 50, logger: quiet, ...extra }, hooks) as Promise<MemWal>;
}

/** Rows in table files (ids 0..99 flushed), and a few left in the WAL only (replayed at the next open). */
async function writeInEveryTier(w: MemWal, rows: (i: number) => Record<string, unknown>, ids: number[]): Promise<void> {
  await w.put(ids.slice(0, -2).map(rows));
  await w.waitForFlushDrain();
  await w.put(ids.slice(-2).map(rows));
}

async function tailed(w: MemWal): Promise<string[][]> {
  const out: string[][] = [];
  for await (const e of w.tail((await w.walStats()).oldestPosition)) out.push(e.data.schema.fields.map((f) => f.name));
  return out;
}

describe('a stored column the opener lacks is kept, hidden from it', () => {
  it('release 1 → release 2 → rollback to release 1 → release 2: every location written by release 2 reads back', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const r1 = await open(storage, name, release1);
    await r1.put(Array.from({ length: 60 }, (_, i) => ({ id: i, title: `t${i}` })));
    await r1.close();

    const r2 = await open(storage, name, release2);
    const ids = Array.from({ length: 60 }, (_, i) => 100 + i);
    await writeInEveryTier(r2, (i) => ({ id: i, title: `t${i}`, location: `loc${i}` }), ids);
    await r2.abort(); // the last put is left in the WAL

    // A cached page of release 1 opens: location is hidden, not dropped.
    const changes: SchemaChange[] = [];
    const back = await open(storage, name, release1, {}, { onSchemaChange: (c) => changes.push(c) });
    expect(changes).toEqual([{ name, from: 2, to: 2, added: [], hidden: ['location'], dropped: [], renamed: {} }]);
    expect(await back.get({ id: 101 })).toEqual({ id: 101n, title: 't101' });
    expect(await back.get({ id: 159 })).toEqual({ id: 159n, title: 't159' }); // replayed from the WAL
    expect((await back.getMany([{ id: 5 }, { id: 150 }])).map((r) => r && Object.keys(r))).toEqual([
      ['id', 'title'],
      ['id', 'title'],
    ]);
    const t = await back.scan();
    expect(t.schema.fields.map((f) => f.name)).toEqual(['id', 'title']);
    expect(t.numRows).toBe(120);
    for await (const b of back.scanBatches()) expect(b.schema.fields.map((f) => f.name)).toEqual(['id', 'title']);
    for (const fields of await tailed(back)) expect(fields).not.toContain('location');
    const info = await back.schemaInfo();
    expect(info.hidden).toEqual(['location']);
    expect(info.schema.fields.map((f) => f.name)).toEqual(['id', 'title', 'location']);
    expect(info.versions.map((v) => v.version)).toEqual([1, 2]);
    // Its reads and writes cannot name the hidden column.
    expect((await rejection(back.put([{ id: 1, title: 'x', location: 'y' }]))).message).toMatch(/unknown column "location"/);
    expect((await rejection(back.scan({ columns: ['location'] as never }))).code).toBe('InvalidArgument');
    // Its writes: location null for the rows it writes; compaction keeps every other location.
    await back.put([
      { id: 102, title: 'edited by release 1' },
      { id: 500, title: 'new in release 1' },
    ]);
    await back.compact();
    await back.close();

    const again = await open(storage, name, release2, {}, { onSchemaChange: (c) => changes.push(c) });
    expect(changes).toHaveLength(1); // nothing changed nor hidden
    expect(await again.get({ id: 101 })).toEqual({ id: 101n, title: 't101', location: 'loc101' });
    expect(await again.get({ id: 158 })).toEqual({ id: 158n, title: 't158', location: 'loc158' });
    expect(await again.get({ id: 102 })).toEqual({ id: 102n, title: 'edited by release 1', location: null });
    expect(await again.get({ id: 500 })).toEqual({ id: 500n, title: 'new in release 1', location: null });
    expect(await again.get({ id: 3 })).toEqual({ id: 3n, title: 't3', location: null });
    const locations = (await again.scan())
      .getChild('location')!
      .toArray()
      .filter((v: unknown) => v !== null);
    expect(locations).toHaveLength(59); // 60 written, one overwritten by release 1
    await again.close();
  });

  it('a hidden column reads again through tail, in the schema of the opener that has it', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const r2 = await open(storage, name, release2, { maxMemtableRows: 1000 });
    await r2.put([{ id: 1, title: 'a', location: 'here' }]);
    await r2.abort(); // entries stay in the WAL (nothing flushed)
    const r1 = await open(storage, name, release1, { maxMemtableRows: 1000 });
    await r1.put([{ id: 2, title: 'b' }]);
    await r1.abort();
    const r2b = await open(storage, name, release2, { maxMemtableRows: 1000 });
    const locations: unknown[] = [];
    for await (const e of r2b.tail((await r2b.walStats()).oldestPosition)) locations.push(...e.data.getChild('location')!.toArray());
    expect(locations).toEqual(['here', null]);
    await r2b.close();
  });

  it('a hidden non-nullable column refuses the open, naming it, before anything is claimed; dropColumns drops it', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, release2);
    await a.put([{ id: 1, title: 'a', location: 'here' }]);
    await a.close();
    const look = async (): Promise<number> => {
      const h = await storage.openStore(name, { timeoutMs: 0 });
      const epoch = (await h.manifestLoad())!.writerEpoch;
      await h.release();
      return epoch;
    };
    const epoch = await look();
    const withoutTitle = defineSchema({ id: int64(), location: utf8().nullable() });
    const e = await rejection(open(storage, name, withoutTitle, { onSchemaMismatch: 'reset' }));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toMatch(/non-nullable column "title".*dropColumns/);
    expect(await look()).toBe(epoch); // not claimed, and not reset
    const changes: SchemaChange[] = [];
    const b = await open(storage, name, withoutTitle, { dropColumns: ['title'] }, { onSchemaChange: (c) => changes.push(c) });
    expect(changes).toEqual([{ name, from: 1, to: 2, added: [], hidden: [], dropped: ['title'], renamed: {} }]);
    expect(await b.get({ id: 1 })).toEqual({ id: 1n, location: 'here' });
    await b.close();
    // The option may stay: naming a column already dropped is a no-op.
    const c = await open(storage, name, withoutTitle, { dropColumns: ['title'] }, { onSchemaChange: (x) => changes.push(x) });
    expect(changes).toHaveLength(1);
    await c.close();
    // Adding title again is a new column: the dropped values stay dropped.
    const d = await open(storage, name, defineSchema({ id: int64(), location: utf8().nullable(), title: utf8().nullable() }));
    expect(await d.get({ id: 1 })).toEqual({ id: 1n, location: 'here', title: null });
    await d.close();
  });

  it('dropColumns is validated: a key column, a column of the schema, a name the store never had → InvalidArgument', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    // A new store: nothing to drop, so a release that keeps the option opens a fresh store.
    await (await open(storage, name, release1, { dropColumns: ['location'] })).close();
    const cases: [object, RegExp][] = [
      [{ dropColumns: ['id'] }, /dropColumns: "id" is a key column/],
      [{ dropColumns: ['title'] }, /dropColumns: "title" is a column of the schema/],
      [{ dropColumns: ['nope'] }, /dropColumns: store .* has no column "nope"/],
      [{ dropColumns: 'title' }, /dropColumns: must be an array/],
      [{ renameColumns: { title: 'id' } }, /renames a key column/],
      [{ renameColumns: { nope: 'missing' } }, /"missing" is not a column of the schema/],
      [{ renameColumns: ['x'] }, /renameColumns: must be an object/],
    ];
    for (const [extra, why] of cases) {
      const e = await rejection(open(storage, name, release1, extra));
      expect(e.code).toBe('InvalidArgument');
      expect(e.message).toMatch(why);
    }
  });
});

describe('a rename keeps the column and its values', () => {
  it('renamedFrom in defineSchema: values kept in every tier; recorded; the release before the rename still reads and writes it', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const r2 = await open(storage, name, release2);
    await writeInEveryTier(
      r2,
      (i) => ({ id: i, title: `t${i}`, location: `loc${i}` }),
      Array.from({ length: 60 }, (_, i) => i),
    );
    await r2.abort();

    const changes: SchemaChange[] = [];
    const r3 = await open(storage, name, release3, {}, { onSchemaChange: (c) => changes.push(c) });
    expect(changes).toEqual([{ name, from: 1, to: 2, added: [], hidden: [], dropped: [], renamed: { title: 'name' } }]);
    expect(await r3.get({ id: 7 })).toEqual({ id: 7n, name: 't7', location: 'loc7' });
    expect(await r3.get({ id: 59 })).toEqual({ id: 59n, name: 't59', location: 'loc59' }); // from the WAL
    await r3.compact();
    expect(await r3.get({ id: 8 })).toEqual({ id: 8n, name: 't8', location: 'loc8' });
    const info = await r3.schemaInfo();
    expect(info.versions.map((v) => v.renamed ?? null)).toEqual([null, { title: 'name' }]);
    expect(info.aliases).toEqual({});
    await r3.put([{ id: 1000, name: 'named by release 3' }]);
    await r3.close();
    // The next open of release 3 changes nothing (the rename is recorded, not redone).
    await (await open(storage, name, release3, {}, { onSchemaChange: (c) => changes.push(c) })).close();
    expect(changes).toHaveLength(1);

    // A tab of release 2 (before the rename) reads and writes the column under its old name.
    const old = await open(storage, name, release2, {}, { onSchemaChange: (c) => changes.push(c) });
    expect(changes).toHaveLength(1);
    expect(await old.get({ id: 1000 })).toEqual({ id: 1000n, title: 'named by release 3', location: null });
    expect(await old.get({ id: 9 })).toEqual({ id: 9n, title: 't9', location: 'loc9' });
    expect((await old.schemaInfo()).aliases).toEqual({ title: 'name' });
    expect((await old.scan({ columns: ['title'] })).getChild('title')!.get(0)).toBe('t0');
    await old.put([{ id: 9, title: 'edited by release 2', location: 'there' }]);
    await old.close();
    const r3b = await open(storage, name, release3);
    expect(await r3b.get({ id: 9 })).toEqual({ id: 9n, name: 'edited by release 2', location: 'there' });
    await r3b.close();
  });

  it('renameColumns with a plain Schema does the same', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, new Schema([new Field('id', new Int64(), false), new Field('title', new Utf8(), true)]));
    await a.put([{ id: 1, title: 'one' }]);
    await a.close();
    const renamed = new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]);
    const b = await open(storage, name, renamed, { renameColumns: { title: 'name' } });
    expect(await b.get({ id: 1 })).toEqual({ id: 1n, name: 'one' });
    await b.close();
    // Without the option after the rename: the same column, already renamed.
    const c = await open(storage, name, renamed);
    expect(await c.get({ id: 1 })).toEqual({ id: 1n, name: 'one' });
    await c.close();
  });

  it('a rename onto a column the store already has is refused', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const both = defineSchema({ id: int64(), title: utf8(), name: utf8().nullable() });
    await (await open(storage, name, both)).close();
    const e = await rejection(open(storage, name, release3));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toMatch(/already has a column "name"/);
  });

  it('the manifest records the rename (format 3, schemas[].renamed: new name → old name)', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    await (await open(storage, name, release2)).close();
    await (await open(storage, name, release3)).close();
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const m = (await h.manifestLoad())!;
    await h.release();
    expect(m.formatVersion).toBe(3);
    expect(m.schemas!.map((v) => v.renamed ?? null)).toEqual([null, { name: 'title' }]);
  });
});
