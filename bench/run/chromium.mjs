// The browser side of the run: build the bench page, serve it with `vite preview`, start headless
// Chromium on a fresh persistent profile, and hand the cases a session (call into the page,
// reload it, reach its workers over CDP, profile a case). Node.

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { build, preview } from 'vite';
import { CHROMIUM_ARGS, CONFIG_FILE, PROFILE, RESULTS_DIR } from './args.mjs';
import { log } from './results.mjs';
import { summarizeProfile } from './trace.mjs';

// ------------------------------------------------------------------------------------------------
// the bench worker over CDP (heap and CPU profiles): Playwright has no CDP session for workers,
// so attach to it through the page's session (non-flat protocol messages).

export class WorkerCdp {
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

// ------------------------------------------------------------------------------------------------
// the session

/**
 * Builds and serves the bench page and opens it in Chromium. Resolves the session the cases run
 * in: `call(fn, ...args)` evaluates `fn(args)` in the page; `reload()` reloads it (every worker
 * it started ends, without any goodbye, as in a user's reload) and waits for it to be ready;
 * `benchWorkerCdp()` is the bench worker's CDP session (attached again after a reload).
 */
export async function openSession() {
  await build({ configFile: CONFIG_FILE, logLevel: 'error' });
  const server = await preview({
    configFile: CONFIG_FILE,
    logLevel: 'error',
    preview: { host: '127.0.0.1', port: Number(process.env.BENCH_PORT ?? 5780), strictPort: false },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a URL');
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath} (set CHROMIUM_PATH)`);
  const profileDir = mkdtempSync(join(tmpdir(), 'memwal-bench-profile-'));
  const context = await chromium.launchPersistentContext(profileDir, { executablePath, headless: true, args: CHROMIUM_ARGS });
  const close = async () => {
    await context.close().catch(() => undefined);
    await server.close().catch(() => undefined);
    rmSync(profileDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void close().then(() => process.exit(130)));
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => log('page error:', e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') log(`console.${m.type()}:`, m.text());
    });
    const ready = async () => {
      await page.waitForFunction(() => globalThis.bench !== undefined);
      await page.evaluate(() => globalThis.bench.api.ping());
    };
    await page.goto(url);
    await ready();
    const userAgent = await page.evaluate(() => navigator.userAgent);
    const crossOriginIsolated = await page.evaluate(() => globalThis.crossOriginIsolated);
    const version = context.browser()?.version() ?? userAgent.match(/Chrome\/([\d.]+)/)?.[1] ?? 'unknown';
    let benchCdp;
    return {
      context,
      page,
      url,
      info: { userAgent, crossOriginIsolated, chromium: version },
      call: (fn, ...args) => page.evaluate(fn, args),
      async reload() {
        benchCdp = undefined;
        await page.reload();
        await ready();
      },
      async benchWorkerCdp() {
        benchCdp ??= await WorkerCdp.attach(context, page, 'bench.worker');
        return benchCdp;
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Runs `work()`, under a CPU profile when `--profile` names case `name`: the bench worker (for
 * "stats": the client's host worker and the page too) and memwal's I/O workers as they appear,
 * each written to bench/results/profile-<case>-<thread>.cpuprofile.json and summarized in the log.
 */
export async function profiled(session, name, work) {
  if (PROFILE !== name) return work();
  const { context, page } = session;
  // The client cases run memwal in the host worker; profile that one for them, and the page
  // (it encodes the puts and times the calls). rows100k runs both ways: every thread.
  const client = name === 'stats' || name === 'rows100k';
  if (client) await session.call(() => globalThis.bench.startHosts());
  const targets = [
    ...(name === 'stats' ? [] : [['bench-worker', await session.benchWorkerCdp()]]),
    ...(client
      ? [
          ['host-worker', await WorkerCdp.attach(context, page, 'host.worker')],
          ['page', await context.newCDPSession(page)],
        ]
      : []),
  ];
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
        // By name: the default worker starts its I/O worker from its own script (io-worker/browser.ts).
        if (!w.title.startsWith('memwal-io-') || seen.has(w.targetId)) continue;
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
      const file = join(RESULTS_DIR, `profile-${name}-${who}.cpuprofile.json`);
      writeFileSync(file, JSON.stringify(profile));
      log(`CPU profile of the ${who} written to ${file}\n${summarizeProfile(profile)}`);
    }
  }
}
