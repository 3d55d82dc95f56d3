// The live demo (demo/) in real Chromium: it loads, its charts draw and move under load, the fault
// buttons make the metrics react (failed flushes, backpressure, crash + replay), and the metrics
// panel shows the required metric names. Serves the demo with Vite's JS API on a port of its own (the
// shared config's webServer serves e2e/site only) and saves a screenshot (to docs/demo.png with UPDATE_DEMO_SCREENSHOT=1).

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test, type Page } from '@playwright/test';
import { createServer, type ViteDevServer } from 'vite';

/** Port the demo server tries first (the next free one is taken if busy). */
const DEMO_E2E_PORT = Number(process.env.DEMO_E2E_PORT ?? 5190);
const CONFIG = fileURLToPath(new URL('../vite.config.ts', import.meta.url));
const SCREENSHOT = fileURLToPath(new URL('../docs/demo.png', import.meta.url));

/** The metric names the metrics() panel must show (README, "Stats"). */
const REQUIRED_METRICS = [
  'wal_unflushed_bytes',
  'wal_sealed_memtables',
  'wal_backpressure_waits_total',
  'wal_backpressure_wait_seconds_total',
  'wal_backpressure_active_waiters',
  'wal_backpressure_aborted_total',
];

/** What the page exposes as `window.memwalDemo` (the parts the tests read). */
interface DemoState {
  ready: boolean;
  sessionId: number;
  writerState: string;
  layout: string | undefined;
  sample:
    | {
        time: number;
        unflushedBytes: number;
        mt: { frozenCount: number; frozenBytes: number; estimatedBytes: number; rowCount: number };
        bp: { activeCount: number; totalCount: number };
        ws: { flushCount: number; flushFailureCount: number; putRows: number; walAppendRetries: number };
      }
    | undefined;
  totals: { waits: number; flushes: number; flushFailures: number; activeWaitersPeak: number };
  load: { acked: number; failed: number; running: boolean; errorsByCode: Record<string, number> };
  replayed: { rows: number; entries: number; ms: number } | undefined;
  longTasks: { total: number; underLoad: number; longestMs: number };
  metrics: string;
  events: string[];
}

type Snapshot = Pick<DemoState, 'sessionId' | 'writerState' | 'sample' | 'totals' | 'load' | 'replayed' | 'longTasks'>;

let server: ViteDevServer;
let base: string;

test.use({ viewport: { width: 1440, height: 1000 } });

test.beforeAll(async () => {
  server = await createServer({ configFile: CONFIG, server: { port: DEMO_E2E_PORT, strictPort: false }, logLevel: 'warn' });
  await server.listen();
  base = server.resolvedUrls?.local[0] ?? `http://127.0.0.1:${DEMO_E2E_PORT}/`;
});

test.afterAll(async () => {
  await server?.close();
});

async function openDemo(page: Page, query: string): Promise<void> {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}${query}`);
  await page
    .waitForFunction(() => (window as unknown as { memwalDemo?: DemoState }).memwalDemo?.ready === true, null, { timeout: 30_000 })
    .catch(async (e: unknown) => {
      const events = await page.evaluate(() => (window as unknown as { memwalDemo?: DemoState }).memwalDemo?.events).catch(() => undefined);
      throw new Error(
        `the demo did not open its store: ${String(e)}\nevents: ${JSON.stringify(events)}\npage errors: ${errors.join('\n')}`,
      );
    });
  await waitFor(page, (s) => s.sample !== undefined, 'a first stats sample');
}

/** A JSON copy of the demo's state. */
function snapshot(page: Page): Promise<Snapshot> {
  return page.evaluate(() => {
    const d = (window as unknown as { memwalDemo: DemoState }).memwalDemo;
    return JSON.parse(
      JSON.stringify({
        sessionId: d.sessionId,
        writerState: d.writerState,
        sample: d.sample,
        totals: d.totals,
        load: d.load,
        replayed: d.replayed,
        longTasks: d.longTasks,
      }),
    ) as Snapshot;
  });
}

/** Polls the demo's state until `ok` holds (the page samples 5×/s). */
async function waitFor(page: Page, ok: (s: Snapshot) => boolean, what: string, timeoutMs = 20_000): Promise<Snapshot> {
  const deadline = Date.now() + timeoutMs;
  let last: Snapshot | undefined;
  while (Date.now() < deadline) {
    last = await snapshot(page);
    if (ok(last)) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last state: ${JSON.stringify(last)}`);
}

/** Opaque pixels in each chart canvas (uPlot draws axes, grid and series there). */
function chartInk(page: Page): Promise<number[]> {
  return page.$$eval('.chart canvas', (canvases) =>
    canvases.map((c) => {
      const canvas = c as HTMLCanvasElement;
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let ink = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) ink++;
      return ink;
    }),
  );
}

