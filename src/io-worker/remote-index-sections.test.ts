// Index sections built in the I/O worker (docs/format.md §8 "Index sections"): a store on
// RemoteStorage (the I/O worker's protocol over a MessageChannel in one Node thread) declares
// ordered indexes; its flushes and compactions, built on the far side of the wire, write each
// file's sections, and queries read them, returning the newest version of every row.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { MemoryStorage } from '../storage/memory.js';
import { remoteOver } from './edge-keys.test-util.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('title', new Utf8(), true)]);

it('flushes and compactions built in the I/O worker write index sections, and queries read them', async () => {
  const inner = new MemoryStorage();
  const opts = { name: 'r', schema, primaryKey: ['id'], indexes: { byTitle: { column: 'title' } }, logger: { warn: () => undefined } };
  const model = new Map<number, string>();
  const w = await MemWal.open({ ...opts, storage: remoteOver(inner) } as never);
  const put = async (rows: { id: number; title: string }[]): Promise<void> => {
    await w.put(rows);
    for (const r of rows) model.set(r.id, r.title);
  };
  await put(Array.from({ length: 200 }, (_, id) => ({ id, title: `t${id % 9}` })));
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await put(Array.from({ length: 50 }, (_, i) => ({ id: i * 4, title: `t${(i * 4 + 1) % 9}` })));
  await w.delete([{ id: 1 }, { id: 2 }]);
  model.delete(1);
  model.delete(2);
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await w.compact();
  for (let t = 0; t < 9; t++) {
    const want = [...model]
      .filter(([, title]) => title === `t${t}`)
      .map(([id]) => id)
      .sort((a, b) => a - b);
    expect((await w.query('byTitle', { equals: `t${t}` })).map((r) => r.id)).toEqual(want);
  }
  const s = (await w.indexStats()).byTitle!;
  expect(s.tableSectionsRead).toBeGreaterThan(0);
  expect(s.tableSectionsBuilt).toBe(0);
  await w.close();
});
