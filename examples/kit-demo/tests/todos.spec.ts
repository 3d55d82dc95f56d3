// The todo app's suite, written only with memwal/playwright: the app is tested as it ships (no
// test code in it); the kit watches its store, fails its flushes and crashes its worker.

import type { Page } from '@playwright/test';
import { PersistentProfile, expect, test } from 'memwal/playwright';

const items = (page: Page) => page.getByRole('listitem');

/** Add todos through the form and wait until the app says the last one is saved (its put resolved). */
async function add(page: Page, ...titles: string[]): Promise<void> {
  for (const title of titles) {
    await page.getByLabel('New todo').fill(title);
    await page.getByRole('button', { name: 'Add' }).click();
  }
  await expect(page.getByRole('status')).toHaveText(`${await items(page).count()} todos, saved`);
}

test('todos survive a reload', async ({ page, memwal }) => {
  await page.goto('/');
  await memwal.store('todos').waitForOpen();
  await add(page, 'milk', 'eggs', 'bread');
  await page.getByLabel('Done: eggs').check();
  await expect(page.getByRole('status')).toHaveText('3 todos, saved');

  await page.reload();
  await expect(items(page)).toHaveText(['milk', 'eggs', 'bread']);
  await expect(page.getByLabel('Done: eggs')).toBeChecked();
});

test('the next three flushes fail: the app shows a warning, retries, and loses nothing', async ({ page, memwal }) => {
  const todos = memwal.store('todos', { faults: true }); // before the page opens the store
  await page.goto('/');
  await todos.waitForOpen();
  await todos.failNext('tableWrite', 3);

  await add(page, 'one', 'two', 'three', 'four');
  await todos.forceSealActive(); // the rows' memtable freezes and flushes now (the app's own size limits need not be reached)
  await expect(page.getByRole('alert')).toContainText('Saving is having trouble');
  await expect(todos).toHaveFlushed({ timeout: 15_000 });
  expect((await todos.stats()).write.flushFailureCount).toBe(3);
  await expect(page.getByRole('alert')).toBeHidden();

  await page.reload();
  await expect(items(page)).toHaveText(['one', 'two', 'three', 'four']);
  expect((await todos.scan()).map((t) => t.title)).toEqual(expect.arrayContaining(['one', 'two', 'three', 'four']));
});

test("a crash kills the store's worker: the app reopens the store and keeps every todo", async ({ page, memwal }) => {
  const todos = memwal.store('todos', { faults: true });
  await page.goto('/');
  await todos.waitForOpen();
  await add(page, 'before the crash', 'also before');

  await todos.crash();
  await add(page, 'after the crash'); // the app's save meets Closed, reopens the store and saves again
  await expect(page.getByRole('status')).toHaveText('3 todos, saved');
  await todos.waitForOpen();
  expect((await todos.opens()).map((o) => o.state)).toEqual(['closed', 'open']);
  expect(await todos.scan()).toHaveLength(3);

  await page.reload();
  await expect(items(page)).toHaveText(['before the crash', 'also before', 'after the crash']);
});

test('two tabs: the second waits for the first, then takes over with every todo', async ({ page, context, memwal }) => {
  const todos = memwal.store('todos');
  await page.goto('/');
  await todos.waitForOpen();
  await add(page, 'from the first tab');

  const second = await context.newPage();
  await second.goto('/');
  await expect(second.getByText('open in another tab')).toBeVisible();
  expect((await todos.opens()).map((o) => o.state)).toEqual(['open', 'waiting-for-lock']);

  await page.close();
  await expect(items(second)).toHaveText(['from the first tab']);
  await expect(second.getByText('open in another tab')).toBeHidden();
  await add(second, 'from the second tab');
  await expect(todos).toHaveNoBackpressure();
  expect((await todos.scan()).map((t) => t.title).sort()).toEqual(['from the first tab', 'from the second tab']);
});

test('todos survive a browser restart on a persistent profile; reset() empties it', async () => {
  const profile = new PersistentProfile(); // the project's launchOptions and baseURL
  try {
    let { page, memwal } = await profile.launch();
    await memwal.reset(); // a persistent profile keeps stores between runs: start empty
    await page.goto('/');
    await add(page, 'kept across restarts');
    await profile.stop();

    ({ page, memwal } = await profile.launch());
    await page.goto('/');
    await expect(items(page)).toHaveText(['kept across restarts']);
    await page.close();
    await memwal.reset();
    const fresh = await profile.launch();
    await fresh.page.goto('/');
    await expect(fresh.page.getByRole('status')).toHaveText('0 todos, saved');
  } finally {
    await profile.dispose();
  }
});
