// The examples as a user runs them: memwal packed with `npm pack`, the examples copied out of the
// repository with that tarball installed by npm, type-checked with their own tsconfig.json, then
// run — the Node server in Node, the Worker bundled with esbuild and run in workerd — against
// one HTTP contract (api.ts, the same file in both). Also: acknowledged puts survive a SIGKILL,
// each Durable Object labels its metrics with its own store, and the Durable Object's peak
// memory under a write load, measured inside workerd through its inspector.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installExamples, packMemwal, typecheckExample } from './examples/pack.js';
import { buildWorker, startWorkerd } from './workerd/harness.js';
import { type HeapSample, allocatedBytes, peakRssBytes, sampleIsolateMemory } from './workerd/heap.js';
import type { BuiltWorker, Workerd } from './workerd/harness.js';

const repoFile = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));
/** tsx's loader, for `node --import` in the example copies (which do not install dev dependencies). */
const TSX = import.meta.resolve('tsx');
const MiB = 1024 * 1024;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

let examples: Record<string, string>;
beforeAll(async () => {
  const work = await tempDir('memwal-examples-');
  examples = await installExamples(['node', 'cloudflare'], await packMemwal(work), work);
}, 300_000);

it('api.ts, the HTTP API, is the same file in both examples', async () => {
  expect(await readFile(repoFile('examples/cloudflare/api.ts'), 'utf8')).toBe(await readFile(repoFile('examples/node/api.ts'), 'utf8'));
});

it('each example type-checks with its own tsconfig.json against the packed memwal', async () => {
  await Promise.all([typecheckExample(examples.node!), typecheckExample(examples.cloudflare!)]);
}, 120_000);

// ------------------------------------------------------------------ the HTTP contract, both servers

interface Page {
  rows: { id: string; value: number | null; note: string | null }[];
  cursor: string | null;
}

/**
 * The Cloudflare example's credentials (its workerd gets them as MEMWAL_STORE_TOKENS and
 * MEMWAL_ADMIN_TOKEN): `/stats` and `/metrics` take the admin token, every other route the store
 * token. The Node example takes no credential and ignores the header.
 */
const CLOUDFLARE_ENV = { MEMWAL_STORE_TOKENS: JSON.stringify({ 'store-secret': '*' }), MEMWAL_ADMIN_TOKEN: 'admin-secret' };
/** `fetch` with the credential the route needs (see CLOUDFLARE_ENV). */
function fetch(url: string, init: RequestInit = {}): Promise<Response> {
  const { pathname } = new URL(url);
  const token = pathname === '/stats' || pathname === '/metrics' ? 'admin-secret' : 'store-secret';
  return globalThis.fetch(url, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } });
}

const post = (url: string, body: BodyInit, init: RequestInit = {}): Promise<Response> => fetch(url, { method: 'POST', body, ...init });

async function expectError(res: Response, status: number, code: string): Promise<void> {
  expect(res.status).toBe(status);
  expect(await res.json()).toMatchObject({ code });
}

/** Every page of `/scan` with `limit` rows, following the cursor. */
async function allPages(route: (path: string) => string, limit: number): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null | undefined;
  while (cursor !== null) {
    const res = await fetch(route(`/scan?limit=${limit}${cursor === undefined ? '' : `&cursor=${cursor}`}`));
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    pages.push(page);
    cursor = page.cursor;
  }
  return pages;
}

