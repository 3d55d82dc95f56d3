// FaultInjectingStorage: injected failures, holds, seeded crashes, crashAt counting, and the
// restarted process after a crash.

import { describe, expect, it, vi } from 'vitest';
import { MemWalError, quotaExceededError, toMemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { StoreHandle } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from './fault.js';
import { Field, Int64, Schema } from 'apache-arrow';
import { inlinePlacement, placeStorage } from '../lsm/io-plane.js';
import { MemWal } from '../engine/memwal.js';

const STORE = 'fault-test';

function manifest(writerEpoch: number, version: number, replayCursor = 0): Manifest {
  return {
    formatVersion: 1,
    layout: 'memory',
    mode: 'memtable',
    schema: 'AAAA',
    primaryKey: [],
    writerEpoch,
    version,
    nextGeneration: 1,
    replayCursor,
    consumerCursor: null,
    positionHint: 0,
    tables: [],
  };
}

function bytes(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 13 + seed) & 0xff);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Settles `p` into a tagged result, so a test can check it later without an unhandled rejection. */
function outcome<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

const isCrashed = (e: unknown): boolean => e instanceof MemWalError && e.code === 'IOError' && e.message === 'storage crashed';

async function claimed(fault: FaultInjectingStorage): Promise<StoreHandle> {
  const h = await fault.openStore(STORE, { timeoutMs: 0 });
  await h.manifestCommit(0, manifest(1, 1));
  return h;
}

describe('failNext', () => {
  it('fails the next count operations of that kind with IOError and leaves storage untouched', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    fault.failNext('walAppend', 2);
    for (let i = 0; i < 2; i++) {
      const e = await h.walAppend('1-1', 0, bytes(4, 1)).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(MemWalError);
      expect(e).toMatchObject({ code: 'IOError', message: 'injected fault: walAppend' });
    }
    expect(await h.walList()).toEqual([]);
    await h.walAppend('1-1', 0, bytes(4, 1));
    expect(await h.walRead('1-1')).toEqual(bytes(4, 1));
  });

  it('with Infinity fails every operation of that kind until clearFaults', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    fault.failNext('manifestLoad', Infinity);
    for (let i = 0; i < 5; i++) await expect(h.manifestLoad()).rejects.toMatchObject({ code: 'IOError' });
    expect(await h.walList()).toEqual([]); // other kinds are unaffected
    fault.clearFaults();
    expect((await h.manifestLoad())?.version).toBe(1);
  });

  it('throws a given QuotaExceededError as is, and queued failures come in order', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    const quota = quotaExceededError();
    const other = new MemWalError('Corruption', 'second');
    fault.failNext('tableWrite', 1, quota);
    fault.failNext('tableWrite', 1, other);
    await expect(h.tableWrite('t', [bytes(3, 1)])).rejects.toBe(quota);
    expect(toMemWalError(quota, 'table write').code).toBe('QuotaExceeded');
    await expect(h.tableWrite('t', [bytes(3, 1)])).rejects.toBe(other);
    await h.tableWrite('t', [bytes(3, 1)]);
    expect(await h.tableList()).toEqual(['t']);
  });

  it('rejects a count that is not a positive integer or Infinity', () => {
    const fault = new FaultInjectingStorage();
    expect(() => fault.failNext('walRead', 0)).toThrow(MemWalError);
    expect(() => fault.failNext('walRead', 1.5)).toThrow(MemWalError);
  });

  it("passes the inner adapter's errors through unchanged", async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    await h.walAppend('1-1', 0, bytes(4, 1));
    await expect(h.walAppend('1-1', 9, bytes(4, 1))).rejects.toMatchObject({
      code: 'IOError',
      message: expect.stringContaining('offset 9'),
    });
    await expect(fault.openStore(STORE, { timeoutMs: 0 })).rejects.toMatchObject({ code: 'Locked' });
  });
});

describe('hold', () => {
  it('makes operations of that kind wait until released', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    const release = fault.hold('walAppend');
    let done = false;
    const append = h.walAppend('1-1', 0, bytes(8, 1)).then(() => (done = true));
    await sleep(20);
    expect(done).toBe(false);
    expect(await h.walList()).toEqual([]); // reads are not held, and nothing was written
    release();
    release();
    await append;
    expect(await h.walRead('1-1')).toEqual(bytes(8, 1));
  });
});

