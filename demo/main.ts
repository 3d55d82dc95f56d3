// The demo page: opens a store in the demo's own worker (memwal/worker + openMemWal), drives a
// write load from this main thread, polls the stats accessors five times a second into the
// dashboard, and wires the buttons to the store and the worker's fault injection; a named
// scenario (scenarios.ts) sets all of that up with one click.
//
// In an app the import below reads `import { openMemWal } from 'memwal'`.

import * as Comlink from 'comlink';
import { openMemWal, type MemWalClient, type WriterState } from '../src/index.js';
import { Dashboard, byId, type Bounds, type LongTasks, type Sample, type Totals } from './dashboard.js';
import { MiB, fmtBytes, fmtInt, fmtSec } from './format.js';
import { LoadGenerator, type LoadCounters } from './load.js';
import type { DemoControl } from './protocol.js';
import { SHAPES, type ShapeName } from './rows.js';
import { SCENARIOS, type ScenarioName } from './scenarios.js';
import { settingsFromQuery, settingsToQuery, storeName, withScenario, type Settings } from './settings.js';

/** How often the metrics() panel refreshes, ms. */
const METRICS_EVERY_MS = 500;
/** How long closing a store may take before the demo aborts it instead, ms. */
const CLOSE_TIMEOUT_MS = 5000;

const { settings: fromUrl, ignored } = settingsFromQuery(location.search);
let settings: Settings = fromUrl;
const load = new LoadGenerator(settings);

// ------------------------------------------------------------------ long tasks (first, so startup counts)

const longTasks: LongTasks = { supported: false, total: 0, underLoad: 0, longestMs: 0 };
if (typeof PerformanceObserver === 'function' && PerformanceObserver.supportedEntryTypes?.includes('longtask')) {
  longTasks.supported = true;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      longTasks.total++;
      if (load.running) longTasks.underLoad++;
      longTasks.longestMs = Math.max(longTasks.longestMs, entry.duration);
    }
  }).observe({ type: 'longtask', buffered: true });
}

// ------------------------------------------------------------------ form and URL

const form = {
  scenario: byId<HTMLSelectElement>('scenario'),
  rate: byId<HTMLInputElement>('rate'),
  batch: byId<HTMLInputElement>('batch'),
  inflight: byId<HTMLInputElement>('inflight'),
  keys: byId<HTMLInputElement>('keys'),
  shape: byId<HTMLSelectElement>('shape'),
  memtable: byId<HTMLInputElement>('memtable'),
  budget: byId<HTMLInputElement>('budget'),
  grace: byId<HTMLInputElement>('grace'),
  debt: byId<HTMLInputElement>('debt'),
  storage: byId<HTMLSelectElement>('storage'),
  durable: byId<HTMLInputElement>('durable'),
  faults: byId<HTMLInputElement>('faults'),
  slow: byId<HTMLInputElement>('slow'),
  quota: byId<HTMLSelectElement>('quota'),
};
const BUTTONS = [
  'scenario-start',
  'load-toggle',
  'apply',
  'reset',
  'fail-flush',
  'fail-compaction',
  'slow-compaction',
  'fail-quota',
  'clear-faults',
  'crash',
] as const;
const buttons = Object.fromEntries(BUTTONS.map((id) => [id, byId<HTMLButtonElement>(id)])) as Record<
  (typeof BUTTONS)[number],
  HTMLButtonElement
>;

for (const [name, shape] of Object.entries(SHAPES)) form.shape.add(new Option(shape.label, name));
for (const [name, scenario] of Object.entries(SCENARIOS)) form.scenario.add(new Option(scenario.label, name));

