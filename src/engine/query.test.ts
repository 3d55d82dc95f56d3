// Model-based randomized test of ordered queries (SPEC §17.1): puts, overwrites, deletes, seals,
// compactions and reopens in random order; after each step every query kind (equals, range,
// prefix, none; forward and reverse; limits; `after` paging; count) on a single-column, a
// multi-entry, a compound index and 'primary' is checked against a plain JS model.

import { Field, Float64, Int32, List, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { int, rng } from '../testing/rng.js';
import { MemWal } from './memwal.js';
import type { QueryOptions } from './query.js';

const SEEDS = Number(process.env.MEMWAL_QUERY_SEEDS ?? 6);
const STEPS = 40;
const KEYS = 40;
const quiet = { warn: () => undefined };

const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('title', new Utf8(), true),
  new Field('qty', new Float64(), true),
  new Field('tags', new List(new Field('item', new Utf8(), true)), true),
]);
const indexes = {
  byTitle: { column: 'title' },
  byQty: { column: 'qty' },
  byTag: { column: 'tags', multiEntry: true },
  byQtyTitle: { columns: ['qty', 'title'] },
};

type Row = { id: number; title: string | null; qty: number | null; tags: string[] | null };
type Val = number | string;
const TITLES = ['', 'a', 'ab', 'abc', 'b', 'ba', 'c'];
const QTYS = [-1.5, 0, 1, 2, 2.5, 10];
const TAGS = ['x', 'xy', 'y', 'z'];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[int(r, xs.length)]!;
}

function randomRow(r: () => number, id: number): Row {
  return {
    id,
    title: int(r, 8) === 0 ? null : pick(r, TITLES),
    qty: int(r, 8) === 0 ? null : pick(r, QTYS),
    tags: int(r, 6) === 0 ? null : Array.from({ length: int(r, 4) }, () => pick(r, TAGS)),
  };
}

