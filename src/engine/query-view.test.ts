// Two holes of ordered queries (SPEC §17.1) the simulation found: rows read by `query` came back
// with columns the opener does not see (SPEC §9.1: a column its schema omits stays hidden, as it
// is from `get` and `scan`), and a Uint64 index ordered values from 2^63 up before 0.

import { Field, Int32, Schema, Uint64, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import { MemWal } from './memwal.js';

const quiet = { warn: () => undefined };

describe('query through the opener’s view', () => {
  it('leaves out a hidden column, as get does, with and without columns, and pages with after', async () => {
    const storage = new MemoryStorage();
    const full = new Schema([
      new Field('id', new Int32(), false),
      new Field('title', new Utf8(), true),
      new Field('secret', new Utf8(), true),
    ]);
    const base = { name: 'v', primaryKey: ['id'], storage, logger: quiet, indexes: { byTitle: { column: 'title' } } };
    const w1 = await MemWal.open({ ...base, schema: full } as never);
    await w1.put([
      { id: 1, title: 'a', secret: 's1' },
      { id: 2, title: 'b', secret: 's2' },
    ]);
    await w1.close();
    // Reopened without `secret`: kept, hidden from this opener.
    const view = new Schema([new Field('id', new Int32(), false), new Field('title', new Utf8(), true)]);
    const w2 = await MemWal.open({ ...base, schema: view } as never);
    try {
      expect(await w2.get({ id: 1 } as never)).toEqual({ id: 1, title: 'a' });
      const rows = await w2.query('byTitle', {});
      expect(rows).toEqual([
        { id: 1, title: 'a' },
        { id: 2, title: 'b' },
      ]);
      expect(await w2.query('primary', { reverse: true, columns: ['title'] })).toEqual([{ title: 'b' }, { title: 'a' }]);
      expect(await w2.query('byTitle', { limit: 1, after: rows[0] })).toEqual([{ id: 2, title: 'b' }]);
      await expect(w2.query('byTitle', { columns: ['secret'] })).rejects.toMatchObject({ code: 'InvalidArgument' });
    } finally {
      await w2.close();
    }
  });
});

describe('a Uint64 index', () => {
  it('orders values from 2^63 up after the smaller ones, and filters on them', async () => {
    const schema = new Schema([new Field('id', new Int32(), false), new Field('n', new Uint64(), true)]);
    const w = await MemWal.open({
      name: 'u',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: quiet,
      indexes: { byN: { column: 'n' } },
    } as never);
    try {
      const values = [2n ** 64n - 1n, 0n, 2n ** 63n, 1n, 2n ** 63n - 1n];
      await w.put(values.map((n, id) => ({ id, n })));
      const order = async (opts: object) => (await w.query('byN', opts)).map((r) => r.n);
      const sorted = [0n, 1n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n];
      expect(await order({})).toEqual(sorted);
      expect(await order({ reverse: true })).toEqual([...sorted].reverse());
      expect(await order({ range: { gte: 2n ** 63n - 1n } })).toEqual(sorted.slice(2));
      expect(await w.count('byN', { range: { lt: 2n ** 63n } })).toBe(3);
      await expect(w.query('byN', { equals: -1n })).rejects.toMatchObject({ code: 'InvalidArgument' });
      // On a flushed table file too.
      await w.forceSealActive();
      await w.waitForFlushDrain();
      expect(await order({})).toEqual(sorted);
    } finally {
      await w.close();
    }
  });
});
