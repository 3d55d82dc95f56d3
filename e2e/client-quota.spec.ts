// A real quota limit (Chromium's Storage.overrideQuotaForOrigin over CDP) hit during a write storm
// through the main-thread client: lifted within walRetry nothing fails and flushes retry until they
// succeed; held beyond it the writer poisons with QuotaExceeded, and a reopen loses nothing acknowledged.

import { expect, test, type CDPSession, type Page } from '@playwright/test';
import { MiB, Profile, missing, mw, ok, open, until } from './client-fixtures.js';

interface Stats {
  writeStats: { walAppendRetries: number; flushFailureCount: number; flushCount: number };
  memtableStats: { frozenBytes: number };
}

async function limitQuota(page: Page, cdp: CDPSession, origin: string, client: number, headroomBytes: number): Promise<void> {
  // storageStats() answers without usage figures until the origin's first estimate lands (it waits
  // at most 200 ms for it; a busy machine takes longer): ask again until they are there.
  const { usageBytes: usage } = await until(
    async () => ok(await mw(page, 'call', client, 'storageStats')) as { usageBytes?: number },
    (s) => typeof s.usageBytes === 'number',
    10_000,
    'storageStats().usageBytes',
  );
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage! + headroomBytes });
}

const stats = async <K extends keyof Stats>(page: Page, c: number, k: K): Promise<Stats[K]> => ok(await mw(page, 'call', c, k)) as Stats[K];

test('a quota hit during a write storm and lifted within walRetry: no poison, failed flushes retry and succeed, nothing lost', async ({
  baseURL,
}, testInfo) => {
  const profile = new Profile(testInfo, baseURL!);
  const origin = new URL(baseURL!).origin;
  try {
    const page = await profile.launch();
    const cdp = await profile.context!.newCDPSession(page);
    const c = await open(page, {
      name: 'quota-lifted',
      keyed: true,
      options: {
        maxMemtableBytes: 512 * 1024,
        walRetry: { baseMs: 20, maxMs: 200, timeoutMs: 20_000 },
        flushRetry: { baseMs: 20, maxMs: 200 },
      },
    });
    await limitQuota(page, cdp, origin, c, 2 * MiB);
    await mw(page, 'storm', c, { firstId: 0, batch: 16, payloadBytes: 4096, concurrency: 2 });
    const hit = await until(
      async () => {
        const ws = await stats(page, c, 'writeStats');
        return ws.walAppendRetries + ws.flushFailureCount;
      },
      (n) => n > 0,
      20_000,
      'a write failing on the quota',
    );
    const during = await stats(page, c, 'memtableStats');
    const duringWs = await stats(page, c, 'writeStats');
    // Truthful while limited: a flush that failed still owes its bytes.
    if (duringWs.flushFailureCount > 0) expect(during.frozenBytes).toBeGreaterThan(0);
    const ackedDuring = (await mw(page, 'acked', c)).length;
    await page.waitForTimeout(500);
    expect(await mw(page, 'states', c)).not.toContain('poisoned');
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    await until(
      () => mw(page, 'acked', c),
      (ids) => ids.length > ackedDuring + 200,
      20_000,
      'the storm going on after the lift',
    );
    const storm = await mw(page, 'stopStorm', c);
    expect(storm.errors, 'no put failed').toEqual({});
    ok(await mw(page, 'call', c, 'forceSealActive'));
    ok(await mw(page, 'call', c, 'waitForFlushDrain'));
    const ws = await stats(page, c, 'writeStats');
    const mt = await stats(page, c, 'memtableStats');
    console.log(
      `quota hit (${hit} failed attempts, frozenBytes ${during.frozenBytes} while limited); after the lift: ${ws.walAppendRetries} WAL retries, ` +
        `${ws.flushFailureCount} failed and ${ws.flushCount} good flushes, ${storm.acked.length} rows acknowledged`,
    );
    expect(mt.frozenBytes).toBe(0);
    expect(ws.flushCount).toBeGreaterThan(0);
    // The failures were the quota (the worker's warnings reach the page's logger).
    const warnings = await mw(page, 'warnings', c);
    expect(
      warnings.some((w) => w.includes('QuotaExceeded')),
      warnings.join('\n'),
    ).toBe(true);
    expect(await mw(page, 'states', c)).not.toContain('poisoned');
    const scan = ok(await mw(page, 'scan', c));
    expect(missing(storm.acked, scan.ids)).toEqual([]);
    ok(await mw(page, 'call', c, 'close'));
  } finally {
    await profile.dispose();
  }
});

test('a quota held beyond walRetry poisons the writer with QuotaExceeded; lifted and reopened, nothing acknowledged is lost', async ({
  baseURL,
}, testInfo) => {
  const profile = new Profile(testInfo, baseURL!);
  const origin = new URL(baseURL!).origin;
  try {
    const page = await profile.launch();
    const cdp = await profile.context!.newCDPSession(page);
    const options = { walRetry: { baseMs: 20, maxMs: 200, timeoutMs: 1000 }, flushRetry: { baseMs: 20, maxMs: 200 } };
    const c = await open(page, { name: 'quota-held', keyed: true, options });
    await limitQuota(page, cdp, origin, c, 2 * MiB);
    await mw(page, 'storm', c, { firstId: 0, batch: 16, payloadBytes: 4096, concurrency: 2 });
    await until(
      () => mw(page, 'states', c),
      (s) => s.includes('poisoned'),
      30_000,
      "state 'poisoned'",
    );
    const storm = await mw(page, 'stopStorm', c);
    expect(Object.keys(storm.errors)).toContain('QuotaExceeded');
    expect(Object.keys(storm.errors).filter((k) => k !== 'QuotaExceeded')).toEqual([]);
    const poisoned = await mw(page, 'put', c, 1_000_000, 1);
    expect(poisoned.ok ? 'ok' : poisoned.code).toBe('QuotaExceeded');
    // Stats still answer on a poisoned writer.
    ok(await mw(page, 'call', c, 'metrics'));

    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    ok(await mw(page, 'call', c, 'close'));
    const again = await open(page, { name: 'quota-held', keyed: true, options });
    const scan = ok(await mw(page, 'scan', again));
    console.log(`poisoned after ${storm.acked.length} acknowledged rows; ${scan.rows} rows after the reopen`);
    expect(storm.acked.length).toBeGreaterThan(0);
    expect(missing(storm.acked, scan.ids)).toEqual([]);
    ok(await mw(page, 'call', again, 'close'));
  } finally {
    await profile.dispose();
  }
});
