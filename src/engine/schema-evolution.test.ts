// Schema evolution: a store follows its app's releases — added nullable columns and dropped non-key
// columns — with data of every version (WAL entries, table files of both formats) read, tailed and
// compacted in the current schema; other changes fail at open, naming the column and the rule.

import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, Float64, Int32, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { NodeFileStorage } from '../node.js';
import { MemoryStorage } from '../storage/memory.js';
import { MemWal, type OpenHooks } from './memwal.js';
import { encodeSchema } from '../data/schema.js';
import { rejection, storeName } from './testkit.test-util.js';

const quiet = { warn: () => undefined };
const v1 = new Schema([new Field('id', new Int64(), false), new Field('value', new Float64(), true), new Field('name', new Utf8(), true)]);
/** Release 2: a nullable column added in the middle. */
const v2 = new Schema([
  new Field('id', new Int64(), false),
  new Field('note', new Utf8(), true),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);
/** Release 3: 'value' dropped. */
const v3 = new Schema([new Field('id', new Int64(), false), new Field('note', new Utf8(), true), new Field('name', new Utf8(), true)]);

const open = (storage: MemoryStorage, name: string, schema: Schema, extra = {}, hooks: OpenHooks = {}) =>
  MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableRows: 50, logger: quiet, ...extra }, hooks);

