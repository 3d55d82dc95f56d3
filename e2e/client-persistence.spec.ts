// Persistence through the main-thread client: acknowledged writes survive a page reload and a
// browser restart on the same profile, in both browser layouts.

import { expect, test } from '@playwright/test';
import { Profile, clientPage, describeStorage, missing, mw, ok, open, range, until } from './client-fixtures.js';
import type { Layout } from './site/client/protocol.js';

const LAYOUTS: Layout[] = ['opfs', 'indexeddb'];

for (const layout of LAYOUTS) {
  test(`${layout}: every acknowledged write is there after a page reload`, async ({ page }) => {
    await clientPage(page);
    const name = `reload-${layout}`;
    const c = await open(page, { name, storage: layout, keyed: true, options: { maxMemtableBytes: 64 * 1024 } });
    for (let i = 0; i < 23; i++) ok(await mw(page, 'put', c, i * 50, 50, 200), 'put');
    // Some rows flushed to table files, the rest only in the WAL: no close before the reload.
    const before = ok(await mw(page, 'call', c, 'memtableStats')) as { rowCount: number };
    const flushed = ok(await mw(page, 'call', c, 'writeStats')) as { flushCount: number };
    console.log(`${layout} before reload: ${flushed.flushCount} flushes, ${before.rowCount} rows only in the WAL`);
    expect(before.rowCount, 'some acknowledged rows are only in the WAL').toBeGreaterThan(0);
    await page.reload();
    await page.waitForFunction(() => 'mw' in window);
    const again = await open(page, { name, storage: layout, keyed: true, options: { lockTimeoutMs: 5000 } });
    const scan = ok(await mw(page, 'scan', again));
    expect(missing(range(0, 1150), scan.ids)).toEqual([]);
    expect(scan.rows).toBe(1150);
    const ws = ok(await mw(page, 'call', again, 'writeStats')) as { replayedRows: number };
    expect(ws.replayedRows).toBe(before.rowCount);
    ok(await mw(page, 'call', again, 'close'));
  });
}

test('both layouts: every acknowledged write is there after a browser restart on the same profile', async ({ baseURL }, testInfo) => {
  const profile = new Profile(testInfo, baseURL!);
  try {
    let page = await profile.launch();
    for (const layout of LAYOUTS) {
      const c = await open(page, { name: `restart-${layout}`, storage: layout, keyed: true });
      for (let i = 0; i < 10; i++) ok(await mw(page, 'put', c, i * 30, 30, 100));
      ok(await mw(page, 'call', c, 'forceSealActive'));
      ok(await mw(page, 'put', c, 300, 30, 100)); // only in the WAL when the browser stops
    }
    await profile.stop();
    page = await profile.launch();
    for (const layout of LAYOUTS) {
      const c = await open(page, { name: `restart-${layout}`, storage: layout, keyed: true, options: { lockTimeoutMs: 5000 } });
      const scan = ok(await mw(page, 'scan', c));
      expect(missing(range(0, 330), scan.ids), `${layout}: rows lost across the restart`).toEqual([]);
      expect(scan.rows).toBe(330);
      ok(await mw(page, 'call', c, 'close'));
    }
  } finally {
    await profile.dispose();
  }
});

for (const event of ['pagehide', 'visibilitychange'] as const) {
  test(`${event}: the client asks the worker for sync(), so non-durable puts queued before it survive a worker crash`, async ({ page }) => {
    await clientPage(page);
    const name = `lifecycle-${event}`;
    // Non-durable puts wait up to a minute for their WAL append unless something asks for sync().
    const c = await open(page, { name, worker: 'own', keyed: true, options: { durableWrite: false, maxWalFlushIntervalMs: 60_000 } });
    for (let i = 0; i < 5; i++) expect((ok(await mw(page, 'put', c, i * 10, 10)) as { durable: boolean }).durable).toBe(false);
    expect((ok(await mw(page, 'call', c, 'memtableStats')) as { pendingWalBatchCount: number }).pendingWalBatchCount).toBe(5);
    await mw(page, 'hide', event);
    await until(
      async () => (ok(await mw(page, 'call', c, 'memtableStats')) as { pendingWalBatchCount: number }).pendingWalBatchCount,
      (n) => n === 0,
      5000,
      'the lifecycle sync',
    );
    await mw(page, 'terminate', c);
    const again = await open(page, { name, keyed: true, options: { lockTimeoutMs: 5000 } });
    expect(missing(range(0, 50), ok(await mw(page, 'scan', again)).ids)).toEqual([]);
    ok(await mw(page, 'call', again, 'close'));
  });
}

test('storage defaults to the OPFS layout in the worker, and persist: true asks navigator.storage.persist() on the main thread', async ({
  baseURL,
}, testInfo) => {
  const profile = new Profile(testInfo, baseURL!);
  try {
    const page = await profile.launch();
    const cdp = await profile.context!.newCDPSession(page);
    await cdp.send('Browser.grantPermissions', { origin: new URL(baseURL!).origin, permissions: ['durableStorage'] });
    const c = await open(page, { name: 'default-layout', keyed: true, options: { persist: true } });
    ok(await mw(page, 'put', c, 0, 10));
    const described = (await describeStorage(page, 'default-layout')) as { manifest: { layout: string }; opfsWal: string[] };
    expect(described.manifest.layout).toBe('opfs');
    expect(described.opfsWal.length).toBeGreaterThan(0);
    await until(
      () => mw(page, 'persisted', c),
      (p) => p !== undefined,
      5000,
      'the persist() answer',
    );
    expect(await mw(page, 'persisted', c)).toBe(true);
    expect((ok(await mw(page, 'call', c, 'storageStats')) as { persisted?: boolean }).persisted).toBe(true);
    ok(await mw(page, 'call', c, 'close'));
  } finally {
    await profile.dispose();
  }
});
