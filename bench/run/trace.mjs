// What the browser shows of its threads, read over CDP: V8 CPU profiles summarized (per function,
// per hot line, per script origin) and Chrome traces cut into each thread's tasks. Nothing inside
// the product is changed or instrumented. Node.

import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { BENCH_DIR } from './args.mjs';
import { log, percentile } from './results.mjs';

/** Self and total time per function of a V8 CPU profile, heaviest first. */
export function summarizeProfile(profile, top = 30) {
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
        readFileSync(join(BENCH_DIR, 'dist', 'assets', file), 'utf8')
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
export function mainThreadShares(profile) {
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
export async function traced(context, page, work) {
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
export function taskFigures(events, hostScript) {
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
