// memwal in real workerd (Cloudflare's runtime, from npm): the adapter conformance cases inside a
// SQLite-backed Durable Object. The example Worker (SIGKILL, metrics, memory) is in
// test/examples.test.ts. Each test starts and kills workerd.

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaseResult } from './workerd/conformance-worker.js';
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
