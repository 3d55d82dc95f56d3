// `search(…, { where })` (SPEC §17.2, README "Full-text search": "`where` keeps the rows an ordered
// query would return") on `'primary'`, the primary key as an ordered index (SPEC §17). `query`,
// `count`, `watch({ count })` and `nearest(…, { where })` all take `{ index: 'primary', range }`;
// `search` alone refuses it with InvalidArgument ("not an ordered index of this store"), so an
// app cannot search within a key range (a user's rows under a compound key, ids of one batch).

import { describe, expect, it } from 'vitest';
import { MemWal, MemoryStorage, defineSchema, int32, utf8, vector } from '../src/index.js';

const schema = defineSchema({ id: int32(), body: utf8(), emb: vector(2) });
const quiet = { warn: () => undefined };

describe("search where on 'primary'", () => {
  it('keeps the rows query(primary, filter) returns, as nearest does', async () => {
    const w = await MemWal.open({
      name: 'notes',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: quiet,
      indexes: { words: { column: 'body', kind: 'text' }, emb: { column: 'emb', kind: 'vector', distance: 'l2' } },
    } as never);
    try {
      await w.put([
        { id: 1, body: 'garden tomato', emb: [0, 0] },
        { id: 2, body: 'garden', emb: [1, 1] },
        { id: 3, body: 'garden bean', emb: [2, 2] },
      ]);
      const where = { index: 'primary', range: { gte: 2 } };
      expect((await w.query('primary', { range: { gte: 2 } })).map((r) => r.id)).toEqual([2, 3]);
      expect((await w.nearest('emb', [0, 0], { k: 3, where } as never)).map((h) => h.row.id)).toEqual([2, 3]);
      const hits = await w.search('words', 'garden', { where } as never);
      expect(hits.map((h) => h.row.id).sort()).toEqual([2, 3]);
    } finally {
      await w.close();
    }
  });
});
