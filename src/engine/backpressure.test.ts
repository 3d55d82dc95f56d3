import { describe, expect, it } from 'vitest';
import { FaultInjectingStorage } from '../testing/fault.js';
import { Backpressure } from './backpressure.js';
import { open, rejection, rows, storeName, tick, until } from './testkit.test-util.js';

const quiet = { warn: () => undefined };

describe('the admission ladder', () => {
  it('admits at once without counting a wait', async () => {
    const bp = new Backpressure();
    await bp.admit(() => true, {
      terminal: () => undefined,
      onBlocked: () => undefined,
      describe: () => '',
      logIntervalMs: 1000,
      logger: quiet,
    });
    expect(bp.stats()).toMatchObject({ totalCount: 0, activeCount: 0, abortedCount: 0 });
  });

  it('warns through the logger at the log interval while blocked', async () => {
    const bp = new Backpressure();
    const warnings: string[] = [];
    let room = false;
    const p = bp.admit(() => room, {
      terminal: () => undefined,
      onBlocked: () => undefined,
      describe: () => 'unflushed 9 of 8 bytes',
      logIntervalMs: 10,
      logger: { warn: (m) => warnings.push(m) },
    });
    await until(() => warnings.length >= 2, 2000, 'two warnings');
    room = true;
    bp.wake();
    await p;
    expect(warnings[0]).toContain('unflushed 9 of 8 bytes');
    expect(bp.stats()).toMatchObject({ totalCount: 1, activeCount: 0 });
  });
});

describe('backpressure in the writer (memtable mode)', () => {
  const tiny = { maxUnflushedMemtableBytes: 4_000, maxMemtableBytes: 1_000_000 };

  it('a first in-progress wait shows activeCount 1 and totalCount 0 before it completes', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, tiny);
    const release = fs.hold('tableWrite');
    await w.put(rows(1, 100)); // over the budget: the next put must wait
    const blocked = w.put(rows(200, 1));
    await tick(20);
    const during = await w.backpressureStats();
    expect(during.activeCount).toBe(1);
    expect(during.totalCount).toBe(0);
    expect(during.totalWaitMs).toBe(0);
    expect(during.activeWaitMs).toBeGreaterThan(0);
    // The budget was below maxMemtableBytes: the writer froze the active memtable so the wait can end.
    expect((await w.memtableStats()).frozenCount).toBe(1);
    release();
    await blocked;
    const after = await w.backpressureStats();
    expect(after.activeCount).toBe(0);
    expect(after.totalCount).toBe(1);
    expect(after.totalWaitMs).toBeGreaterThan(0);
    await w.close();
  });

  it('an aborted wait returns activeCount to 0, counts in abortedCount, and writes nothing', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, tiny);
    const release = fs.hold('tableWrite');
    await w.put(rows(1, 100));
    const ac = new AbortController();
    const blocked = w.put(rows(500, 1), { signal: ac.signal });
    await tick(10);
    expect((await w.backpressureStats()).activeCount).toBe(1);
    ac.abort();
    expect((await rejection(blocked)).code).toBe('Aborted');
    const st = await w.backpressureStats();
    expect(st).toMatchObject({ activeCount: 0, totalCount: 0, abortedCount: 1 });
    expect(st.abortedWaitMs).toBeGreaterThan(0);
    release();
    await w.waitForFlushDrain();
    expect(await w.get({ id: 500 })).toBeUndefined();
    await w.close();
  });

  it('a blocked put rejects BackpressureTimeout after backpressureTimeoutMs', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { ...tiny, backpressureTimeoutMs: 30 });
    const release = fs.hold('tableWrite');
    await w.put(rows(1, 100));
    expect((await rejection(w.put(rows(500, 1)))).code).toBe('BackpressureTimeout');
    expect((await w.backpressureStats()).abortedCount).toBe(1);
    release();
    await w.close();
  });

  it('close wakes waiting puts with Closed and poison wakes them with the latched error', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, tiny);
    const release = fs.hold('tableWrite');
    await w.put(rows(1, 100));
    const blocked = w.put(rows(500, 1));
    await tick(10);
    const closing = w.close();
    expect((await rejection(blocked)).code).toBe('Closed');
    release();
    await closing;

    const fs2 = new FaultInjectingStorage();
    const name = storeName();
    const w2 = await open(fs2, tiny, name);
    const rel2 = fs2.hold('tableWrite');
    await w2.put(rows(1, 100));
    const blocked2 = w2.put(rows(600, 1));
    await tick(10);
    const thief = await fs2.openStore(name, { steal: true }); // the writer is fenced: poisoned
    expect((await rejection(blocked2)).code).toBe('Fenced');
    expect(await w2.backpressureStats()).toMatchObject({ activeCount: 0, abortedCount: 1 });
    rel2();
    await thief.release();
    await w2.close();
  });

  it('a failed flush keeps its bytes in the budget, so backpressure rises until the retry succeeds', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { ...tiny, flushRetry: { baseMs: 30, maxMs: 30 } });
    fs.failNext('tableWrite', 3);
    await w.put(rows(1, 100));
    const blocked = w.put(rows(300, 1));
    await until(async () => (await w.writeStats()).flushFailureCount >= 1, 2000, 'flush failure');
    const mid = await w.memtableStats();
    expect(mid.frozenBytes).toBeGreaterThan(0);
    expect((await w.backpressureStats()).activeCount).toBe(1);
    expect(await w.metrics()).toMatch(/wal_backpressure_active_waiters\{store="[^"]+"\} 1/);
    await blocked;
    expect((await w.writeStats()).flushFailureCount).toBe(3);
    await w.close();
  });

  it('concurrent puts overshoot the budget by at most one put', async () => {
    const fs = new FaultInjectingStorage();
    const budget = 20_000;
    const w = await open(fs, { maxUnflushedMemtableBytes: budget, maxMemtableBytes: 5_000 });
    const release = fs.hold('tableWrite');
    let peak = 0;
    const puts = Array.from({ length: 40 }, (_, i) => w.put(rows(i * 10, 10)));
    for (let i = 0; i < 20; i++) {
      const st = await w.memtableStats();
      peak = Math.max(peak, st.estimatedBytes + st.frozenBytes);
      await tick(2);
    }
    release();
    await Promise.all(puts);
    const onePut = 10 * 200; // generous upper bound of one 10-row put's estimate
    expect(peak).toBeLessThan(budget + onePut);
    await w.close();
  });
});