describe('schema evolution', () => {
  it('an added nullable column: old rows read it as null from memory, WAL and table files; new rows carry it; compaction rewrites in the new schema', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, v1);
    await a.put(Array.from({ length: 120 }, (_, i) => ({ id: i, value: i, name: `a${i}` }))); // table files
    await a.waitForFlushDrain();
    await a.put([{ id: 500, value: 5, name: 'in-the-wal' }]);
    await a.abort(); // the last put is replayed from the WAL at the next open

    const b = await open(storage, name, v2);
    await b.put([{ id: 1000, note: 'new', value: 1, name: 'b' }]);
    const t = await b.scan();
    expect(t.schema.fields.map((f) => f.name)).toEqual(['id', 'note', 'value', 'name']);
    expect(t.numRows).toBe(122);
    expect(await b.get({ id: 7 })).toEqual({ id: 7n, note: null, value: 7, name: 'a7' });
    expect(await b.get({ id: 500 })).toEqual({ id: 500n, note: null, value: 5, name: 'in-the-wal' });
    expect(await b.get({ id: 1000 })).toMatchObject({ note: 'new' });
    // tail projects older entries too
    for await (const e of b.tail((await b.walStats()).oldestPosition)) expect(e.data.schema.fields.map((f) => f.name)).toContain('note');
    await b.compact();
    expect(await b.get({ id: 9 })).toEqual({ id: 9n, note: null, value: 9, name: 'a9' });
    await b.close();
  });

  it('a column the schema lacks is hidden, not dropped: a schema that has it again reads its values', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, v2);
    await a.put(Array.from({ length: 80 }, (_, i) => ({ id: i, note: `n${i}`, value: i, name: `a${i}` })));
    await a.close();
    const b = await open(storage, name, v3);
    expect(await b.get({ id: 3 })).toEqual({ id: 3n, note: 'n3', name: 'a3' });
    expect((await b.scan()).schema.fields.map((f) => f.name)).toEqual(['id', 'note', 'name']);
    await b.put([{ id: 3, note: 'n3b', name: 'b3' }]);
    await b.compact();
    await b.close();
    const c = await open(storage, name, v2);
    expect(await c.get({ id: 4 })).toEqual({ id: 4n, note: 'n4', value: 4, name: 'a4' });
    expect(await c.get({ id: 3 })).toEqual({ id: 3n, note: 'n3b', value: null, name: 'b3' }); // b's put wrote null to it
    await c.close();
  });

  it('a column named in dropColumns disappears from every read of old data; a schema that has it again reads null', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, v2);
    await a.put(Array.from({ length: 80 }, (_, i) => ({ id: i, note: `n${i}`, value: i, name: `a${i}` })));
    await a.close();
    const b = await open(storage, name, v3, { dropColumns: ['value'] });
    expect(await b.get({ id: 3 })).toEqual({ id: 3n, note: 'n3', name: 'a3' });
    expect((await b.schemaInfo()).schema.fields.map((f) => f.name)).toEqual(['id', 'note', 'name']);
    await b.close();
    // Going back to a schema that has 'value' again is an added nullable column: old values are not resurrected.
    const c = await open(storage, name, v2);
    expect(await c.get({ id: 3 })).toEqual({ id: 3n, note: 'n3', value: null, name: 'a3' });
    await c.close();
  });

  it('other changes fail at open, naming the column and the rule, before anything is claimed', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, v1);
    await a.put([{ id: 1, value: 1, name: 'x' }]);
    await a.close();
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const epoch = (await h.manifestLoad())!.writerEpoch;
    await h.release();
    const cases: [Schema, string[], RegExp][] = [
      [
        new Schema([new Field('id', new Int64(), false), new Field('value', new Utf8(), true), new Field('name', new Utf8(), true)]),
        ['id'],
        /"value".*keeps its type/,
      ],
      [
        new Schema([new Field('id', new Int64(), false), new Field('value', new Float64(), false), new Field('name', new Utf8(), true)]),
        ['id'],
        /"value".*nullability/,
      ],
      [new Schema([...v1.fields, new Field('must', new Utf8(), false)]), ['id'], /"must" must be nullable/],
      [v1, [], /primary key \[id\], not \[\]/],
    ];
    for (const [schema, primaryKey, why] of cases) {
      const e = await rejection(MemWal.open({ name, schema, primaryKey, storage, logger: quiet }));
      expect(e.code).toBe('InvalidArgument');
      expect(e.message).toMatch(why);
    }
    const look = await storage.openStore(name, { timeoutMs: 0 });
    expect((await look.manifestLoad())!.writerEpoch).toBe(epoch);
    await look.release();
  });

  it("onSchemaMismatch 'reset' destroys and recreates the store, and says so: hooks.onSchemaReset({ name, reason }) and the logger", async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, v1);
    await a.put([{ id: 1, value: 1, name: 'x' }]);
    await a.close();
    const warnings: string[] = [];
    const resets: unknown[] = [];
    const incompatible = new Schema([new Field('id', new Int64(), false), new Field('value', new Utf8(), true)]);
    const reopen = () =>
      open(
        storage,
        name,
        incompatible,
        { onSchemaMismatch: 'reset', logger: { warn: (m: string) => warnings.push(m) } },
        { onSchemaReset: (r) => resets.push(r) },
      );
    const b = await reopen();
    expect((await b.scan()).numRows).toBe(0);
    expect(warnings.join('\n')).toMatch(/reset.*destroying store/);
    expect(resets).toEqual([{ name, reason: expect.stringMatching(/value/) }]);
    await b.put([{ id: 2, value: 'two' }]);
    await b.close();
    // A reopen with the schema the store now has resets nothing.
    await (await reopen()).close();
    expect(resets).toHaveLength(1);
  });

  it('an onSchemaReset hook that throws is logged and does not fail the open', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    await (await open(storage, name, v1)).close();
    const warnings: string[] = [];
    const incompatible = new Schema([new Field('id', new Utf8(), false)]);
    const b = await open(
      storage,
      name,
      incompatible,
      { onSchemaMismatch: 'reset', logger: { warn: (m: string) => warnings.push(m) } },
      {
        onSchemaReset: () => {
          throw new Error('app bug');
        },
      },
    );
    expect(warnings).toContain('memwal: onSchemaReset hook threw');
    await b.put([{ id: 'a' }]);
    await b.close();
  });

  it('a store written by release 0.1 takes an added column', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-evolve-'));
    await cp(join(import.meta.dirname, '../../test/fixtures/release-0.1'), root, { recursive: true });
    const w = await MemWal.open({ name: 'keyed', schema: v2, primaryKey: ['id'], storage: new NodeFileStorage(root), logger: quiet });
    expect(await w.get({ id: 42 })).toEqual({ id: 42n, note: null, value: 63, name: 'r2-42' });
    await w.put([{ id: 42, note: 'later', value: 1, name: 'r3-42' }]);
    await w.compact();
    expect(await w.get({ id: 42 })).toMatchObject({ note: 'later' });
    expect(await w.get({ id: 43 })).toMatchObject({ note: null, name: 'r2-43' });
    await w.close();
  });
});

