// Outside tester (issue 23): what a page puts through the default worker and the I/O
// worker reads back exactly, after a flush, a reopen and a close during a flush, though the app
// overwrote its batches and rows as soon as each put resolved (site/client/overwritten-input.ts).

import { expect, test } from '@playwright/test';
import { clientPage } from './client-fixtures.js';

for (const primaryKey of [[], ['id']]) {
  test(`sliced batches and plain rows put from the page, overwritten by the app after each put, read back exactly (${primaryKey.length ? 'keyed' : 'append-only'})`, async ({
    page,
  }) => {
    await clientPage(page);
    await page.evaluate((url) => import(url), '/client/overwritten-input.ts');
    const problems = await page.evaluate(
      ([name, pk]) =>
        (window as unknown as { overwrittenInput: (n: string, pk: string[]) => Promise<string[]> }).overwrittenInput(name, pk),
      [`overwrittenInput-${primaryKey.length}-${Date.now()}`, primaryKey] as [string, string[]],
    );
    expect(problems).toEqual([]);
  });
}
