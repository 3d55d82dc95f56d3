// Ordered queries from the page (SPEC §17.1) through openMemWal: "20 newest", a multi-entry tag
// paged with `after`, an id range on 'primary' and a count, across memtables, flushed files, a
// compaction, overwrites and deletes, then again after a reload; answers checked against the
// page's model.

import { expect, test } from '@playwright/test';

type Probe = {
  run(name: string, seed: number): Promise<{ got: unknown; want: unknown; stats: Record<string, { entries: number }> }>;
  reopen(name: string, notes: unknown[]): Promise<{ got: unknown; want: unknown }>;
  model(): unknown[];
  close(): Promise<void>;
};

test('list-screen queries from the page match the model, before and after a reload', async ({ page }) => {
  page.on('pageerror', (e) => console.log('pageerror', e.message));
  await page.goto('/query.html');
  await page.waitForFunction(() => 'memwalQuery' in window);
  const run = await page.evaluate(() => (window as unknown as { memwalQuery: Probe }).memwalQuery.run('notes', 11));
  expect(run.got).toEqual(run.want);
  expect((run.want as { tagged: unknown[] }).tagged.length).toBeGreaterThan(10);
  expect(run.stats.byTag!.entries).toBeGreaterThan(0);
  const notes = await page.evaluate(() => (window as unknown as { memwalQuery: Probe }).memwalQuery.model());
  await page.evaluate(() => (window as unknown as { memwalQuery: Probe }).memwalQuery.close());
  await page.reload();
  await page.waitForFunction(() => 'memwalQuery' in window);
  const again = await page.evaluate(([n]) => (window as unknown as { memwalQuery: Probe }).memwalQuery.reopen('notes', n), [
    notes,
  ] as const);
  expect(again.got).toEqual(again.want);
});
