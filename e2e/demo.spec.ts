// The live demo (demo/) in real Chromium: it loads, its charts draw and move under load, the fault
// buttons make the metrics react (failed flushes, failed compactions, backpressure, crash + replay),
// each named scenario shows backpressure waits and compaction debt within 30 s, and the metrics
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

/** The metric names the metrics() panel must show (README, "Stats" and "Compaction and reads"). */
const REQUIRED_METRICS = [
  'wal_unflushed_bytes',
  'wal_sealed_memtables',
  'wal_backpressure_waits_total',
  'wal_backpressure_wait_seconds_total',
  'wal_backpressure_active_waiters',
  'wal_backpressure_aborted_total',
  'wal_backpressure_cause',
  'wal_table_files',
  'wal_compaction_pending_bytes',
  'wal_compactions_total',
  'wal_compaction_failures_total',
  'wal_l0_stalls_total',
  'wal_level_files',
];

/** The named scenarios (demo/scenarios.ts), in the picker's order. */
const SCENARIOS = ['steady', 'burst', 'failing-flushes', 'slow-compaction'] as const;
/** How soon after Start a scenario must show backpressure waits and compaction debt (the promise). */
const SCENARIO_PROMISE_MS = 30_000;

/** What the page exposes as `window.memwalDemo` (the parts the tests read). */
interface DemoState {
  ready: boolean;
  sessionId: number;
  writerState: string;
  layout: string | undefined;
  sample:
    | {
        session: number;
        time: number;
        unflushedBytes: number;
        mt: { frozenCount: number; frozenBytes: number; estimatedBytes: number; rowCount: number };
        bp: { activeCount: number; totalCount: number; cause: 'memtable' | 'compaction' | null };
        ws: { flushCount: number; flushFailureCount: number; putRows: number; walAppendRetries: number };
        cs: { pendingBytes: number; completedCount: number; failureCount: number; bytesWritten: number; l0StallCount: number };
      }
    | undefined;
  totals: {
    waits: number;
    flushes: number;
    flushFailures: number;
    compactions: number;
    compactionFailures: number;
    l0Stalls: number;
    activeWaitersPeak: number;
  };
  load: { acked: number; failed: number; running: boolean; errorsByCode: Record<string, number> };
  replayed: { rows: number; entries: number; ms: number } | undefined;
  scenario:
    | {
        name: string;
        session: number;
        startedAt: number;
        firstWaitMs?: number;
        firstCompactionWaitMs?: number;
        firstDebtMs?: number;
        firstStallMs?: number;
      }
    | undefined;
  longTasks: { total: number; underLoad: number; longestMs: number };
  metrics: string;
  events: string[];
}

type Snapshot = Pick<
  DemoState,
  'sessionId' | 'writerState' | 'sample' | 'totals' | 'load' | 'replayed' | 'scenario' | 'longTasks' | 'metrics'
>;

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
        scenario: d.scenario,
        longTasks: d.longTasks,
        metrics: d.metrics,
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

/** Chart index and the colour of a series that moves under load (demo/dashboard.ts). */
const MOVING_SERIES: [string, number, string][] = [
  ['unflushed bytes', 0, '#2563eb'],
  ['compaction debt', 1, '#b45309'],
  ['frozenCount', 2, '#0891b2'],
  ['level-0 files', 3, '#0d9488'],
  ['rows/s', 5, '#2563eb'],
  ['flushes committed', 6, '#16a34a'],
];

