// `npm run bench`: builds the bench page (bench/vite.config.ts), serves it with `vite preview` on
// 127.0.0.1, runs every case of docs/benchmarks.md in one headless Chromium session on a
// persistent on-disk profile, prints the table and the ratios, and writes
// bench/results/latest.json. Node.
//
// Arguments (after `npm run bench --`) or environment variables (docs/benchmarks.md):
//   --only=reads,stats   BENCH_CASES     a subset of the cases (or groups: ingest, rows), in run order
//   --engines=memwal,…   BENCH_ENGINES   only these engines in the row, Arrow and read cases
//   --quick              BENCH_QUICK=1   small sizes, 3 reps, for trying things
//   --reps=n             BENCH_REPS      repetitions
//   --full               BENCH_FULL=1    also IndexedDB and Dexie on the 1M-row set
//   --profile=<case>     BENCH_PROFILE   CPU profile of the bench worker during that case (for
//                                        "stats": the host worker and the page), written to
//                                        bench/results/profile-<case>-<thread>.cpuprofile.json
//   --baseline=<ref>     BENCH_BASELINE  an older memwal the ingest cases also run (default e7a7360,
//                                        main before compaction; `none`: skip)
//   BENCH_STALL_REPS (default 10: reps of the memorystall case; each memory or memorystall rep
//                    stops at 240 s, quick 120 s, and counts as timed out: a stall)
//   CHROMIUM_PATH, BENCH_PORT (default 5780), BENCH_COI=0 (no cross-origin isolation)

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { build, preview } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const configFile = join(here, 'vite.config.ts');
const resultsDir = join(here, 'results');
const MiB = 1024 * 1024;

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    engines: { type: 'string' },
    quick: { type: 'boolean' },
    reps: { type: 'string' },
    full: { type: 'boolean' },
    profile: { type: 'string' },
    baseline: { type: 'string' },
  },
});
const list = (s) =>
  s
    ?.split(',')
    .map((x) => x.trim())
    .filter(Boolean);

const QUICK = args.quick || process.env.BENCH_QUICK === '1';
const REPS = Number(args.reps ?? process.env.BENCH_REPS ?? (QUICK ? 3 : 5));
const ALL_CASES = [
  'raw',
  'rawread',
  'arrow',
  'rows100k',
  'rows1m',
  'stats',
  'mainthread',
  'memory',
  'memorystall',
  'recovery',
  'reads',
  'reads4m',
];
const GROUPS = { ingest: ['raw', 'rawread', 'arrow'], rows: ['rows100k', 'rows1m'] };
const chosen = (list(args.only ?? process.env.BENCH_CASES) ?? ALL_CASES).flatMap((c) => GROUPS[c] ?? [c]);
for (const c of chosen)
  if (!ALL_CASES.includes(c))
    throw new Error(`unknown case "${c}" (cases: ${ALL_CASES.join(', ')}; groups: ${Object.keys(GROUPS).join(', ')})`);
const CASES = ALL_CASES.filter((c) => chosen.includes(c));
const PROFILE = args.profile ?? process.env.BENCH_PROFILE;
if (PROFILE && !ALL_CASES.includes(PROFILE)) throw new Error(`unknown case "${PROFILE}" to profile`);
/** Only these engines in the row, Arrow and read cases. */
const ENGINES = list(args.engines ?? process.env.BENCH_ENGINES);
const wanted = (engine) => !ENGINES || ENGINES.includes(engine);

/**
 * --baseline=<git ref> (BENCH_BASELINE): an older memwal that the ingest cases (arrow, rows100k)
 * also run, interleaved, so that one run shows what a change costs ingest. Default: main just
 * before table format 2 and compaction; `none`: no baseline.
 */
const BASELINE = args.baseline ?? process.env.BENCH_BASELINE ?? 'e7a7360';
let baselineCommit;

/** Extracts the baseline's src/ from git into bench/.baseline (git-ignored); its short commit, or undefined. */
function extractBaseline() {
  if (BASELINE === 'none' || !CASES.some((c) => c === 'arrow' || c === 'rows100k')) return undefined;
  const repo = join(here, '..');
  const commit = execFileSync('git', ['rev-parse', '--short', `${BASELINE}^{commit}`], { cwd: repo })
    .toString()
    .trim();
  const dir = join(here, '.baseline');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  execFileSync('sh', ['-c', `git archive ${commit} src | tar -x -C "${dir}"`], { cwd: repo });
  process.env.BENCH_BASELINE_SRC = `${join(dir, 'src')}/`;
  return commit;
}

/** Sizes. Default: the sizes docs/benchmarks.md reports; quick: enough to see that everything runs. */
const SIZE = QUICK
  ? {
      ingestMiB: 32,
      smallRows: 10_000,
      bigRows: 100_000,
      memoryMiB: 256,
      memoryReps: 1,
      stallReps: Number(process.env.BENCH_STALL_REPS ?? 2),
      memoryLimitMs: 120_000,
      walMiB: 16,
      readRows: 50_000,
      bigReadRows: 200_000,
      readPasses: { cold: 500, warmup: 1000, warm: 2000, maxMs: 10_000 },
    }
  : {
      ingestMiB: 128,
      smallRows: 100_000,
      bigRows: 1_000_000,
      memoryMiB: 1024,
      memoryReps: 2,
      stallReps: Number(process.env.BENCH_STALL_REPS ?? 10),
      memoryLimitMs: 240_000,
      walMiB: 64,
      readRows: 1_000_000,
      bigReadRows: 4_000_000,
      readPasses: { cold: 2000, warmup: 5000, warm: 20_000, maxMs: 30_000 },
    };

const PEERS = [
  'idb',
  'dexie',
  'sqlite_sahpool',
  'sqlite_sahpool_wal',
  'sqlite_sahpool_wal_tuned',
  'pglite_opfs_ahp',
  'pglite_opfs_ahp_unnest',
];
/**
 * Repetitions per engine on the big row set, where the peers are slow: one pass of SQLite and
 * PGlite (20-40 s each here); IndexedDB and Dexie (1-3 min a pass) only with BENCH_FULL=1.
 * Their rows/s at 100k (five reps each) is what the ratios use.
 */
const FULL = args.full || process.env.BENCH_FULL === '1';
const BIG_ROWS_REPS = { sqlite_sahpool: 1, pglite_opfs_ahp: 1, idb: FULL ? 1 : 0, dexie: FULL ? 1 : 0 };

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// ------------------------------------------------------------------------------------------------
// statistics

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const summarize = (samples, unit) => ({
  median: median(samples),
  min: Math.min(...samples),
  max: Math.max(...samples),
  unit,
  reps: samples.length,
});