describe('backpressure in WAL-only mode', () => {
  it('bounds bytes not yet appended and shows an in-progress wait', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { enableMemtable: false, primaryKey: [], maxUnflushedMemtableBytes: 3_000 });
    const release = fs.hold('walAppend');
    const first = w.put(rows(1, 300));
    const blocked = w.put(rows(200, 1));
    await tick(10);
    const st = await w.backpressureStats();
    expect(st.activeCount).toBe(1);
    expect(st.totalCount).toBe(0);
    release();
    await Promise.all([first, blocked]);
    expect((await w.backpressureStats()).totalCount).toBe(1);
    const ac = new AbortController();
    const rel2 = fs.hold('walAppend');
    const p3 = w.put(rows(1000, 300));
    const p4 = w.put(rows(400, 1), { signal: ac.signal });
    await tick(10);
    ac.abort();
    expect((await rejection(p4)).code).toBe('Aborted');
    expect(await w.backpressureStats()).toMatchObject({ activeCount: 0, abortedCount: 1 });
    rel2();
    await p3;
    await w.close();
  });
});

it('stats answer on a poisoned writer', async () => {
  const fs = new FaultInjectingStorage();
  const w = await open(fs, { walRetry: { baseMs: 1, maxMs: 1, timeoutMs: 5 } });
  fs.failNext('walAppend', Infinity);
  await rejection(w.put(rows(1, 1)));
  expect(w.writerState).toBe('poisoned');
  await expect(w.memtableStats()).resolves.toMatchObject({ rowCount: 1 });
  await expect(w.backpressureStats()).resolves.toMatchObject({ activeCount: 0 });
  await expect(w.walStats()).resolves.toBeDefined();
  await expect(w.writeStats()).resolves.toBeDefined();
  await expect(w.storageStats()).resolves.toBeDefined();
  expect(await w.metrics()).toContain('wal_writer_state{store="');
  await w.close();
});
