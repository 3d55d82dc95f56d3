// memwal/playwright on the client harness page (site/client): the init script registers the
// page's openMemWal clients and, when asked before the open, hosts a store in the kit's worker.

import { PersistentProfile, expect, test } from '../src/playwright.js';
import { clientPage, mw, ok, open, settledOutcome } from './client-fixtures.js';

/** The message a matcher that should fail failed with. */
async function failureOf(matcher: Promise<unknown>): Promise<string> {
  return matcher.then(
    () => {
      throw new Error('the matcher passed');
    },
    (e: Error) => e.message,
  );
}

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

test('hold: a put blocked on the budget shows in toHaveNoBackpressure, whose failure prints the figures that decide', async ({
  page,
  memwal,
}) => {
  const store = memwal.store('kit-hold', { faults: true });
  await clientPage(page);
  const c = await open(page, {
    name: 'kit-hold',
    keyed: true,
    options: { maxMemtableBytes: 16 * 1024, maxUnflushedMemtableBytes: 32 * 1024 },
  });
  await store.waitForOpen();
  const release = await store.hold('tableWrite');
  let blocked: number | undefined;
  for (let i = 0; i < 40 && blocked === undefined; i++) {
    const op = await mw(page, 'startPut', c, i * 100, 100, 64);
    if ((await mw(page, 'settled', op, 100)) === 'pending') blocked = op;
  }
  expect(blocked, 'a put blocked on the budget').toBeDefined();
  const failure = await failureOf(expect(store).toHaveNoBackpressure({ timeout: 300 }));
  expect(failure).toContain('Received: activeCount 1');
  expect(failure).not.toContain('"frozenBytes"'); // the figures that decide, not every stat
  expect(failure.split('\n').length).toBeLessThanOrEqual(6);
  await expect(store).not.toHaveNoBackpressure();

  await release();
  await expect(store).toHaveNoBackpressure();
  ok(await settledOutcome(page, blocked!, 10_000), 'the blocked put');
});

test('toHaveFlushed fails while the active memtable holds a row, in a few lines that say to flush first; flush() makes it pass', async ({
  page,
  memwal,
}) => {
  await clientPage(page);
  const c = await open(page, { name: 'kit-unflushed', keyed: true });
  const store = memwal.store('kit-unflushed');
  await store.waitForOpen();
  ok(await mw(page, 'put', c, 0, 1, 8));
  const failure = await failureOf(expect(store).toHaveFlushed({ timeout: 300 }));
  expect(failure).toContain('Received: active rowCount 1');
  expect(failure).toContain('store.flush()');
  expect(failure.split('\n').length).toBeLessThanOrEqual(7);
  console.log(`toHaveFlushed failure message:\n${failure}`);
  await store.flush();
  await expect(store).toHaveFlushed();
});

test("failAfter('walAppend'): the append lands but reports failure; the put resolves after one retry, a warning, no row twice", async ({
  page,
  memwal,
}) => {
  const store = memwal.store('kit-wal-after', { faults: true });
  await clientPage(page);
  const c = await open(page, { name: 'kit-wal-after', keyed: false }); // append-only: a duplicate would show
  await store.waitForOpen();
  await store.failAfter('walAppend');
  expect(ok(await mw(page, 'put', c, 0, 3, 8))).toMatchObject({ rows: 3, durable: true });
  expect((await store.stats()).write.walAppendRetries).toBe(1);
  expect((await mw(page, 'warnings', c)).filter((w) => /walAppend/.test(w))).toEqual([
    expect.stringMatching(/injected fault: walAppend \(after it was applied: the reply was lost\).*retry 1/),
  ]);
  // The WAL holds the entry once: a crash and reopen (recovery replays the WAL) finds 3 rows.
  await store.crash();
  const again = await open(page, { name: 'kit-wal-after', keyed: false });
  await store.waitForOpen();
  const scan = ok(await mw(page, 'scan', again));
  expect({ rows: scan.rows, duplicates: scan.duplicates }).toEqual({ rows: 3, duplicates: {} });
});

test("PersistentProfile inherits the project's use.launchOptions and baseURL when created inside a test", async ({ baseURL }) => {
  // No options: the executablePath (this project's Chromium) and baseURL come from the config.
  const profile = new PersistentProfile();
  try {
    const { page } = await profile.launch();
    await page.goto('/client/index.html');
    expect(page.url()).toBe(`${baseURL}/client/index.html`);
  } finally {
    await profile.dispose();
  }
});

test('fault controls need the kit to host the store: asked too late, they say what to do', async ({ page, memwal }) => {
  await clientPage(page);
  await open(page, { name: 'kit-late', keyed: true });
  const store = memwal.store('kit-late');
  await store.waitForOpen();
  await expect(store.failNext('tableWrite')).rejects.toThrow(
    "ask with memwal.store('kit-late', { faults: true }) before the page opens it",
  );
  memwal.store('kit-late', { faults: true });
  await expect(store.crash()).rejects.toThrow('opened before the test asked? reload the page');
  await expect(memwal.store('never-opened').waitForOpen({ timeout: 200 })).rejects.toThrow(
    "store 'never-opened' did not open within 200 ms",
  );
});

test('reset() refuses while a store is open and deletes every store once none is', async ({ page, memwal }) => {
  await clientPage(page);
  const c = await open(page, { name: 'kit-reset', keyed: true });
  ok(await mw(page, 'put', c, 0, 5));
  await expect(memwal.reset()).rejects.toMatchObject({ code: 'Locked' });
  ok(await mw(page, 'call', c, 'close')); // lets go of the store
  await memwal.reset();
  await open(page, { name: 'kit-reset', keyed: true });
  expect(await memwal.store('kit-reset').scan()).toEqual([]);
});

test.describe('the page-side hook cannot be switched on by page code', () => {
  /** A context without the kit whose pages count calls of a fake hook (`window.hookCalls`). */
  async function fakeHook(
    browser: import('@playwright/test').Browser,
    baseURL: string,
    how: 'writable' | 'no-webdriver' | 'as-the-kit-does',
  ) {
    const context = await browser.newContext({ baseURL });
    await context.addInitScript((mode) => {
      const w = window as unknown as { hookCalls: number };
      w.hookCalls = 0;
      const hook = {
        version: 1,
        token: '0123456789abcdef0123456789abcdef',
        open: () => {
          w.hookCalls++;
          return undefined;
        },
      };
      if (mode === 'no-webdriver') Object.defineProperty(navigator, 'webdriver', { get: () => false });
      const key = Symbol.for('memwal.playwright.hook');
      if (mode === 'writable') (globalThis as Record<symbol, unknown>)[key] = hook;
      else Object.defineProperty(globalThis, key, { value: hook, writable: false, configurable: false });
    }, how);
    const page = await clientPage(await context.newPage());
    await open(page, { name: `hook-${how}`, keyed: true });
    const calls = await page.evaluate(() => (window as unknown as { hookCalls: number }).hookCalls);
    await context.close();
    return calls;
  }

  test('a hook set as a plain global is ignored', async ({ browser, baseURL }) => {
    expect(await fakeHook(browser, baseURL!, 'writable')).toBe(0);
  });
  test('a hook in a browser not under automation (navigator.webdriver false) is ignored', async ({ browser, baseURL }) => {
    expect(await fakeHook(browser, baseURL!, 'no-webdriver')).toBe(0);
  });
  test('control: the same hook installed as the init script does is consulted', async ({ browser, baseURL }) => {
    expect(await fakeHook(browser, baseURL!, 'as-the-kit-does')).toBe(1);
  });
});
