// The store's I/O worker (docs/impl.md §11) dies or hangs under a writer: the writer poisons with
// a clear error, nothing waits for ever, and every acknowledged put is there after a reopen. And
// the flushes it builds from the WAL payloads it kept hold the newest row of each key.

import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import type * as Comlink from 'comlink';
import type { IoFaultWorkerApi } from './site/io-fault.worker.js';

type Io = {
  start(): number;
  api(i: number): Comlink.Remote<IoFaultWorkerApi>;
  terminate(i: number): void;
};

async function ioPage(page: Page): Promise<void> {
  await page.goto('/io-fault.html');
  await page.waitForFunction(() => 'io' in window);
}

/** Calls `method` of engine worker `i` in the page. */
function call<K extends keyof IoFaultWorkerApi>(page: Page, i: number, method: K, ...args: unknown[]): Promise<unknown> {
  return page.evaluate(
    ([w, m, a]) => {
      const io = (window as unknown as { io: Io }).io;
      return (io.api(w as number) as unknown as Record<string, (...x: unknown[]) => Promise<unknown>>)[m as string]!(...(a as unknown[]));
    },
    [i, method, args] as const,
  );
}

for (const fault of ['throw', 'hang'] as const) {
  test(`an I/O worker that ${fault === 'throw' ? 'dies' : 'hangs'}: the writer poisons, nothing hangs, every acknowledged put survives`, async ({
    page,
  }) => {
    await ioPage(page);
    const name = `io-${fault}`;
    const w = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
    await call(page, w, 'open', name);
    const before = (await call(page, w, 'put', 0, 40)) as { acked: number[] };
    expect(before.acked).toHaveLength(40);
    await call(page, w, 'io', fault);
    const started = Date.now();
    const after = (await call(page, w, 'put', 1000, 40)) as { acked: number[]; error?: string };
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(after.error, 'a put after the fault fails').toBeDefined();
    expect(after.error).toMatch(fault === 'throw' ? /Fenced.*I\/O worker died/ : /IOError.*did not finish within/);
    expect(['poisoned', 'fenced']).toContain(await call(page, w, 'state'));
    expect(Number(await call(page, w, 'close'))).toBeLessThan(5_000);
    // The app ends the engine worker (its I/O worker with it), as a reload would, and reopens.
    await page.evaluate((i) => (window as unknown as { io: Io }).io.terminate(i), w);
    const again = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
    await call(page, again, 'open', name);
    const ids = (await call(page, again, 'ids')) as number[];
    for (const id of [...before.acked, ...after.acked]) expect(ids).toContain(id);
    await call(page, again, 'close');
  });
}

test('flushes the I/O worker builds from the payloads it kept hold the newest row of each key (overwrites and deletes in one memtable), before and after a reopen', async ({
  page,
}) => {
  await ioPage(page);
  const name = 'io-kept';
  const w = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  await call(page, w, 'open', name);
  const model = new Map<number, string>();
  const put = async (from: number, n: number, tag: string) => {
    await call(page, w, 'putBatch', from, n, tag);
    for (let i = from; i < from + n; i++) model.set(i, `${tag}${i}`);
  };
  await put(0, 3_000, 'a');
  await put(1_000, 500, 'b');
  await call(page, w, 'del', [5, 1_200, 2_999]);
  for (const id of [5, 1_200, 2_999]) model.delete(id);
  await put(1_200, 1, 'c');
  expect(await call(page, w, 'flush')).toBe(1);
  await put(2_500, 1_000, 'd'); // flushed by close
  const expected = [...model.entries()].sort((x, y) => x[0] - y[0]).map(([id, p]) => `${id}=${p}`);
  expect(await call(page, w, 'rows')).toEqual(expected);
  await call(page, w, 'close');
  await page.evaluate((i) => (window as unknown as { io: Io }).io.terminate(i), w);
  const again = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  await call(page, again, 'open', name);
  expect(await call(page, again, 'rows')).toEqual(expected);
});