/** The same requests against both examples, with the same answers. */
function httpContract(route: (path: string) => string): void {
  it('puts a row or an array of rows; Int64 ids beyond 2^53 go in and come back exact, as strings', async () => {
    expect(await (await post(route('/put'), JSON.stringify({ id: 1, value: 0.5, note: 'one' }))).json()).toMatchObject({
      rows: 1,
      durable: true,
    });
    const big = ['9007199254740993', '-9223372036854775808', '9223372036854775807'];
    const res = await post(route('/put'), JSON.stringify(big.map((id) => ({ id, note: `big ${id}` }))));
    expect(await res.json()).toMatchObject({ rows: 3, durable: true });
    const page = (await (await fetch(route('/scan?limit=10000'))).json()) as Page;
    for (const id of ['1', ...big]) expect(page.rows.find((r) => r.id === id)).toBeDefined();
    expect(page.rows.find((r) => r.id === big[0])?.note).toBe(`big ${big[0]}`);
  });

  it('answers client mistakes 400 InvalidArgument, never a 5xx', async () => {
    await expectError(await post(route('/put'), '{"id": 1,'), 400, 'InvalidArgument');
    await expectError(await post(route('/put'), '[]'), 400, 'InvalidArgument');
    await expectError(await post(route('/put'), '[1, 2]'), 400, 'InvalidArgument');
    await expectError(await post(route('/put'), JSON.stringify([{ id: 2, nope: 1 }])), 400, 'InvalidArgument');
    await expectError(await post(route('/put'), JSON.stringify([{ id: 'x' }])), 400, 'InvalidArgument');
    await expectError(await post(route('/put'), JSON.stringify([{ id: '9223372036854775808' }])), 400, 'InvalidArgument');
    // 2^53 + 1 as a JSON number is rounded by the parser: refused rather than stored wrong.
    await expectError(await post(route('/put'), '[{"id": 9007199254740993}]'), 400, 'InvalidArgument');
    await expectError(await post(route('/put'), JSON.stringify([{ id: 3, value: 'not a number' }])), 400, 'InvalidArgument');
    for (const query of ['limit=0', 'limit=10001', 'limit=ten', 'cursor=1.5', 'cursor=', 'cursor=9223372036854775808']) {
      await expectError(await fetch(route(`/scan?${query}`)), 400, 'InvalidArgument');
    }
  });

  it('checks methods (405 with Allow) and routes (404)', async () => {
    const stats = await post(route('/stats'), '');
    await expectError(stats, 405, 'MethodNotAllowed');
    expect(stats.headers.get('allow')).toBe('GET');
    const put = await fetch(route('/put'));
    await expectError(put, 405, 'MethodNotAllowed');
    expect(put.headers.get('allow')).toBe('POST');
    await expectError(await fetch(route('/nope')), 404, 'NotFound');
  });

  it('refuses a body over 1 MiB with 413, whether its length is declared or not', async () => {
    const big = JSON.stringify([{ id: 4, note: 'x'.repeat(MiB) }]);
    await expectError(await post(route('/put'), big), 413, 'InvalidArgument');
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 40; i++) controller.enqueue(new Uint8Array(64 * 1024).fill(32));
        controller.close();
      },
    });
    await expectError(await post(route('/put'), chunked, { duplex: 'half' } as RequestInit), 413, 'InvalidArgument');
    const page = (await (await fetch(route('/scan?limit=10000'))).json()) as Page;
    expect(page.rows.find((r) => r.id === '4')).toBeUndefined();
  });

  it('pages /scan with a cursor (the last id of a page): every row once, in pages of at most limit, the last with cursor null', async () => {
    await post(route('/put'), JSON.stringify(Array.from({ length: 25 }, (_, i) => ({ id: 1000 + i, value: i }))));
    const whole = (await (await fetch(route('/scan?limit=10000'))).json()) as Page;
    expect(whole.cursor).toBeNull();
    const pages = await allPages(route, 7);
    expect(pages.slice(0, -1).every((p) => p.rows.length === 7 && p.cursor === p.rows.at(-1)!.id)).toBe(true);
    expect(pages.at(-1)!.rows.length).toBeLessThanOrEqual(7);
    expect(pages.flatMap((p) => p.rows)).toEqual(whole.rows);
  });

  it('serves /stats as JSON and /metrics as Prometheus text', async () => {
    type Stats = { memtable: { rowCount: number }; storage: { usageBytes?: number } };
    // Usage figures come once the storage's first estimate lands (a stats call waits at most 200 ms
    // for it; a busy machine takes longer): ask again until they are there.
    let stats = (await (await fetch(route('/stats'))).json()) as Stats;
    for (let i = 0; i < 50 && stats.storage.usageBytes === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      stats = (await (await fetch(route('/stats'))).json()) as Stats;
    }
    expect(stats.memtable.rowCount).toBeGreaterThan(0);
    expect(stats.storage.usageBytes).toBeGreaterThan(0);
    const metrics = await fetch(route('/metrics'));
    expect(metrics.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(await metrics.text()).toContain('# TYPE wal_unflushed_bytes gauge');
  });
}

