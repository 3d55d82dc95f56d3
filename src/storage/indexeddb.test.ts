// IndexedDbStorage in Node over fake-indexeddb: the conformance cases, which here also exercise
// the in-process lock that stands in for Web Locks where navigator.locks is missing.

import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { conformanceCases } from '../testing/conformance.js';
import { MemWalError } from '../util/errors.js';
import { inTransaction, memwalDb } from './idb-db.js';
import { IndexedDbStorage, TABLE_CHUNK_BYTES } from './indexeddb.js';

describe('IndexedDbStorage conformance (fake-indexeddb, in-process lock)', () => {
  it('runs without navigator.locks, so the in-process lock is the one tested', () => {
    expect((globalThis as { navigator?: { locks?: unknown } }).navigator?.locks).toBeUndefined();
  });
  for (const c of conformanceCases(() => new IndexedDbStorage())) it(c.name, () => c.run());
});

describe('IndexedDbStorage records', () => {
  it('splits a table file into records of at most 1 MiB and reads it back whole', async () => {
    const storage = new IndexedDbStorage();
    const h = await storage.openStore('records-table', { timeoutMs: 0 });
    const bytes = Uint8Array.from({ length: 2 * TABLE_CHUNK_BYTES + 3 }, (_, i) => i % 251);
    await h.tableWrite('1-1-0.arrow', [bytes.subarray(0, 5), bytes.subarray(5)]);
    expect(Buffer.compare(await h.tableRead('1-1-0.arrow'), bytes), 'table bytes read back').toBe(0);
    const records = await new Promise<unknown[]>((resolve, reject) => {
      const open = indexedDB.open('memwal');
      open.onsuccess = () => {
        const req = open.result
          .transaction('tables')
          .objectStore('tables')
          .getAll(IDBKeyRange.bound(['records-table'], ['records-table', []]));
        req.onsuccess = () => (open.result.close(), resolve(req.result as unknown[]));
        req.onerror = () => reject(req.error);
      };
    });
    expect(records.map((r) => (r as Uint8Array).length)).toEqual([TABLE_CHUNK_BYTES, TABLE_CHUNK_BYTES, 3]);
    await h.release();
    await storage.destroyStore('records-table');
  });

  it('keeps a WAL segment truncated to 0 bytes, and appends to it from offset 0', async () => {
    const storage = new IndexedDbStorage();
    const h = await storage.openStore('records-wal', { timeoutMs: 0 });
    await h.walAppend('1-1', 0, new Uint8Array([1, 2, 3]));
    await h.walAppend('1-1', 3, new Uint8Array([4, 5]));
    await h.walTruncate('1-1', 0);
    expect((await h.walList()).map((s) => [s.name, s.bytes])).toEqual([['1-1', 0]]);
    expect(await h.walRead('1-1')).toEqual(new Uint8Array(0));
    await h.walAppend('1-1', 0, new Uint8Array([9]));
    expect(await h.walRead('1-1')).toEqual(new Uint8Array([9]));
    await h.release();
    await storage.destroyStore('records-wal');
  });
});

describe('IndexedDB transaction limit', () => {
  it('a transaction stuck behind another past its limit is aborted with IOError and blocks nothing after it', async () => {
    const db = await memwalDb();
    // Another transaction keeps the manifests store busy for 400 ms by chaining requests.
    const blocker = db.transaction('manifests', 'readwrite');
    const until = Date.now() + 400;
    const spin = (): void => {
      if (Date.now() < until) void blocker.store.get('limit-test').then(spin);
    };
    spin();
    const started = Date.now();
    const stuck = inTransaction(
      ['manifests'],
      'readwrite',
      'a stuck commit',
      (tx) => tx.objectStore('manifests').put({} as never, 'limit-test'),
      100,
    );
    await expect(stuck).rejects.toMatchObject({ code: 'IOError' });
    await expect(stuck).rejects.toBeInstanceOf(MemWalError);
    expect(Date.now() - started, 'rejected at its limit, not when the blocker finished').toBeLessThan(350);
    await blocker.done;
    // The aborted transaction left nothing behind: the record is absent and the store is free.
    expect(
      await inTransaction(['manifests'], 'readonly', 'read back', (tx) => tx.objectStore('manifests').get('limit-test')),
    ).toBeUndefined();
  });
});
