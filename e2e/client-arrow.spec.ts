// Arrow input from the page as the user built it: Int64 beyond 2^53, Uint64, decimals, timestamps
// in each unit, nulls, non-ASCII strings with NUL, LargeUtf8, binary, lists of structs,
// fixed-size lists, many batches with an empty one, sliced tables and batches, buffers inside a
// larger ArrayBuffer, a dictionary column: scan and getMany read back every row as put, from the
// memtable, a table file and after a reopen (site/client/arrow-kinds.ts).

import { expect, test } from '@playwright/test';
import { clientPage } from './client-fixtures.js';

test('Arrow input of many kinds put from the page reads back the same through scan and getMany, before and after a flush and a reopen', async ({
  page,
}) => {
  await clientPage(page);
  await page.evaluate((url) => import(url), '/client/arrow-kinds.ts');
  const problems = await page.evaluate(() =>
    (window as unknown as { arrowKinds: (name: string) => Promise<string[]> }).arrowKinds(`arrow-kinds-${Date.now()}`),
  );
  expect(problems).toEqual([]);
});

test('plain rows of the types the page builds into columns read back as the same rows put as Arrow, before and after a flush and a reopen', async ({
  page,
}) => {
  await clientPage(page);
  await page.evaluate((url) => import(url), '/client/arrow-kinds.ts');
  const problems = await page.evaluate(() =>
    (window as unknown as { plainKinds: (name: string) => Promise<string[]> }).plainKinds(`plain-kinds-${Date.now()}`),
  );
  expect(problems).toEqual([]);
});