function fillForm(s: Settings): void {
  form.scenario.value = s.scenario || 'steady';
  byId('scenario-watch').textContent = SCENARIOS[form.scenario.value as ScenarioName].watch;
  form.rate.value = String(s.rowsPerSec);
  form.batch.value = String(s.batchRows);
  form.inflight.value = String(s.inflight);
  form.keys.value = String(s.keySpace);
  form.shape.value = s.shape;
  form.memtable.value = String(+(s.memtableBytes / MiB).toFixed(4));
  form.budget.value = String(+(s.budgetBytes / MiB).toFixed(4));
  form.grace.value = String(s.graceMs);
  form.debt.value = String(+(s.debtBytes / MiB).toFixed(4));
  form.storage.value = s.storage;
  form.durable.checked = s.durable;
  form.faults.value = String(s.faultCount);
  form.slow.value = String(s.slowMs);
  form.quota.value = s.quota;
}

/** The form's values over the current settings (an unreadable field keeps its value); the URL follows. */
function readForm(): Settings {
  const int = (el: HTMLInputElement, min: number, max: number, fallback: number): number => {
    const n = Math.round(Number(el.value));
    return Number.isFinite(n) && n >= min ? Math.min(max, n) : fallback;
  };
  const bytes = (el: HTMLInputElement, fallback: number): number => {
    const n = Math.round(Number(el.value) * MiB);
    return Number.isFinite(n) && n >= 1024 ? n : fallback;
  };
  const s = settings;
  settings = {
    ...s,
    rowsPerSec: int(form.rate, 0, 10_000_000, s.rowsPerSec),
    batchRows: int(form.batch, 1, 65_536, s.batchRows),
    inflight: int(form.inflight, 1, 256, s.inflight),
    keySpace: int(form.keys, 0, 1_000_000_000, s.keySpace),
    shape: form.shape.value as ShapeName,
    memtableBytes: bytes(form.memtable, s.memtableBytes),
    budgetBytes: bytes(form.budget, s.budgetBytes),
    graceMs: int(form.grace, 0, 600_000, s.graceMs),
    debtBytes: bytes(form.debt, s.debtBytes),
    storage: form.storage.value as Settings['storage'],
    durable: form.durable.checked,
    faultCount: int(form.faults, 1, 1_000_000, s.faultCount),
    slowMs: int(form.slow, 1, 600_000, s.slowMs),
    quota: form.quota.value as Settings['quota'],
  };
  history.replaceState(null, '', `${location.pathname}${settingsToQuery(settings)}`);
  load.setParams(settings);
  // The key space applies at once; the shape waits for the reopen (it is the store's schema).
  load.setRows({ shape: openedWith.shape, keySpace: settings.keySpace });
  return settings;
}

// ------------------------------------------------------------------ events log

const eventsEl = byId('events');
const eventLog: string[] = [];
function logEvent(text: string, kind: 'info' | 'good' | 'bad' = 'info'): void {
  eventLog.push(text);
  const li = document.createElement('li');
  if (kind !== 'info') li.className = kind;
  const time = document.createElement('time');
  time.textContent = new Date().toLocaleTimeString('en-GB', { hour12: false });
  const span = document.createElement('span');
  span.textContent = text;
  li.append(time, span);
  eventsEl.prepend(li);
  while (eventsEl.childElementCount > 60) eventsEl.lastElementChild!.remove();
}

// ------------------------------------------------------------------ worker and store

let worker: Worker;
let control: Comlink.Remote<DemoControl>;
let client: MemWalClient | undefined;
/** Settings the open store was opened with (the form may differ until "Apply & reopen"). */
let openedWith: Settings = settings;
/** Increments at every open and close; samples and state events of an older session are dropped. */
let sessionId = 0;
let writerState: WriterState | 'opening' | 'crashed' | 'error' = 'opening';
let layout: string | undefined;
let replayed: { rows: number; entries: number; ms: number } | undefined;

const stateEl = byId('state');
function showState(s: typeof writerState): void {
  writerState = s;
  stateEl.dataset.state = s;
  stateEl.textContent = s === 'opening' ? 'opening…' : `writer: ${s}`;
}

/** A new demo worker (it hosts memwal) and its control channel. */
function startWorker(): void {
  worker = new Worker(new URL('./demo.worker.ts', import.meta.url), { type: 'module', name: 'memwal-demo' });
  const channel = new MessageChannel();
  worker.postMessage({ demo: 'control', port: channel.port2 }, [channel.port2]);
  control = Comlink.wrap<DemoControl>(channel.port1);
}

