// Live reads and opening twice in one page, in Chromium: an openMemWal of a store the page has
// open joins it (tabs 'exclusive' and 'share'); a watch in one tab sees another tab's write within
// 100 ms (tabs 'share'); a React StrictMode tree reading through useQuery shows the store's rows.

import { expect, type Page, test } from '@playwright/test';

type Live = {
  open(name: string, tabs: 'exclusive' | 'share', extra?: Record<string, unknown>): Promise<number | string>;
  put(id: number, rows: { id: number; title: string }[]): Promise<number>;
  get(id: number, key: number): Promise<string | null | undefined>;
  watch(id: number, keys: number[]): number;
  results(w: number): { wall: number; titles: (string | null | undefined)[] }[];
  role(id: number): string;
  state(id: number): string;
  close(id: number): Promise<void>;
  renderStrict(name: string): void;
  putThroughStore(rows: { id: number; title: string }[]): Promise<void>;
  renders(): string[];
};

async function livePage(page: Page): Promise<Page> {
  await page.goto('/live.html');
  await page.waitForFunction(() => (window as unknown as { liveReady?: boolean }).liveReady === true);
  return page;
}

/** Call `window.live[method](...args)` in `page`. */
function live<M extends keyof Live>(page: Page, method: M, ...args: Parameters<Live[M]>): Promise<Awaited<ReturnType<Live[M]>>> {
  return page.evaluate(
    ([m, a]) => (window as unknown as { live: Record<string, (...x: unknown[]) => unknown> }).live[m as string]!(...(a as unknown[])),
    [method, args] as const,
  ) as Promise<Awaited<ReturnType<Live[M]>>>;
}

for (const tabs of ['exclusive', 'share'] as const) {
  test(`tabs '${tabs}': a second open of a store the page has open joins it at once; the last close closes it`, async ({ page }) => {
    await livePage(page);
    const name = `live-reopen-${tabs}`;
    const a = (await live(page, 'open', name, tabs)) as number;
    expect(typeof a).toBe('number');
    await live(page, 'put', a, [{ id: 1, title: 'one' }]);
    const t0 = Date.now();
    // lockTimeoutMs 0: without the join this open would fail Locked (exclusive) at once.
    const b = (await live(page, 'open', name, tabs, { lockTimeoutMs: 0 })) as number;
    const joinMs = Date.now() - t0;
    expect(typeof b).toBe('number');
    expect(await live(page, 'get', b, 1)).toBe('one');
    expect(await live(page, 'role', b)).toBe('leader');
    const refused = await live(page, 'open', name, tabs, { durableWrite: false });
    expect(refused).toMatch(/^InvalidArgument: option durableWrite/);
    await live(page, 'close', a);
    await live(page, 'put', b, [{ id: 2, title: 'two' }]);
    expect(await live(page, 'get', b, 2)).toBe('two');
    await live(page, 'close', b);
    expect(await live(page, 'state', b)).toBe('closed');
    // Closed for good: a new open opens it afresh (its own worker), with the rows.
    const c = (await live(page, 'open', name, tabs)) as number;
    expect(await live(page, 'get', c, 2)).toBe('two');
    await live(page, 'close', c);
    test.info().annotations.push({ type: 'join', description: `joined in ${joinMs} ms` });
  });
}

test("tabs 'share': a watch in each tab sees the other tab's write (median within 100 ms); writes elsewhere wake nothing", async ({ context }) => {
  const name = 'live-watch-share';
  const a = await livePage(await context.newPage());
  const b = await livePage(await context.newPage());
  const ca = (await live(a, 'open', name, 'share')) as number;
  const cb = (await live(b, 'open', name, 'share')) as number;
  expect([await live(a, 'role', ca), await live(b, 'role', cb)]).toEqual(['leader', 'follower']);
  const wa = await live(a, 'watch', ca, [1, 2]);
  const wb = await live(b, 'watch', cb, [1, 2]);
  await expect.poll(async () => (await live(a, 'results', wa)).length).toBe(1);
  await expect.poll(async () => (await live(b, 'results', wb)).length).toBe(1);
  const latencies: number[] = [];
  for (let i = 0; i < 10; i++) {
    const [writer, writerId, watcher, w] = i % 2 === 0 ? [a, ca, b, wb] : [b, cb, a, wa];
    await live(writer, 'put', writerId, [{ id: 100 + i, title: 'elsewhere' }]); // touches no watched key
    const before = (await live(watcher, 'results', w)).length;
    const t0 = await writer.evaluate(() => performance.timeOrigin + performance.now());
    await live(writer, 'put', writerId, [{ id: 1 + (i % 2), title: `t${i}` }]);
    await expect.poll(async () => (await live(watcher, 'results', w)).length, { timeout: 5000 }).toBe(before + 1);
    const got = (await live(watcher, 'results', w)).at(-1)!;
    expect(got.titles).toContain(`t${i}`);
    latencies.push(got.wall - t0);
  }
  latencies.sort((x, y) => x - y);
  test.info().annotations.push({ type: 'watch latency (put start → listener, other tab)', description: `${latencies.join(', ')} ms` });
  console.log(`watch latency, put start → listener in the other tab: ${latencies.map((l) => l.toFixed(1)).join(', ')} ms`);
  // The 100 ms figure is the median; the slowest of ten may meet a busy 2-core machine (CI saw
  // one at 103 ms), but a watcher woken by a poll or a missed broadcast would take seconds.
  expect(latencies[Math.floor(latencies.length / 2)]).toBeLessThan(100);
  expect(latencies[latencies.length - 1]).toBeLessThan(1000);
  // Each watch got one result per write of a watched key, none for the writes elsewhere.
  expect((await live(a, 'results', wa)).length).toBe(11);
  expect((await live(b, 'results', wb)).length).toBe(11);
});

test('React StrictMode: a component reading through useQuery shows the row, then its update', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await livePage(page);
  await live(page, 'renderStrict', 'live-react');
  await expect(page.locator('#note')).toHaveText('no note', { timeout: 15_000 });
  await live(page, 'putThroughStore', [{ id: 1, title: 'hello' }]);
  await expect(page.locator('#note')).toHaveText('note: hello');
  await live(page, 'putThroughStore', [{ id: 1, title: 'again' }]);
  await expect(page.locator('#note')).toHaveText('note: again');
  expect(errors).toEqual([]);
});