/**
 * How many pixel rows of chart `index` hold a series' colour (`#rrggbb`): a flat series at zero
 * spans a couple of rows, a moving one many.
 */
function seriesRows(page: Page, index: number, color: string): Promise<number> {
  return page.$$eval(
    '.chart canvas',
    (canvases, [i, hex]) => {
      const canvas = canvases[i as number] as HTMLCanvasElement;
      const want = parseInt((hex as string).slice(1), 16);
      const [r, g, b] = [(want >> 16) & 255, (want >> 8) & 255, want & 255];
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let rows = 0;
      for (let y = 0; y < canvas.height; y++) {
        for (let x = 0; x < canvas.width; x++) {
          const o = (y * canvas.width + x) * 4;
          if (data[o + 3]! > 200 && Math.abs(data[o]! - r) < 24 && Math.abs(data[o + 1]! - g) < 24 && Math.abs(data[o + 2]! - b) < 24) {
            rows++;
            break;
          }
        }
      }
      return rows;
    },
    [index, color] as const,
  );
}

/** Chart index and the colour of a series that moves under load (demo/main.ts). */
const MOVING_SERIES: [string, number, string][] = [
  ['unflushed bytes', 0, '#2563eb'],
  ['frozenCount', 1, '#0891b2'],
  ['rows/s', 3, '#2563eb'],
  ['flushes committed', 4, '#16a34a'],
];

test('the dashboard loads, its charts draw, starting the load moves unflushed bytes, and metrics() shows the §4.6 names', async ({
  page,
}, testInfo) => {
  await openDemo(page, '?autostart=0&window=30');
  await expect(page.getByTestId('writer-state')).toHaveText('writer: open');
  await expect(page.getByTestId('storage-layout')).toContainText(/OPFS|IndexedDB/);

  const charts = page.locator('.chart canvas');
  await expect(charts).toHaveCount(5);
  const idle = await snapshot(page);
  expect(idle.load.running).toBe(false);
  const inkIdle = await chartInk(page);
  expect(
    inkIdle.every((n) => n > 500),
    `every chart canvas has axes drawn: ${inkIdle}`,
  ).toBe(true);
  const rowsIdle = new Map<string, number>();
  for (const [name, index, color] of MOVING_SERIES) rowsIdle.set(name, await seriesRows(page, index, color));

  await page.getByTestId('load-toggle').click();
  await expect(page.getByTestId('load-toggle')).toHaveText('Stop load');
  const moving = await waitFor(
    page,
    (s) => s.load.acked > 20 && (s.sample?.unflushedBytes ?? 0) > 0,
    'acknowledged puts and unflushed bytes',
  );
  // Unflushed bytes move: they rise as puts land and fall back when a memtable's flush commits.
  const seen = new Set<number>();
  const deadline = Date.now() + 8000;
  while (Date.now() < deadline && (seen.size < 5 || (await snapshot(page)).totals.flushes < 1)) {
    seen.add((await snapshot(page)).sample!.unflushedBytes);
    await page.waitForTimeout(150);
  }
  expect(seen.size, 'distinct unflushed-bytes samples under load').toBeGreaterThanOrEqual(5);
  const loaded = await snapshot(page);
  expect(loaded.totals.flushes, 'flushes committed under load').toBeGreaterThan(0);
  expect(loaded.load.failed, `rejected puts: ${JSON.stringify(loaded.load.errorsByCode)}`).toBe(0);
  await expect(page.getByTestId('tile-throughput')).toContainText('rows/s');
  expect(moving.sample!.unflushedBytes).toBeGreaterThan(0);

  // The series are drawn and move: each spans many pixel rows now (a flat line spans a few).
  for (const [name, index, color] of MOVING_SERIES) {
    expect(await seriesRows(page, index, color), `pixel rows of the ${name} series`).toBeGreaterThan(rowsIdle.get(name)! + 10);
  }

  const metrics = page.getByTestId('metrics');
  for (const name of REQUIRED_METRICS) await expect(metrics).toContainText(name);
  await expect(metrics).toContainText('# TYPE wal_unflushed_bytes gauge');

  // For the picture: a few failed flushes (retried with backoff), so the fault paths show too.
  await page.getByTestId('faults').fill('6');
  await page.getByTestId('fail-flush').click();
  await waitFor(page, (s) => s.totals.flushFailures >= 3, 'failed flushes for the screenshot');
  await page.waitForTimeout(4000);
  await page.mouse.move(0, 0);
  const shot = await page.screenshot({ fullPage: true });
  await testInfo.attach('demo-under-load', { body: shot, contentType: 'image/png' });
  // The README's picture is refreshed on request only, so a test run leaves the tree clean.
  const out = process.env.UPDATE_DEMO_SCREENSHOT === '1' ? SCREENSHOT : testInfo.outputPath('demo.png');
  mkdirSync(dirname(out), { recursive: true });
  await page.screenshot({ path: out, fullPage: true });

  const end = await snapshot(page);
  console.log(
    `demo under load: ${end.load.acked} puts ok, ${end.totals.flushes} flushes, long tasks ${end.longTasks.underLoad} under load / ` +
      `${end.longTasks.total} since page load (longest ${Math.round(end.longTasks.longestMs)} ms)`,
  );
});

