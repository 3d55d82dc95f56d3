// Opening from the page: hooks see every state from the first, a bad workerUrl names the script,
// a worker that never calls hostMemWal() fails within seconds, and destroyMemWal deletes a store
// from the page (Locked while it is open), where MemWal.destroy explains what to use instead.

import { expect, test } from '@playwright/test';
import { clientPage, code, mw, ok, open } from './client-fixtures.js';

test("hooks.onStateChange reports 'open' on an uncontended open", async ({ page }) => {
  await clientPage(page);
  const id = await open(page, { name: 'hooks-open', keyed: true });
  expect(await mw(page, 'states', id)).toEqual(['open']);
  ok(await mw(page, 'call', id, 'close'));
  expect(await mw(page, 'states', id)).toEqual(['open', 'closed']);
});

test('a workerUrl that does not load fails NotSupported naming the script', async ({ page }) => {
  await clientPage(page);
  const r = await mw(page, 'open', { name: 'bad-url', workerUrl: '/client/no-such.worker.js' });
  expect(code(r)).toBe('NotSupported');
  expect((r as { message: string }).message).toContain('/client/no-such.worker.js');
});

test('a workerUrl script that never calls hostMemWal() fails NotSupported within seconds, naming the script', async ({ page }) => {
  await clientPage(page);
  const started = Date.now();
  const r = await mw(page, 'open', { name: 'not-a-host', workerUrl: '/client/not-a-host.worker.ts' });
  const elapsedMs = Date.now() - started;
  expect(code(r)).toBe('NotSupported');
  expect((r as { message: string }).message).toMatch(/not-a-host\.worker\.ts loaded but did not call hostMemWal\(\)/);
  expect(elapsedMs).toBeLessThan(15_000);
  console.log(`a worker that is not a host failed after ${elapsedMs} ms`);
});

for (const layout of ['opfs', 'indexeddb'] as const) {
  test(`${layout}: destroyMemWal deletes a store from the page, Locked while it is open`, async ({ page }) => {
    await clientPage(page);
    const name = `destroy-${layout}`;
    const id = await open(page, { name, storage: layout, keyed: true });
    ok(await mw(page, 'put', id, 1, 10));
    expect(code(await mw(page, 'destroy', name, layout))).toBe('Locked');
    ok(await mw(page, 'call', id, 'close'));
    ok(await mw(page, 'destroy', name, layout));
    const again = await open(page, { name, storage: layout, keyed: true });
    expect(ok(await mw(page, 'scan', again)).rows).toBe(0);
    ok(await mw(page, 'call', again, 'close'));
    ok(await mw(page, 'destroy', name, layout));
    ok(await mw(page, 'destroy', 'never-existed', layout));
  });
}

test('MemWal.destroy on the page says to use destroyMemWal', async ({ page }) => {
  await clientPage(page);
  const named = await mw(page, 'destroyHere', 'x', 'opfs');
  expect(code(named)).toBe('NotSupported');
  expect((named as { message: string }).message).toContain('destroyMemWal');
  const unnamed = await mw(page, 'destroyHere', 'x');
  expect(code(unnamed)).toBe('InvalidArgument');
  expect((unnamed as { message: string }).message).toContain('destroyMemWal');
});

test('backpressure shows under a plain write storm once the budget is small (the README says which options)', async ({ page }) => {
  await clientPage(page);
  const MiB = 1024 * 1024;
  const id = await open(page, {
    name: 'visible-backpressure',
    keyed: true,
    options: { maxMemtableBytes: 1 * MiB, maxUnflushedMemtableBytes: 2 * MiB },
  });
  await mw(page, 'storm', id, { firstId: 0, batch: 2000, payloadBytes: 512, concurrency: 4 });
  await new Promise((resolve) => setTimeout(resolve, 4000));
  const storm = await mw(page, 'stopStorm', id);
  const bp = ok(await mw(page, 'call', id, 'backpressureStats')) as { totalCount: number; totalWaitMs: number };
  console.log(
    `small budget: ${storm.acked.length} rows in 4 s, ${bp.totalCount} backpressure waits, ${Math.round(bp.totalWaitMs)} ms waited`,
  );
  expect(bp.totalCount).toBeGreaterThan(0);
  ok(await mw(page, 'call', id, 'close'));
});
