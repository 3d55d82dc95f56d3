// examples/lance-server as a user gets it: copied out of the repository next to a node_modules
// into which npm installed the packed memwal tarball, @lancedb/lancedb and the rest of its
// package.json; type-checked with its own tsconfig.json, started with `node --import tsx
// server.ts`, and drained into from a Node file store: the Lance table equals scan(), and
// GET /stats answers the admin token only.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MemWal } from '../src/engine/memwal.js';
import { drain } from '../src/drain/drain.js';
import { keyedSchema, lanceRows, randomKeyedLoad, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { rng } from '../src/testing/rng.js';
import { installExamples, packMemwal, typecheckExample } from './examples/pack.js';
import { type LanceServer, startLanceServer, testPort } from './lance-server-process.js';

let work: string;
let example: string;
let server: LanceServer | undefined;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'memwal-lance-example-'));
  ({ 'lance-server': example } = (await installExamples(['lance-server'], await packMemwal(work), work)) as { 'lance-server': string });
}, 300_000);
afterAll(async () => {
  await server?.kill();
  await rm(work, { recursive: true, force: true });
});

it('type-checks with its own tsconfig.json against the packed memwal', async () => {
  await typecheckExample(example);
}, 120_000);

it('runs out of the repository: a Node store drains into it, the Lance table equals scan(), /stats answers the admin token only', async () => {
  const uri = join(work, 'lance-data');
  server = await startLanceServer({ dir: example, uri, port: testPort(9), tokens: { t1: 'events' }, adminToken: 'adm' });
  const store = await MemWal.open({
    name: 'events',
    schema: keyedSchema,
    primaryKey: ['id'],
    storage: new NodeFileStorage(join(work, 'store')),
    logger: { warn: () => undefined },
  });
  const d = drain(store, { endpoint: `${server.url}/drain/events`, token: 't1', logger: { warn: () => undefined } });
  await randomKeyedLoad(store, rng(12), 40);
  await d.waitForApplied((await store.sync()).position, { signal: AbortSignal.timeout(60_000) });
  expect(await lanceRows(uri, 'events', 'events', keyedSchema)).toEqual(await scanRows(store, keyedSchema));
  expect((await fetch(`${server.url}/stats`)).status).toBe(401);
  const stats = await fetch(`${server.url}/stats`, { headers: { authorization: 'Bearer adm' } });
  expect(((await stats.json()) as { stores: { storeId: string }[] }).stores.map((s) => s.storeId)).toEqual(['events']);
  await d.stop();
  await store.close();
}, 60_000);