async function openStore(): Promise<void> {
  const s = settings;
  const name = storeName(s);
  showState('opening');
  byId('store').textContent = `store: ${name}`;
  const mine = ++sessionId;
  const started = performance.now();
  try {
    client = await openMemWal(
      {
        name,
        schema: SHAPES[s.shape].schema,
        primaryKey: ['id'],
        maxMemtableBytes: s.memtableBytes,
        maxUnflushedMemtableBytes: s.budgetBytes,
        maxPendingCompactionBytes: s.debtBytes,
        frozenMemtableGraceMs: s.graceMs,
        durableWrite: s.durable,
        storage: s.storage === 'auto' ? undefined : s.storage,
        worker,
        logger: { warn: (message) => logEvent(message, 'bad') },
      },
      {
        onStateChange: (state) => {
          if (mine !== sessionId) return;
          if (state === 'poisoned' || state === 'fenced') logEvent(`writer ${state}: puts reject until the store is reopened`, 'bad');
          showState(state);
        },
      },
    );
  } catch (e) {
    showState('error');
    throw e;
  }
  openedWith = s;
  showState('open');
  layout = await control.layout();
  byId('layout').textContent =
    `storage: ${layout === 'opfs' ? 'OPFS' : layout === 'indexeddb' ? 'IndexedDB' : (layout ?? '?')} (fault-injecting)`;
  const ws = await client.writeStats();
  replayed = { rows: ws.replayedRows, entries: ws.replayedEntries, ms: ws.replayTimeMs };
  dashboard.showReplay(ws);
  const took = (performance.now() - started).toFixed(0);
  logEvent(`opened ${name} in ${took} ms; replayed ${fmtInt(ws.replayedRows)} rows from ${fmtInt(ws.replayedEntries)} WAL entries`, 'good');
  load.setRows(s);
  load.setTarget(client);
}

/** Close the open store; abort it when closing fails or takes longer than CLOSE_TIMEOUT_MS. */
async function closeStore(): Promise<void> {
  load.setTarget(undefined);
  const c = client;
  client = undefined;
  sessionId++;
  if (!c) return;
  showState('opening');
  try {
    const closed = c.close().then(() => true);
    const timedOut = new Promise<false>((resolve) => setTimeout(() => resolve(false), CLOSE_TIMEOUT_MS));
    if (!(await Promise.race([closed, timedOut]))) {
      logEvent('close took too long; aborted (the WAL replays at the next open)', 'bad');
      await c.abort();
    }
  } catch (e) {
    logEvent(`close failed: ${(e as Error).message} — what it could not flush replays from the WAL`, 'bad');
    await c.abort();
  }
}

let busy = false;
/** Run one store action at a time, with the store buttons disabled meanwhile. */
async function exclusive(what: string, action: () => Promise<void>): Promise<void> {
  if (busy) return;
  busy = true;
  for (const b of Object.values(buttons)) b.disabled = b !== buttons['load-toggle'];
  try {
    await action();
  } catch (e) {
    logEvent(`${what} failed: ${(e as Error).message}`, 'bad');
  } finally {
    busy = false;
    for (const b of Object.values(buttons)) b.disabled = false;
  }
}

// ------------------------------------------------------------------ polling

const dashboard = new Dashboard(settings.windowSec);
const boundsOf = (s: Settings): Bounds => ({ budgetBytes: s.budgetBytes, debtBytes: s.debtBytes });
const metricsEl = byId('metrics');
let metricsText = '';
/** The open `metricsText` came from: a new open fetches its own at its first poll. */
let metricsSession = 0;
let lastMetricsAt = 0;