test('"fail next flushes" keeps frozenBytes above zero while frozenCount rises and the flush-failure counter moves', async ({ page }) => {
  await openDemo(page, '?rate=20000&memtable=512KiB&budget=48MiB&grace=0&faults=12');
  await waitFor(page, (s) => s.totals.flushes >= 2, 'two committed flushes before the fault');

  await page.getByTestId('fail-flush').click();
  const failing = await waitFor(page, (s) => s.totals.flushFailures >= 1, 'the first failed flush');
  const startCount = failing.sample!.mt.frozenCount;

  // While the oldest frozen memtable's flush keeps failing, younger ones queue behind it.
  const samples: Snapshot[] = [];
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    samples.push(await snapshot(page));
    await page.waitForTimeout(200);
  }
  const last = samples[samples.length - 1]!;
  for (const s of samples) expect(s.sample!.mt.frozenBytes, 'frozenBytes while flushes fail').toBeGreaterThan(0);
  expect(last.sample!.mt.frozenCount, 'frozenCount rose while flushes failed').toBeGreaterThan(startCount);
  expect(last.totals.flushFailures, 'flush failures counted').toBeGreaterThan(1);
  await expect(page.getByTestId('tile-flushes')).toContainText(/[1-9]\d* failed/);
  expect(last.writerState, 'a flush failure does not poison').toBe('open');

  // Cleared, the retried flush commits and the queue drains.
  await page.getByTestId('clear-faults').click();
  await waitFor(
    page,
    (s) => s.totals.flushes > last.totals.flushes && (s.sample?.mt.frozenCount ?? 99) <= 2,
    'the flush queue draining',
    20_000,
  );
});

test('a tiny budget makes active waiters appear', async ({ page }) => {
  await openDemo(page, '?rate=0&inflight=16&batch=500&memtable=1MiB&budget=128KiB');
  const waiting = await waitFor(page, (s) => (s.sample?.bp.activeCount ?? 0) > 0, 'a put waiting on backpressure');
  expect(waiting.sample!.unflushedBytes).toBeGreaterThan(0);
  await waitFor(page, (s) => s.totals.waits > 0, 'a completed backpressure wait');
  await expect(page.getByTestId('tile-waiters')).toContainText(/\d[\d,]* waits/);
  const metrics = page.getByTestId('metrics');
  await expect(metrics).toContainText(/wal_backpressure_waits_total\{store="demo-event"\} [1-9]/);
});

test('crashing the worker and reopening shows the replayed row count', async ({ page }) => {
  await openDemo(page, '?rate=20000&memtable=16MiB&budget=64MiB');
  const before = await waitFor(
    page,
    (s) => s.load.acked >= 20 && (s.sample?.mt.rowCount ?? 0) > 0,
    'acknowledged rows in the active memtable',
  );

  await page.getByTestId('crash').click();
  const after = await waitFor(
    page,
    (s) => s.sessionId > before.sessionId && s.writerState === 'open' && s.replayed !== undefined && s.replayed.rows > 0,
    'the reopened store with replayed rows',
    30_000,
  );
  expect(after.replayed!.rows, 'rows replayed from the WAL').toBeGreaterThanOrEqual(before.sample!.mt.rowCount);
  await expect(page.getByTestId('tile-replayed')).toContainText(`${after.replayed!.rows.toLocaleString('en-US')} rows`);
  // The load carries on against the new worker.
  await waitFor(page, (s) => s.load.acked > after.load.acked + 10, 'puts acknowledged after the reopen');
});

test('a simulated QuotaExceeded on WAL appends is retried: the writer stays open and no put is lost', async ({ page }) => {
  await openDemo(page, '?rate=10000&quota=walAppend&faults=3');
  const before = await waitFor(page, (s) => s.load.acked >= 10, 'acknowledged puts');
  await page.getByTestId('fail-quota').click();
  const after = await waitFor(page, (s) => (s.sample?.ws.walAppendRetries ?? 0) >= 3, 'three retried WAL appends');
  await waitFor(page, (s) => s.load.acked > after.load.acked + 10, 'puts acknowledged after the retries');
  const end = await snapshot(page);
  expect(end.writerState).toBe('open');
  expect(end.load.failed, `rejected puts: ${JSON.stringify(end.load.errorsByCode)}`).toBe(before.load.failed);
});