/** `{ case: { engine: { median, min, max, unit, reps } } }` */
const cases = {};
const details = {};
function record(caseName, engine, samples, unit) {
  (cases[caseName] ??= {})[engine] = summarize(samples, unit);
}
const log = (...a) => console.log(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s]`, ...a);
const started = performance.now();

// ------------------------------------------------------------------------------------------------
// the bench worker over CDP (heap and CPU profiles): Playwright has no CDP session for workers,
// so attach to it through the page's session (non-flat protocol messages).

class WorkerCdp {
  static async attach(context, page, urlPart) {
    const target = (await WorkerCdp.workers(context, page)).find((t) => t.url.includes(urlPart));
    if (!target) throw new Error(`no worker target matching ${urlPart}`);
    return WorkerCdp.attachTo(context, page, target.targetId);
  }

  /** The worker targets of the browser (nested ones, such as memwal's I/O workers, included). */
  static async workers(context, page) {
    const cdp = await context.newCDPSession(page);
    try {
      return (await cdp.send('Target.getTargets')).targetInfos.filter((t) => t.type === 'worker');
    } finally {
      await cdp.detach();
    }
  }

  static async attachTo(context, page, targetId) {
    const cdp = await context.newCDPSession(page);
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: false });
    return new WorkerCdp(cdp, sessionId);
  }

  constructor(cdp, sessionId) {
    this.cdp = cdp;
    this.sessionId = sessionId;
    this.nextId = 1;
    this.pending = new Map();
    cdp.on('Target.receivedMessageFromTarget', (ev) => {
      if (ev.sessionId !== this.sessionId) return;
      const msg = JSON.parse(ev.message);
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
    });
  }

  /** One protocol call; rejects after `timeoutMs` rather than hang the run. */
  send(method, params = {}, timeoutMs = 60_000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer from the worker within ${timeoutMs} ms`));
      }, timeoutMs);
      const settle = (fn) => (v) => {
        clearTimeout(timer);
        fn(v);
      };
      this.pending.set(id, { resolve: settle(resolve), reject: settle(reject), method });
      this.cdp
        .send('Target.sendMessageToTarget', { sessionId: this.sessionId, message: JSON.stringify({ id, method, params }) })
        .catch(settle(reject));
    });
  }

  /** JS heap plus ArrayBuffer backing stores, bytes; after a full GC when `gc`. */
  async heapBytes(gc, timeoutMs) {
    if (gc) await this.send('HeapProfiler.collectGarbage', {}, timeoutMs);
    const u = await this.send('Runtime.getHeapUsage', {}, timeoutMs);
    return u.usedSize + (u.backingStorageSize ?? 0);
  }
}

/** Self and total time per function of a V8 CPU profile, heaviest first. */
function summarizeProfile(profile, top = 30) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const dt = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const keyOf = (n) => {
    const f = n.callFrame;
    return `${f.functionName || '(anonymous)'} ${f.url ? `${basename(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
  };
  const self = new Map();
  const total = new Map();
  let all = 0;
  for (const [id, ms] of dt) {
    all += ms;
    const n = byId.get(id);
    self.set(keyOf(n), (self.get(keyOf(n)) ?? 0) + ms);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const k = keyOf(byId.get(cur));
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + ms);
    }
  }
  const fmt = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, ms]) => `${((100 * ms) / all).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(7)} ms  ${k}`)
      .join('\n');
  // Hot lines (the bench build is not minified, so a line of the bundle is a line of source).
  const interval = all / Math.max(1, profile.samples.length);
  const lines = new Map();
  for (const n of profile.nodes) {
    for (const t of n.positionTicks ?? []) {
      const k = `${basename(n.callFrame.url)}:${t.line}`;
      lines.set(k, (lines.get(k) ?? 0) + t.ticks * interval);
    }
  }
  const source = (k) => {
    const [file, line] = k.split(':');
    try {
      return (
        readFileSync(join(here, 'dist', 'assets', file), 'utf8')
          .split('\n')
          [Number(line) - 1]?.trim()
          .slice(0, 110) ?? ''
      );
    } catch {
      return '';
    }
  };
  const hot = [...lines]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([k, ms]) => `${((100 * ms) / all).toFixed(1).padStart(5)}%  ${k}  ${source(k)}`)
    .join('\n');
  return `sampled ${all.toFixed(0)} ms\n\n-- self time --\n${fmt(self)}\n\n-- total time (inclusive) --\n${fmt(total)}\n\n-- hot lines --\n${hot}\n`;
}

/**
 * Self time (ms) of a page profile by origin: the script chunk a sample's function lives in
 * (bench/vite.config.ts puts memwal, apache-arrow and comlink in chunks of their own), or the
 * native function (postMessage: structured clone and send), GC, idle.
 */