async function pollOnce(): Promise<void> {
  const c = client;
  const mine = sessionId;
  const time = Date.now();
  dashboard.showPuts(load.counters);
  dashboard.showLongTasks(longTasks);
  if (!c) {
    dashboard.recordGap(time, boundsOf(settings));
    return;
  }
  try {
    // One call, one snapshot: every figure of the poll from the same moment, answered on the page
    // from the snapshot the worker published last (no wait for the engine thread's turn).
    const s = await c.stats();
    if (mine !== sessionId || !s.memtable || !s.compaction) return;
    noteScenarioProgress(
      dashboard.record(
        {
          session: mine,
          time,
          mt: s.memtable,
          bp: s.backpressure,
          ws: s.write,
          wal: s.wal,
          cs: s.compaction,
          unflushedBytes: s.unflushedBytes,
        },
        boundsOf(openedWith),
      ),
    );
    if (time - lastMetricsAt >= METRICS_EVERY_MS || metricsSession !== mine) {
      lastMetricsAt = time;
      const text = await c.metrics();
      if (mine !== sessionId) return;
      metricsText = text;
      metricsSession = mine;
      if (!metricsEl.matches(':hover')) metricsEl.textContent = metricsText;
    }
  } catch {
    // The store closed or its worker died between the check and the call: the next poll shows it.
  }
}

async function pollLoop(): Promise<void> {
  const started = performance.now();
  await pollOnce();
  dashboard.drawSoon();
  setTimeout(() => void pollLoop(), Math.max(0, settings.pollMs - (performance.now() - started)));
}

// ------------------------------------------------------------------ controls

function describeLoad(): string {
  const rate = settings.rowsPerSec ? `${fmtInt(settings.rowsPerSec)} rows/s` : 'unlimited';
  return `${rate}, ${fmtInt(settings.batchRows)} rows/put, ≤ ${settings.inflight} in flight`;
}

function setLoadRunning(run: boolean): void {
  if (run) {
    load.start();
    logEvent(`load started: ${describeLoad()}`);
  } else {
    load.stop();
    logEvent('load stopped');
  }
  buttons['load-toggle'].textContent = run ? 'Stop load' : 'Start load';
  buttons['load-toggle'].classList.toggle('running', run);
}

for (const el of [form.rate, form.batch, form.inflight, form.keys, form.faults, form.slow, form.quota]) {
  el.addEventListener('change', () => readForm());
}

buttons['load-toggle'].addEventListener('click', () => {
  readForm();
  setLoadRunning(!load.running);
});

buttons.apply.addEventListener(
  'click',
  () =>
    void exclusive('reopen', async () => {
      const s = readForm();
      logEvent(`reopening with memtable ${fmtBytes(s.memtableBytes)}, budget ${fmtBytes(s.budgetBytes)}, grace ${s.graceMs} ms`);
      await closeStore();
      // As after a crash (a new worker starts with none): a reopen drops the injected faults.
      await control.clearFaults();
      showSlowCompactions(false);
      await openStore();
    }),
);

buttons.reset.addEventListener(
  'click',
  () =>
    void exclusive('reset', async () => {
      const s = readForm();
      await closeStore();
      await control.destroy(storeName(s), s.storage); // drops the injected faults too
      showSlowCompactions(false);
      logEvent(`MemWal.destroy('${storeName(s)}'): store deleted`, 'good');
      await openStore();
    }),
);

buttons['fail-flush'].addEventListener(
  'click',
  () =>
    void exclusive('fail next flushes', async () => {
      const n = readForm().faultCount;
      await control.failFlushes(n);
      logEvent(`armed: the next ${n} flush attempts fail with IOError`);
    }),
);

buttons['fail-compaction'].addEventListener(
  'click',
  () =>
    void exclusive('fail next compactions', async () => {
      const n = readForm().faultCount;
      await control.failCompactions(n);
      logEvent(`armed: the next ${n} compactions fail with IOError (their output writes); flushes are not affected`);
    }),
);

let slowCompactions = false;
function showSlowCompactions(on: boolean): void {
  slowCompactions = on;
  buttons['slow-compaction'].textContent = on ? `Slow compactions: ${settings.slowMs} ms` : 'Slow compactions: off';
  buttons['slow-compaction'].classList.toggle('on', on);
}

