// stats(): one snapshot of every stat taken at one moment (SPEC §15.3), the accessors and
// metrics() as its views, onStats pushes, and maxWaitMsSinceLast showing a wait between pushes.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it, vi } from 'vitest';
import type { StatsSnapshot } from '../metrics/stats.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { Backpressure } from './backpressure.js';
import { MemWal } from './memwal.js';
import { open, rejection, rows, tick, until } from './testkit.test-util.js';

const quiet = { warn: () => undefined };

/** Figures of one snapshot that must agree when nothing flushes (a big budget, no freeze). */
function expectOneMoment(s: StatsSnapshot): void {
  const m = s.memtable!;
  expect(m.rowCount).toBe(s.write.putRows);
  expect(m.batchCount).toBe(s.write.putCount);
  expect(m.durableBatchCount + m.pendingWalBatchCount).toBe(s.write.putCount);
  expect(s.unflushedBytes).toBe(m.estimatedBytes + m.frozenBytes);
}

describe('stats()', () => {
  it('is one snapshot: its parts agree with each other while writers put between its steps', async () => {
    const w = await open(new MemoryStorage(), {
      durableWrite: false,
      maxWalFlushIntervalMs: 5,
      maxMemtableBytes: 512 * 1024 * 1024,
      maxUnflushedMemtableBytes: 1024 * 1024 * 1024,
    });
    // Writers that put without waiting for durability: between two of a stats call's steps
    // (each await of it) another put may run. They yield a macrotask now and then, so the loop
    // below gets its turns too.
    let next = 0;
    let running = 3;
    const writer = async (): Promise<void> => {
      for (let i = 0; i < 150; i++) {
        await w.put(rows(next++ * 10, 3));
        if (i % 10 === 9) await tick();
      }
      running--;
    };
    const writers = [writer(), writer(), writer()];
    const seen: StatsSnapshot[] = [];
    for (let i = 0; running > 0; i++) {
      seen.push(await w.stats());
      if (i % 7 === 6) await tick();
    }
    await Promise.all(writers);
    expect(seen.length).toBeGreaterThan(20);
    for (const s of seen) expectOneMoment(s);
    expect(seen.at(-1)!.write.putCount).toBeGreaterThan(seen[0]!.write.putCount); // the writers did run between calls
    await w.close();
  });

  it('holds every part, unflushedBytes and storeBytes; the accessors are views of it', async () => {
    const w = await open(new MemoryStorage(), { maxMemtableBytes: 2_000 });
    for (let i = 0; i < 5; i++) await w.put(rows(i * 20, 20));
    await w.waitForFlushDrain();
    await w.compact(); // a background compaction the flushes started must not land between the views
    const s = await w.stats();
    expect(Object.keys(s).sort()).toEqual(
      [
        'backpressure',
        'budgetBytes',
        'compaction',
        'indexes',
        'memtable',
        'mode',
        'read',
        'state',
        'storage',
        'store',
        'takenAt',
        'unflushedBytes',
        'wal',
        'write',
      ].sort(),
    );
    expect(s.indexes).toEqual([]);
    expect(s.state).toBe('open');
    expect(s.storage.tableFileCount).toBeGreaterThan(0);
    expect(s.storage.storeBytes).toBe(s.storage.tableFileBytes + s.wal.retainedBytes);
    expect(s.unflushedBytes).toBe(s.memtable!.estimatedBytes + s.memtable!.frozenBytes);
    // Nothing changes between these calls: each view equals its part of a snapshot.
    expect(await w.memtableStats()).toEqual(s.memtable);
    expect(await w.compactionStats()).toEqual(s.compaction);
    expect(await w.readStats()).toEqual(s.read);
    expect(await w.walStats()).toEqual(s.wal);
    expect(await w.writeStats()).toEqual(s.write);
    const { maxWaitMsSinceLast: _m, longestActiveWaitMs: _l, startedCount: _s, ...seed } = s.backpressure;
    expect(await w.backpressureStats()).toEqual(seed);
    expect(await w.storageStats()).toEqual(s.storage);
    expect(await w.metrics()).toContain(`wal_unflushed_bytes{store="${s.store}"} ${s.unflushedBytes}`);
    await w.close();
  });

  it('every accessor and metrics() read the same snapshot code path', async () => {
    const w = await open();
    const snap = vi.spyOn(w.statsSource as unknown as { snapshotNow: () => StatsSnapshot }, 'snapshotNow');
    const accessors = [
      'memtableStats',
      'backpressureStats',
      'compactionStats',
      'readStats',
      'walStats',
      'writeStats',
      'storageStats',
      'metrics',
    ] as const;
    for (const a of accessors) {
      snap.mockClear();
      await w[a]();
      expect(snap, a).toHaveBeenCalledTimes(1);
    }
    await w.close();
  });

  it('in WAL-only mode: no memtable, compaction or read part, unflushedBytes are the bytes not yet appended, the views reject NotSupported', async () => {
    const w = await open(new MemoryStorage(), {
      primaryKey: [],
      enableMemtable: false,
      durableWrite: false,
      maxWalFlushIntervalMs: 60_000,
    });
    await w.put(rows(1, 10));
    const s = await w.stats();
    expect(s.mode).toBe('wal-only');
    expect(s.memtable).toBeUndefined();
    expect(s.compaction).toBeUndefined();
    expect(s.read).toBeUndefined();
    expect(s.unflushedBytes).toBeGreaterThan(0);
    expect((await rejection(w.memtableStats())).code).toBe('NotSupported');
    expect((await rejection(w.readStats())).code).toBe('NotSupported');
    expect((await w.backpressureStats()).totalCount).toBe(0);
    await w.sync();
    expect((await w.stats()).unflushedBytes).toBe(0);
    await w.close();
  });

  it('indexes: one entry per declared ordered index, the figures indexStats() gives, in memtables and after a flush', async () => {
    const schema = new Schema([new Field('id', new Int32(), false), new Field('name', new Utf8(), true)]);
    const w = await MemWal.open({
      name: 'stats-indexes',
      storage: new MemoryStorage(),
      schema,
      primaryKey: ['id'],
      indexes: { byName: { column: 'name' } },
      logger: { warn: () => undefined },
    });
    const none = { filesBuilt: 0, filesPending: 0 }; // no table file yet: nothing to build
    expect((await w.stats()).indexes).toEqual([{ name: 'byName', kind: 'ordered', entries: 0, bytes: 0, ...none }]);
    await w.put(Array.from({ length: 5 }, (_, i) => ({ id: i, name: `n${i}` })));
    const inMemtable = (await w.stats()).indexes;
    expect(inMemtable).toEqual([{ name: 'byName', kind: 'ordered', entries: 5, bytes: expect.any(Number), ...none }]);
    expect(inMemtable[0]!.bytes).toBeGreaterThan(0);
    const figures = (await w.indexStats()).byName!;
    expect(inMemtable[0]).toMatchObject({ entries: figures.entries, bytes: figures.bytes });
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect(await w.query('byName')).toHaveLength(5); // builds the table file's section
    const flushed = (await w.indexStats()).byName!;
    expect(flushed.tableEntries).toBe(5);
    // The flushed file holds the section (written by the flush itself): built.
    expect((await w.stats()).indexes).toEqual([
      { name: 'byName', kind: 'ordered', entries: flushed.entries, bytes: flushed.bytes, filesBuilt: 1, filesPending: 0 },
    ]);
    await w.close();
  });

  it('answers on a poisoned writer', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { walRetry: { baseMs: 1, maxMs: 1, timeoutMs: 20 } });
    fs.failNext('walAppend', 1000);
    await rejection(w.put(rows(1, 1)));
    await until(() => w.writerState === 'poisoned');
    const s = await w.stats();
    expect(s.state).toBe('poisoned');
    expect(s.memtable!.rowCount).toBe(1);
    await w.abort();
  });
});