describe('a column dropped and added again is a new column', () => {
  const withX = (type: Int32 | Utf8) => new Schema([new Field('id', new Int64(), false), new Field('x', type, true)]);
  const s1 = withX(new Int32());
  const s2 = new Schema([new Field('id', new Int64(), false)]);

  /**
   * Release 1 writes x = 11 for every row, into table files (ids 0..99) and the WAL (100..119 and
   * 500); release 2 drops x (`dropColumns`), replays those entries and adds one of its own (600), all left in the
   * WAL; `last` then opens the store with x added again.
   */
  async function droppedThenAdded(last: Schema, previousRelease: boolean): Promise<{ storage: MemoryStorage; name: string; w: MemWal }> {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, s1);
    await a.put(Array.from({ length: 120 }, (_, i) => ({ id: i, x: 11 })));
    await a.waitForFlushDrain();
    await a.put([{ id: 500, x: 11 }]);
    await a.abort();
    const b = await open(storage, name, s2, { dropColumns: ['x'] });
    await b.put([{ id: 600 }]);
    await b.abort();
    if (previousRelease) {
      // Versions as the previous release recorded them: without writer epochs.
      const h = await storage.openStore(name, { timeoutMs: 0 });
      const m = (await h.manifestLoad())!;
      await h.manifestCommit(m.version, {
        ...m,
        version: m.version + 1,
        schemas: m.schemas!.map(({ version, schema }) => ({ version, schema })),
      });
      await h.release();
    }
    return { storage, name, w: await open(storage, name, last) };
  }

  /** Every older row reads x null from every tier, and a new row reads its own x. */
  async function expectOnlyNewX(w: MemWal, x: unknown): Promise<void> {
    for (const id of [1, 110, 500, 600]) expect(await w.get({ id })).toEqual({ id: BigInt(id), x: null });
    expect(await w.get({ id: 700 })).toEqual({ id: 700n, x });
    const t = await w.scan();
    expect(t.numRows).toBe(123);
    const xs = t.getChild('x')!;
    const ids = t.getChild('id')!;
    for (let i = 0; i < t.numRows; i++) expect(xs.get(i)).toEqual(ids.get(i) === 700n ? x : null);
  }

  for (const [label, type, x, previousRelease] of [
    ['another type (Utf8 after Int32)', new Utf8(), 'seven', false],
    ['the same type (the dropped values stay dropped)', new Int32(), 7, false],
    ['another type, versions recorded by the previous release', new Utf8(), 'seven', true],
    ['the same type, versions recorded by the previous release', new Int32(), 7, true],
  ] as const) {
    it(`added again with ${label}: older rows read null from table files, the WAL, tail and after compaction`, async () => {
      const last = withX(type);
      const { storage, name, w } = await droppedThenAdded(last, previousRelease);
      await w.put([{ id: 700, x }]);
      await expectOnlyNewX(w, x);
      const tailed: unknown[] = [];
      for await (const e of w.tail((await w.walStats()).oldestPosition)) {
        expect(String(e.data.schema.fields.find((f) => f.name === 'x')!.type)).toBe(String(type));
        const xs = e.data.getChild('x')!;
        for (let i = 0; i < xs.length; i++) tailed.push(xs.get(i));
      }
      expect(tailed.filter((v) => v !== null)).toEqual([x]);
      await w.compact();
      await expectOnlyNewX(w, x);
      await w.close();
      const again = await open(storage, name, last);
      await expectOnlyNewX(again, x);
      await again.close();
    });
  }

  it('a recorded version that changes a kept column of an older one is refused at open, before the claim', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, name, s1);
    await a.put([{ id: 1, x: 11 }]);
    await a.close();
    // A manifest whose versions disagree on x's type (no release writes one): version 2 claims
    // that x, kept from version 1, is Utf8.
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const m = (await h.manifestLoad())!;
    const v2 = encodeSchema(withX(new Utf8()));
    await h.manifestCommit(m.version, {
      ...m,
      version: m.version + 1,
      schema: v2,
      schemaVersion: 2,
      schemas: [...m.schemas!, { version: 2, schema: v2 }],
    });
    await h.release();
    const e = await rejection(open(storage, name, withX(new Utf8())));
    expect(e.code).toBe('Corruption');
    expect(e.message).toMatch(/schema version 2 .*"x" changes type from Int32/);
    const look = await storage.openStore(name, { timeoutMs: 0 });
    expect((await look.manifestLoad())!.writerEpoch).toBe(m.writerEpoch);
    await look.release();
  });
});