describe('hangNext, hangAfter, tearNext', () => {
  it('hangNext: the call never settles and changes nothing; a crash ends it, and later calls go through', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    fault.hangNext('walAppend');
    let settled = false;
    const hung = outcome(h.walAppend('1-1', 0, bytes(4, 1))).finally(() => (settled = true));
    await sleep(20);
    expect(settled).toBe(false);
    expect(await h.walList()).toEqual([]);
    fault.crash();
    const r = await hung;
    expect(!r.ok && isCrashed(r.error)).toBe(true);
    const again = await fault.openStore(STORE, { timeoutMs: 0 });
    const length = (await again.walList())[0]?.bytes ?? 0; // the crash decided it, as for a held call
    expect([0, 4]).toContain(length);
    await again.walAppend('1-1', length, bytes(4, 2));
    await again.release();
  });

  it('hangAfter: the call reaches storage and never answers', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    fault.hangAfter('manifestCommit');
    let settled = false;
    void h.manifestCommit(1, manifest(1, 2)).finally(() => (settled = true));
    await sleep(20);
    expect(settled).toBe(false);
    expect((await h.manifestLoad())?.version).toBe(2);
  });

  it('tearNext: a seeded prefix of the bytes lands, then the call rejects; every length is possible', async () => {
    const lengths = new Set<number>();
    for (let seed = 1; seed <= 30; seed++) {
      const fault = new FaultInjectingStorage(new MemoryStorage(), { seed });
      const h = await claimed(fault);
      fault.tearNext('walAppend');
      const e = await h.walAppend('1-1', 0, bytes(4, 1)).catch((err: unknown) => err);
      expect(e).toMatchObject({ code: 'IOError', message: expect.stringContaining('torn') });
      const [seg] = await h.walList();
      const got = seg ? await h.walRead('1-1') : new Uint8Array(0);
      expect(got).toEqual(bytes(4, 1).subarray(0, got.length));
      lengths.add(got.length);
      fault.tearNext('tableWrite');
      await expect(h.tableWrite('t', [bytes(6, 2)])).rejects.toMatchObject({ code: 'IOError' });
      if ((await h.tableList()).includes('t'))
        expect(bytes(6, 2).subarray(0, (await h.tableRead('t')).length)).toEqual(await h.tableRead('t'));
    }
    expect([...lengths].sort()).toEqual([0, 1, 2, 3]);
  });

  it("'estimate' can fail and hang; estimate is not counted", async () => {
    const fault = new FaultInjectingStorage();
    fault.failNext('estimate');
    await expect(fault.estimate(STORE)).rejects.toMatchObject({ code: 'IOError' });
    fault.hangNext('estimate');
    let settled = false;
    void fault.estimate(STORE).finally(() => (settled = true));
    await sleep(20);
    expect(settled).toBe(false);
    expect(await fault.estimate(STORE)).toEqual({ usageBytes: 0 });
    expect(fault.opCount).toBe(0);
  });

  it('clearFaults drops queued hangs and tears and a pending crashAt', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    fault.hangNext('walAppend');
    fault.tearNext('tableWrite');
    fault.crashAt(2);
    fault.clearFaults();
    await h.walAppend('1-1', 0, bytes(4, 1));
    await h.tableWrite('t', [bytes(4, 2)]);
    await h.walList();
    expect(fault.crashed).toBe(0);
  });
});