/** Puts rows 0..n-1 with payload `${tag}${id}` in 500-row puts, then flushes them. */
async function putAll(page: Page, w: number, n: number, tag: string): Promise<void> {
  for (let from = 0; from < n; from += 500) await call(page, w, 'putBatch', from, 500, tag);
  await call(page, w, 'flush');
}

/** Waits until `tables/` of store `name` holds exactly the files the writer's manifest names (retired files are removed in the background). */
async function noRetiredFiles(page: Page, w: number, name: string): Promise<void> {
  const same = async (): Promise<string> => {
    const files = JSON.stringify(await call(page, w, 'tableFiles', name));
    const named = JSON.stringify(await call(page, w, 'manifestTables'));
    return files === named ? 'the same' : `${files} against ${named}`;
  };
  await expect.poll(same, { timeout: 10_000 }).toBe('the same');
}

test('the engine worker reads table blocks through its own read-only handles; the files it read are still removed by a compaction, and after close another worker destroys the store', async ({
  page,
}) => {
  await ioPage(page);
  const name = 'io-own-reads';
  const w = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  await call(page, w, 'open', name, { maxMemtableRows: 1_000 });
  await putAll(page, w, 4_000, 'a');
  expect(await call(page, w, 'get', [0, 1_234, 3_999, 5_000])).toEqual(['a0', 'a1234', 'a3999', null]);
  expect(await call(page, w, 'ioTableReads')).toBe(0);
  await putAll(page, w, 4_000, 'b'); // overlaps every file read: the compaction retires them
  await call(page, w, 'compact');
  await noRetiredFiles(page, w, name);
  expect(await call(page, w, 'get', [0, 1_234, 3_999])).toEqual(['b0', 'b1234', 'b3999']);
  expect(await call(page, w, 'ioTableReads')).toBe(0);
  expect((await call(page, w, 'warnings')) as string[]).toEqual([]);
  await call(page, w, 'close');
  const other = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  expect(await call(page, other, 'destroy', name)).toBe('destroyed');
  expect(await call(page, other, 'tableFiles', name)).toBeNull();
});

