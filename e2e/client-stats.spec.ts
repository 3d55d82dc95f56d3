// Stats from the page (SPEC §15.3) in Chromium: under 8 concurrent writers, stats() answers from
// the snapshot the engine's worker published (no message to the worker), fast, never older than
// a reply already received, and onStats pushes consistent snapshots.

import { expect, test } from '../src/playwright.js';
import { clientPage, mw, ok, open } from './client-fixtures.js';

test('stats() from the page under 8 writers: no round trip, read-your-writes, onStats pushes consistent snapshots', async ({ page }) => {
  await clientPage(page);
  const c = await open(page, { name: 'stats-page', keyed: true, options: { maxMemtableBytes: 256 * 1024 } });
  const r = ok(await mw(page, 'statsUnderPuts', c, 8, 400, 200));
  const sorted = [...r.latenciesMs].sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
  test.info().annotations.push({ type: 'stats p99 (ms)', description: `${p99.toFixed(3)} over ${sorted.length} calls` });
  expect(sorted.length).toBeGreaterThan(20);
  // Answered on the page: a loaded 2-core machine may still delay the page's own thread, but no
  // call waits for the engine thread's turn (SPEC's target is 2 ms).
  expect(p99).toBeLessThan(2);
  expect(r.staleAfterReply).toBe(0);
  expect(r.postedDuringStats).toBe(0);
  expect(r.pushes).toBeGreaterThan(0);
  expect(r.inconsistentPushes).toBe(0);
  const s = ok(await mw(page, 'call', c, 'stats')) as { write: { putCount: number }; indexes: unknown[]; storage: { storeBytes: number } };
  expect(s.write.putCount).toBe(420);
  expect(s.indexes).toEqual([]);
  expect(s.storage.storeBytes).toBeGreaterThan(0);
  ok(await mw(page, 'call', c, 'close'));
});
