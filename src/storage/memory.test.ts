// Runs the adapter conformance cases against MemoryStorage, and against FaultInjectingStorage
// with no faults (a transparent wrapper must keep every guarantee), plus MemoryStorage specifics.

import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { conformanceCases, testManifest } from '../testing/conformance.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MemoryStorage, sharedMemoryStorage } from './memory.js';
import { Field, Int64, Schema } from 'apache-arrow';
import { MemWal } from '../engine/memwal.js';

describe('MemoryStorage conformance', () => {
  for (const c of conformanceCases(() => new MemoryStorage())) it(c.name, () => c.run());
});

describe('MemoryStorage conformance, shared instance', () => {
  for (const c of conformanceCases(() => sharedMemoryStorage())) it(c.name, () => c.run());
});

describe('FaultInjectingStorage without faults conformance', () => {
  for (const c of conformanceCases(() => new FaultInjectingStorage())) it(c.name, () => c.run());
});

describe('MemoryStorage', () => {
  it('sharedMemoryStorage returns one instance, so a reopen finds the data', async () => {
    expect(sharedMemoryStorage()).toBe(sharedMemoryStorage());
    const name = `shared-${Math.random()}`;
    const h = await sharedMemoryStorage().openStore(name, {});
    await h.tableWrite('t', [new Uint8Array([1, 2])]);
    await h.release();
    const again = await sharedMemoryStorage().openStore(name, {});
    expect(await again.tableRead('t')).toEqual(new Uint8Array([1, 2]));
    await again.release();
    await sharedMemoryStorage().destroyStore(name);
  });

  it('a stolen handle is fenced by the newer epoch, and its release does not free the new holder', async () => {
    const storage = new MemoryStorage();
    const old = await storage.openStore('s', {});
    await old.manifestCommit(0, testManifest(storage, 1, 1));
    const thief = await storage.openStore('s', { steal: true });
    await expect(old.walList()).resolves.toEqual([]); // reads still work: only the epoch fences
    await thief.manifestCommit(1, testManifest(storage, 2, 2));
    await expect(old.tableWrite('x.arrow', [new Uint8Array(4)])).rejects.toMatchObject({ code: 'Fenced' });
    await old.release();
    await expect(old.tableList()).rejects.toMatchObject({ code: 'Closed' });
    await expect(storage.openStore('s', { timeoutMs: 0 })).rejects.toMatchObject({ code: 'Locked' });
    await thief.release();
    await expect(thief.walList()).rejects.toMatchObject({ code: 'Closed' });
  });

  it('waiting openers get the lock in FIFO order and onWaiting fires once each', async () => {
    const storage = new MemoryStorage();
    const first = await storage.openStore('s', {});
    const order: string[] = [];
    let waits = 0;
    const b = storage.openStore('s', { onWaiting: () => waits++ }).then((h) => (order.push('b'), h));
    const c = storage.openStore('s', { onWaiting: () => waits++ }).then((h) => (order.push('c'), h));
    await new Promise((r) => setTimeout(r, 0)); // each claim first asks the lock table whether the lock is free
    expect(waits).toBe(2);
    await first.release();
    const hb = await b;
    expect(order).toEqual(['b']);
    await hb.release();
    await (await c).release();
    expect(order).toEqual(['b', 'c']);
  });

  it('a timed-out waiter leaves the queue, so the next release skips it', async () => {
    const storage = new MemoryStorage();
    const first = await storage.openStore('s', {});
    await expect(storage.openStore('s', { timeoutMs: 5 })).rejects.toMatchObject({ code: 'Locked' });
    const aborted = new AbortController();
    aborted.abort();
    await expect(storage.openStore('s', { signal: aborted.signal })).rejects.toMatchObject({ code: 'Aborted' });
    await first.release();
    const again = await storage.openStore('s', { timeoutMs: 0 });
    await again.release();
  });

  it('a commit from an older epoch over a newer manifest is Fenced, an equal epoch conflict is IOError', async () => {
    const storage = new MemoryStorage();
    const h = await storage.openStore('s', {});
    const base = {
      formatVersion: 1,
      layout: 'memory',
      mode: 'memtable' as const,
      schema: 'AAAA',
      primaryKey: [],
      nextGeneration: 1,
      replayCursor: 0,
      consumerCursor: null,
      positionHint: 0,
      tables: [],
    };
    await h.manifestCommit(0, { ...base, writerEpoch: 3, version: 1 });
    await expect(h.manifestCommit(5, { ...base, writerEpoch: 2, version: 6 })).rejects.toMatchObject({ code: 'Fenced' });
    await expect(h.manifestCommit(5, { ...base, writerEpoch: 3, version: 6 })).rejects.toMatchObject({ code: 'IOError' });
    await expect(h.manifestCommit(1, { ...base, writerEpoch: 3, version: 3 })).rejects.toMatchObject({ code: 'InvalidArgument' });
    expect((await h.manifestLoad())?.version).toBe(1);
  });

  it("estimate counts one store's WAL and table bytes, and the work is done when the call returns", async () => {
    const storage = new MemoryStorage();
    const h = await storage.openStore('s', {});
    void h.walAppend('1-1', 0, new Uint8Array(100));
    void h.tableWrite('t', [new Uint8Array(50), new Uint8Array(7)]);
    const other = await storage.openStore('other', {});
    await other.walAppend('1-1', 0, new Uint8Array(1000));
    expect(await storage.estimate('s')).toEqual({ usageBytes: 157 });
    await h.walTruncate('1-1', 10);
    expect(await storage.estimate('s')).toEqual({ usageBytes: 67 });
    expect(await storage.estimate('other')).toEqual({ usageBytes: 1000 });
    expect(await storage.estimate('missing')).toEqual({ usageBytes: 0 });
    await expect(h.walTruncate('1-1', 11)).rejects.toBeInstanceOf(MemWalError);
  });

  it('release does its work when called: the lock is free for an open or a destroy before its promise settles', async () => {
    const storage = new MemoryStorage();
    const a = await storage.openStore('s', {});
    const waiter = storage.openStore('s', { timeoutMs: 1000 });
    const released = a.release(); // not awaited: MemoryStorage does every operation's work when called
    const b = await waiter; // the first waiter in line got it
    await b.release();
    const c = await storage.openStore('s', {});
    void c.release();
    const d = await storage.openStore('s', { timeoutMs: 0 });
    void d.release();
    await storage.destroyStore('s');
    await released;
  });

  it('an open right after an abort that was not awaited takes the store (the abort released it when called)', async () => {
    const storage = new MemoryStorage();
    const options = { name: 's', schema: new Schema([new Field('id', new Int64(), false)]), primaryKey: ['id'], storage, lockTimeoutMs: 0 };
    const first = await MemWal.open(options);
    await first.put([{ id: 1 }]);
    void first.abort();
    const second = await MemWal.open(options);
    expect(await second.get({ id: 1 })).toEqual({ id: 1n });
    await second.close();
  });
});
