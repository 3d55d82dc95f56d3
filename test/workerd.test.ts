// memwal in real workerd (Cloudflare's runtime, from npm): the adapter conformance cases inside a
// SQLite-backed Durable Object. The example Worker (SIGKILL, metrics, memory) is in
// test/examples.test.ts; here it drains into the example Lance server (docs/scale-out.md). Each test
// starts and kills workerd.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { MemWal } from '../src/core/memwal.js';
import { drain } from '../src/drain/drain.js';
import { lanceRows, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { startLanceServer, testPort } from './lance-server-process.js';
import type { CaseResult } from './workerd/conformance-worker.js';
import { buildWorkerFromSources } from './workerd/from-sources.js';
import { buildWorker, startWorkerd } from './workerd/harness.js';
import type { BuiltWorker, Workerd } from './workerd/harness.js';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

/** Every workerd a test started, and the temporary directories: afterAll kills and removes them. */
const started: Workerd[] = [];
const temporary: string[] = [];
async function start(worker: BuiltWorker, disk: string): Promise<Workerd> {
  const w = await startWorkerd(worker, disk);
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
  /** The example's schema (examples/cloudflare/api.ts). */
  const doSchema = new Schema([
    new Field('id', new Int64(), false),
    new Field('value', new Float64(), true),
    new Field('note', new Utf8(), true),
  ]);

  it('the example Worker posts its store to the example Lance server while it writes; a Lance query equals each scan()', async () => {
    const worker = await buildWorkerFromSources(
      here('../examples/cloudflare/worker.ts'),
      here('../examples/cloudflare/config.capnp'),
      'dist/worker.js',
    );
    const disk = await mkdtemp(join(tmpdir(), 'memwal-do-drain-'));
    const uri = await mkdtemp(join(tmpdir(), 'memwal-do-lance-'));
    temporary.push(worker.dir, disk, uri);
    const server = await startLanceServer({ uri, port: testPort(4), tokens: { 'do-secret': 'do-events', 'node-secret': 'node-events' } });
    const workerd = await start(worker, disk);
    try {
      const started = await fetch(`${workerd.url}/drain?store=d1`, {
        method: 'POST',
        body: JSON.stringify({ endpoint: `${server.url}/drain/do-events`, token: 'do-secret' }),
      });
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
        const res = await fetch(`${workerd.url}/put?store=d1`, { method: 'POST', body: JSON.stringify(rows) });
        expect(res.status, workerd.log()).toBe(200);
        lastPosition = ((await res.json()) as { position: number }).position;
        await nodeStore.put(rows.map((r) => ({ ...r, value: r.value + 0.5 })));
      }
      const deadline = Date.now() + 20_000;
      for (;;) {
        const stats = (await (await fetch(`${workerd.url}/drain?store=d1`)).json()) as { appliedPosition: number; failureCount: number };
        if (stats.appliedPosition >= lastPosition) break;
        if (Date.now() > deadline)
          throw new Error(`the Durable Object's drain did not catch up: ${JSON.stringify(stats)}\n${workerd.log()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await nodeDrain.waitForApplied((await nodeStore.sync()).position);

      const page = (await (await fetch(`${workerd.url}/scan?store=d1&limit=10000`)).json()) as {
        rows: { id: string; value?: number | null; note?: string | null }[];
        cursor: string | null;
      };
      expect(page.cursor).toBeNull();
      const doRows = page.rows.map((r) => JSON.stringify([r.id, r.value ?? null, r.note ?? null])).sort();
      expect(doRows.length).toBeGreaterThan(20);
      expect(await lanceRows(uri, 'events', 'do-events', doSchema)).toEqual(doRows);
      expect(await lanceRows(uri, 'events', 'node-events', doSchema)).toEqual(await scanRows(nodeStore, doSchema));
      const metrics = await (await fetch(`${workerd.url}/metrics?store=d1`)).text();
      expect(metrics).toContain('wal_drain_lag_entries{store="do-events"} 0');
      await nodeDrain.stop();
      await nodeStore.close();
    } finally {
      await workerd.kill();
      await server.kill();
    }
  }, 90_000);
});