describe('crash', () => {
  /** One seeded crash with a WAL append, a table write and a manifest commit in flight. */
  async function crashWithWritesInFlight(seed: number) {
    const fault = new FaultInjectingStorage(new MemoryStorage(), { seed });
    const h = await claimed(fault);
    const base = bytes(10, 1);
    await h.walAppend('1-1', 0, base);
    const tail = bytes(20, 2);
    const table = [bytes(30, 3), bytes(30, 4)];
    const inFlight = [
      outcome(h.walAppend('1-1', 10, tail)),
      outcome(h.tableWrite('1-1-0.arrow', table)),
      outcome(h.manifestCommit(1, manifest(1, 2, 7))),
    ];
    fault.crash();
    const results = await Promise.all(inFlight);
    for (const r of results) expect(!r.ok && isCrashed(r.error)).toBe(true);

    const again = await fault.openStore(STORE, { timeoutMs: 0 });
    const wal = await again.walRead('1-1');
    const tables = await again.tableList();
    const file = tables.length ? await again.tableRead('1-1-0.arrow') : undefined;
    const m = await again.manifestLoad();
    await again.release();

    const whole = new Uint8Array([...base, ...tail]);
    expect(wal).toEqual(whole.subarray(0, wal.length));
    expect(wal.length).toBeGreaterThanOrEqual(base.length);
    const tableWhole = new Uint8Array([...table[0]!, ...table[1]!]);
    if (file) expect(file).toEqual(tableWhole.subarray(0, file.length));
    const kind = (n: number | undefined, full: number, none: number | undefined) => (n === none ? 'none' : n === full ? 'full' : 'torn');
    return {
      wal: kind(wal.length, whole.length, base.length),
      table: kind(file?.length, tableWhole.length, undefined),
      manifest:
        JSON.stringify(m) === JSON.stringify(manifest(1, 2, 7))
          ? 'full'
          : JSON.stringify(m) === JSON.stringify(manifest(1, 1))
            ? 'none'
            : 'partial',
    };
  }

  it('applies each in-flight write fully, not at all, or torn, by seed; a manifest commit is never partial', async () => {
    const seen = { wal: new Set<string>(), table: new Set<string>(), manifest: new Set<string>() };
    for (let seed = 1; seed <= 40; seed++) {
      const r = await crashWithWritesInFlight(seed);
      seen.wal.add(r.wal);
      seen.table.add(r.table);
      seen.manifest.add(r.manifest);
    }
    expect([...seen.wal].sort()).toEqual(['full', 'none', 'torn']);
    expect([...seen.table].sort()).toEqual(['full', 'none', 'torn']);
    expect([...seen.manifest].sort()).toEqual(['full', 'none']);
  });

  it('is reproducible for a given seed', async () => {
    for (const seed of [3, 11, 29]) expect(await crashWithWritesInFlight(seed)).toEqual(await crashWithWritesInFlight(seed));
  });

  it('leaves a dead session unable to change storage, releases its lock and calls onLost once', async () => {
    const fault = new FaultInjectingStorage();
    const onLost = vi.fn();
    const h = await fault.openStore(STORE, { onLost });
    await h.manifestCommit(0, manifest(1, 1));
    await h.walAppend('1-1', 0, bytes(4, 1));
    fault.crash();
    expect(fault.crashed).toBe(1);
    const count = fault.opCount;
    const later = [
      h.walAppend('1-1', 4, bytes(4, 2)),
      h.manifestCommit(1, manifest(1, 2)),
      h.tableWrite('t', [bytes(4, 3)]),
      h.walRemove('1-1'),
      h.walTruncate('1-1', 0),
      h.manifestLoad(),
      h.walList(),
    ];
    for (const p of later) expect(isCrashed(await p.catch((e: unknown) => e))).toBe(true);
    expect(fault.opCount).toBe(count); // a dead process issues no counted operations
    await h.release();
    expect(onLost).toHaveBeenCalledTimes(1);
    expect(onLost).toHaveBeenCalledWith('crashed');

    await fault.settled();
    const inner = await fault.inner.openStore(STORE, { timeoutMs: 0 }); // the dead process holds no lock
    expect(await inner.walRead('1-1')).toEqual(bytes(4, 1));
    expect(await inner.manifestLoad()).toEqual(manifest(1, 1));
    expect(await inner.tableList()).toEqual([]);
    await inner.release();
  });

  it('decides a held operation once: releasing the hold after the crash does not apply it again', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const fault = new FaultInjectingStorage(new MemoryStorage(), { seed });
      const h = await claimed(fault);
      const release = fault.hold('walAppend');
      const append = outcome(h.walAppend('1-1', 0, bytes(16, 1)));
      await sleep(1);
      fault.crash();
      const r = await append; // rejects without waiting for the hold
      expect(!r.ok && isCrashed(r.error)).toBe(true);
      release();
      await sleep(1);
      const again = await fault.openStore(STORE, { timeoutMs: 0 });
      const segments = await again.walList();
      expect(segments.length <= 1 && (segments[0]?.bytes ?? 0) <= 16).toBe(true);
      await again.release();
    }
  });

  it('rejects an open still waiting for the lock, and the restarted process opens normally', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    const waiting = outcome(fault.openStore(STORE, {}));
    await sleep(5);
    fault.crash();
    const r = await waiting;
    expect(!r.ok && isCrashed(r.error)).toBe(true);
    const again = await fault.openStore(STORE, { timeoutMs: 0 });
    expect(await again.manifestLoad()).toEqual(manifest(1, 1));
    await again.release();
    await h.release();
  });
});

