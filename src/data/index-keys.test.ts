import { Field, Float64, Int32, Int64, List, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { MemoryStorage } from '../storage/memory.js';
import { MemWal } from '../engine/memwal.js';
import { filterBounds, indexKeysOfRow, indexValueEncoder, resolveIndexes } from './index-keys.js';

const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('title', new Utf8(), true),
  new Field('qty', new Float64(), true),
  new Field('big', new Int64(), true),
  new Field('tags', new List(new Field('item', new Utf8(), true)), true),
  new Field('nums', new List(new Field('item', new Float64(), true)), true),
]);

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return e instanceof MemWalError ? `${e.code}: ${e.message}` : String(e);
  }
  return 'no error';
}

describe('index declarations', () => {
  it('refuses, naming the index and the problem', () => {
    const r = (ix: unknown, pk = ['id']): string => code(() => resolveIndexes(ix, schema, pk));
    expect(r({ primary: { column: 'title' } })).toMatch(/InvalidArgument: .*"primary".*reserved/);
    expect(r({ byX: { column: 'nope' } })).toMatch(/InvalidArgument: .*"byX".*no column "nope"/);
    expect(r({ byTags: { column: 'tags' } })).toMatch(/InvalidArgument: .*"byTags".*cannot be indexed/);
    expect(r({ byTitle: { column: 'title', multiEntry: true } })).toMatch(/multiEntry needs a list column/);
    expect(r({ both: { column: 'title', columns: ['qty'] } })).toMatch(/exactly one of column and columns/);
    expect(r({ twice: { columns: ['qty', 'qty'] } })).toMatch(/lists a column twice/);
    expect(r({ byTitle: { column: 'title' } }, [])).toMatch(/need a primary key/);
    expect(r({ 'bad name!': { column: 'title' } })).toMatch(/a name is/);
    expect(r({ byTitle: { column: 'title', unique: true } })).toMatch(/unknown field "unique"/);
    expect(r({ byTags: { column: 'tags', multiEntry: true }, byQT: { columns: ['qty', 'title'] } })).toBe('no error');
  });

  it('MemWal.open refuses a bad index before it claims the store', async () => {
    const storage = new MemoryStorage();
    await expect(
      MemWal.open({ name: 's', schema, primaryKey: ['id'], storage, indexes: { byX: { column: 'nope' } } } as never),
    ).rejects.toMatchObject({ code: 'InvalidArgument', message: expect.stringMatching(/index "byX": no column "nope"/) });
    // No lock was left held: an open that will not wait for one succeeds.
    const w = await MemWal.open({ name: 's', schema, primaryKey: ['id'], storage, lockTimeoutMs: 0 });
    expect(await w.get({ id: 1 })).toBeUndefined();
    await w.close();
  });
});

describe('index key encoding', () => {
  const [byQty, byBig, byQT, byTags] = resolveIndexes(
    {
      byQty: { column: 'qty' },
      byBig: { column: 'big' },
      byQT: { columns: ['qty', 'title'] },
      byTags: { column: 'tags', multiEntry: true },
    },
    schema,
    ['id'],
  );
  it('keeps the order of numbers, 64-bit integers and strings', () => {
    const nums = [-Infinity, -1e300, -2.5, -1, -0, 0, 1e-300, 1, 2.5, 1e300, Infinity];
    const keys = nums.map((qty) => indexKeysOfRow(byQty!, { qty })[0]!);
    for (let i = 1; i < keys.length; i++) expect(keys[i - 1]! <= keys[i]!).toBe(true);
    expect(keys[4]).toBe(keys[5]); // -0 = 0
    const bigs = [-(2n ** 63n), -(2n ** 53n) - 1n, -1n, 0n, 2n ** 53n + 1n, 2n ** 63n - 1n];
    const bk = bigs.map((big) => indexKeysOfRow(byBig!, { big })[0]!);
    for (let i = 1; i < bk.length; i++) expect(bk[i - 1]! < bk[i]!).toBe(true);
    const strs = ['', 'a', 'a\u0000', 'a\u0000b', 'ab', 'b', 'é'];
    const sk = strs.map((title) => indexKeysOfRow(byQT!, { qty: 1, title })[0]!);
    for (let i = 1; i < sk.length; i++) expect(sk[i - 1]! < sk[i]!).toBe(true);
  });

  it('skips nulls and gives a multi-entry row one key per distinct element', () => {
    expect(indexKeysOfRow(byQty!, { qty: null })).toEqual([]);
    expect(indexKeysOfRow(byQT!, { qty: 1, title: null })).toEqual([]);
    expect(indexKeysOfRow(byTags!, { tags: ['b', 'a', 'b', null] })).toHaveLength(2);
    expect(indexKeysOfRow(byTags!, { tags: null })).toEqual([]);
  });

  it('turns filters into bounds and refuses wrong types and contradictions', () => {
    const enc = indexValueEncoder(byQT!);
    const key = (qty: number, title: string): string => indexKeysOfRow(byQT!, { qty, title })[0]!;
    const inside = (b: { lo?: string; hi?: string }, k: string): boolean =>
      (b.lo === undefined || k >= b.lo) && (b.hi === undefined || k < b.hi);
    const eq = filterBounds({ equals: 2 }, enc);
    expect(inside(eq, key(2, 'x'))).toBe(true);
    expect(inside(eq, key(3, ''))).toBe(false);
    const pre = filterBounds({ prefix: [2, 'ab'] }, enc);
    expect(inside(pre, key(2, 'abc'))).toBe(true);
    expect(inside(pre, key(2, 'b'))).toBe(false);
    const gt = filterBounds({ range: { gt: 2, lte: 3 } }, enc);
    expect(inside(gt, key(2, 'zzz'))).toBe(false);
    expect(inside(gt, key(3, 'zzz'))).toBe(true);
    expect(inside(gt, key(3.5, ''))).toBe(false);
    expect(code(() => filterBounds({ equals: 'x' }, enc))).toMatch(/InvalidArgument: .*"qty" must be a number/);
    expect(code(() => filterBounds({ equals: 1, prefix: 'x' }, enc))).toMatch(/InvalidArgument: .*not equals and prefix/);
    expect(code(() => filterBounds({ range: { gt: 1, gte: 1 } }, enc))).toMatch(/both gt and gte/);
    expect(code(() => filterBounds({ range: { gt: 3, lt: 1 } }, enc))).toMatch(/lower bound above/);
    expect(code(() => filterBounds({ prefix: 1 }, enc))).toMatch(/prefix needs a string column/);
    expect(code(() => filterBounds({ range: { above: 1 } } as never, enc))).toMatch(/unknown bound "above"/);
  });
});