/** Turn the compaction delay on (each output file write waits `slowMs`) or off. */
async function setSlowCompactions(on: boolean): Promise<void> {
  const ms = readForm().slowMs;
  await control.slowCompactions(on ? ms : 0);
  showSlowCompactions(on);
  logEvent(on ? `slow compactions: each compaction output write waits ${ms} ms` : 'slow compactions off');
}

buttons['slow-compaction'].addEventListener('click', () => void exclusive('slow compactions', () => setSlowCompactions(!slowCompactions)));

buttons['fail-quota'].addEventListener(
  'click',
  () =>
    void exclusive('QuotaExceeded', async () => {
      const s = readForm();
      const ops = s.quota === 'both' ? (['tableWrite', 'walAppend'] as const) : ([s.quota] as const);
      await control.failNext([...ops], s.faultCount, 'quota');
      logEvent(`armed: the next ${s.faultCount} ${ops.join(' and ')} operations throw QuotaExceededError`);
    }),
);

buttons['clear-faults'].addEventListener(
  'click',
  () =>
    void exclusive('clear faults', async () => {
      await control.clearFaults();
      showSlowCompactions(false);
      logEvent('pending faults and the compaction delay cleared');
    }),
);

buttons.crash.addEventListener(
  'click',
  () =>
    void exclusive('crash', async () => {
      load.setTarget(undefined);
      client = undefined; // its worker is about to die: the client notices and rejects what is in flight
      sessionId++;
      worker.terminate();
      showState('crashed');
      logEvent('worker terminated (crash): no close, no flush; acknowledged puts are in the WAL', 'bad');
      startWorker(); // a new worker: no injected faults
      showSlowCompactions(false);
      await openStore();
      if (replayed) logEvent(`recovered: replayed ${fmtInt(replayed.rows)} rows in ${replayed.ms.toFixed(0)} ms`, 'good');
    }),
);

// ------------------------------------------------------------------ scenarios

/** The scenario started last: when its load started, and how long after that its effects first showed. */
interface ScenarioRun {
  name: ScenarioName;
  /** The open it runs against (a reopen or crash ends the measurement). */
  session: number;
  /** Date.now() when its load started. */
  startedAt: number;
  /** ms after the start: a put waited on backpressure (on compaction); compaction debt above zero; a flush waited for compaction. */
  firstWaitMs?: number;
  firstCompactionWaitMs?: number;
  firstDebtMs?: number;
  firstStallMs?: number;
}
let scenarioRun: ScenarioRun | undefined;
const scenarioStatus = byId('scenario-status');

/** Start the scenario in `settings.scenario`: fresh store with its settings, its faults armed, its load running. */
async function runScenario(): Promise<void> {
  const name = settings.scenario || 'steady';
  const scenario = SCENARIOS[name];
  if (load.running) setLoadRunning(false);
  scenarioRun = undefined;
  logEvent(`scenario "${scenario.label}": a fresh store, then the load`);
  await closeStore();
  await control.destroy(storeName(settings), settings.storage); // drops the injected faults too
  showSlowCompactions(false);
  await openStore();
  const faults = scenario.faults ?? {};
  if (faults.failFlushes) {
    await control.failFlushes(faults.failFlushes);
    logEvent(`armed: the next ${faults.failFlushes} flush attempts fail with IOError`);
  }
  if (faults.failCompactions) {
    await control.failCompactions(faults.failCompactions);
    logEvent(`armed: the next ${faults.failCompactions} compactions fail with IOError`);
  }
  if (faults.slowCompactions) await setSlowCompactions(true);
  scenarioRun = { name, session: sessionId, startedAt: Date.now() };
  setLoadRunning(true);
}

