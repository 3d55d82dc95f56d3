// memwal/playwright on the client harness page (site/client): the init script registers the
// page's openMemWal clients and, when asked before the open, hosts a store in the kit's worker.

import { expect, test } from '../src/playwright.js';
import { clientPage, mw, ok, open } from './client-fixtures.js';

test('a store the page opened is seen by the kit: stats, metrics, scan, sync', async ({ page, memwal }) => {
  await clientPage(page);
  const c = await open(page, { name: 'kit-plain', keyed: true });
  const store = memwal.store('kit-plain');
  await store.waitForOpen();
  ok(await mw(page, 'put', c, 0, 20, 8));
  const stats = await store.stats();
  expect(stats.memtable?.rowCount).toBe(20);
  expect(stats.backpressure.activeCount).toBe(0);
  expect(await store.metrics()).toContain('wal_unflushed_bytes');
  expect((await store.scan()).map((r) => r.id)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  await store.flush();
  await expect(store).toHaveFlushed();
});

test('faults: the next three flushes fail, the store retries, nothing is lost', async ({ page, memwal }) => {
  const store = memwal.store('kit-faults', { faults: true });
  await clientPage(page);
  const c = await open(page, { name: 'kit-faults', keyed: true, options: { flushRetry: { baseMs: 20, maxMs: 100 } } });
  await store.waitForOpen();
  expect((await store.opens())[0]!.kitHosted).toBe(true);
  await store.failNext('tableWrite', 3);
  ok(await mw(page, 'put', c, 0, 50, 8));
  await store.flush();
  await expect(store).toHaveFlushed();
  expect((await store.stats()).write.flushFailureCount).toBe(3);
  expect(await store.scan()).toHaveLength(50);
});

test('crash: the worker dies, the client rejects Closed, a reopen finds every acknowledged row', async ({ page, memwal }) => {
  const store = memwal.store('kit-crash', { faults: true });
  await clientPage(page);
  const c = await open(page, { name: 'kit-crash', keyed: true });
  await store.waitForOpen();
  ok(await mw(page, 'put', c, 0, 30, 8));
  await store.crash();
  const after = await mw(page, 'call', c, 'walStats');
  expect(after.ok).toBe(false);
  await open(page, { name: 'kit-crash', keyed: true });
  await store.waitForOpen();
  expect(await store.scan()).toHaveLength(30);
});