test("a store stolen by another engine worker: the old one's read-only handles are closed, so the thief compacts away the files it read", async ({
  page,
}) => {
  await ioPage(page);
  const name = 'io-own-reads-steal';
  const start = async () => (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  const old = await start();
  await call(page, old, 'open', name, { maxMemtableRows: 1_000 });
  await putAll(page, old, 4_000, 'a');
  expect(await call(page, old, 'get', [0, 1_234, 3_999])).toEqual(['a0', 'a1234', 'a3999']);
  const read = (await call(page, old, 'tableFiles', name)) as string[];
  expect(read.length).toBeGreaterThan(0);
  const thief = await start();
  await call(page, thief, 'open', name, { steal: true, maxMemtableRows: 1_000 });
  await putAll(page, thief, 4_000, 'b');
  await call(page, thief, 'compact');
  await noRetiredFiles(page, thief, name);
  const left = (await call(page, thief, 'tableFiles', name)) as string[];
  expect(left.filter((f) => read.includes(f))).toEqual([]);
  expect(await call(page, thief, 'get', [0, 1_234, 3_999])).toEqual(['b0', 'b1234', 'b3999']);
  expect((await call(page, thief, 'warnings')) as string[]).toEqual([]);
  await call(page, thief, 'close');
  expect(await call(page, thief, 'destroy', name)).toBe('destroyed');
});

/** Starts a burst of gets in engine worker `w` and waits until `atLeast` of them answered. */
async function startGets(page: Page, w: number, n: number, tag: string, atLeast = 50): Promise<void> {
  await call(page, w, 'startGets', n, 8, tag);
  await expect.poll(async () => Number(await call(page, w, 'answered')), { timeout: 10_000 }).toBeGreaterThanOrEqual(atLeast);
}

test('gets racing a compaction on the engine worker: each answers the newest row, and the compaction still removes every file it retired', async ({
  page,
}) => {
  await ioPage(page);
  const name = 'io-own-reads-race';
  const w = (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  await call(page, w, 'open', name, { maxMemtableRows: 1_000 });
  await putAll(page, w, 4_000, 'a');
  await putAll(page, w, 4_000, 'b');
  await startGets(page, w, 4_000, 'b');
  await call(page, w, 'compact');
  await startGets(page, w, 4_000, 'b', Number(await call(page, w, 'answered')) + 50); // more gets over the compaction's output
  const burst = (await call(page, w, 'stopGets')) as { answered: number; wrong: string[]; errors: string[] };
  expect(burst.wrong).toEqual([]);
  expect(burst.errors).toEqual([]);
  await noRetiredFiles(page, w, name);
  expect((await call(page, w, 'warnings')) as string[]).toEqual([]);
  await call(page, w, 'close');
});

test('a steal while gets run in the old engine worker: they end with a clear error, and the thief compacts away every file they read', async ({
  page,
}) => {
  await ioPage(page);
  const name = 'io-own-reads-steal-burst';
  const start = async () => (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  const old = await start();
  await call(page, old, 'open', name, { maxMemtableRows: 1_000 });
  await putAll(page, old, 4_000, 'a');
  await startGets(page, old, 4_000, 'a');
  const read = (await call(page, old, 'tableFiles', name)) as string[];
  const thief = await start();
  await call(page, thief, 'open', name, { steal: true, maxMemtableRows: 1_000 });
  await putAll(page, thief, 4_000, 'b');
  await call(page, thief, 'compact');
  await noRetiredFiles(page, thief, name);
  expect(((await call(page, thief, 'tableFiles', name)) as string[]).filter((f) => read.includes(f))).toEqual([]);
  expect((await call(page, thief, 'warnings')) as string[]).toEqual([]);
  const burst = (await call(page, old, 'stopGets')) as { answered: number; wrong: string[]; errors: string[] };
  expect(burst.wrong).toEqual([]); // a get the old worker answered answered its own rows
  for (const e of burst.errors) expect(e).toMatch(/^(Fenced|Closed|IOError):/);
  expect(await call(page, thief, 'get', [0, 1_234, 3_999])).toEqual(['b0', 'b1234', 'b3999']);
  await call(page, thief, 'close');
  expect(await call(page, thief, 'destroy', name)).toBe('destroyed');
});

test('a close during a burst of gets, and an I/O worker killed during one: every get settles, and the store can then be destroyed', async ({
  page,
}) => {
  await ioPage(page);
  const start = async () => (await page.evaluate(() => (window as unknown as { io: Io }).io.start())) as number;
  for (const how of ['close', 'kill'] as const) {
    const name = `io-own-reads-${how}-burst`;
    const w = await start();
    await call(page, w, 'open', name, { maxMemtableRows: 1_000 });
    await putAll(page, w, 2_000, 'a');
    await startGets(page, w, 2_000, 'a');
    if (how === 'close') expect(Number(await call(page, w, 'close'))).toBeLessThan(5_000);
    else await call(page, w, 'io', 'throw');
    const burst = (await call(page, w, 'stopGets')) as { answered: number; wrong: string[]; errors: string[] };
    expect(burst.wrong).toEqual([]);
    for (const e of burst.errors) expect(e).toMatch(/^(Fenced|Closed|IOError):/);
    if (how === 'kill') {
      expect(Number(await call(page, w, 'close'))).toBeLessThan(5_000);
      // as in the test above, the app ends the engine worker (its I/O worker with it)
      await page.evaluate((i) => (window as unknown as { io: Io }).io.terminate(i), w);
    }
    const other = await start();
    expect(await call(page, other, 'destroy', name)).toBe('destroyed');
    expect(await call(page, other, 'tableFiles', name)).toBeNull();
  }
});
