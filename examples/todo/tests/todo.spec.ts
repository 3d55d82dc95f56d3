// The todo app as a user drives it: add, edit, tick, delete; reload; two tabs that see each
// other's changes live, and keep working when the tab hosting the store closes.

import { type Page, expect, test } from '@playwright/test';

async function openApp(page: Page): Promise<void> {
  await page.goto('/');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
}

async function add(page: Page, title: string): Promise<void> {
  await page.getByTestId('new-title').fill(title);
  await page.getByTestId('add').click();
}

const titles = (page: Page) => page.getByTestId('title');

test('add, edit, tick and delete todos; they survive a reload', async ({ page }) => {
  await openApp(page);
  await add(page, 'buy milk');
  await add(page, 'call mum');
  await expect(titles(page)).toHaveText(['buy milk', 'call mum']);

  await page.getByTestId('todo').nth(0).getByTestId('edit').click();
  await page.getByTestId('edit-title').fill('buy oat milk');
  await page.getByTestId('edit-title').press('Enter');
  await page.getByTestId('todo').nth(1).getByTestId('done').check();
  await expect(titles(page)).toHaveText(['buy oat milk', 'call mum']);
  await expect(page.getByTestId('todo').nth(1)).toHaveClass('done');

  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
  await expect(titles(page)).toHaveText(['buy oat milk', 'call mum']);
  await expect(page.getByTestId('todo').nth(1).getByTestId('done')).toBeChecked();

  await page.getByTestId('todo').nth(0).getByTestId('delete').click();
  await expect(titles(page)).toHaveText(['call mum']);
  await expect(page.getByTestId('stats')).toHaveAttribute('data-role', 'leader');
  await expect(page.getByTestId('stats')).toContainText('WAL next position');
  await expect(page.getByTestId('error')).toHaveText('');
});

test('two tabs share the store: each sees the other, and the follower takes over when the leader tab closes', async ({ context }) => {
  const first = await context.newPage();
  await openApp(first);
  const second = await context.newPage();
  await openApp(second);
  await expect(first.getByTestId('stats')).toHaveAttribute('data-role', 'leader');
  await expect(second.getByTestId('stats')).toHaveAttribute('data-role', 'follower');

  const existing = await titles(first).allTextContents();
  await add(second, 'from the second tab');
  await expect(titles(first)).toHaveText([...existing, 'from the second tab']);
  await add(first, 'from the first tab');
  await expect(titles(second)).toHaveText([...existing, 'from the second tab', 'from the first tab']);

  await first.close();
  await expect(second.getByTestId('stats')).toHaveAttribute('data-role', 'leader', { timeout: 10_000 });
  await add(second, 'after the first tab closed');
  await expect(titles(second)).toHaveText([...existing, 'from the second tab', 'from the first tab', 'after the first tab closed']);
  await expect(second.getByTestId('error')).toHaveText('');
});