function mainThreadShares(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const origin = (n) => {
    const { url, functionName } = n.callFrame;
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(garbage collector)') return 'gc';
    if (functionName === '(program)') return 'program (native, unattributed)';
    if (!url) return functionName === 'postMessage' ? 'postMessage (clone + send)' : undefined;
    const file = basename(url);
    for (const o of ['memwal', 'apache-arrow', 'comlink']) if (file.startsWith(`${o}-`)) return o;
    return file.startsWith('index-') ? 'bench page' : `other (${file})`;
  };
  const out = {};
  for (let i = 0; i < profile.samples.length; i++) {
    // A native function without its own origin (e.g. a builtin) counts for its caller's.
    let id = profile.samples[i];
    let o = origin(byId.get(id));
    while (o === undefined && parent.has(id)) o = origin(byId.get((id = parent.get(id))));
    o ??= 'other native';
    out[o] = (out[o] ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000;
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Chrome traces: the engine thread's tasks. Workers have no Long Tasks API, so the browser's own
// trace (CDP Tracing, category "toplevel": one ThreadControllerImpl::RunTask event per task, with
// wall and thread-CPU duration) is read for the thread that runs the host worker's script.
// Nothing inside the product is changed or instrumented.

/** Runs `work()` while the browser records a trace; resolves `[result, events]`. */
async function traced(context, page, work) {
  const cdp = await context.newCDPSession(page);
  const events = [];
  cdp.on('Tracing.dataCollected', (e) => {
    for (const ev of e.value) events.push(ev);
  });
  const complete = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
  await cdp.send('Tracing.start', {
    traceConfig: {
      // toplevel: every task; devtools.timeline: FunctionCall events name each thread's script;
      // blink.user_timing: the page's marks around the load.
      includedCategories: ['toplevel', 'devtools.timeline', 'blink.user_timing'],
      recordMode: 'recordUntilFull',
      traceBufferSizeInKb: 512 * 1024,
    },
    transferMode: 'ReportEvents',
  });
  let result;
  try {
    result = await work();
  } finally {
    await cdp.send('Tracing.end');
    const { dataLossOccurred } = await complete;
    if (dataLossOccurred) log('trace: the browser dropped events (buffer full)');
    await cdp.detach();
  }
  return [result, events];
}

/**
 * Task durations per thread inside the window between the page's marks `bench-load-start` and
 * `bench-load-end`: for the engine thread (the one running the script `hostScript`), the page's
 * main thread, and any other worker thread of the page's process (the I/O worker among them).
 */
function taskFigures(events, hostScript) {
  const mark = (name) => events.filter((e) => e.name === name && String(e.cat).includes('user_timing')).at(-1)?.ts;
  const t0 = mark('bench-load-start');
  const t1 = mark('bench-load-end');
  if (t0 === undefined || t1 === undefined) throw new Error('trace: the load marks are missing');
  const key = (e) => `${e.pid}:${e.tid}`;
  const names = new Map();
  const scripts = new Map();
  for (const e of events) {
    if (e.ph === 'M' && e.name === 'thread_name') names.set(key(e), e.args?.name);
    const url = e.name === 'FunctionCall' ? e.args?.data?.url : undefined;
    if (url) (scripts.get(key(e)) ?? scripts.set(key(e), new Set()).get(key(e))).add(basename(url).replace(/-[\w-]{8}\.js$/, '.js'));
  }
  const engine = [...scripts].find(([, s]) => [...s].some((u) => u.startsWith(hostScript)))?.[0];
  if (!engine) throw new Error(`trace: no thread ran ${hostScript}`);
  const pid = engine.split(':')[0];
  const tasks = new Map();
  for (const e of events) {
    if (e.ph !== 'X' || e.name !== 'ThreadControllerImpl::RunTask' || String(e.pid) !== pid) continue;
    if (e.ts >= t1 || e.ts + e.dur <= t0) continue;
    (tasks.get(key(e)) ?? tasks.set(key(e), []).get(key(e))).push(e);
  }
  const windowMs = (t1 - t0) / 1000;
  const figures = (k) => {
    // Outermost tasks only (a nested run loop reports a task inside a task), clipped to the window.
    const ts = [];
    for (const e of (tasks.get(k) ?? []).sort((a, b) => a.ts - b.ts)) {
      const prev = ts.at(-1);
      if (!prev || e.ts >= prev.ts + prev.dur) ts.push(e);
    }
    const ms = ts.map((e) => e.dur / 1000);
    const longest = ts.reduce((a, e) => (e.dur > (a?.dur ?? -1) ? e : a), undefined);
    const busy = ts.reduce((a, e) => a + Math.min(t1, e.ts + e.dur) - Math.max(t0, e.ts), 0) / 1000;
    // What the longest task spent its time in: the trace events nested in it, longest first
    // (FunctionCall: a JS entry point; RunMicrotasks: promise continuations; GC events; …).
    const inLongest = longest
      ? events
          .filter((e) => e.ph === 'X' && key(e) === k && e !== longest && e.ts >= longest.ts && e.ts < longest.ts + longest.dur)
          .sort((a, b) => b.dur - a.dur)
          .slice(0, 4)
          .map((e) => {
            const f = e.name === 'FunctionCall' ? e.args?.data : undefined;
            const where = f ? ` ${f.functionName || '(anonymous)'} ${basename(f.url)}:${f.lineNumber + 1}` : '';
            return `${e.name}${where} ${(e.dur / 1000).toFixed(1)} ms`;
          })
      : [];
    return {
      thread: names.get(k),
      scripts: [...(scripts.get(k) ?? [])],
      tasks: ts.length,
      longestMs: longest ? longest.dur / 1000 : 0,
      longestCpuMs: longest?.tdur !== undefined ? longest.tdur / 1000 : undefined,
      longestRan: inLongest,
      p99Ms: ms.length ? percentile(ms, 99) : 0,
      over2ms: ms.filter((x) => x > 2).length,
      over5ms: ms.filter((x) => x > 5).length,
      over50ms: ms.filter((x) => x > 50).length,
      busyPct: (100 * busy) / windowMs,
    };
  };
  const page = [...tasks.keys()].find((k) => names.get(k) === 'CrRendererMain');
  const others = [...tasks.keys()].filter((k) => k !== engine && k !== page && names.get(k) === 'DedicatedWorker thread');
  return { windowMs, engine: figures(engine), page: page ? figures(page) : undefined, otherWorkers: others.map(figures) };
}

// ------------------------------------------------------------------------------------------------
// the run

async function main() {
  mkdirSync(resultsDir, { recursive: true });
  log(`building the bench page (${QUICK ? 'quick' : 'full'} run, ${REPS} reps)`);
  baselineCommit = extractBaseline();
  if (baselineCommit) log(`baseline: memwal at ${baselineCommit} (${BASELINE}) for the ingest cases`);
  await build({ configFile, logLevel: 'error' });
  const server = await preview({
    configFile,
    logLevel: 'error',
    preview: { host: '127.0.0.1', port: Number(process.env.BENCH_PORT ?? 5780), strictPort: false },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a URL');
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath} (set CHROMIUM_PATH)`);
  const profileDir = mkdtempSync(join(tmpdir(), 'memwal-bench-profile-'));
  const context = await chromium.launchPersistentContext(profileDir, { executablePath, headless: true, args: CHROMIUM_ARGS });
  const cleanup = async () => {
    await context.close().catch(() => undefined);
    await server.close().catch(() => undefined);
    rmSync(profileDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => log('page error:', e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') log(`console.${m.type()}:`, m.text());
    });
    await page.goto(url);
    await page.waitForFunction(() => globalThis.bench !== undefined);
    await page.evaluate(() => globalThis.bench.api.ping());
    const userAgent = await page.evaluate(() => navigator.userAgent);
    const crossOriginIsolated = await page.evaluate(() => globalThis.crossOriginIsolated);
    const version = context.browser()?.version() ?? userAgent.match(/Chrome\/([\d.]+)/)?.[1] ?? 'unknown';
    log(
      `Chromium ${version} at ${url}, crossOriginIsolated ${crossOriginIsolated}, load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    const cdp0 = await WorkerCdp.attach(context, page, 'bench.worker');
    // The client cases run memwal in the host worker; profile that one for them.
    const hostCdp = PROFILE === 'stats' ? await WorkerCdp.attach(context, page, 'host.worker') : undefined;
    const call = (fn, ...args) => page.evaluate(fn, args);

    // For "stats", the page's main thread is profiled too (it encodes the puts and times the calls).
    const pageCdp = PROFILE === 'stats' ? await context.newCDPSession(page) : undefined;
    const profiled = async (name, work) => {
      if (PROFILE !== name) return work();
      const targets = [[hostCdp ? 'host-worker' : 'bench-worker', hostCdp ?? cdp0], ...(pageCdp ? [['page', pageCdp]] : [])];
      const start = async (t) => {
        await t.send('Profiler.enable');
        await t.send('Profiler.setSamplingInterval', { interval: 200 });
        await t.send('Profiler.start');
      };
      for (const [, t] of targets) await start(t);
      // memwal's I/O workers start with their first store: profile each one as it appears.
      const seen = new Set();
      let polling = true;
      const poller = (async () => {
        while (polling) {
          for (const w of await WorkerCdp.workers(context, page).catch(() => [])) {
            if (!w.url.includes('io.worker') || seen.has(w.targetId)) continue;
            seen.add(w.targetId);
            const t = await WorkerCdp.attachTo(context, page, w.targetId).catch(() => undefined);
            if (
              t &&
              (await start(t).then(
                () => true,
                () => false,
              ))
            )
              targets.push([`io-worker-${seen.size}`, t]);
          }
          await new Promise((r) => setTimeout(r, 500));
        }
      })();
      try {
        return await work();
      } finally {
        polling = false;
        await poller;
        for (const [who, t] of targets) {
          const { profile } = await t.send('Profiler.stop');
          // *.json: git-ignored; DevTools' Performance panel loads it as a .cpuprofile.
          const file = join(resultsDir, `profile-${name}-${who}.cpuprofile.json`);
          writeFileSync(file, JSON.stringify(profile));
          log(`CPU profile of the ${who} written to ${file}\n${summarizeProfile(profile)}`);
        }
      }
    };

    const out = join(resultsDir, 'latest.json');
    const write = (complete) => {
      const result = {
        date: new Date().toISOString(),
        userAgent,
        machine: { cores: cpus().length, cpu: cpus()[0]?.model, kernel: release(), os: osName(), chromium: version, loadavg: loadavg() },
        crossOriginIsolated,
        config: {
          quick: QUICK,
          full: FULL,
          reps: REPS,
          sizes: SIZE,
          cases: CASES,
          engines: ENGINES ?? 'all',
          baseline: baselineCommit ?? null,
          complete,
        },
        cases,
        ratios: computeRatios(),
        failures: Object.fromEntries(failed),
        details,
        elapsedSeconds: Math.round((performance.now() - started) / 1000),
      };
      writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
      return result;
    };
    for (const c of CASES) {
      const t = performance.now();
      await profiled(c, () => CASE_RUNNERS[c](call, cdp0, { context, page }));
      const warnings = await call(() => globalThis.bench.api.takeWarnings());
      if (warnings.count) (details.warnings ??= {})[c] = warnings;
      const lt = await call(() => globalThis.bench.takeLongTasks());
      (details.pageLongTasks ??= {})[c] = {
        count: lt.length,
        totalMs: Math.round(lt.reduce((a, t) => a + t.ms, 0)),
        maxMs: Math.max(0, ...lt.map((t) => t.ms)),
      };
      await call(() => Promise.all([globalThis.bench.api.dropData(), globalThis.bench.dropData()]));
      (details.caseSeconds ??= {})[c] = Math.round((performance.now() - t) / 1000);
      write(false); // partial results survive an interrupted run
    }
    await call(() => globalThis.bench.api.closePeers());

    const result = write(true);
    printTable();
    printRatios(result.ratios);
    log(`wrote ${out}`);
    if (failed.size > 0) {
      log(`${failed.size} engine(s) failed: ${[...failed.keys()].join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    await cleanup();
  }
}

function osName() {
  try {
    return readFileSync('/etc/os-release', 'utf8').match(/^PRETTY_NAME="?([^"\n]*)/m)?.[1];
  } catch {
    return undefined;
  }
}

/** Run `rep(i)` once untimed (warm-up: JIT, wasm, caches) and `reps` times; collect the results. */
async function repeat(label, reps, rep, warmup = true) {
  if (warmup) await rep(-1);
  const out = [];
  for (let i = 0; i < reps; i++) out.push(await rep(i));
  log(`${label}: done`);
  return out;
}

const CASE_RUNNERS = {
  /** Case 1: raw OPFS sync handle, 1 MiB chunks, flush per chunk. */
  async raw(call) {
    const mibps = await repeat('raw OPFS', REPS, () => call(([m]) => globalThis.bench.api.rawOpfs(m), SIZE.ingestMiB));
    record('ingest_mibps', 'raw_opfs', mibps, 'MiB/s');
  },

  /**
   * Case 1b: what one 64 KiB ranged read from a 16 MiB OPFS file costs, read whole and sliced
   * (OpfsStorage.tableReadRange today), through File.slice, and through a read-only sync handle.
   */
  async rawread(call) {
    const res = await repeat('raw OPFS ranged reads', REPS, () => call(() => globalThis.bench.api.rawOpfsRangeReads(16, 50)));
    for (const k of ['whole', 'fileSlice', 'syncHandle'])
      record(
        'range_read_ms',
        k,
        res.map((r) => r[k]),
        'ms',
      );
  },

  /** Case 2: Arrow ingest, 1 and 8 writers, append-only and keyed; engines interleaved per rep. */
  async arrow(call) {
    // Keyed stores ingest several times slower (the key index): a quarter of the volume keeps
    // the run short; with ~3.5x estimated bytes per input byte it still overruns the budget.
    // 1w and pk_1w also run on this checkout without the I/O worker (`inline_`) and, with a
    // baseline, on the baseline (`baseline_`), interleaved rep by rep.
    const variants = [
      ['memwal_1w', 1, false, SIZE.ingestMiB],
      ['memwal_8w', 8, false, SIZE.ingestMiB],
      ['memwal_pk_1w', 1, true, SIZE.ingestMiB / 4],
      ['memwal_pk_8w', 8, true, SIZE.ingestMiB / 4],
    ]
      .filter(([name]) => wanted(name))
      .flatMap((v) =>
        v[1] === 1 ? [v, [`inline_${v[0]}`, ...v.slice(1)], ...(baselineCommit ? [[`baseline_${v[0]}`, ...v.slice(1)]] : [])] : [v],
      );
    const run = ([name, writers, keyed], n) =>
      name.startsWith('baseline_')
        ? call(([c, w, k]) => globalThis.bench.baseline.memwalArrow(c, w, { keyed: k }), n, writers, keyed)
        : call(([c, w, k, i]) => globalThis.bench.api.memwalArrow(c, w, { keyed: k }, i), n, writers, keyed, name.startsWith('inline_'));
    for (const v of variants) await run(v, 8); // warm-up
    const res = Object.fromEntries(variants.map(([name]) => [name, []]));
    for (let i = 0; i < REPS; i++) for (const v of variants) res[v[0]].push(await run(v, v[3]));
    details.arrow_mib_per_rep = Object.fromEntries(variants.map((v) => [v[0], v[3]]));
    for (const [name, rs] of Object.entries(res)) {
      record(
        'ingest_mibps',
        name,
        rs.map((r) => r.bytes / MiB / (r.ackMs / 1000)),
        'MiB/s',
      );
      record(
        'ingest_mibps_drained',
        name,
        rs.map((r) => r.bytes / MiB / (r.drainedMs / 1000)),
        'MiB/s',
      );
      record(
        'arrow_rows_per_s',
        name,
        rs.map((r) => r.rows / (r.ackMs / 1000)),
        'rows/s',
      );
      details[`arrow_${name}`] = {
        flushes: rs.map((r) => r.flushes),
        backpressureWaits: rs.map((r) => r.backpressureWaits),
        drainedSeconds: rs.map((r) => +(r.drainedMs / 1000).toFixed(2)),
        compaction: rs.map((r) => r.compaction),
      };
    }
    log('Arrow ingest: done');
  },

  rows100k: (call) => rowsCase(call, SIZE.smallRows, `rows_${label(SIZE.smallRows)}`, {}),
  rows1m: (call) => rowsCase(call, SIZE.bigRows, `rows_${label(SIZE.bigRows)}`, BIG_ROWS_REPS),

  /**
   * Case 5: stats latency from the main thread while 8 writers put ≈1 MiB batches through the
   * client; then the same load traced, for the engine thread's longest task.
   */
  async stats(call, _cdp, { context, page }) {
    // Two hosts, interleaved rep by rep: the product's default (storage I/O in an I/O worker) and
    // the same with storage I/O on the engine's thread (`inline_`, as before the I/O worker).
    const hosts = [
      ['', false],
      ['inline_', true],
    ];
    const load = (inline) => call(([c, i]) => globalThis.bench.statsUnderLoad(c, 8, i), SIZE.ingestMiB, inline);
    const reps = { '': [], inline_: [] };
    const traces = { '': [], inline_: [] };
    for (const [, inline] of hosts) await guarded(`stats/${inline}`, () => load(inline)); // warm-up
    for (let i = 0; i < REPS; i++) {
      for (const [prefix, inline] of hosts) {
        const r = await guarded(`stats/${prefix}`, () => load(inline));
        if (r) reps[prefix].push(r);
      }
    }
    // The same load again, traced (separate reps, so tracing cannot slow the figures above).
    for (let i = 0; i < Math.min(REPS, 3); i++) {
      for (const [prefix, inline] of hosts) {
        const t = await guarded(`stats/trace/${prefix}`, async () => {
          const [r, events] = await traced(context, page, () => load(inline));
          return {
            ...taskFigures(events, inline ? 'host-inline.worker' : 'host.worker'),
            statsP99Ms: percentile(r.latencies.memtableStats, 99),
          };
        });
        if (t) traces[prefix].push(t);
      }
    }
    log('stats under load: done');
    for (const [prefix] of hosts) {
      const rs = reps[prefix];
      if (!rs.length) continue;
      for (const k of ['memtableStats', 'backpressureStats', 'metrics']) {
        const e = `${prefix}${k}`;
        record(
          'stats_p50_ms',
          e,
          rs.map((r) => percentile(r.latencies[k], 50)),
          'ms',
        );
        record(
          'stats_p99_ms',
          e,
          rs.map((r) => percentile(r.latencies[k], 99)),
          'ms',
        );
        record(
          'stats_max_ms',
          e,
          rs.map((r) => Math.max(...r.latencies[k])),
          'ms',
        );
      }
      record(
        'stats_staleness_ms',
        `${prefix}memtableStats`,
        rs.map((r) => percentile(r.staleness, 99)),
        'ms',
      );
      const stale = rs.flatMap((r) => r.staleness);
      details[`${prefix}stats_staleness`] = {
        samples: stale.length,
        stale: stale.filter((x) => x > 0).length,
        p99: percentile(stale, 99),
        max: Math.max(...stale),
      };
      record(
        'ingest_mibps',
        `${prefix}memwal_client_8w`,
        rs.map((r) => r.bytes / MiB / (r.ms / 1000)),
        'MiB/s',
      );
      details[`${prefix}stats_pooled`] = Object.fromEntries(
        ['memtableStats', 'backpressureStats', 'metrics'].map((k) => {
          const all = rs.flatMap((r) => r.latencies[k]);
          return [k, { samples: all.length, p50: percentile(all, 50), p99: percentile(all, 99), max: Math.max(...all) }];
        }),
      );
      const ts = traces[prefix];
      if (!ts.length) continue;
      const host = `memwal_host${prefix ? '_inline' : ''}`;
      record(
        'engine_thread_longest_task_ms',
        host,
        ts.map((t) => t.engine.longestMs),
        'ms',
      );
      record(
        'engine_thread_longest_task_cpu_ms',
        host,
        ts.map((t) => t.engine.longestCpuMs ?? Number.NaN),
        'ms',
      );
      record(
        'engine_thread_task_p99_ms',
        host,
        ts.map((t) => t.engine.p99Ms),
        'ms',
      );
      record(
        'page_longest_task_ms',
        `stats_load${prefix ? '_inline' : ''}`,
        ts.map((t) => t.page?.longestMs ?? 0),
        'ms',
      );
      details[`${prefix}engine_thread`] = ts;
      log(`${host}: longest task on the engine thread ${ts.map((t) => t.engine.longestMs.toFixed(1)).join(', ')} ms`);
    }
  },

  /** Case 6: ≥ 1 GiB through a 64 MiB budget (append-only store, 8 writers); heap read over CDP. */
  async memory(call, cdp) {
    const res = [];
    for (let i = 0; i < SIZE.memoryReps; i++) {
      await call(() => globalThis.bench.api.memoryOpen({ keyed: false }));
      const before = await cdp.heapBytes(true);
      let peakHeap = before;
      let sampling = true;
      const sampler = (async () => {
        for (let n = 1; sampling; n++) {
          peakHeap = Math.max(peakHeap, await cdp.heapBytes(false, 5000).catch(() => peakHeap));
          await new Promise((r) => setTimeout(r, 100));
          if (n % 300 === 0) log('memory: still running', JSON.stringify(await call(() => globalThis.bench.api.memoryProbe())));
        }
      })();
      const r = await call(([m, l]) => globalThis.bench.api.memoryIngest(m, 8, l), SIZE.memoryMiB, SIZE.memoryLimitMs);
      sampling = false;
      await sampler;
      const after = await cdp.heapBytes(true);
      await call(([a]) => globalThis.bench.api.memoryClose(a), r.timedOut);
      const closed = await cdp.heapBytes(true);
      res.push({ ...r, heapBefore: before, heapPeak: peakHeap, heapAfter: after, heapClosed: closed });
      log(
        `memory rep ${i + 1}: ${(r.ingestedBytes / MiB).toFixed(0)} MiB in ${(r.ms / 1000).toFixed(1)} s, peak unflushed ${(r.peakUnflushedBytes / MiB).toFixed(1)} MiB`,
      );
    }
    const m = (f) => res.map((r) => f(r) / MiB);
    record(
      'memory_mib',
      'budget',
      m((r) => r.budgetBytes),
      'MiB',
    );
    record(
      'memory_mib',
      'budget_plus_one_put',
      m((r) => r.budgetBytes + r.onePutBytes),
      'MiB',
    );
    record(
      'memory_mib',
      'peak_unflushed',
      m((r) => r.peakUnflushedBytes),
      'MiB',
    );
    record(
      'memory_mib',
      'heap_peak_growth',
      m((r) => r.heapPeak - r.heapBefore),
      'MiB',
    );
    record(
      'memory_mib',
      'heap_growth_after_gc',
      m((r) => r.heapAfter - r.heapBefore),
      'MiB',
    );
    record(
      'memory_mib',
      'heap_growth_after_close',
      m((r) => r.heapClosed - r.heapBefore),
      'MiB',
    );
    record(
      'memory_mib',
      'ingested',
      m((r) => r.ingestedBytes),
      'MiB',
    );
    record(
      'memory_ingest_mibps',
      'memwal_8w',
      res.map((r) => r.ingestedBytes / MiB / (r.ms / 1000)),
      'MiB/s',
    );
    details.memory = res.map(({ samples, backpressureWaits, flushes, drainMs, slowestPutMs, timedOut, compaction }) => ({
      samples,
      timedOut,
      backpressureWaits,
      flushes,
      drainMs,
      slowestPutMs,
      compaction,
    }));
  },

  /** Cases 8-10: 3 overwrite rounds of `readRows` keys, point reads, scans, space. */
  async reads(call) {
    for (const engine of READ_ENGINES.filter(wanted)) {
      await guarded(`reads/${engine}`, () => readsOf(call, engine, SIZE.readRows, 3, 'reads', true));
    }
  },

  /** Issue 14's 4M-row point-read target: memwal only, 4M keys written once; no scans, no space. */
  async reads4m(call) {
    await guarded('reads4m/memwal', () => readsOf(call, 'memwal', SIZE.bigReadRows, 1, 'reads4m', false));
  },

  /**
   * Case 11: the main thread's cost of a 1,000-row put through the client, profiled (V8's
   * sampling profiler on the page, 100 µs), then its pieces timed one by one.
   */
  async mainthread(call, _cdp, { context, page }) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
    await call(([r]) => globalThis.bench.mainThreadOpen(r), 100_000);
    let rows;
    let profile;
    try {
      await call(([r]) => globalThis.bench.mainThreadRows(r), 10_000); // warm-up
      await cdp.send('Profiler.start');
      // 100k rows even in a quick run: the profile needs its samples.
      rows = await call(([r]) => globalThis.bench.mainThreadRows(r), 100_000);
      ({ profile } = await cdp.send('Profiler.stop'));
    } finally {
      await call(() => globalThis.bench.mainThreadClose());
      await cdp.detach();
    }
    writeFileSync(join(resultsDir, 'profile-mainthread-page.cpuprofile.json'), JSON.stringify(profile));
    const shares = mainThreadShares(profile);
    const pieces = await call(([r]) => globalThis.bench.mainThreadPieces(r), SIZE.smallRows);
    const busyMs = Object.entries(shares)
      .filter(([k]) => k !== 'idle')
      .reduce((a, [, ms]) => a + ms, 0);
    details.mainthread = {
      puts: rows.puts,
      wallMs: rows.ms,
      putCallSyncMs: rows.syncMs,
      busyMsPerPut: busyMs / rows.puts,
      profileMsPerPut: Object.fromEntries(Object.entries(shares).map(([k, ms]) => [k, ms / rows.puts])),
      pieces,
    };
    record('mainthread_ms_per_put', 'busy_total', [busyMs / rows.puts], 'ms');
    record('mainthread_ms_per_put', 'put_call_sync_p50', [rows.syncMs.p50], 'ms');
    for (const [k, v] of Object.entries(pieces)) record('mainthread_ms_per_put', `${k}_p50`, [v.p50], 'ms');
    log(`main thread: ${(busyMs / rows.puts).toFixed(3)} ms busy per 1,000-row put; ${JSON.stringify(details.mainthread.profileMsPerPut)}`);
  },

  /**
   * Case 6b, the flush stall (docs/impl.md, "The OPFS stall"): the memory case's load (1 GiB, 8 writers, 64 MiB
   * budget) with no CDP attached to the worker (no heap probes, no forced GC), `stallReps` times.
   */
  async memorystall(call) {
    const res = [];
    for (let i = 0; i < SIZE.stallReps; i++) {
      const r = await guarded('memorystall', async () => {
        await call(() => globalThis.bench.api.memoryOpen({ keyed: false }));
        let ingesting = true;
        const watch = (async () => {
          for (let n = 1; ingesting; n++) {
            await new Promise((resolve) => setTimeout(resolve, 1000));
            if (ingesting && n % 30 === 0)
              log(`memorystall rep ${i + 1}: still running`, JSON.stringify(await call(() => globalThis.bench.api.memoryProbe())));
          }
        })();
        let r;
        try {
          r = await call(([m, l]) => globalThis.bench.api.memoryIngest(m, 8, l), SIZE.memoryMiB, SIZE.memoryLimitMs);
        } finally {
          ingesting = false;
          await watch;
          const closed = await call(([a]) => globalThis.bench.api.memoryClose(a), r?.timedOut ?? true);
          if (r) Object.assign(r, closed);
        }
        return r;
      });
      if (!r) break;
      res.push(r);
      log(
        `memorystall rep ${i + 1}: ${(r.ingestedBytes / MiB / (r.ms / 1000)).toFixed(1)} MiB/s${r.timedOut ? ' (TIMED OUT)' : ''}, slowest put ${r.slowestPutMs.toFixed(0)} ms, drain ${(r.drainMs / 1000).toFixed(1)} s, flush failures ${r.flushFailures}, compaction ${JSON.stringify(r.compaction)}`,
      );
    }
    if (!res.length) return;
    const rates = res.map((r) => r.ingestedBytes / MiB / (r.ms / 1000));
    record('memorystall_ingest_mibps', 'memwal_8w', rates, 'MiB/s');
    record('memorystall_timed_out_reps', 'memwal_8w', [res.filter((r) => r.timedOut).length], 'reps');
    record(
      'memorystall_slowest_put_ms',
      'memwal_8w',
      res.map((r) => r.slowestPutMs),
      'ms',
    );
    details.memorystall = res.map(
      ({ ms, timedOut, slowestPutMs, drainMs, flushes, flushFailures, backpressureWaits, closeMs, destroyMs, compaction }) => ({
        ms,
        timedOut,
        slowestPutMs,
        drainMs,
        flushes,
        flushFailures,
        backpressureWaits,
        closeMs,
        destroyMs,
        compaction,
      }),
    );
  },

  /** Case 7: crash with 64 MiB of unflushed WAL, then time the reopen (append-only and keyed). */
  async recovery(call) {
    for (const [suffix, keyed] of [
      ['', false],
      ['_pk', true],
    ]) {
      const res = await repeat(`recovery${suffix}`, REPS, () =>
        call(([m, k]) => globalThis.bench.api.recovery(m, { keyed: k }), SIZE.walMiB, keyed),
      );
      const c = `recovery${suffix}`;
      record(
        c,
        'open_ms',
        res.map((r) => r.openMs),
        'ms',
      );
      record(
        c,
        'replay_ms',
        res.map((r) => r.replayTimeMs),
        'ms',
      );
      record(
        c,
        'replay_mibps',
        res.map((r) => r.walBytes / MiB / (r.openMs / 1000)),
        'MiB/s',
      );
      record(
        c,
        'wal_mib',
        res.map((r) => r.walBytes / MiB),
        'MiB',
      );
      details[c] = res.map(({ replayedRows, unflushedBeforeCrash }) => ({ replayedRows, unflushedBeforeCrash }));
    }
  },
};

/** The engines of the read case (Dexie reads the database idb wrote; see bench/reads.ts). */
const READ_ENGINES = ['memwal', 'sqlite_sahpool_wal', 'pglite_opfs_ahp', 'idb'];

/**
 * The read case of one engine: write `rounds` overwrite rounds of `n` keys, then point reads
 * (cold, warm, absent); with `full`, also two full scans, and for memwal the space before and
 * after compact() and reads once more after it. Figures go to cases `<prefix>_*`.
 */
async function readsOf(call, engine, n, rounds, prefix, full) {
  const api = (fn, ...args) => call(([f, a]) => globalThis.bench.api[f](...a), fn, args);
  const R = SIZE.readPasses;
  const d = (details[prefix] ??= {});
  await api('readsOpen', engine, n);
  try {
    const writes = [];
    for (let round = 0; round < rounds; round++) {
      // Slices of 250k rows: the worker holds one slice of row objects at a time.
      let ms = 0;
      for (let from = 0; from < n; from += 250_000) ms += (await api('readsWrite', round, from, Math.min(n, from + 250_000))).ms;
      writes.push(ms);
      log(`${prefix}/${engine}: round ${round + 1} written in ${(ms / 1000).toFixed(1)} s`);
    }
    const writeMs = writes.reduce((a, b) => a + b, 0);
    record(`${prefix}_write_rows_per_s`, engine, [(n * rounds) / (writeMs / 1000)], 'rows/s');
    d[engine] = { writeSeconds: writes.map((ms) => +(ms / 1000).toFixed(2)) };
    if (engine === 'memwal') {
      d[engine].whileWriting = await api('readsWriteStats');
      d[engine].settle = await api('readsSettle');
      record(`${prefix}_settle_s`, 'memwal', [d[engine].settle.settleMs / 1000], 's');
      log(`${prefix}/${engine}: settled ${JSON.stringify(d[engine].settle)}`);
      if (full) {
        d[engine].settled = await api('readsSpace', false);
        recordSpace(prefix, 'settled', d[engine].settled);
      }
    }
    const passes = async (who) => {
      const cold = await api('readsPass', R.cold, 11, true, true, R.maxMs);
      await api('readsPass', R.warmup, 12, true, false, R.maxMs);
      const warm = await api('readsPass', R.warm, 13, true, false, R.maxMs);
      const absent = await api('readsPass', R.warm, 14, false, false, R.maxMs);
      for (const [kind, p] of [
        ['cold', cold],
        ['warm', warm],
        ['absent', absent],
      ]) {
        record(`${prefix}_${kind}_gets_per_s`, who, [p.gets / (p.ms / 1000)], 'gets/s');
        record(`${prefix}_${kind}_p50_ms`, who, [p.p50], 'ms');
        record(`${prefix}_${kind}_p99_ms`, who, [p.p99], 'ms');
      }
      if (full) {
        const scans = [await api('readsScan'), await api('readsScan')];
        record(
          `${prefix}_scan_rows_per_s`,
          who,
          scans.map((s) => s.rows / (s.ms / 1000)),
          'rows/s',
        );
      }
      Object.assign((d[who] ??= {}), { openMs: cold.openMs, cold, warm, absent });
      log(
        `${prefix}/${who}: cold ${fmtNum(cold.gets / (cold.ms / 1000))}/s, warm ${fmtNum(warm.gets / (warm.ms / 1000))}/s p99 ${warm.p99.toFixed(3)} ms, absent ${fmtNum(absent.gets / (absent.ms / 1000))}/s`,
      );
    };
    await passes(engine);
    if (engine === 'memwal' && full) {
      d.memwal.compacted = await api('readsSpace', true);
      recordSpace(prefix, 'compacted', d.memwal.compacted);
      await api('readsPass', R.warmup, 16, true, false, R.maxMs);
      const warm = await api('readsPass', R.warm, 15, true, false, R.maxMs);
      record(`${prefix}_after_compact_warm_gets_per_s`, 'memwal', [warm.gets / (warm.ms / 1000)], 'gets/s');
      record(`${prefix}_after_compact_warm_p99_ms`, 'memwal', [warm.p99], 'ms');
      d.memwal.afterCompact = warm;
      log(`${prefix}/memwal: compacted ${JSON.stringify(d.memwal.compacted)}`);
    }
    if (engine === 'idb' && wanted('dexie')) {
      await api('readsSwitchToDexie');
      await passes('dexie');
    }
  } finally {
    await api('readsClose');
  }
}

/**
 * Space of a memwal store: live table bytes ÷ logical bytes (the space
 * amplification), everything in OPFS (tables + WAL) ÷ logical bytes, and write amplification
 * (table bytes written by flushes and compactions ÷ the Arrow IPC bytes of every row put).
 */
function recordSpace(prefix, when, f) {
  const c = `${prefix}_space`;
  record(c, `${when}_table_amp`, [f.tableBytes / f.logicalBytes], 'x');
  record(c, `${when}_disk_amp`, [(f.opfs.tableBytes + f.opfs.walBytes) / f.logicalBytes], 'x');
  record(c, `${when}_write_amp`, [f.tableBytesWritten / f.userBytes], 'x');
  record(c, `${when}_table_files`, [f.tableCount], 'files');
}

const label = (n) => (n >= 1e6 ? `${n / 1e6}m` : `${n / 1e3}k`);

/** Cases 3 and 4 on `rows` rows: memwal in the worker and through the client, then each peer. */
async function rowsCase(call, rows, name, repsOf) {
  const runner = (engine) => (n) =>
    engine === 'memwal' || engine === 'memwal_inline'
      ? call(([r, i]) => globalThis.bench.api.memwalRows(r, i), n, engine === 'memwal_inline')
      : engine === 'memwal_baseline'
        ? call(([r]) => globalThis.bench.baseline.memwalRows(r), n)
        : engine === 'memwal_client'
          ? call(([r]) => globalThis.bench.clientRows(r), n)
          : call(([q, r]) => globalThis.bench.api.peerRows(q, r), engine, n);
  const engines = [
    'memwal',
    ...(rows === SIZE.smallRows ? ['memwal_inline', ...(baselineCommit ? ['memwal_baseline'] : [])] : []),
    'memwal_client',
    ...PEERS,
  ]
    .filter((e) => wanted(e) && (repsOf[e] ?? REPS) > 0)
    .map((e) => [e, () => runner(e)(rows)]);
  // Warm-up with a small set (JIT, wasm compile, PGlite start-up), then interleave engines per rep.
  const warm = Math.min(rows, 10_000);
  for (const [e] of engines) await guarded(`${name}/${e}`, () => runner(e)(warm));
  const samples = Object.fromEntries(engines.map(([e]) => [e, []]));
  const drained = { memwal: [], memwal_inline: [], memwal_baseline: [], memwal_client: [] };
  for (let i = 0; i < REPS; i++) {
    for (const [engine, run] of engines) {
      if (i >= (repsOf[engine] ?? REPS)) continue;
      if (failed.has(`${name}/${engine}`)) continue;
      const r = await guarded(`${name}/${engine}`, run);
      if (r === undefined) continue;
      if (typeof r === 'number') samples[engine].push(r);
      else {
        samples[engine].push(r.rows / (r.ackMs / 1000));
        drained[engine].push(r.rows / (r.drainedMs / 1000));
      }
    }
    log(`${name} rep ${i + 1}/${REPS}: ${engines.map(([e]) => `${e} ${fmtNum(samples[e].at(-1))}`).join(', ')}`);
  }
  for (const [e, s] of Object.entries(samples)) if (s.length) record(name, e, s, 'rows/s');
  for (const [e, s] of Object.entries(drained)) if (s.length) record(`${name}_drained`, e, s, 'rows/s');
}

/** Engines that failed (`case/engine`): reported in latest.json and skipped for the rest of the run. */
const failed = new Map();

/** `run()`, or undefined after logging and remembering its failure under `key`. */
async function guarded(key, run) {
  if (failed.has(key)) return undefined;
  try {
    return await run();
  } catch (e) {
    const msg = String(e?.message ?? e).split('\n')[0];
    failed.set(key, msg);
    log(`FAILED ${key}: ${msg}`);
    return undefined;
  }
}

function computeRatios() {
  const r = {};
  const get = (c, e) => cases[c]?.[e]?.median;
  const small = `rows_${label(SIZE.smallRows)}`;
  const big = `rows_${label(SIZE.bigRows)}`;
  for (const p of PEERS) {
    if (get(small, 'memwal') && get(small, p)) r[`rows_vs_${p}`] = get(small, 'memwal') / get(small, p);
    if (get(big, 'memwal') && get(big, p)) r[`rows_${label(SIZE.bigRows)}_vs_${p}`] = get(big, 'memwal') / get(big, p);
  }
  const ranked = PEERS.filter((p) => get(small, p)).sort((a, b) => get(small, b) - get(small, a));
  if (get(small, 'memwal') && ranked.length) {
    r.rows_vs_fastest_peer = get(small, 'memwal') / get(small, ranked[0]);
    details.fastest_peer = ranked[0];
  }
  // Issue 14: reads (warm, present keys), cold reads, absent keys, full scans, and the writes of
  // the read case, memwal ÷ each peer.
  for (const p of [...READ_ENGINES.slice(1), 'dexie']) {
    for (const [ratio, c] of [
      ['reads', 'reads_warm_gets_per_s'],
      ['reads_cold', 'reads_cold_gets_per_s'],
      ['reads_absent', 'reads_absent_gets_per_s'],
      ['scan', 'reads_scan_rows_per_s'],
      ['reads_write', 'reads_write_rows_per_s'],
    ]) {
      if (get(c, 'memwal') && get(c, p)) r[`${ratio}_vs_${p}`] = get(c, 'memwal') / get(c, p);
    }
  }
  const raw = get('ingest_mibps', 'raw_opfs');
  if (raw) {
    if (get('ingest_mibps', 'memwal_1w')) r.bytes_vs_raw_opfs = get('ingest_mibps', 'memwal_1w') / raw;
    for (const e of ['memwal_8w', 'memwal_pk_1w', 'memwal_pk_8w', 'memwal_client_8w']) {
      if (get('ingest_mibps', e)) r[`bytes_${e.replace('memwal_', '')}_vs_raw_opfs`] = get('ingest_mibps', e) / raw;
    }
  }
  // This checkout (with compaction) ÷ the baseline, same run: the target allows at most −10 %;
  // `inline_`: without the I/O worker, closer to the baseline's threading.
  for (const e of ['memwal_1w', 'memwal_pk_1w']) {
    const base = get('ingest_mibps', `baseline_${e}`);
    if (!base) continue;
    if (get('ingest_mibps', e)) r[`ingest_${e.replace('memwal_', '')}_vs_baseline`] = get('ingest_mibps', e) / base;
    if (get('ingest_mibps', `inline_${e}`))
      r[`ingest_${e.replace('memwal_', '')}_inline_vs_baseline`] = get('ingest_mibps', `inline_${e}`) / base;
  }
  if (get(small, 'memwal_baseline')) {
    if (get(small, 'memwal')) r.rows_vs_baseline = get(small, 'memwal') / get(small, 'memwal_baseline');
    if (get(small, 'memwal_inline')) r.rows_inline_vs_baseline = get(small, 'memwal_inline') / get(small, 'memwal_baseline');
  }
  const stall = cases.memorystall_ingest_mibps?.memwal_8w;
  if (stall) r.memorystall_slowest_vs_fastest = stall.min / stall.max;
  // Reps that hit their time limit (a stall), out of those run.
  const stalled = cases.memorystall_timed_out_reps?.memwal_8w;
  if (stalled && stall) r.memorystall_timed_out_reps = stalled.median;
  const mem = cases.memory_ingest_mibps?.memwal_8w;
  if (mem && mem.reps > 1) r.memory_slowest_vs_fastest = mem.min / mem.max;
  return r;
}

function fmtNum(x) {
  if (x === undefined || Number.isNaN(x)) return '-';
  if (Math.abs(x) >= 100_000) return `${(x / 1000).toFixed(0)}k`;
  if (Math.abs(x) >= 10_000) return `${(x / 1000).toFixed(1)}k`;
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

function printTable() {
  console.log('\n| case | engine | median | min | max | unit | reps |\n|---|---|---:|---:|---:|---|---:|');
  for (const [c, engines] of Object.entries(cases)) {
    for (const [e, s] of Object.entries(engines)) {
      console.log(`| ${c} | ${e} | ${fmtNum(s.median)} | ${fmtNum(s.min)} | ${fmtNum(s.max)} | ${s.unit} | ${s.reps} |`);
    }
  }
}

function printRatios(ratios) {
  console.log('\n| ratio | value |\n|---|---:|');
  for (const [k, v] of Object.entries(ratios)) console.log(`| ${k} | ${v.toFixed(2)} |`);
  console.log('');
}

await main();