/** The value of counter or gauge `name` (store label only) in the metrics text, or undefined. */
function metricValue(metrics: string, name: string): number | undefined {
  const m = new RegExp(`^${name}\\{store="[^"]*"\\} (\\S+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : undefined;
}

test('the dashboard loads, its charts draw, starting the load moves unflushed bytes and compaction debt, and metrics() shows the stats and compaction metric names', async ({
  page,
}, testInfo) => {
  // The steady scenario's settings (overwrites, small memtables), opened without starting it, with a
  // larger budget (2 MiB: twice a memtable, so the chart's scale, which includes the budget line, leaves
  // the saw-tooth half its height): unflushed bytes climb as puts land and fall when a flush commits.
  // Half its rate in quarter batches: at the scenario's 20,000 rows/s in 1,000-row puts the flushes
  // (each waiting for compaction, as the scenario means) barely keep up on a 2-core machine, so the
  // puts wait on the budget and land eight at a time as each flush commits: nearly every sample then
  // shows the same full memtable beside the frozen one (CI saw 4 distinct values in 15 s).
  await openDemo(page, '?scenario=steady&budget=2MiB&rate=10000&batch=250&autostart=0&window=30');
  await expect(page.getByTestId('writer-state')).toHaveText('writer: open');
  await expect(page.getByTestId('storage-layout')).toContainText(/OPFS|IndexedDB/);

  const charts = page.locator('.chart canvas');
  await expect(charts).toHaveCount(8);
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
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && (seen.size < 5 || (await snapshot(page)).totals.compactions < 2)) {
    seen.add((await snapshot(page)).sample!.unflushedBytes);
    await page.waitForTimeout(150);
  }
  expect(seen.size, 'distinct unflushed-bytes samples under load').toBeGreaterThanOrEqual(5);
  const loaded = await snapshot(page);
  expect(loaded.totals.flushes, 'flushes committed under load').toBeGreaterThan(0);
  expect(loaded.load.failed, `rejected puts: ${JSON.stringify(loaded.load.errorsByCode)}`).toBe(0);
  await expect(page.getByTestId('tile-throughput')).toContainText('rows/s');
  expect(moving.sample!.unflushedBytes).toBeGreaterThan(0);

  // The series are drawn and move: each spans many pixel rows now (a flat line spans a few). On a
  // fast machine the load gets here within a second, before every chart has drawn much: poll.
  for (const [name, index, color] of MOVING_SERIES) {
    await expect
      .poll(() => seriesRows(page, index, color), { message: `pixel rows of the ${name} series`, timeout: 15_000 })
      .toBeGreaterThan(rowsIdle.get(name)! + 10);
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

  // Cleared, the retried flush commits and the queue drains. The load stops first: on a loaded
  // 2-core machine 20,000 rows/s of 512 KiB memtables is more than the flushes keep up with, and
  // the queue would grow behind the retried flush instead.
  await page.getByTestId('clear-faults').click();
  await page.getByTestId('load-toggle').click();
  await expect(page.getByTestId('load-toggle')).toHaveText('Start load');
  await waitFor(
    page,
    (s) => s.totals.flushes > last.totals.flushes && (s.sample?.mt.frozenCount ?? 99) <= 2,
    'the flush queue draining',
    60_000,
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

test('each named scenario starts from its button and shows backpressure waits and compaction debt within 30 s', async ({ page }) => {
  test.setTimeout(SCENARIOS.length * (SCENARIO_PROMISE_MS + 20_000));
  await openDemo(page, '?autostart=0');
  const measured: string[] = [];
  for (const name of SCENARIOS) {
    const before = await snapshot(page);
    await page.getByTestId('scenario').selectOption(name);
    // The visitor's clock starts at the click (the page and this process read the same clock).
    const clickedAt = Date.now();
    await page.getByTestId('scenario-start').click();
    // Start closes the store, destroys it, opens a fresh one with the scenario's settings and starts the load.
    const started = await waitFor(
      page,
      (s) => s.scenario?.name === name && s.sessionId > before.sessionId && s.load.running,
      `scenario ${name} to start`,
    );
    await expect(page).toHaveURL(new RegExp(`[?&]scenario=${name}(&|$)`));
    // How long the fresh store took to open: the scenario's own times count from its load's start.
    const openMs = started.scenario!.startedAt - clickedAt;
    // Within 30 s of the click, in the store the scenario opened: a put that waited on backpressure
    // (completed waits in the store's own counter, wal_backpressure_waits_total) and compaction
    // debt above zero (the demo notes the first sample with compactionStats().pendingBytes > 0).
    const shown = await waitFor(
      page,
      (s) =>
        s.scenario?.name === name &&
        s.scenario.session === s.sessionId &&
        s.sample?.session === s.sessionId &&
        s.scenario.firstWaitMs !== undefined &&
        s.scenario.firstDebtMs !== undefined &&
        s.sample.bp.totalCount > 0 &&
        (metricValue(s.metrics, 'wal_backpressure_waits_total') ?? 0) > 0,
      `scenario ${name}: backpressure waits and compaction debt`,
      SCENARIO_PROMISE_MS - (Date.now() - clickedAt),
    );
    const run = shown.scenario!;
    expect(openMs + run.firstWaitMs!, 'first backpressure wait, ms after the click').toBeLessThanOrEqual(SCENARIO_PROMISE_MS);
    expect(openMs + run.firstDebtMs!, 'first compaction debt, ms after the click').toBeLessThanOrEqual(SCENARIO_PROMISE_MS);
    expect(shown.writerState).toBe('open');
    if (name === 'failing-flushes')
      expect(shown.totals.flushFailures, 'flush failures counted').toBeGreaterThan(before.totals.flushFailures);
    if (name === 'slow-compaction') {
      await waitFor(page, (s) => s.scenario?.firstCompactionWaitMs !== undefined, 'puts waiting with cause "compaction"', 15_000);
    }
    const sec = (ms: number | undefined) => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);
    const end = (await snapshot(page)).scenario!;
    measured.push(
      `${name}: fresh store open ${sec(openMs)} after the click; from the load's start: first wait ${sec(run.firstWaitMs)}, debt ${sec(run.firstDebtMs)}, level-0 stall ${sec(end.firstStallMs)}, ` +
        `wait on compaction ${sec(end.firstCompactionWaitMs)}`,
    );
  }
  console.log(`scenarios:\n  ${measured.join('\n  ')}`);
});

test('"fail next N compactions" makes failureCount rise while flushes continue, then compactions commit again', async ({ page }) => {
  // The steady scenario with a debt bound high enough that failing compactions do not hold flushes back.
  await openDemo(page, '?scenario=steady&debt=256MiB&faults=5');
  await waitFor(page, (s) => (s.sample?.cs.bytesWritten ?? 0) > 0, 'a compaction that merged files', 30_000);

  await page.getByTestId('fail-compaction').click();
  const first = await waitFor(page, (s) => (s.sample?.cs.failureCount ?? 0) >= 1, 'the first failed compaction', 30_000);
  const last = await waitFor(page, (s) => (s.sample?.cs.failureCount ?? 0) >= 5, 'five failed compactions', 60_000);
  expect(last.totals.flushes, 'flushes committed while compactions failed').toBeGreaterThan(first.totals.flushes);
  expect(last.totals.flushFailures, 'the fault hits compactions only').toBe(0);
  await expect(page.getByTestId('tile-compactions')).toContainText('5 failed');

  // The failures ran out: the retried compaction commits, and the store carries on.
  const end = await waitFor(page, (s) => s.totals.compactions > last.totals.compactions, 'a compaction committing again', 30_000);
  expect(end.totals.compactionFailures).toBe(5);
  expect(end.writerState).toBe('open');
  expect(end.load.failed, `rejected puts: ${JSON.stringify(end.load.errorsByCode)}`).toBe(0);
  expect(metricValue(end.metrics, 'wal_compaction_failures_total')).toBe(5);
});