/** Record when the running scenario's effects first show, and say so in the panel and the log. */
function noteScenarioProgress(s: Sample): void {
  const run = scenarioRun;
  if (!run || run.session !== s.session || s.time < run.startedAt) return;
  const at = s.time - run.startedAt;
  const label = SCENARIOS[run.name].label;
  if (run.firstWaitMs === undefined && (s.bp.activeCount > 0 || s.bp.totalCount > 0)) {
    run.firstWaitMs = at;
    logEvent(`${label}: first backpressure wait ${fmtSec(at / 1000)} after Start (cause: ${s.bp.cause ?? 'memtable'})`, 'good');
  }
  if (run.firstCompactionWaitMs === undefined && s.bp.cause === 'compaction') {
    run.firstCompactionWaitMs = at;
    if (run.firstWaitMs !== at) logEvent(`${label}: first wait on compaction ${fmtSec(at / 1000)} after Start`, 'good');
  }
  if (run.firstDebtMs === undefined && s.cs.pendingBytes > 0) {
    run.firstDebtMs = at;
    logEvent(`${label}: compaction debt ${fmtSec(at / 1000)} after Start (${fmtBytes(s.cs.pendingBytes)})`, 'good');
  }
  if (run.firstStallMs === undefined && s.cs.l0StallCount > 0) {
    run.firstStallMs = at;
    logEvent(`${label}: first level-0 stall (a flush waited for compaction) ${fmtSec(at / 1000)} after Start`, 'good');
  }
  const seen = (ms: number | undefined): string => (ms === undefined ? '–' : fmtSec(ms / 1000));
  scenarioStatus.textContent =
    `${label}, ${fmtSec(at / 1000)} in. First seen: wait ${seen(run.firstWaitMs)} · ` +
    `debt ${seen(run.firstDebtMs)} · level-0 stall ${seen(run.firstStallMs)} · wait on compaction ${seen(run.firstCompactionWaitMs)}`;
}

form.scenario.addEventListener('change', () => {
  byId('scenario-watch').textContent = SCENARIOS[form.scenario.value as ScenarioName].watch;
});

buttons['scenario-start'].addEventListener(
  'click',
  () =>
    void exclusive('start scenario', async () => {
      settings = withScenario(readForm(), form.scenario.value as ScenarioName);
      fillForm(settings);
      readForm(); // the URL and the load follow
      await runScenario();
    }),
);

// ------------------------------------------------------------------ start

/** The demo's live state, for scripts and e2e/demo.spec.ts (`window.memwalDemo`). */
interface DemoState {
  readonly ready: boolean;
  readonly settings: Settings;
  readonly sessionId: number;
  readonly writerState: string;
  readonly layout: string | undefined;
  readonly sample: Sample | undefined;
  readonly totals: Totals;
  readonly load: LoadCounters & { running: boolean };
  readonly replayed: typeof replayed;
  readonly scenario: ScenarioRun | undefined;
  readonly slowCompactions: boolean;
  readonly longTasks: LongTasks;
  readonly metrics: string;
  readonly events: string[];
}

declare global {
  interface Window {
    memwalDemo: DemoState;
  }
}

let ready = false;
window.memwalDemo = {
  get ready() {
    return ready;
  },
  get settings() {
    return settings;
  },
  get sessionId() {
    return sessionId;
  },
  get writerState() {
    return writerState;
  },
  get layout() {
    return layout;
  },
  get sample() {
    return dashboard.latest;
  },
  totals: dashboard.totals,
  get load() {
    return { ...load.counters, running: load.running };
  },
  get replayed() {
    return replayed;
  },
  get scenario() {
    return scenarioRun;
  },
  get slowCompactions() {
    return slowCompactions;
  },
  longTasks,
  /** metrics() of the open store ('' until its first answer). */
  get metrics() {
    return metricsSession === sessionId ? metricsText : '';
  },
  events: eventLog,
};

fillForm(settings);
load.setRows(settings);
if (ignored.length) logEvent(`ignored URL parameters: ${ignored.join(', ')}`, 'bad');
startWorker();
void pollLoop();
void exclusive('open', async () => {
  // `?scenario=…` starts it as its button would (a fresh store); with autostart=0 the store opens
  // with its settings and waits for Start.
  if (settings.scenario && settings.autostart) await runScenario();
  else await openStore();
  ready = true;
  if (settings.autostart && !load.running) setLoadRunning(true);
});
