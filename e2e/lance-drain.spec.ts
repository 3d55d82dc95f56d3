// A browser store drains into the example Lance server while the page writes (SPEC §12): the
// store is the main-thread client (its worker, OPFS), the drain runs on the page and ships Arrow
// IPC over fetch (CORS); afterwards a Lance query of the dataset equals scan().

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { keyedSchema, lanceRows } from '../src/lance/testkit.test-util.js';
import { type LanceServer, startLanceServer, testPort } from '../test/lance-server-process.js';
import type { DrainStats } from '../src/index.js';

let server: LanceServer;
let uri: string;
test.beforeAll(async () => {
  uri = mkdtempSync(join(tmpdir(), 'memwal-e2e-lance-'));
  server = await startLanceServer({ uri, port: testPort(5), tokens: { 'tab-secret': 'tab' }, allowOrigin: '*' });
});
test.afterAll(async () => {
  await server?.kill();
  rmSync(uri, { recursive: true, force: true });
});

type Probe = {
  start(name: string, endpoint: string, token: string): Promise<void>;
  write(seed: number, ops: number, keys: number): Promise<void>;
  drained(): Promise<number>;
  scan(): Promise<string[]>;
  stats(): Promise<DrainStats>;
  metrics(): Promise<string>;
  close(): Promise<void>;
};
declare const drainProbe: Probe;

test('a page’s store drains into the example Lance server while writing; a Lance query equals scan()', async ({ page }) => {
  await page.goto('/drain.html');
  await page.waitForFunction(() => 'drainProbe' in window);
  await page.evaluate(([endpoint]) => drainProbe.start('tab', endpoint!, 'tab-secret'), [`${server.url}/drain/tab`]);
  // Writes and the drain run at once: three rounds of writing, checking the lag in between.
  for (let round = 0; round < 3; round++) {
    await page.evaluate((seed) => drainProbe.write(seed, 60, 400), round + 1);
    const stats = await page.evaluate(() => drainProbe.stats());
    expect(stats.failureCount).toBe(0);
  }
  const position = await page.evaluate(() => drainProbe.drained());
  const scan = await page.evaluate(() => drainProbe.scan());
  expect(scan.length).toBeGreaterThan(100);
  expect(await lanceRows(uri, 'events', 'tab', keyedSchema)).toEqual(scan);
  const stats = await page.evaluate(() => drainProbe.stats());
  expect(stats).toMatchObject({ appliedPosition: position, lagEntries: 0, consumedPosition: position });
  expect(await page.evaluate(() => drainProbe.metrics())).toContain('wal_drain_lag_entries{store="tab"} 0');
  await page.evaluate(() => drainProbe.close());
});
