// Test page for e2e/query.spec.ts: a field-notes store opened with openMemWal (its own worker, its
// I/O worker, OPFS) with three indexes; puts, overwrites and deletes across flushes and a
// compaction; the list-screen queries from the page checked against a model the page keeps.

import { Field, Float64, Int32, List, Schema, Utf8 } from 'apache-arrow';
import { type MemWalClient, openMemWal } from '../../src/index.js';
import { rng } from '../../src/testing/rng.js';

const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('title', new Utf8(), false),
  new Field('tags', new List(new Field('item', new Utf8(), true)), true),
  new Field('updatedAt', new Float64(), false),
]);
const indexes = { byUpdated: { column: 'updatedAt' }, byTag: { column: 'tags', multiEntry: true } };
type Note = { id: number; title: string; tags: string[] | null; updatedAt: number };

let db: MemWalClient | undefined;
const model = new Map<number, Note>();

function expected(): Record<string, unknown> {
  const notes = [...model.values()];
  const newest = [...notes].sort((a, b) => b.updatedAt - a.updatedAt || b.id - a.id).slice(0, 20);
  const tagged = notes.filter((n) => n.tags?.includes('t3')).sort((a, b) => a.id - b.id);
  const between = notes.filter((n) => n.id >= 100 && n.id < 200).sort((a, b) => a.id - b.id);
  return { newest, tagged, between, count: tagged.length };
}

async function actual(): Promise<Record<string, unknown>> {
  const newest = await db!.query('byUpdated', { reverse: true, limit: 20 });
  const tagged: unknown[] = [];
  for (let after: Record<string, unknown> | undefined; ; ) {
    const page = await db!.query('byTag', { equals: 't3', limit: 7, ...(after ? { after } : {}) });
    tagged.push(...page);
    if (page.length < 7) break;
    after = page[page.length - 1];
  }
  const between = await db!.query('primary', { range: { gte: 100, lt: 200 } });
  return { newest, tagged, between, count: await db!.count('byTag', { equals: 't3' }) };
}

const probe = {
  /** Open `name`, write a seeded workload with flushes and a compaction; the queries' answers and the model's. */
  async run(name: string, seed: number): Promise<{ got: unknown; want: unknown; stats: unknown }> {
    db = await openMemWal({ name, schema, primaryKey: ['id'], indexes, maxMemtableRows: 200 });
    const r = rng(seed);
    let clock = 0;
    for (let round = 0; round < 12; round++) {
      const rows: Note[] = Array.from({ length: 60 }, () => {
        const id = Math.floor(r() * 400);
        const tags = Array.from({ length: 1 + Math.floor(r() * 3) }, () => `t${Math.floor(r() * 10)}`);
        return { id, title: `note ${id}`, tags: r() < 0.1 ? null : tags, updatedAt: ++clock };
      });
      await db.put(rows);
      for (const n of rows) model.set(n.id, n);
      const gone = Array.from({ length: 5 }, () => Math.floor(r() * 400));
      await db.delete(gone.map((id) => ({ id })));
      for (const id of gone) model.delete(id);
      if (round % 4 === 3) {
        await db.forceSealActive();
        await db.waitForFlushDrain();
      }
      if (round === 8) await db.compact();
    }
    return { got: await actual(), want: expected(), stats: await db.indexStats() };
  },
  /** After a reload: open again and answer the same queries (the model came back from the spec). */
  async reopen(name: string, notes: Note[]): Promise<{ got: unknown; want: unknown }> {
    db = await openMemWal({ name, schema, primaryKey: ['id'], indexes, maxMemtableRows: 200 });
    model.clear();
    for (const n of notes) model.set(n.id, n);
    const got = await actual();
    await db.close();
    return { got, want: expected() };
  },
  model: (): Note[] => [...model.values()],
  async close(): Promise<void> {
    await db?.close();
  },
};

(window as unknown as { memwalQuery: typeof probe }).memwalQuery = probe;
