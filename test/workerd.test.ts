// memwal in real workerd (Cloudflare's runtime, from npm): the adapter conformance cases inside a
// SQLite-backed Durable Object. The example Worker (SIGKILL, metrics, memory) is in
// test/examples.test.ts; here it drains into the example Lance server (docs/scale-out.md). Each test
// starts and kills workerd.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { MemWal } from '../src/engine/memwal.js';
import { type DrainStats, drain } from '../src/drain/drain.js';
import { lanceRows, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { startLanceServer, testPort } from './lance-server-process.js';
import type { CaseResult } from './workerd/conformance-worker.js';
import { buildWorkerFromSources } from './workerd/from-sources.js';
import { buildWorker, startWorkerd } from './workerd/harness.js';
import type { BuiltWorker, Workerd } from './workerd/harness.js';
import { type IsolateSampler, allocatedBytes, peakRssBytes, sampleIsolateMemory } from './workerd/heap.js';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

/** Every workerd a test started, and the temporary directories: afterAll kills and removes them. */
const started: Workerd[] = [];
const temporary: string[] = [];
async function start(worker: BuiltWorker, disk: string, options: Parameters<typeof startWorkerd>[2] = {}): Promise<Workerd> {
  const w = await startWorkerd(worker, disk, options);
  started.push(w);
  return w;
}
async function build(entry: string, config: string, bundleName: string): Promise<BuiltWorker> {
  const worker = await buildWorker(here(entry), here(config), bundleName);
  temporary.push(worker.dir);
  return worker;
}
afterAll(async () => {
  await Promise.all(started.map((w) => w.kill()));
  await Promise.all(temporary.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The example Worker's admin token and drain allowlist (examples/cloudflare/config.capnp reads them from the environment). */
const ADMIN_TOKEN = 'admin-secret';
const exampleEnv = (serverUrl: string) => ({
  MEMWAL_ADMIN_TOKEN: ADMIN_TOKEN,
  MEMWAL_DRAIN_ALLOWLIST: `${serverUrl}/drain/`,
  MEMWAL_STORE_TOKENS: JSON.stringify({ [STORE_TOKEN]: ['d1', 'a'], 'other-secret': 'other' }),
});
/** The example Worker's store token of `d1` and `a` (MEMWAL_STORE_TOKENS): its store routes need it. */
const STORE_TOKEN = 'store-secret';
const asStore = { authorization: `Bearer ${STORE_TOKEN}` };
const asAdmin = { authorization: `Bearer ${ADMIN_TOKEN}` };
/** POST /drain to the example Worker's object `store`, with the admin token. */
function configureDrain(workerdUrl: string, store: string, body: unknown, token = ADMIN_TOKEN): Promise<Response> {
  return fetch(`${workerdUrl}/drain?store=${store}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}
/** GET /drain (the object's drainStats), with the admin token. */
async function drainStatsOf(workerdUrl: string, store: string): Promise<DrainStats> {
  const res = await fetch(`${workerdUrl}/drain?store=${store}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return (await res.json()) as DrainStats;
}

/** A new temporary directory, removed after the file's tests. */
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}

/** The example Worker built from this repository's sources, and a disk for its objects. */
async function buildExample(diskPrefix: string): Promise<{ worker: BuiltWorker; disk: string }> {
  const worker = await buildWorkerFromSources(
    here('../examples/cloudflare/worker.ts'),
    here('../examples/cloudflare/config.capnp'),
    'dist/worker.js',
  );
  temporary.push(worker.dir);
  return { worker, disk: await tempDir(diskPrefix) };
}

/** The rows of the example object `store` as `[id, value, note]` JSON, sorted (one /scan page of up to 10,000). */
async function exampleRows(workerdUrl: string, store: string): Promise<string[]> {
  const page = (await (await fetch(`${workerdUrl}/scan?store=${store}&limit=10000`, { headers: asStore })).json()) as {
    rows: { id: string; value?: number | null; note?: string | null }[];
    cursor: string | null;
  };
  expect(page.cursor).toBeNull();
  return page.rows.map((r) => JSON.stringify([r.id, r.value ?? null, r.note ?? null])).sort();
}

/** The example's schema (examples/cloudflare/api.ts). */
const doSchema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('note', new Utf8(), true),
]);

describe('DurableObjectStorageAdapter conformance inside workerd', () => {
  let workerd: Workerd;
  beforeAll(async () => {
    const worker = await build('./workerd/conformance-worker.ts', './workerd/config.capnp', 'conformance.js');
    workerd = await start(worker, join(worker.dir, 'do-disk'));
  });
  afterAll(async () => {
    await workerd?.kill();
  });

  // chunkBytes 4096 cuts the cases' 100 kB WAL appends and 70 kB table chunks into many rows.
  for (const chunkBytes of [undefined, 4096]) {
    it(`passes every case (chunkBytes ${chunkBytes ?? 'default'})`, async () => {
      const res = await fetch(`${workerd.url}/${chunkBytes ? `?chunkBytes=${chunkBytes}` : ''}`);
      expect(res.status, workerd.log()).toBe(200);
      const results = (await res.json()) as CaseResult[];
      expect(results.length).toBeGreaterThanOrEqual(21);
      expect(results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.error}`)).toEqual([]);
    });
  }
});

describe('scale-out: a Durable Object store and a Node store drain into one Lance dataset (docs/scale-out.md)', () => {
  it('the example Worker posts its store to the example Lance server while it writes; a Lance query equals each scan()', async () => {
    const { worker, disk } = await buildExample('memwal-do-drain-');
    const uri = await tempDir('memwal-do-lance-');
    const server = await startLanceServer({ uri, port: testPort(4), tokens: { 'do-secret': 'do-events', 'node-secret': 'node-events' } });
    const workerd = await start(worker, disk, { env: exampleEnv(server.url) });
    try {
      const started = await configureDrain(workerd.url, 'd1', { endpoint: `${server.url}/drain/do-events`, token: 'do-secret' });
      expect(started.status, workerd.log()).toBe(200);
      // The Node store (same schema) drains into the same dataset at the same time.
      const nodeStore = await MemWal.open({
        name: 'node-events',
        schema: doSchema,
        primaryKey: ['id'],
        storage: new NodeFileStorage(disk),
        logger: { warn: () => undefined },
      });
      const nodeDrain = drain(nodeStore, { endpoint: `${server.url}/drain/node-events`, token: 'node-secret' });

      let lastPosition = 0;
      for (let i = 0; i < 40; i++) {
        const rows = Array.from({ length: 5 }, (_, k) => ({
          id: (i * 7 + k * 3) % 60,
          value: i * 10 + k,
          note: k % 2 ? null : `n${i}`,
        }));
        const res = await fetch(`${workerd.url}/put?store=d1`, { method: 'POST', body: JSON.stringify(rows), headers: asStore });
        expect(res.status, workerd.log()).toBe(200);
        lastPosition = ((await res.json()) as { position: number }).position;
        await nodeStore.put(rows.map((r) => ({ ...r, value: r.value + 0.5 })));
      }
      const deadline = Date.now() + 20_000;
      for (;;) {
        const stats = await drainStatsOf(workerd.url, 'd1');
        if (stats.appliedPosition >= lastPosition) break;
        if (Date.now() > deadline)
          throw new Error(`the Durable Object's drain did not catch up: ${JSON.stringify(stats)}\n${workerd.log()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await nodeDrain.waitForApplied((await nodeStore.sync()).position);

      const doRows = await exampleRows(workerd.url, 'd1');
      expect(doRows.length).toBeGreaterThan(20);
      expect(await lanceRows(uri, 'events', 'do-events', doSchema)).toEqual(doRows);
      expect(await lanceRows(uri, 'events', 'node-events', doSchema)).toEqual(await scanRows(nodeStore, doSchema));
      const metrics = await (await fetch(`${workerd.url}/metrics?store=d1`, { headers: asAdmin })).text();
      expect(metrics).toContain('wal_drain_lag_entries{store="do-events"} 0');
      await nodeDrain.stop();
      await nodeStore.close();
    } finally {
      await workerd.kill();
      await server.kill();
    }
  }, 90_000);
});

describe("the example Durable Object's drain administration (docs/scale-out.md)", () => {
  it('every route needs its credential (store routes a store token, /stats /metrics /drain the admin token), takes only allowlisted endpoints, and never echoes what an endpoint answers', async () => {
    // An endpoint on the allowlist that answers everything with something it should not leak.
    const leaky = createServer((_req, res) => {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 'InvalidArgument', message: 'SECRET-42 internal data' }));
    });
    const port = testPort(7);
    await new Promise<void>((resolve) => leaky.listen(port, '127.0.0.1', resolve));
    const { worker, disk } = await buildExample('memwal-do-admin-');
    const base = `http://127.0.0.1:${port}`;
    const workerd = await start(worker, disk, { env: exampleEnv(base) });
    const closed = await start(worker, join(disk, 'closed'), { env: { MEMWAL_DRAIN_ALLOWLIST: `${base}/drain/` } });
    try {
      const ok = { endpoint: `${base}/drain/x`, token: 't' };
      expect((await fetch(`${workerd.url}/drain?store=a`, { method: 'POST', body: JSON.stringify(ok) })).status).toBe(401);
      expect((await configureDrain(workerd.url, 'a', ok, 'wrong')).status).toBe(401);
      expect((await fetch(`${workerd.url}/drain?store=a`)).status).toBe(401);
      expect((await configureDrain(closed.url, 'a', ok)).status).toBe(403); // no admin token configured: off

      // Every route needs its credential: a store's routes its token, /stats and /metrics the admin
      // token (before: /put, /scan, /stats and /metrics answered anyone, for any store).
      const routes: [string, string, RequestInit, Record<string, string>][] = [
        ['POST', '/put', { body: JSON.stringify({ id: 1, note: 'x' }) }, asStore],
        ['GET', '/scan', {}, asStore],
        ['GET', '/nope', {}, asStore],
        ['GET', '/stats', {}, asAdmin],
        ['GET', '/metrics', {}, asAdmin],
      ];
      for (const [method, path, init, right] of routes) {
        const call = (headers: Record<string, string>, w = workerd) => fetch(`${w.url}${path}?store=a`, { method, ...init, headers });
        expect((await call({})).status, `${method} ${path} without a credential`).toBe(401);
        expect((await call({ authorization: 'Bearer wrong' })).status, `${method} ${path} with a wrong token`).toBe(401);
        const foreign = right === asStore ? 'other-secret' : STORE_TOKEN; // another store's token; a store token for an admin route
        expect((await call({ authorization: `Bearer ${foreign}` })).status, `${method} ${path} with ${foreign}`).toBe(
          right === asStore ? 403 : 401,
        );
        if (right === asStore) expect((await call(asAdmin)).status, `${method} ${path} with the admin token`).toBe(401);
        expect((await call(right, closed)).status, `${method} ${path}: its secret unset`).toBe(403);
        expect((await call(right)).status, `${method} ${path} with its credential`).toBe(path === '/nope' ? 404 : 200);
      }
      const scan = (await (await fetch(`${workerd.url}/scan?store=a`, { headers: asStore })).json()) as { rows: unknown[] };
      expect(scan.rows).toHaveLength(1); // the one put above; no refused put wrote
      for (const endpoint of [
        `${base}/other/x`,
        `${base}/drain/../admin/x`,
        `${base}/drain/x?y=1`,
        `http://127.0.0.1:${port + 1}/drain/x`,
        'http://169.254.169.254/drain/x',
        `http://user:pw@127.0.0.1:${port}/drain/x`,
      ]) {
        const res = await configureDrain(workerd.url, 'a', { endpoint, token: 't' });
        expect(res.status, endpoint).toBe(400);
        expect(((await res.json()) as { message: string }).message).toContain('allowlist');
      }
      const refused = await drainStatsOf(workerd.url, 'a');
      expect(refused).toMatchObject({ code: 'InvalidArgument' }); // never started

      expect((await configureDrain(workerd.url, 'a', ok)).status).toBe(200);
      let stats = await drainStatsOf(workerd.url, 'a');
      for (let waited = 0; stats.state !== 'failed'; waited += 50) {
        if (waited > 10_000) throw new Error(`the drain did not fail: ${JSON.stringify(stats)}`);
        await new Promise((r) => setTimeout(r, 50));
        stats = await drainStatsOf(workerd.url, 'a');
      }
      expect(stats).toMatchObject({ failureCount: 1, lastError: { code: 'InvalidArgument' } });
      expect(stats.lastError!.message).toBe('drain endpoint answered 400 InvalidArgument (the sink refused the shipment as invalid)');
      expect(JSON.stringify(stats)).not.toContain('SECRET');
    } finally {
      await workerd.kill();
      await closed.kill();
      await new Promise((r) => leaky.close(r));
    }
  }, 60_000);
});

