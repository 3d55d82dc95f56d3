// Backpressure and stats seen from the main thread, through a user's own worker (memwal/worker
// over FaultInjectingStorage): a blocked put shows in activeCount and leaves it when it goes on,
// and stats and metrics() keep answering while every flush fails.

import { expect, test } from '../src/playwright.js';
import { clientPage, code, metric, mw, ok, open, settledOutcome, until } from './client-fixtures.js';

interface MemStats {
  frozenBytes: number;
  frozenCount: number;
  estimatedBytes: number;
}

test('backpressure is visible from the main thread: activeCount > 0 while a put is blocked, then back to 0', async ({ page, memwal }) => {
  const store = memwal.store('pressure', { faults: true });
  await clientPage(page);
  const c = await open(page, {
    name: 'pressure',
    keyed: true,
    options: { maxMemtableBytes: 16 * 1024, maxUnflushedMemtableBytes: 32 * 1024 },
  });
  const release = await store.hold('tableWrite');
  let blocked: number | undefined;
  for (let i = 0; i < 40 && blocked === undefined; i++) {
    const op = await mw(page, 'startPut', c, i * 100, 100, 64);
    if ((await mw(page, 'settled', op, 100)) === 'pending') blocked = op;
  }
  expect(blocked, 'a put blocked on the budget').toBeDefined();
  const { backpressure, memtable } = await store.stats();
  expect(backpressure.activeCount).toBe(1);
  expect(metric(await store.metrics(), 'wal_backpressure_active_waiters')).toBe(1);
  expect(memtable!.frozenBytes + memtable!.estimatedBytes).toBeGreaterThanOrEqual(32 * 1024);

  await release();
  ok(await settledOutcome(page, blocked!, 10_000), 'the blocked put');
  await expect(store).toHaveNoBackpressure();
  const after = (await store.stats()).backpressure;
  expect(after.totalCount).toBeGreaterThanOrEqual(1);
  expect(after.totalWaitMs).toBeGreaterThan(0);
  ok(await mw(page, 'call', c, 'close'));
});

test('stats and metrics() answer from the main thread while every flush fails: frozenBytes stays, failures count', async ({
  page,
  memwal,
}) => {
  const store = memwal.store('failing-flush', { faults: true });
  await clientPage(page);
  const c = await open(page, { name: 'failing-flush', keyed: true, options: { flushRetry: { baseMs: 20, maxMs: 100 } } });
  await store.failNext('tableWrite', Infinity);
  ok(await mw(page, 'put', c, 0, 500, 64));
  await store.forceSealActive();

  let slowestMs = 0;
  const timed = async <T>(method: string): Promise<T> => {
    const start = Date.now();
    const v = ok(await mw(page, 'call', c, method)) as T;
    slowestMs = Math.max(slowestMs, Date.now() - start);
    return v;
  };
  const failures = await until(
    async () => (await timed<{ flushFailureCount: number }>('writeStats')).flushFailureCount,
    (n) => n >= 3,
    10_000,
    'three failed flush attempts',
  );
  const mt = await timed<MemStats>('memtableStats');
  expect(mt.frozenBytes).toBeGreaterThan(0);
  expect(mt.frozenCount).toBe(1);
  const text = await timed<string>('metrics');
  expect(metric(text, 'wal_sealed_memtables')).toBe(1);
  expect(metric(text, 'wal_frozen_bytes')).toBe(mt.frozenBytes);
  expect(metric(text, 'wal_flush_failures_total')).toBeGreaterThanOrEqual(failures);
  await timed('storageStats');
  await timed('backpressureStats');
  await timed('walStats');
  console.log(`${failures} flush failures; slowest stats call from the main thread: ${slowestMs} ms`);
  expect(slowestMs).toBeLessThan(1000);
  await expect(store).not.toHaveFlushed();

  await store.clearFaults();
  await store.waitForFlushDrain();
  await expect(store).toHaveFlushed();
  ok(await mw(page, 'call', c, 'close'));
});

test("workerUrl: openMemWal starts the app's own worker script (memwal/worker inside) and ends it on close", async ({ page }) => {
  await clientPage(page);
  const c = await open(page, { name: 'by-url', worker: 'url', keyed: true });
  ok(await mw(page, 'put', c, 0, 10));
  expect(ok(await mw(page, 'scan', c)).rows).toBe(10);
  ok(await mw(page, 'call', c, 'close'));
  expect(code(await mw(page, 'call', c, 'walStats'))).toBe('Closed');
});
