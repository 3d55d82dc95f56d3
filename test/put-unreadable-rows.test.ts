// Outside tester (issue 23): rows the app cannot read are its own mistake. A row whose
// getter throws, or whose Uint8Array's buffer was transferred away, is refused with a
// MemWalError 'InvalidArgument' — put from the page (built there) and put in-process alike —
// never as a storage failure ('IOError') nor as a bare Error without a code; the store goes on.

import { Binary, Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal, MemoryStorage, openMemWal } from '../src/index.js';
import { channelWorker, quiet, storeName } from '../src/rpc/rpc.test-util.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('s', new Utf8(), true), new Field('bin', new Binary(), true)]);

const throwingGetter = (): Record<string, unknown> =>
  Object.defineProperty({ id: 1 }, 's', {
    enumerable: true,
    get() {
      throw new Error('the app getter failed');
    },
  });
const detachedBytes = (): Record<string, unknown> => {
  const bytes = new Uint8Array(4);
  structuredClone(bytes.buffer, { transfer: [bytes.buffer] });
  return { id: 1, bin: bytes };
};

const open = {
  page: () => openMemWal({ name: storeName(), schema, primaryKey: ['id'], storage: 'memory', logger: quiet, worker: channelWorker() }),
  'in-process': () => MemWal.open({ name: storeName(), schema, primaryKey: ['id'], storage: new MemoryStorage(), logger: quiet }),
};

describe.each(Object.keys(open) as (keyof typeof open)[])('a row the app cannot read, put %s', (where) => {
  it.each([
    ['a getter that throws', throwingGetter],
    ['a Uint8Array whose buffer was transferred', detachedBytes],
  ])('%s is refused InvalidArgument and the store goes on', async (_what, row) => {
    const db = await open[where]();
    await expect(db.put([row()])).rejects.toMatchObject({ name: 'MemWalError', code: 'InvalidArgument' });
    await db.put([{ id: 2, s: 'ok' }]);
    expect(await db.get({ id: 2 })).toMatchObject({ s: 'ok' });
    expect(await db.get({ id: 1 })).toBeUndefined();
    await db.close();
  });
});