describe('the example Durable Object through Lance outages (docs/scale-out.md)', () => {
  const MiB = 1024 * 1024;
  const TOKEN = 'do-secret';
  const STORE_ID = 'do-events';
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** The applied position the Lance server holds for the object's store (asks the server, never the object). */
  async function appliedAtServer(serverUrl: string): Promise<number> {
    const res = await fetch(`${serverUrl}/drain/${STORE_ID}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return ((await res.json()) as { appliedPosition: number }).appliedPosition;
  }

  /**
   * `clients` writers putting `rowsPerPut` rows each, `putsPerSecond` puts in all, until `stop()`;
   * `lastPosition` is the highest position acknowledged.
   */
  function writeLoad(url: string, o: { clients: number; putsPerSecond: number; rowsPerPut: number }) {
    const state = { stopped: false, lastPosition: 0, rows: 0, error: undefined as unknown };
    const t0 = Date.now();
    let nextId = 0;
    const client = async (k: number): Promise<void> => {
      for (let i = 0; !state.stopped; i++) {
        const due = t0 + ((i * o.clients + k) * 1000) / o.putsPerSecond;
        if (due > Date.now()) await sleep(due - Date.now());
        if (state.stopped) return;
        const rows = Array.from({ length: o.rowsPerPut }, () => {
          const id = nextId++;
          return { id, value: id * 0.5, note: `row ${id} written through a Lance outage` };
        });
        const res = await fetch(`${url}/put?store=d1`, { method: 'POST', body: JSON.stringify(rows), headers: asStore });
        if (res.status !== 200) throw new Error(`put: ${res.status} ${await res.text()}`);
        state.lastPosition = Math.max(state.lastPosition, ((await res.json()) as { position: number }).position);
        state.rows += o.rowsPerPut;
      }
    };
    const running = Promise.all(Array.from({ length: o.clients }, (_, k) => client(k))).catch((e: unknown) => {
      state.error = e;
    });
    return {
      state,
      stop: async () => {
        state.stopped = true;
        await running;
        if (state.error) throw state.error;
      },
    };
  }

  it('an evicted object resumes its drain by its alarm, with no request: workerd restarted on the same disk while the server was down', async () => {
    const { worker, disk } = await buildExample('memwal-do-evict-');
    const uri = await tempDir('memwal-do-evict-lance-');
    const serverOptions = { uri, port: testPort(6), tokens: { [TOKEN]: STORE_ID } };
    let server = await startLanceServer(serverOptions);
    const env = exampleEnv(server.url);
    let workerd = await start(worker, disk, { env });
    let nextId = 0;
    const put = async (): Promise<number> => {
      const rows = Array.from({ length: 50 }, () => ({ id: nextId++, value: nextId, note: 'through an eviction' }));
      const res = await fetch(`${workerd.url}/put?store=d1`, { method: 'POST', body: JSON.stringify(rows), headers: asStore });
      expect(res.status, workerd.log()).toBe(200);
      return ((await res.json()) as { position: number }).position;
    };
    try {
      expect((await configureDrain(workerd.url, 'd1', { endpoint: `${server.url}/drain/${STORE_ID}`, token: TOKEN })).status).toBe(200);
      let last = 0;
      for (let i = 0; i < 20; i++) last = await put();
      for (let waited = 0; (await appliedAtServer(server.url)) < last; waited += 100) {
        if (waited > 30_000) throw new Error(`the drain did not catch up before the outage\n${workerd.log()}`);
        await sleep(100);
      }
      // The server goes down, the object takes more puts it cannot ship, and then it is gone
      // without a word: workerd is killed and started again on the same disk, which is what an
      // eviction is to the object (its memory is lost; its storage and its alarm are kept).
      await server.kill();
      for (let i = 0; i < 30; i++) last = await put();
      await workerd.kill();
      server = await startLanceServer(serverOptions);
      workerd = await start(worker, disk, { env });
      // No request reaches the object from here on: only its alarm can bring the drain back.
      const since = Date.now();
      while ((await appliedAtServer(server.url)) < last) {
        if (Date.now() - since > 60_000) {
          throw new Error(
            `nothing drained within 60 s of the restart without a request (applied ${await appliedAtServer(server.url)} of ${last})\n${workerd.log()}`,
          );
        }
        await sleep(200);
      }
      console.log(`the alarm resumed the drain of the evicted object: ${last} entries applied ${Date.now() - since} ms after the restart`);
      const doRows = await exampleRows(workerd.url, 'd1');
      expect(doRows.length).toBe(nextId);
      expect(await lanceRows(uri, 'events', STORE_ID, doSchema)).toEqual(doRows);
    } finally {
      await workerd.kill();
      await server.kill();
    }
  }, 150_000);

  /** How long the Lance server stays down; MEMWAL_DRAIN_OUTAGE_MS for a shorter run while developing. */
  const OUTAGE_MS = Number(process.env.MEMWAL_DRAIN_OUTAGE_MS ?? 60_000);
  it(
    'drains through a 60 s Lance outage under a write load within 128 MB (V8 heap, embedder heap and ArrayBuffer backing stores)',
    async () => {
      const { worker, disk } = await buildExample('memwal-do-outage-');
      const uri = await tempDir('memwal-do-outage-lance-');
      const serverOptions = { uri, port: testPort(5), tokens: { [TOKEN]: STORE_ID } };
      let server = await startLanceServer(serverOptions);
      const workerd = await start(worker, disk, { inspector: true, env: exampleEnv(server.url) });
      let sampler: IsolateSampler | undefined;
      try {
        const configured = await configureDrain(workerd.url, 'd1', { endpoint: `${server.url}/drain/${STORE_ID}`, token: TOKEN });
        expect(configured.status, workerd.log()).toBe(200);
        sampler = await sampleIsolateMemory(workerd.inspectorUrl!);
        const { samples } = sampler;
        const marks: Record<string, number> = {};
        const mark = (phase: string) => (marks[phase] = samples.length);

        // 50 puts of 100 rows a second (5,000 rows/s): the drain follows, then the server is
        // killed for OUTAGE_MS while the load goes on, then it comes back on the same dataset.
        const load = writeLoad(workerd.url, { clients: 5, putsPerSecond: 50, rowsPerPut: 100 });
        await sleep(10_000);
        mark('outage');
        await server.kill();
        await sleep(OUTAGE_MS);
        mark('back');
        server = await startLanceServer(serverOptions);
        await sleep(10_000);
        await load.stop();
        mark('loadEnd');
        const stoppedAt = Date.now();
        const last = load.state.lastPosition;
        for (;;) {
          if ((await appliedAtServer(server.url)) >= last) break;
          if (Date.now() - stoppedAt > 180_000) {
            const stats = JSON.stringify(await drainStatsOf(workerd.url, 'd1'));
            throw new Error(`the drain did not catch up within 180 s after the load: ${stats}\n${workerd.log()}`);
          }
          await sleep(250);
        }
        const catchUpMs = Date.now() - stoppedAt;
        await sleep(200);
        sampler.stop();

        const peak = (from: number, to: number) => Math.max(...samples.slice(from, to).map(allocatedBytes));
        const mib = (n: number) => Number((n / MiB).toFixed(1));
        const figures = {
          outageMs: OUTAGE_MS,
          rowsWritten: load.state.rows,
          entries: last,
          catchUpAfterLoadMs: catchUpMs,
          samples: samples.length,
          peakAllocatedMiB_following: mib(peak(0, marks.outage!)),
          peakAllocatedMiB_outage: mib(peak(marks.outage!, marks.back!)),
          peakAllocatedMiB_catchUp: mib(peak(marks.back!, samples.length)),
          peakBackingStoresMiB: mib(Math.max(...samples.map((s) => s.backingStorageSize))),
          workerdPeakRssMiB: mib(await peakRssBytes(workerd.pid)),
        };
        console.log(
          `Durable Object draining through a Lance outage (${new Date().toISOString().slice(0, 10)}): ${JSON.stringify(figures)}`,
        );
        expect(samples.length).toBeGreaterThan(100);
        expect(Math.max(...samples.map(allocatedBytes))).toBeLessThan(128 * 1000 * 1000);
      } finally {
        sampler?.stop();
        await workerd.kill();
        await server.kill();
      }
    },
    OUTAGE_MS + 300_000,
  );
});