describe('maxWaitMsSinceLast', () => {
  const ctx = (signal?: AbortSignal) => ({
    terminal: () => undefined,
    onBlocked: () => undefined,
    describe: () => '',
    logIntervalMs: 60_000,
    logger: quiet,
    signal,
  });

  it('shows a wait that began and ended inside the interval, then restarts', async () => {
    const bp = new Backpressure();
    const window = bp.openWindow();
    let room = false;
    const p = bp.admit(() => room, ctx());
    await tick(40);
    room = true;
    bp.wake();
    await p;
    const first = bp.stats(false, window);
    expect(first.activeCount).toBe(0);
    expect(first.maxWaitMsSinceLast).toBeGreaterThanOrEqual(30);
    expect(first.startedCount).toBe(1);
    expect(bp.stats(false, window).maxWaitMsSinceLast).toBe(0); // the next interval saw no wait
  });

  it('shows an aborted wait, and a wait still in progress by its elapsed time', async () => {
    const bp = new Backpressure();
    const window = bp.openWindow();
    const abort = new AbortController();
    const p = bp.admit(() => false, ctx(abort.signal));
    await tick(30);
    abort.abort();
    await expect(p).rejects.toMatchObject({ code: 'Aborted' });
    expect(bp.stats(false, window).maxWaitMsSinceLast).toBeGreaterThanOrEqual(20);
    const q = bp.admit(() => false, ctx(abort.signal === undefined ? undefined : new AbortController().signal));
    await tick(25);
    const during = bp.stats(false, window);
    expect(during.activeCount).toBe(1);
    expect(during.longestActiveWaitMs).toBeGreaterThanOrEqual(15);
    expect(during.maxWaitMsSinceLast).toBe(during.longestActiveWaitMs);
    bp.wake(); // the writer stops: nothing admits it
    void q.catch(() => undefined);
  });

  it('each reader has its own interval: one reader taking a snapshot does not hide the wait from another', async () => {
    const bp = new Backpressure();
    const a = bp.openWindow();
    const b = bp.openWindow();
    let room = false;
    const p = bp.admit(() => room, ctx());
    await tick(30);
    room = true;
    bp.wake();
    await p;
    expect(bp.stats(false, a).maxWaitMsSinceLast).toBeGreaterThanOrEqual(20);
    expect(bp.stats(false, b).maxWaitMsSinceLast).toBeGreaterThanOrEqual(20);
    bp.closeWindow(b);
  });
});

