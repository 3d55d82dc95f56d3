// Crashes through the main-thread client: a seeded sweep that kills the worker or closes the page
// at random moments of a write storm (every acknowledged row is there exactly once after reopen),
// and a killed worker whose pending calls reject Closed instead of hanging.

import { expect, test } from '@playwright/test';
import { Profile, clientPage, code, describeStorage, missing, mw, ok, open, settledOutcome, until } from './client-fixtures.js';
import { rng } from '../src/testing/rng.js';
import type { Layout } from './site/client/protocol.js';

const SEED = Number(process.env.MEMWAL_CRASH_SEED ?? 20261130);
const ROUNDS = 20;
/** Ids of round r start at r * ID_BLOCK, so rounds never reuse an id. */
const ID_BLOCK = 100_000;

test(`crash sweep: ${ROUNDS} kills (worker.terminate or page close) during a write storm lose no acknowledged row and duplicate none (seed ${SEED})`, async ({
  baseURL,
}, testInfo) => {
  test.setTimeout(180_000);
  const random = rng(SEED);
  const profile = new Profile(testInfo, baseURL!);
  const acked: Record<Layout, number[]> = { opfs: [], indexeddb: [] };
  const layoutOfRound = (round: number): Layout => (round % 2 === 0 ? 'opfs' : 'indexeddb');
  try {
    let page = await profile.launch();
    // Acks reach the test as they happen, so a page close cannot take them along.
    await profile.context!.exposeBinding('__ack', (_source, ids: number[]) => {
      for (const id of ids) acked[layoutOfRound(Math.floor(id / ID_BLOCK))].push(id);
    });
    await page.reload();
    await page.waitForFunction(() => 'mw' in window);
    for (let round = 0; round < ROUNDS; round++) {
      const current = layoutOfRound(round);
      const kill = round % 4 >= 2 && round % 8 >= 4 ? 'page-close' : 'terminate';
      const name = `sweep-${current}`;
      const opened = await mw(page, 'open', { name, storage: current, worker: 'own', options: { maxMemtableBytes: 32 * 1024 } });
      if (!opened.ok) console.log(`round ${round}: open failed; storage holds`, JSON.stringify(await describeStorage(page, name), null, 1));
      const c = ok(opened, `round ${round}: open ${name}`);
      if (round % 4 === 0) {
        // What the previous rounds acknowledged is all there, each row once (also checked at the end).
        const before = ok(await mw(page, 'scan', c), 'scan');
        expect(before.duplicates, `round ${round}: duplicated rows`).toEqual({});
        expect(missing(acked[current], before.ids), `round ${round} (${current}): acknowledged rows lost`).toEqual([]);
      }

      const stormMs = 20 + Math.floor(random() * 400);
      await mw(page, 'storm', c, {
        firstId: round * ID_BLOCK,
        batch: 1 + Math.floor(random() * 40),
        payloadBytes: 64,
        concurrency: 4,
        reportAcks: kill === 'page-close',
      });
      await page.waitForTimeout(stormMs);
      if (kill === 'terminate') {
        await mw(page, 'terminate', c);
        const report = await mw(page, 'stopStorm', c);
        acked[current].push(...report.acked);
        expect(
          Object.keys(report.errors).filter((k) => k !== 'Closed'),
          `round ${round}: unexpected put errors`,
        ).toEqual([]);
      } else {
        await page.close();
        page = await clientPage(await profile.context!.newPage());
      }
      console.log(`round ${round}: ${current}, ${kill} after ${stormMs} ms, ${acked[current].length} rows acknowledged so far`);
    }
    for (const layout of ['opfs', 'indexeddb'] as const) {
      const c = await open(page, { name: `sweep-${layout}`, storage: layout });
      const final = ok(await mw(page, 'scan', c), 'final scan');
      expect(final.duplicates).toEqual({});
      expect(missing(acked[layout], final.ids), `${layout}: acknowledged rows lost`).toEqual([]);
      expect(acked[layout].length, `${layout}: the storms acknowledged something`).toBeGreaterThan(0);
      ok(await mw(page, 'call', c, 'close'));
    }
  } finally {
    await profile.dispose();
  }
});

test('a killed worker makes pending calls reject Closed instead of hanging, and later calls too', async ({ page }) => {
  await clientPage(page);
  const c = await open(page, { name: 'killed', worker: 'fault', keyed: true });
  ok(await mw(page, 'put', c, 1, 10));
  await mw(page, 'fault', c, { action: 'hold', op: 'walAppend' });
  const op = await mw(page, 'startPut', c, 100, 10);
  expect(await mw(page, 'settled', op, 200)).toBe('pending');
  const started = Date.now();
  await mw(page, 'terminate', c);
  expect(code(await settledOutcome(page, op, 5000))).toBe('Closed');
  console.log(`pending put rejected Closed ${Date.now() - started} ms after terminate()`);
  expect(code(await mw(page, 'call', c, 'memtableStats'))).toBe('Closed');
  expect(code(await mw(page, 'put', c, 200, 1))).toBe('Closed');
  await until(
    () => mw(page, 'states', c),
    (s) => s.includes('closed'),
    2000,
    "state 'closed'",
  );
});