const cmp = (a: Val, b: Val): number => (a < b ? -1 : a > b ? 1 : 0);
function cmpTuple(a: Val[], b: Val[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = cmp(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

/** The model's entries of a row for an index: tuples of values. */
function entriesOf(index: string, row: Row): Val[][] {
  switch (index) {
    case 'primary':
      return [[row.id]];
    case 'byTitle':
      return row.title === null ? [] : [[row.title]];
    case 'byQty':
      return row.qty === null ? [] : [[row.qty]];
    case 'byTag':
      return row.tags === null ? [] : [...new Set(row.tags)].sort().map((t) => [t]);
    default:
      return row.qty === null || row.title === null ? [] : [[row.qty, row.title]];
  }
}

/** Does entry `e` pass the filter (values for a leading prefix of the columns)? */
function passes(e: Val[], f: QueryOptions): boolean {
  const asTuple = (v: unknown): Val[] => (Array.isArray(v) ? (v as Val[]) : [v as Val]);
  const lead = (v: unknown): number => {
    const t = asTuple(v);
    return cmpTuple(e.slice(0, t.length), t);
  };
  if (f.equals !== undefined) return lead(f.equals) === 0;
  if (f.prefix !== undefined) {
    const t = asTuple(f.prefix);
    if (t.length > 1 && cmpTuple(e.slice(0, t.length - 1), t.slice(0, -1)) !== 0) return false;
    return String(e[t.length - 1]).startsWith(String(t[t.length - 1]));
  }
  const g = f.range;
  if (!g) return true;
  if (g.gt !== undefined && !(lead(g.gt) > 0)) return false;
  if (g.gte !== undefined && !(lead(g.gte) >= 0)) return false;
  if (g.lt !== undefined && !(lead(g.lt) < 0)) return false;
  if (g.lte !== undefined && !(lead(g.lte) <= 0)) return false;
  return true;
}

function modelQuery(model: Map<number, Row>, index: string, q: QueryOptions): Row[] {
  const dir = q.reverse ? -1 : 1;
  const order = (a: { e: Val[]; id: number }, b: { e: Val[]; id: number }): number => dir * (cmpTuple(a.e, b.e) || a.id - b.id);
  const firstOf = (row: Row): Val[] | undefined =>
    entriesOf(index, row)
      .filter((e) => passes(e, q))
      .sort((a, b) => dir * cmpTuple(a, b))[0];
  const all: { e: Val[]; id: number }[] = [];
  for (const row of model.values()) {
    const e = firstOf(row); // multi-entry: once, at its first entry in this order
    if (e) all.push({ e, id: row.id });
  }
  all.sort(order);
  let rest = all;
  if (q.after) {
    const from = { e: firstOf(q.after as Row)!, id: (q.after as Row).id };
    rest = all.filter((x) => order(x, from) > 0);
  }
  return rest.slice(0, q.limit ?? Number.POSITIVE_INFINITY).map((x) => model.get(x.id)!);
}

function randomQuery(r: () => number, index: string): QueryOptions {
  const value = (): unknown => {
    switch (index) {
      case 'primary':
        return int(r, KEYS + 4) - 2;
      case 'byTitle':
        return pick(r, TITLES);
      case 'byTag':
        return pick(r, TAGS);
      case 'byQty':
        return pick(r, QTYS);
      default:
        return int(r, 2) === 0 ? pick(r, QTYS) : [pick(r, QTYS), pick(r, TITLES)];
    }
  };
  const q: QueryOptions = {};
  const kind = int(r, index === 'byTitle' || index === 'byTag' ? 4 : 3);
  if (kind === 1) q.equals = value();
  else if (kind === 2) {
    const range: Record<string, unknown> = {};
    let lo = value();
    let hi = value();
    if (index === 'byQtyTitle') {
      lo = Array.isArray(lo) ? lo[0] : lo;
      hi = Array.isArray(hi) ? hi[0] : hi;
    }
    if (cmp(lo as Val, hi as Val) > 0) [lo, hi] = [hi, lo];
    if (int(r, 3) > 0) range[int(r, 2) ? 'gt' : 'gte'] = lo;
    if (int(r, 3) > 0) range[int(r, 2) ? 'lt' : 'lte'] = hi;
    q.range = range;
  } else if (kind === 3) q.prefix = pick(r, ['', 'a', 'ab', 'b', 'x', 'z']);
  if (int(r, 2)) q.reverse = true;
  if (int(r, 3) === 0) q.limit = int(r, 6);
  return q;
}

async function check(w: MemWal, model: Map<number, Row>, r: () => number, where: string): Promise<void> {
  for (const index of ['primary', 'byTitle', 'byQty', 'byTag', 'byQtyTitle']) {
    for (let n = 0; n < 3; n++) {
      const q = randomQuery(r, index);
      const what = `${where}: query(${index}, ${JSON.stringify(q)})`;
      expect(await w.query(index, q), what).toEqual(modelQuery(model, index, q));
      const { reverse: _r, limit: _l, ...filter } = q;
      expect(await w.count(index, filter), `${where}: count(${index}, ${JSON.stringify(filter)})`).toBe(
        modelQuery(model, index, filter).length,
      );
      // Paged with `after`: the pages, end to end, are the whole answer.
      const page = 2 + int(r, 4);
      const paged: Row[] = [];
      for (let after: Row | undefined; ; ) {
        const rows = (await w.query(index, { ...q, limit: page, ...(after ? { after } : {}) })) as Row[];
        paged.push(...rows);
        if (rows.length < page) break;
        after = rows[rows.length - 1]!;
      }
      expect(paged, `${what} paged by ${page}`).toEqual(modelQuery(model, index, { ...q, limit: undefined }));
    }
  }
}

describe('ordered queries against a model', () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    it(`seed ${seed}`, async () => {
      const r = rng(seed);
      const storage = new MemoryStorage();
      const opts = {
        name: 'q',
        schema,
        primaryKey: ['id'],
        storage,
        indexes,
        maxMemtableRows: 12,
        flushRetry: { baseMs: 1, maxMs: 5 },
        logger: quiet,
      } as const;
      let w = await MemWal.open(opts as never);
      const model = new Map<number, Row>();
      try {
        for (let step = 0; step < STEPS; step++) {
          const op = int(r, 10);
          if (op < 5) {
            const rows = Array.from({ length: 1 + int(r, 5) }, () => randomRow(r, int(r, KEYS)));
            await w.put(rows);
            for (const row of rows) model.set(row.id, row);
          } else if (op < 7) {
            const ids = Array.from({ length: 1 + int(r, 3) }, () => int(r, KEYS));
            await w.delete(ids.map((id) => ({ id })));
            for (const id of ids) model.delete(id);
          } else if (op === 7) {
            await w.forceSealActive();
            await w.waitForFlushDrain();
          } else if (op === 8) {
            await w.forceSealActive();
            await w.waitForFlushDrain();
            await w.compact();
          } else {
            await w.close();
            w = await MemWal.open(opts as never);
          }
          await check(w, model, r, `seed ${seed} step ${step} (op ${op})`);
        }
        expect(Object.keys(await w.indexStats())).toEqual(Object.keys(indexes));
      } finally {
        await w.close();
      }
    });
  }

  it('finds a row only once it is visible (its WAL entry durable), though it is indexed as it is appended', async () => {
    const storage = new FaultInjectingStorage();
    const w = await MemWal.open({ name: 'vis', schema, primaryKey: ['id'], storage, indexes, logger: quiet } as never);
    try {
      await w.put([{ id: 1, title: 'a', qty: 1, tags: ['x'] }]);
      const release = storage.hold('walAppend');
      const pending = w.put([
        { id: 2, title: 'a', qty: 2, tags: ['x'] },
        { id: 1, title: 'b', qty: 3, tags: ['y'] },
      ]);
      for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 1));
      // Appended and indexed, not durable: every query answers as before the put.
      expect((await w.query('byTitle', { equals: 'a' })).map((r) => r.id)).toEqual([1]);
      expect(await w.count('byTag', { equals: 'x' })).toBe(1);
      expect(await w.count('byTitle', { equals: 'b' })).toBe(0);
      expect((await w.query('primary')).map((r) => r.id)).toEqual([1]);
      release();
      await pending;
      expect((await w.query('byTitle', { equals: 'a' })).map((r) => r.id)).toEqual([2]);
      expect((await w.query('byTitle', { equals: 'b' })).map((r) => r.id)).toEqual([1]);
    } finally {
      await w.close();
    }
  });

  it('refuses bad queries, naming the problem', async () => {
    const w = await MemWal.open({ name: 'bad', schema, primaryKey: ['id'], storage: new MemoryStorage(), indexes, logger: quiet } as never);
    try {
      await expect(w.query('nope')).rejects.toMatchObject({ code: 'InvalidArgument', message: expect.stringMatching(/no index "nope"/) });
      await expect(w.query('byQty', { equals: 'x' })).rejects.toMatchObject({ code: 'InvalidArgument' });
      await expect(w.query('byTag', { equals: 'x', prefix: 'x' })).rejects.toMatchObject({ code: 'InvalidArgument' });
      await expect(w.query('byQty', { limit: -1 })).rejects.toMatchObject({ code: 'InvalidArgument' });
      await expect(w.query('byQty', { columns: ['nope'] })).rejects.toMatchObject({ code: 'InvalidArgument' });
      await expect(w.query('byQty', { after: { id: 1, qty: 99 }, range: { lt: 5 } })).rejects.toMatchObject({ code: 'InvalidArgument' });
      await expect(w.count('primary', { prefix: 'a' })).rejects.toMatchObject({ code: 'InvalidArgument' });
    } finally {
      await w.close();
    }
    const appendOnly = await MemWal.open({ name: 'ao', schema, storage: new MemoryStorage(), logger: quiet });
    try {
      await expect(appendOnly.query('primary')).rejects.toMatchObject({ code: 'NotSupported' });
    } finally {
      await appendOnly.close();
    }
  });
});
