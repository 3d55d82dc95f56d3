// Migrations that never lose data (SPEC §9.1), in Chromium through openMemWal: issue 36's releases
// of a field-notes app — release 2 adds `location`, a cached tab of release 1 opens after it
// (rollback), release 3 renames `title` to `name` — lose nothing, and a follower tab of
// `tabs: 'share'` reads the leader's schemaInfo().

import { expect, type Page, test } from '@playwright/test';

type Migrations = {
  open(name: string, release: 1 | 2 | 3, tabs?: 'exclusive' | 'share'): Promise<unknown[]>;
  put(rows: Record<string, unknown>[]): Promise<void>;
  get(id: number): Promise<Record<string, unknown> | null>;
  scanColumns(): Promise<string[]>;
  info(): Promise<{
    role: string;
    version: number;
    stored: string[];
    hidden: string[];
    aliases: Record<string, string>;
    renamed: unknown[];
  }>;
  close(): Promise<void>;
};

async function migrationsPage(page: Page): Promise<void> {
  await page.goto('/schema-migrations.html');
  await page.waitForFunction(() => 'migrations' in window);
}

/** Call `window.migrations[method](...args)` on `page`. */
function m<K extends keyof Migrations>(page: Page, method: K, ...args: Parameters<Migrations[K]>): ReturnType<Migrations[K]> {
  return page.evaluate(
    ([method, args]) => {
      const api = (window as unknown as { migrations: Record<string, (...a: unknown[]) => unknown> }).migrations;
      return api[method as string]!(...(args as unknown[]));
    },
    [method, args] as const,
  ) as ReturnType<Migrations[K]>;
}

test('release 1 → 2 → rollback to 1 → 2 → rename in 3 → rollback to 2: every value survives; a follower tab reads schemaInfo', async ({
  page,
  context,
}) => {
  await migrationsPage(page);
  const name = `notes-${Date.now()}`;
  expect(await m(page, 'open', name, 1)).toEqual([]);
  await m(page, 'put', [{ id: 1, title: 'milk' }]);
  await m(page, 'close');

  expect(await m(page, 'open', name, 2)).toEqual([{ name, from: 1, to: 2, added: ['location'], hidden: [], dropped: [], renamed: {} }]);
  await m(page, 'put', [{ id: 2, title: 'eggs', location: 'fridge' }]);
  await m(page, 'close');

  // A cached page of release 1: location is hidden, and says so.
  expect(await m(page, 'open', name, 1)).toEqual([{ name, from: 2, to: 2, added: [], hidden: ['location'], dropped: [], renamed: {} }]);
  expect(await m(page, 'get', 2)).toEqual({ id: 2, title: 'eggs' });
  expect(await m(page, 'scanColumns')).toEqual(['id', 'title']);
  expect((await m(page, 'info')).hidden).toEqual(['location']);
  await m(page, 'put', [{ id: 3, title: 'bread' }]);
  await m(page, 'close');

  expect(await m(page, 'open', name, 2)).toEqual([]);
  expect(await m(page, 'get', 2)).toEqual({ id: 2, title: 'eggs', location: 'fridge' });
  expect(await m(page, 'get', 3)).toEqual({ id: 3, title: 'bread', location: null });
  await m(page, 'close');

  // Release 3 renames title → name, as leader of tabs: 'share'; a second tab follows.
  expect(await m(page, 'open', name, 3, 'share')).toEqual([
    { name, from: 2, to: 3, added: [], hidden: [], dropped: [], renamed: { title: 'name' } },
  ]);
  expect(await m(page, 'get', 2)).toEqual({ id: 2, name: 'eggs', location: 'fridge' });
  const follower = await context.newPage();
  await migrationsPage(follower);
  expect(await m(follower, 'open', name, 3, 'share')).toEqual([]);
  const info = await m(follower, 'info');
  expect(info).toEqual({
    role: 'follower',
    version: 3,
    stored: ['id', 'name', 'location'],
    hidden: [],
    aliases: {},
    renamed: [null, null, { title: 'name' }],
  });
  expect(await m(follower, 'get', 1)).toEqual({ id: 1, name: 'milk', location: null });
  await m(follower, 'close');
  await follower.close();
  await m(page, 'close');

  // Release 2 again (before the rename): it reads the renamed column under its old name.
  expect(await m(page, 'open', name, 2)).toEqual([]);
  expect(await m(page, 'get', 1)).toEqual({ id: 1, title: 'milk', location: null });
  expect((await m(page, 'info')).aliases).toEqual({ title: 'name' });
  await m(page, 'close');
});
