// Outside tester (issue 23): a put must store what it was given or refuse it. Values of
// List and Struct columns of the wrong kind are coerced without a word — a string where a
// list of Int32 is declared stores [0, 0, 0], 1.5 stores 1, 'x' in an Int32 struct field stores
// 0 — and the put resolves: an acknowledged write that changed. Top-level columns refuse the same
// values with InvalidArgument. Both paths (page and in-process) did it; now both refuse
// InvalidArgument naming the column and the place inside the value.

import { Field, Int32, List, Schema, Struct } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal, MemoryStorage, openMemWal } from '../src/index.js';
import { channelWorker, quiet, storeName } from '../src/rpc/rpc.test-util.js';

const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('st', new Struct([new Field('a', new Int32(), true)]), true),
  new Field('l', new List(new Field('item', new Int32(), true)), true),
]);

const open = {
  page: () => openMemWal({ name: storeName(), schema, primaryKey: ['id'], storage: 'memory', logger: quiet, worker: channelWorker() }),
  'in-process': () => MemWal.open({ name: storeName(), schema, primaryKey: ['id'], storage: new MemoryStorage(), logger: quiet }),
};

describe.each(Object.keys(open) as (keyof typeof open)[])('nested values of the wrong kind, put %s', (where) => {
  it.each([
    ['a string for a list of Int32', { id: 1, l: 'abc' }],
    ['1.5 in a list of Int32', { id: 1, l: [1.5] }],
    ["'x' in an Int32 struct field", { id: 1, st: { a: 'x' } }],
  ])('%s is refused InvalidArgument, not stored changed', async (_what, row) => {
    const db = await open[where]();
    const put = db.put([row]).then(
      async () => ({ stored: await db.get({ id: 1 }) }),
      (e: { code?: string }) => ({ code: e.code }),
    );
    expect(await put).toEqual({ code: 'InvalidArgument' });
    await db.close();
  });
});
