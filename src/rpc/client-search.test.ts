// MemWalClient.search and a watched search over a MessageChannel host (SPEC §17.2): the text and
// options cross in one message, the hits come back as plain rows with their scores, a bad search
// rejects InvalidArgument on the page, and a watched search re-runs after each commit.

import { afterEach, describe, expect, it } from 'vitest';
import type { MemWalClient } from './client.js';
import { openMemWal } from './open-memwal.js';
import { channelWorker, quiet, schema, storeName } from './rpc.test-util.js';

const clients: MemWalClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.abort()));
});

async function open(): Promise<MemWalClient> {
  const c = await openMemWal({
    name: storeName('search'),
    schema,
    primaryKey: ['id'],
    indexes: { byName: { column: 'name' }, words: { column: 'name', kind: 'text' } },
    storage: 'memory',
    logger: quiet,
    worker: channelWorker(),
  });
  clients.push(c);
  return c;
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('MemWalClient.search', () => {
  it('answers as the engine does, from the page', async () => {
    const db = await open();
    await db.put([
      { id: 1, name: 'quick brown fox' },
      { id: 2, name: 'lazy brown dog' },
      { id: 3, name: 'quick quick rabbit' },
    ]);
    const hits = await db.search('words', 'quick');
    expect(hits.map((h) => h.row)).toEqual([
      { id: 3, name: 'quick quick rabbit' },
      { id: 1, name: 'quick brown fox' },
    ]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect((await db.search('words', 'bro', { prefix: true, where: { index: 'byName', prefix: 'lazy' } })).map((h) => h.row.id)).toEqual([
      2,
    ]);
    await expect(db.search('words', 'x '.repeat(100))).rejects.toMatchObject({ code: 'InvalidArgument' });
    await expect(db.search('nope', 'x')).rejects.toMatchObject({ code: 'InvalidArgument' });
  });

  it('keeps a watched search live: a new match, an overwrite moving one out, a delete', async () => {
    const db = await open();
    await db.put([{ id: 1, name: 'red apple' }]);
    const got: number[][] = [];
    db.watch({ search: 'words', text: 'apple' }, (hits) => got.push(hits.map((h) => h.row.id as number)));
    await until(() => got.length === 1);
    expect(got[0]).toEqual([1]);
    await db.put([{ id: 2, name: 'green apple' }]);
    await until(() => got.at(-1)?.length === 2);
    await db.put([{ id: 1, name: 'red pear' }]);
    await until(() => got.at(-1)?.join() === '2');
    await db.delete([{ id: 2 }]);
    await until(() => got.at(-1)?.length === 0);
  });
});
