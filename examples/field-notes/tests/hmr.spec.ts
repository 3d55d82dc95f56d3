// HMR under Vite's dev server: an edit of a module that uses memwal/react is a hot update (no
// page reload), after which the store is open again in the same page — joined or reopened, never
// locked out by its own earlier open — with one worker, and every write acknowledged before the
// edit still there. Edits App.tsx (the hooks' module) and store.ts (memwalStore's module), then
// restores them.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Page, expect, test } from '@playwright/test';
import { type ViteDevServer, createServer } from 'vite';

const root = fileURLToPath(new URL('..', import.meta.url));
const file = (name: string) => fileURLToPath(new URL(`../src/${name}`, import.meta.url));
let server: ViteDevServer;
let url: string;

test.beforeAll(async () => {
  // A free port of its own: the suite's preview server keeps FIELD_NOTES_PORT.
  server = await createServer({
    root,
    configFile: `${root}/vite.config.ts`,
    logLevel: 'warn',
    server: { port: 0, strictPort: false },
    optimizeDeps: { force: true },
  });
  await server.listen();
  url = server.resolvedUrls?.local[0] ?? '';
  expect(url).toMatch(/^http:/);
});
test.afterAll(async () => {
  await server?.close();
});

/** Edit `name` for the test's length: `change` maps its text; the original is written back after. */
function edit(name: string, change: (text: string) => string): () => void {
  const path = file(name);
  const original = readFileSync(path, 'utf8');
  const changed = change(original);
  expect(changed).not.toBe(original);
  writeFileSync(path, changed);
  return () => writeFileSync(path, original);
}

/** Wait for Vite's client to report the `n`th hot update of App (it logs each one it applied). */
async function hotUpdated(logs: string[], n: number): Promise<void> {
  await expect.poll(() => logs.filter((l) => l.includes('hot updated: /src/App.tsx')).length, { timeout: 30_000 }).toBe(n);
}

async function add(page: Page, title: string): Promise<void> {
  await page.getByLabel('Add title').fill(title);
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  // In the list: the put resolved and the watch delivered the commit.
  await expect(page.getByRole('listitem', { name: title, exact: true })).toBeVisible();
}

test('hot updates of App.tsx and store.ts keep the store: no reload, no lock-out, one worker, nothing lost', async ({ page }) => {
  test.setTimeout(120_000);
  const logs: string[] = [];
  page.on('console', (m) => logs.push(`${Math.round(performance.now())} ${m.type()} ${m.text()}`));
  let loads = 0;
  page.on('load', () => loads++);
  await page.goto(url);
  await expect(page.locator('body')).toHaveAttribute('data-listed', /\d+/, { timeout: 60_000 });
  await expect(page.getByRole('status')).toHaveAttribute('data-role', 'leader');
  const workers = page.workers().length;
  expect(workers).toBeGreaterThan(0);
  await add(page, 'before any edit');
  await page.evaluate(() => {
    (window as unknown as { samePage: boolean }).samePage = true; // gone if the page reloads
  });

  const restores: (() => void)[] = [];
  try {
    // 1. The hooks' module: App re-renders from the new module, its watches re-subscribe.
    restores.push(edit('App.tsx', (t) => t.replace('<h1>Field notes</h1>', '<h1>Field notes, edited</h1>')));
    await hotUpdated(logs, 1);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Field notes, edited');
    await add(page, 'after the App edit');

    // 2. memwalStore's module: it runs again, its old handle lets go (dispose) and the new one opens.
    restores.push(edit('store.ts', (t) => t.replace("name: 'field-notes',", "name: 'field-notes', // edited")));
    await hotUpdated(logs, 2); // App re-imported with the re-run store module
    await expect(page.getByRole('listitem', { name: 'after the App edit', exact: true })).toBeVisible();
    await add(page, 'after the store edit');
    await expect(page.getByRole('status')).toHaveAttribute('data-role', 'leader');

    // 3. Both back: the same again, in reverse.
    for (const restore of restores.splice(0).reverse()) restore();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Field notes', { timeout: 30_000 });
    await expect.poll(() => logs.filter((l) => l.includes('hot updated: /src/store.ts')).length, { timeout: 30_000 }).toBe(2);
    await add(page, 'after both restored');
  } finally {
    for (const restore of restores.reverse()) restore();
  }

  expect(await page.evaluate(() => (window as unknown as { samePage?: boolean }).samePage)).toBe(true);
  expect(loads).toBe(1);
  await expect(page.getByRole('listitem')).toHaveCount(4);
  // Give a closing worker time to go, then count: no second worker left behind.
  await expect.poll(() => page.workers().length, { timeout: 10_000 }).toBe(workers);
  expect(logs.filter((l) => /held by another tab|Locked/i.test(l))).toEqual([]);
  await expect(page.getByRole('alert')).toHaveText('');

  // A reload reads every acknowledged write back (they were durable, not only in the old page's memory).
  await page.reload();
  await expect(page.getByRole('listitem')).toHaveCount(4, { timeout: 60_000 });
  await expect(page.getByRole('listitem', { name: 'before any edit', exact: true })).toBeVisible();
});
