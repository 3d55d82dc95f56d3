// memwal/playwright with tabs: 'share' (README, "Many tabs"): every tab's open goes through the kit, so the
// leader's worker is the kit's, its faults apply, and crash() hands the store to the other tab,
// whose new worker is the kit's too. Skips until openMemWal knows `tabs` (the multi-tab branch).

import { expect, test } from '../src/playwright.js';
import { clientPage, mw, ok } from './client-fixtures.js';

test("tabs: 'share': the kit hosts the leader's worker, its faults apply, crash() moves the store to the other tab", async ({
  context,
  page,
  memwal,
}) => {
  const store = memwal.store('kit-share', { faults: true });
  const request = { name: 'kit-share', keyed: true, options: { tabs: 'share', flushRetry: { baseMs: 20, maxMs: 100 } } };
  await clientPage(page);
  const first = await mw(page, 'open', request);
  test.skip(!first.ok && first.code === 'InvalidArgument' && first.message.includes('tabs'), "openMemWal has no tabs: 'share' here yet");
  const a = ok(first);
  const second = await clientPage(await context.newPage());
  const b = ok(await mw(second, 'open', request));
  await store.waitForOpen();
  expect((await store.opens()).map((o) => [o.kitHosted, o.role])).toEqual([
    [true, 'leader'],
    [true, 'follower'],
  ]);

  await store.failNext('tableWrite', 2);
  ok(await mw(second, 'put', b, 0, 20));
  ok(await mw(page, 'put', a, 100, 20));
  await store.flush();
  expect((await store.stats()).write.flushFailureCount).toBe(2);

  await store.crash();
  ok(await mw(second, 'put', b, 200, 5));
  await expect.poll(async () => (await store.scan()).length, { timeout: 20_000 }).toBe(45);
  expect((await store.opens()).map((o) => o.role)).toEqual(['follower', 'leader']);
  await store.failNext('walAppend', 1); // the new leader's worker is the kit's too
});
