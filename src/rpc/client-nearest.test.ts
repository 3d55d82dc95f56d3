// MemWalClient.nearest over a MessageChannel host: the vector (an array or a Float32Array) goes in
// one message, `{ row, distance }[]` comes back as in-process; bad input rejects InvalidArgument.

import { afterEach, describe, expect, it } from 'vitest';
import { defineSchema, int32, utf8, vector } from '../data/define-schema.js';
import type { MemWalClient } from './client.js';
import { openMemWal } from './open-memwal.js';
import { channelWorker, quiet, rejection, storeName } from './rpc.test-util.js';

const schema = defineSchema({ id: int32(), tag: utf8(), emb: vector(3) });
const clients: MemWalClient<typeof schema>[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.abort()));
});

describe('MemWalClient.nearest', () => {
  it('answers from the page as in-process, and rejects a bad vector with InvalidArgument', async () => {
    const db = await openMemWal({
      name: storeName('nearest'),
      schema,
      primaryKey: ['id'],
      indexes: { emb: { column: 'emb', kind: 'vector', distance: 'l2' }, byTag: { column: 'tag' } },
      storage: 'memory',
      logger: quiet,
      worker: channelWorker(),
    });
    clients.push(db);
    await db.put([
      { id: 1, tag: 'x', emb: [0, 0, 0] },
      { id: 2, tag: 'y', emb: Float32Array.of(1, 0, 0) },
      { id: 3, tag: 'x', emb: [3, 0, 0] },
    ]);
    await db.put([{ id: 1, tag: 'x', emb: [10, 0, 0] }]); // overwrite: the old [0, 0, 0] must not answer
    const got = await db.nearest('emb', Float32Array.of(0, 0, 0), { k: 2 });
    expect(got).toEqual([
      { row: { id: 2, tag: 'y', emb: [1, 0, 0] }, distance: 1 },
      { row: { id: 3, tag: 'x', emb: [3, 0, 0] }, distance: 3 },
    ]);
    const x = await db.nearest('emb', [0, 0, 0], { k: 5, where: { index: 'byTag', equals: 'x' } });
    expect(x.map((h) => h.row.id)).toEqual([3, 1]);
    const e = await rejection(db.nearest('emb', [0, Number.NaN, 0], { k: 1 }));
    expect(e.code).toBe('InvalidArgument');
    expect((await rejection(db.nearest('emb', [0, 0], { k: 1 }))).code).toBe('InvalidArgument');
    // Live: watch({ nearest }) from the page.
    const seen: number[][] = [];
    const stop = db.watch({ nearest: 'emb', vector: [0, 0, 0], k: 1 }, (hits) => seen.push(hits.map((h) => h.row.id)));
    for (let i = 0; i < 500 && seen.length < 1; i++) await new Promise((r) => setTimeout(r, 5));
    expect(seen.at(-1)).toEqual([2]);
    await db.put([{ id: 4, tag: 'y', emb: [0.5, 0, 0] }]);
    for (let i = 0; i < 500 && seen.at(-1)?.[0] !== 4; i++) await new Promise((r) => setTimeout(r, 5));
    expect(seen.at(-1)).toEqual([4]);
    stop();
  });
});