describe('onStats (in-process)', () => {
  it('pushes a snapshot at once and every intervalMs, a wait between two pushes included; ends at unsubscribe and at close', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { maxUnflushedMemtableBytes: 4_000, maxMemtableBytes: 1_000_000 });
    const pushes: StatsSnapshot[] = [];
    const stop = w.onStats((s) => pushes.push(s), { intervalMs: 400 });
    await until(() => pushes.length === 1, 2000, 'the first push');
    // A wait that starts and ends well inside one interval.
    const release = fs.hold('tableWrite');
    await w.put(rows(1, 100));
    const blocked = w.put(rows(200, 1));
    await tick(60);
    release();
    await blocked;
    expect((await w.backpressureStats()).activeCount).toBe(0);
    const before = pushes.length;
    await until(() => pushes.length > before, 2000, 'the next push');
    const shown = pushes.slice(before).find((s) => s.backpressure.maxWaitMsSinceLast > 0);
    expect(shown?.backpressure.maxWaitMsSinceLast).toBeGreaterThanOrEqual(40);
    expect(shown?.backpressure.activeCount).toBe(0);
    stop();
    const stopped = pushes.length;
    await tick(500);
    expect(pushes.length).toBe(stopped);
    const second: StatsSnapshot[] = [];
    w.onStats((s) => second.push(s), { intervalMs: 20 });
    await until(() => second.length >= 2, 2000, 'pushes');
    await w.close();
    const atClose = second.length;
    await tick(80);
    expect(second.length).toBe(atClose);
  });

  it('a listener that throws is logged and keeps its subscription; a bad intervalMs is InvalidArgument', async () => {
    const warnings: string[] = [];
    const w = await MemWal.open({
      name: 'stats-listener',
      schema: (await import('./testkit.test-util.js')).schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: { warn: (m: string) => warnings.push(m) },
    });
    let calls = 0;
    const stop = w.onStats(
      () => {
        calls++;
        throw new Error('listener bug');
      },
      { intervalMs: 10 },
    );
    await until(() => calls >= 2, 2000, 'two pushes');
    expect(warnings).toContain('memwal: onStats listener threw');
    stop();
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '10' as unknown as number]) {
      expect(() => w.onStats(() => undefined, { intervalMs: bad })).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    }
    await w.close();
  });
});