describe('crashAt', () => {
  it('crashes at exactly the n-th operation counted from now, on any session', async () => {
    const fault = new FaultInjectingStorage();
    const h = await claimed(fault);
    expect(fault.opCount).toBe(2); // openStore + manifestCommit
    fault.crashAt(3);
    await h.walList();
    await h.manifestLoad();
    expect(fault.crashed).toBe(0);
    const third = h.walAppend('1-1', 0, bytes(4, 1));
    expect(fault.crashed).toBe(1); // synchronously, at the start of the third operation
    expect(isCrashed(await third.catch((e: unknown) => e))).toBe(true);
    expect(fault.opCount).toBe(5);
    const again = await fault.openStore(STORE, { timeoutMs: 0 });
    await again.walList();
    expect(fault.crashed).toBe(1);
    await again.release();
  });

  it('counts openStore: crashing there rejects the open', async () => {
    const fault = new FaultInjectingStorage();
    fault.crashAt(1);
    const e = await fault.openStore(STORE, {}).catch((err: unknown) => err);
    expect(isCrashed(e)).toBe(true);
    const h = await fault.openStore(STORE, { timeoutMs: 0 });
    expect(await h.manifestLoad()).toBeUndefined();
    await h.release();
  });

  it('leaves the crashing mutation in flight, so its seeded outcome may apply it', async () => {
    const lengths = new Set<number>();
    for (let seed = 1; seed <= 20; seed++) {
      const fault = new FaultInjectingStorage(new MemoryStorage(), { seed });
      const h = await claimed(fault);
      fault.crashAt(1);
      expect(isCrashed(await h.walAppend('1-1', 0, bytes(8, 1)).catch((e: unknown) => e))).toBe(true);
      const again = await fault.openStore(STORE, { timeoutMs: 0 });
      lengths.add((await again.walList())[0]?.bytes ?? -1);
      await again.release();
    }
    expect(lengths.has(8)).toBe(true);
    expect(lengths.has(-1)).toBe(true);
  });

  it('rejects an n that is not a positive integer', () => {
    expect(() => new FaultInjectingStorage().crashAt(0)).toThrow(MemWalError);
  });

  it('a crash at any point keeps every acknowledged append and the manifest whole', async () => {
    for (let n = 1; n <= 21; n++) {
      // 21 operations: open, then 10 x (append, commit)
      const fault = new FaultInjectingStorage(new MemoryStorage(), { seed: n });
      fault.crashAt(n);
      const acked: Uint8Array[] = [];
      let ackedVersion = 0;
      try {
        const h = await fault.openStore(STORE, {});
        for (let i = 0; i < 10; i++) {
          const chunk = bytes(5 + i, i);
          const offset = acked.reduce((s, a) => s + a.length, 0);
          await h.walAppend('1-1', offset, chunk);
          acked.push(chunk);
          await h.manifestCommit(ackedVersion, manifest(1, ackedVersion + 1, i));
          ackedVersion++;
        }
      } catch (e) {
        expect(isCrashed(e)).toBe(true);
      }
      expect(fault.crashed).toBe(1);
      const again = await fault.openStore(STORE, { timeoutMs: 0 });
      const wal = (await again.walList()).length ? await again.walRead('1-1') : new Uint8Array(0);
      const durable = new Uint8Array(acked.flatMap((a) => [...a]));
      expect(wal.subarray(0, durable.length)).toEqual(durable);
      const m = await again.manifestLoad();
      expect(m === undefined ? 0 : m.version - ackedVersion).toBeOneOf([0, 1]);
      if (m) expect(m).toEqual(manifest(1, m.version, m.version - 1));
      await again.release();
    }
  });
});

describe('FaultInjectingStorage under the I/O plane', () => {
  it('a store on it is placed inline over its handles, whatever plane the adapter under it has: a failed table write fails the flush, a failed append is retried', async () => {
    // The adapter under the faults has a plane of its own (as RemoteStorage has the I/O worker's);
    // here it only records that it was used.
    const inner = new MemoryStorage();
    let placedOpens = 0;
    placeStorage(inner, {
      openStore: async (name, options) => {
        placedOpens += 1;
        return inlinePlacement(inner).openStore(name, options);
      },
    });
    const faults = new FaultInjectingStorage(inner);
    const schema = new Schema([new Field('id', new Int64(), false)]);
    const w = await MemWal.open({ name: STORE, schema, primaryKey: ['id'], storage: faults, logger: { warn: () => undefined } });
    expect(placedOpens).toBe(0); // the faults' own placement: every byte passes through them
    faults.failNext('walAppend');
    await w.put([{ id: 1 }]);
    expect((await w.stats()).write.walAppendRetries).toBe(1);
    faults.failNext('tableWrite');
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.stats()).write.flushFailureCount).toBe(1);
    expect((await w.stats()).write.flushCount).toBe(1);
    expect(await w.get({ id: 1 })).toEqual({ id: 1n });
    await w.close();
  });
});
