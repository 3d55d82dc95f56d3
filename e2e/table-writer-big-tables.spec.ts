// Outside tester (issue 23): the OPFS table writer thread (docs/impl.md §11) attacked
// through the public API only, while big table files are being built and written: a steal, the
// hosting worker terminated or aborted, a close then at once a reopen or a destroy in the same
// worker, many stores in one worker, compactions racing flushes (site/client/table-writer-big-tables.ts). Each
// reports acknowledged rows missing or doubled, an open, close or destroy that failed or hung, a
// file left after destroy, a table file the manifest names missing.

import { expect, type Page, test } from '@playwright/test';
import { Profile, clientPage } from './client-fixtures.js';

type Attack = Record<string, (...a: unknown[]) => Promise<string[]>>;

async function attack(page: Page, fn: string, ...args: unknown[]): Promise<string[]> {
  return page.evaluate(([f, a]) => (window as unknown as { bigTables: Attack }).bigTables[f as string]!(...(a as unknown[])), [
    fn,
    args,
  ] as const);
}

test.beforeEach(async ({ page }) => {
  test.setTimeout(240_000);
  await clientPage(page);
  await page.evaluate((url) => import(url), '/client/table-writer-big-tables.ts');
});

const stamp = () => `${Date.now()}`;

test('a steal while the first writer builds or writes a big table: the thief opens with every acknowledged row, destroy leaves nothing', async ({
  page,
}) => {
  const problems: string[] = [];
  for (const delay of [0, 100, 200, 300, 450, 600, 800])
    problems.push(...(await attack(page, 'steal', `a5-steal-${delay}-${stamp()}`, delay, 48)));
  expect(problems).toEqual([]);
});

test('the hosting worker terminated during a big table write: an open right after has every acknowledged row, destroy leaves nothing', async ({
  page,
}) => {
  const problems: string[] = [];
  for (const delay of [0, 150, 300, 500, 700])
    problems.push(...(await attack(page, 'killed', `a5-term-${delay}-${stamp()}`, 'terminate', delay, 48)));
  expect(problems).toEqual([]);
});

test('abort during a big table write: an open right after has every acknowledged row, destroy leaves nothing', async ({ page }) => {
  const problems: string[] = [];
  for (const delay of [0, 200, 400, 600])
    problems.push(...(await attack(page, 'killed', `a5-abort-${delay}-${stamp()}`, 'abort', delay, 48)));
  expect(problems).toEqual([]);
});

test('the hosting worker terminated during a big table write, then at once destroy: it succeeds and leaves nothing', async ({ page }) => {
  const problems: string[] = [];
  for (const delay of [0, 150, 300, 500, 700])
    problems.push(...(await attack(page, 'killedThenDestroy', `a5-termd-${delay}-${stamp()}`, delay, 48)));
  expect(problems).toEqual([]);
});

test('close during a big table write, then at once a reopen (or a destroy) in the same worker: nothing lost, nothing left', async ({
  page,
}) => {
  const problems: string[] = [];
  for (const delay of [0, 200, 400]) {
    problems.push(...(await attack(page, 'closeThen', `a5-close-r-${delay}-${stamp()}`, 'reopen', delay, 48)));
    problems.push(...(await attack(page, 'closeThen', `a5-close-d-${delay}-${stamp()}`, 'destroy', delay, 48)));
  }
  expect(problems).toEqual([]);
});

test('four stores in one worker flushing big tables at once, closed at once: reopened whole, destroyed clean', async ({ page }) => {
  expect(await attack(page, 'manyStores', `a5-many-${stamp()}`, 4, 16)).toEqual([]);
});

test('compactions racing flushes, a close mid-way: the manifest files all there, every key its last value', async ({ page }) => {
  expect(await attack(page, 'compactRace', `a5-compact-${stamp()}`)).toEqual([]);
});

for (const then of ['open', 'destroy'] as const) {
  test(`a table file still held open elsewhere (a predecessor's table writer thread) for 1.5 s: ${then} waits for it and succeeds`, async ({
    page,
  }) => {
    expect(await attack(page, 'heldTable', `a5-held-${then}-${stamp()}`, then, 1500)).toEqual([]);
  });
}

test('the quota cut below a big table while the table writer thread writes it, lifted after 2 s: the flush retries and lands, nothing lost or left', async ({
  baseURL,
}, testInfo) => {
  test.setTimeout(240_000);
  const profile = new Profile(testInfo, baseURL!);
  const origin = new URL(baseURL!).origin;
  try {
    const page = await profile.launch();
    const cdp = await profile.context!.newCDPSession(page);
    await page.exposeFunction('a5SetQuota', async (bytes: number | null) => {
      await cdp.send('Storage.overrideQuotaForOrigin', bytes === null ? { origin } : { origin, quotaSize: bytes });
    });
    await page.evaluate((url) => import(url), '/client/table-writer-big-tables.ts');
    expect(await attack(page, 'quota', `a5-quota-${stamp()}`, 32, 2000)).toEqual([]);
  } finally {
    await profile.dispose();
  }
});

test('a page reload while a big table is built or written: the reloaded page opens at once with every acknowledged row, destroy leaves nothing', async ({
  page,
}) => {
  const problems: string[] = [];
  for (const delay of [50, 200, 350, 500]) {
    const name = `a5-reload-${delay}-${stamp()}`;
    const n = (await page.evaluate(
      ([nm]) =>
        (window as unknown as { bigTables: { reloadStart: (n: string, m: number) => Promise<number> } }).bigTables.reloadStart(nm, 48),
      [name] as const,
    )) as number;
    await page.waitForTimeout(delay);
    await page.reload();
    await clientPage(page);
    await page.evaluate((url) => import(url), '/client/table-writer-big-tables.ts');
    problems.push(...(await attack(page, 'reloadCheck', name, n)));
  }
  expect(problems).toEqual([]);
});
