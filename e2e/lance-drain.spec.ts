// Scale-out end to end (docs/scale-out.md): a browser store, a Node store and a
// Durable Object store drain into ONE Lance dataset through the example Lance server while they
// write — the page's store through its main-thread client (worker, OPFS) with fetch and CORS,
// the Durable Object through the example Worker in real workerd, the Node store from this
// process — and a Lance query of each store's rows equals its scan().

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from '@playwright/test';
import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { MemWal, drain } from '../src/index.js';
import type { DrainStats } from '../src/index.js';
import { lanceRows, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { type LanceServer, startLanceServer, testPort } from '../test/lance-server-process.js';
import { buildWorkerFromSources } from '../test/workerd/from-sources.js';
import { type Workerd, startWorkerd } from '../test/workerd/harness.js';

/** The example Durable Object's schema (examples/cloudflare/api.ts); the page and the Node store use it too. */
const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('note', new Utf8(), true),
]);
const TOKENS = { 'tab-secret': 'tab', 'node-secret': 'node', 'do-secret': 'durable-object' };
const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

let server: LanceServer;
let workerd: Workerd | undefined;
const dirs: string[] = [];
test.beforeAll(async () => {
  const uri = mkdtempSync(join(tmpdir(), 'memwal-e2e-lance-'));
  dirs.push(uri);
  server = await startLanceServer({ uri, port: testPort(5), tokens: TOKENS, allowOrigin: '*' });
});
test.afterAll(async () => {
  await workerd?.kill();
  await server?.kill();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
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

test('a browser store, a Node store and a Durable Object store drain into one Lance dataset while writing; a Lance query equals each scan()', async ({
  page,
}) => {
  const uri = dirs[0]!;
  // The Durable Object: the example Worker in workerd, told to drain into the server.
  const worker = await buildWorkerFromSources(
    here('../examples/cloudflare/worker.ts'),
    here('../examples/cloudflare/config.capnp'),
    'dist/worker.js',
  );
  dirs.push(worker.dir);
  // The example's drain administration: its admin token, and the server on its allowlist; the
  // store's own routes (/put, /scan) take the store's token (MEMWAL_STORE_TOKENS).
  const admin = { authorization: 'Bearer e2e-admin' };
  const storeAuth = { authorization: 'Bearer e2e-store' };
  workerd = await startWorkerd(worker, join(worker.dir, 'do-disk'), {
    env: {
      MEMWAL_ADMIN_TOKEN: 'e2e-admin',
      MEMWAL_STORE_TOKENS: JSON.stringify({ 'e2e-store': 'e2e' }),
      MEMWAL_DRAIN_ALLOWLIST: `${server.url}/drain/`,
    },
  });
  const doStart = await fetch(`${workerd.url}/drain?store=e2e`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ endpoint: `${server.url}/drain/durable-object`, token: 'do-secret' }),
  });
  expect(doStart.status, workerd.log()).toBe(200);

  // The Node store, in this process.
  const nodeDir = mkdtempSync(join(tmpdir(), 'memwal-e2e-node-'));
  dirs.push(nodeDir);
  const nodeStore = await MemWal.open({
    name: 'node',
    schema,
    primaryKey: ['id'],
    storage: new NodeFileStorage(nodeDir),
    logger: { warn: () => undefined },
  });
  const nodeDrain = drain(nodeStore, { endpoint: `${server.url}/drain/node`, token: 'node-secret', logger: { warn: () => undefined } });

  // The page's store.
  await page.goto('/drain.html');
  await page.waitForFunction(() => 'drainProbe' in window);
  await page.evaluate(([endpoint]) => drainProbe.start('tab', endpoint!, 'tab-secret'), [`${server.url}/drain/tab`]);

  // All three write at once while draining.
  let doPosition = 0;
  const writeDo = async (): Promise<void> => {
    for (let i = 0; i < 40; i++) {
      const rows = Array.from({ length: 5 }, (_, k) => ({
        id: (i * 7 + k * 3) % 60,
        value: i * 10 + k,
        note: k % 2 ? null : `do${i}`,
      }));
      const res = await fetch(`${workerd!.url}/put?store=e2e`, { method: 'POST', headers: storeAuth, body: JSON.stringify(rows) });
      expect(res.status).toBe(200);
      doPosition = ((await res.json()) as { position: number }).position;
    }
  };
  const writeNode = async (): Promise<void> => {
    for (let i = 0; i < 60; i++) {
      await nodeStore.put(Array.from({ length: 10 }, (_, k) => ({ id: (i * 13 + k) % 150, value: i + k / 10, note: `node${i}` })));
      if (i % 10 === 9) await nodeStore.delete([{ id: i }]);
    }
  };
  const writePage = async (): Promise<void> => {
    for (let round = 0; round < 3; round++) {
      await page.evaluate((seed) => drainProbe.write(seed, 60, 400), round + 1);
      expect((await page.evaluate(() => drainProbe.stats())).failureCount).toBe(0);
    }
  };
  await Promise.all([writeDo(), writeNode(), writePage()]);

  // Drained: each store's last position is applied.
  const pagePosition = await page.evaluate(() => drainProbe.drained());
  await nodeDrain.waitForApplied((await nodeStore.sync()).position);
  await expect
    .poll(async () => ((await (await fetch(`${workerd!.url}/drain?store=e2e`, { headers: admin })).json()) as DrainStats).appliedPosition, {
      timeout: 20_000,
    })
    .toBeGreaterThanOrEqual(doPosition);

  const pageScan = await page.evaluate(() => drainProbe.scan());
  expect(pageScan.length).toBeGreaterThan(100);
  expect(await lanceRows(uri, 'events', 'tab', schema)).toEqual(pageScan);
  expect(await lanceRows(uri, 'events', 'node', schema)).toEqual(await scanRows(nodeStore, schema));
  const doScan = (await (await fetch(`${workerd.url}/scan?store=e2e&limit=10000`, { headers: storeAuth })).json()) as {
    rows: { id: string; value?: number | null; note?: string | null }[];
    cursor: string | null;
  };
  expect(doScan.cursor).toBeNull();
  expect(await lanceRows(uri, 'events', 'durable-object', schema)).toEqual(
    doScan.rows.map((r) => JSON.stringify([r.id, r.value ?? null, r.note ?? null])).sort(),
  );

  const stats = await page.evaluate(() => drainProbe.stats());
  expect(stats).toMatchObject({ appliedPosition: pagePosition, lagEntries: 0, consumedPosition: pagePosition });
  expect(await page.evaluate(() => drainProbe.metrics())).toContain('wal_drain_lag_entries{store="tab"} 0');
  await page.evaluate(() => drainProbe.close());
  await nodeDrain.stop();
  await nodeStore.close();
});