// ------------------------------------------------------------------ Node

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts the installed Node example on `dataDir`; resolves once it listens. */
async function startNodeExample(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', TSX, 'server.ts', dataDir, String(port)], {
    cwd: examples.node,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(async () => child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => line.includes('memwal example on') && resolve());
    child.on('exit', (code) => reject(new Error(`the Node example exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

describe('the Node example', () => {
  let url: string;
  beforeAll(async () => {
    url = (await startNodeExample(await tempDir('memwal-node-example-'))).url;
  }, 60_000);

  httpContract((path) => `${url}${path}`);

  it('keeps acknowledged rows across a SIGKILL and restart', async () => {
    const dataDir = await tempDir('memwal-node-kill-');
    const first = await startNodeExample(dataDir);
    for (let i = 0; i < 5; i++) {
      const r = await post(`${first.url}/put`, JSON.stringify([{ id: i, value: i / 2, note: `n${i}` }]));
      expect(r.status).toBe(200);
    }
    expect(await (await fetch(`${first.url}/metrics`)).text()).toContain('wal_unflushed_bytes{store="events"}');
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    const second = await startNodeExample(dataDir);
    const page = (await (await fetch(`${second.url}/scan`)).json()) as Page;
    expect(page.rows.map((r) => r.id).sort()).toEqual(['0', '1', '2', '3', '4']);
  }, 60_000);
});

// ------------------------------------------------------------------ Cloudflare (workerd)

describe('the Cloudflare example in workerd', () => {
  let worker: BuiltWorker;
  let disk: string;
  const started: Workerd[] = [];
  const start = async (inspector = false): Promise<Workerd> => {
    const w = await startWorkerd(worker, disk, { inspector, env: CLOUDFLARE_ENV });
    started.push(w);
    return w;
  };
  beforeAll(async () => {
    // Bundled from the copy, so `memwal` resolves to the installed tarball, as in an app.
    worker = await buildWorker(join(examples.cloudflare!, 'worker.ts'), repoFile('examples/cloudflare/config.capnp'), 'dist/worker.js');
    cleanups.push(() => rm(worker.dir, { recursive: true, force: true }));
    disk = await tempDir('memwal-do-disk-');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(started.map((w) => w.kill()));
  });

  describe('HTTP contract', () => {
    let w: Workerd;
    beforeAll(async () => {
      w = await start();
    });
    httpContract((path) => `${w.url}${path}${path.includes('?') ? '&' : '?'}store=contract`);
  });

  it('labels each Durable Object metrics with its own store, and refuses a bad store name', async () => {
    const w = await start();
    for (const store of ['alpha', 'beta.2']) {
      expect((await post(`${w.url}/put?store=${store}`, JSON.stringify({ id: 1 }))).status).toBe(200);
      const text = await (await fetch(`${w.url}/metrics?store=${store}`)).text();
      for (const family of ['wal_unflushed_bytes', 'wal_backpressure_waits_total', 'wal_storage_usage_bytes']) {
        expect(text).toMatch(new RegExp(`^${family}\\{store="${store.replace('.', '\\.')}"\\} \\d`, 'm'));
      }
      expect(text).not.toContain('store="events"');
    }
    await expectError(await fetch(`${w.url}/stats?store=a/b`), 400, 'InvalidArgument');
    await w.kill();
  });

  it('keeps every acknowledged put across a SIGKILL in the middle of a write load', async () => {
    const ROWS_PER_PUT = 8;
    const note = 'n'.repeat(8 * 1024); // 64 KiB per put: 4 MiB memtables freeze and flush under load
    const rowsOf = (put: number) => Array.from({ length: ROWS_PER_PUT }, (_, i) => ({ id: put * ROWS_PER_PUT + i, value: put, note }));
    const route = (base: string, path: string) => `${base}${path}${path.includes('?') ? '&' : '?'}store=kill`;

    const first = await start();
    const acknowledged: number[] = [];
    let nextPut = 0;
    let killed = false;
    let writerError: unknown;
    const writer = async (): Promise<void> => {
      while (!killed && writerError === undefined) {
        const put = nextPut++;
        try {
          const res = await post(route(first.url, '/put'), JSON.stringify(rowsOf(put)));
          const body = (await res.json()) as { rows?: number; durable?: boolean };
          if (res.status === 200 && body.durable === true && body.rows === ROWS_PER_PUT) acknowledged.push(put);
          else if (!killed) throw new Error(`put ${put}: ${res.status} ${JSON.stringify(body)}`);
        } catch (e) {
          if (!killed) writerError ??= e; // after the kill a failed request is expected: its outcome is unknown
        }
      }
    };
    const writing = Promise.all(Array.from({ length: 4 }, writer));

    // Kill once a flush has committed (table files exist) and the load is still running.
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (writerError !== undefined) throw writerError;
      const stats = (await (await fetch(route(first.url, '/stats'))).json()) as { write: { flushCount: number } };
      if (stats.write.flushCount >= 1 && acknowledged.length >= 100) break;
      if (Date.now() > deadline) throw new Error(`no flush within 20 s (${acknowledged.length} puts acknowledged)\n${first.log()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    killed = true;
    await first.kill();
    await writing;
    const attempted = nextPut;

    const second = await start();
    const rows = (await allPages((path) => route(second.url, path), 10_000)).flatMap((p) => p.rows);
    const byPut = new Map<number, number>();
    for (const row of rows) {
      const put = Math.floor(Number(row.id) / ROWS_PER_PUT);
      expect(row.value).toBe(put);
      expect(row.note).toBe(note);
      byPut.set(put, (byPut.get(put) ?? 0) + 1);
    }
    const lost = acknowledged.filter((put) => byPut.get(put) !== ROWS_PER_PUT);
    expect(lost, `acknowledged puts missing after the restart (of ${acknowledged.length})`).toEqual([]);
    // A put is all or nothing, acknowledged or not.
    expect([...byPut].filter(([, n]) => n !== ROWS_PER_PUT)).toEqual([]);
    expect(Math.max(...byPut.keys())).toBeLessThan(attempted);

    const stats = (await (await fetch(route(second.url, '/stats'))).json()) as { storage: { tableFileCount: number } };
    expect(stats.storage.tableFileCount).toBeGreaterThanOrEqual(1);
    // The restarted writer takes new puts.
    expect(await (await post(route(second.url, '/put'), JSON.stringify([{ id: -1, value: 1 }]))).json()).toMatchObject({
      rows: 1,
      durable: true,
    });
    await second.kill();
  }, 60_000);

  /** How long the write load runs; MEMWAL_MEMORY_LOAD_MS=60000 for a bigger store (not in CI). */
  const LOAD_MS = Number(process.env.MEMWAL_MEMORY_LOAD_MS ?? 8_000);
  it(
    'peak memory of the Durable Object under 20 clients × 100-row puts, then the deepest /scan page, stays under 128 MB',
    async () => {
      const CLIENTS = 20;
      const ROWS_PER_PUT = 100;
      const w = await start(true);
      const route = (path: string) => `${w.url}${path}${path.includes('?') ? '&' : '?'}store=memory`;
      expect((await fetch(route('/stats'))).status).toBe(200); // the object is up: its isolate exists

      // The sampler reads Runtime.getHeapUsage of workerd's isolate every 25 ms.
      const sampler = await sampleIsolateMemory(w.inspectorUrl!);
      cleanups.push(async () => sampler.stop());
      const { samples } = sampler;

      let nextId = 0;
      let rowsAcked = 0;
      const until = Date.now() + LOAD_MS;
      const client = async (): Promise<void> => {
        while (Date.now() < until) {
          const rows = Array.from({ length: ROWS_PER_PUT }, () => {
            const id = nextId++;
            return { id, value: id * 0.5, note: `row ${id} of the memory test` };
          });
          const res = await post(route('/put'), JSON.stringify(rows));
          expect(res.status, await res.clone().text()).toBe(200);
          rowsAcked += ((await res.json()) as { rows: number }).rows;
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, client));
      const afterLoad = samples.length;
      // The deepest page: the last 10,000 ids (its scan starts at the cursor).
      const deepest = await fetch(route(`/scan?limit=10000&cursor=${rowsAcked - 10_001}`));
      expect(deepest.status).toBe(200);
      const page = (await deepest.json()) as Page;
      expect(page.rows.length).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 100));
      sampler.stop();

      const peakRssKiB = (await peakRssBytes(w.pid)) / 1024;
      const live = (s: HeapSample) => s.usedSize + s.embedderHeapUsedSize + s.backingStorageSize;
      const peak = (list: HeapSample[], f: (s: HeapSample) => number) => Math.max(...list.map(f));
      const mib = (n: number) => (n / MiB).toFixed(1);
      const figures = {
        rowsAcknowledged: rowsAcked,
        rowsPerSecond: Math.round(rowsAcked / (LOAD_MS / 1000)),
        samples: samples.length,
        peakHeapUsedMiB_load: mib(peak(samples.slice(0, afterLoad), live)),
        // V8's used heap includes garbage: its lowest point late in the load (just after a GC)
        // approximates what is live.
        lowHeapUsedMiB_endOfLoad: mib(Math.min(...samples.slice(Math.floor(afterLoad * 0.75), afterLoad).map(live))),
        peakHeapUsedMiB_scan: mib(peak(samples.slice(afterLoad), live)),
        peakHeapAllocatedMiB: mib(peak(samples, allocatedBytes)),
        workerdPeakRssMiB: (peakRssKiB / 1024).toFixed(1),
      };
      console.log(`workerd Durable Object memory (${new Date().toISOString().slice(0, 10)}): ${JSON.stringify(figures)}`);
      expect(samples.length).toBeGreaterThan(20);
      expect(peak(samples, allocatedBytes)).toBeLessThan(128 * 1000 * 1000);
      await w.kill();
    },
    LOAD_MS + 90_000,
  );
});
