// memwal in real workerd (Cloudflare's runtime, from npm): the adapter conformance cases inside a
// SQLite-backed Durable Object, then the example Worker killed with SIGKILL in the middle of a
// write load and restarted, keeping every acknowledged put. Each test starts and kills workerd.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Field, Float64, Schema, Utf8 } from 'apache-arrow';
import { MemWal } from '../src/core/memwal.js';
import { drain } from '../src/drain/drain.js';
import { lanceRows, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { startLanceServer, testPort } from './lance-server-process.js';
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

describe('the example Durable Object in workerd', () => {
  let worker: BuiltWorker;
  let disk: string;
  beforeAll(async () => {
    worker = await build('../examples/cloudflare/worker.ts', '../examples/cloudflare/config.capnp', 'dist/worker.js');
    disk = await mkdtemp(join(tmpdir(), 'memwal-do-disk-'));
    temporary.push(disk);
  });

  it('keeps every acknowledged put across a SIGKILL in the middle of a write load', async () => {
    const ROWS_PER_PUT = 8;
    const note = 'n'.repeat(8 * 1024); // 64 KiB per put: 4 MiB memtables freeze and flush under load
    const rowsOf = (put: number) => Array.from({ length: ROWS_PER_PUT }, (_, i) => ({ id: `p${put}-r${i}`, value: put * 100 + i, note }));

    const first = await start(worker, disk);
    const acknowledged: number[] = [];
    let nextPut = 0;
    let killed = false;
    let writerError: unknown;
    const writer = async (): Promise<void> => {
      while (!killed && writerError === undefined) {
        const put = nextPut++;
        try {
          const res = await fetch(`${first.url}/put`, { method: 'POST', body: JSON.stringify(rowsOf(put)) });
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
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (writerError !== undefined) throw writerError;
      const stats = (await (await fetch(`${first.url}/stats`)).json()) as { write: { flushCount: number } };
      if (stats.write.flushCount >= 1 && acknowledged.length >= 100) break;
      if (Date.now() > deadline) throw new Error(`no flush within 15 s (${acknowledged.length} puts acknowledged)\n${first.log()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    killed = true;
    await first.kill();
    await writing;
    const attempted = nextPut;

    const second = await start(worker, disk);
    const scan = await fetch(`${second.url}/scan`);
    expect(scan.status, second.log()).toBe(200);
    const rows = (await scan.json()) as { id: string; value: number; note: string }[];
    const byPut = new Map<number, number>();
    for (const row of rows) {
      const put = Number(/^p(\d+)-r\d+$/.exec(row.id)![1]);
      const i = Number(row.id.split('-r')[1]);
      expect(row.value).toBe(put * 100 + i);
      expect(row.note).toBe(note);
      byPut.set(put, (byPut.get(put) ?? 0) + 1);
    }
    const lost = acknowledged.filter((put) => byPut.get(put) !== ROWS_PER_PUT);
    expect(lost, `acknowledged puts missing after the restart (of ${acknowledged.length})`).toEqual([]);
    // A put is all or nothing, acknowledged or not.
    expect([...byPut].filter(([, n]) => n !== ROWS_PER_PUT)).toEqual([]);
    expect(Math.max(...byPut.keys())).toBeLessThan(attempted);

    const stats = (await (await fetch(`${second.url}/stats`)).json()) as {
      storage: { tableFileCount: number };
      wal: { nextPosition: number };
    };
    expect(stats.storage.tableFileCount).toBeGreaterThanOrEqual(1);
    expect(stats.wal.nextPosition).toBeGreaterThan(acknowledged.length / 4);

    // The restarted writer takes new puts.
    const after = await fetch(`${second.url}/put`, { method: 'POST', body: JSON.stringify([{ id: 'after-restart', value: 1 }]) });
    expect(await after.json()).toMatchObject({ rows: 1, durable: true });
    await second.kill();
  });

  it('serves /metrics as Prometheus text with the store label and the SPEC §4.6 families', async () => {
    const w = await start(worker, disk);
    const put = await fetch(`${w.url}/put?store=metrics`, { method: 'POST', body: JSON.stringify([{ id: 'm', value: 1 }]) });
    expect(put.status).toBe(200);
    const res = await fetch(`${w.url}/metrics?store=metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const text = await res.text();
    for (const [family, type] of [
      ['wal_unflushed_bytes', 'gauge'],
      ['wal_sealed_memtables', 'gauge'],
      ['wal_backpressure_waits_total', 'counter'],
      ['wal_backpressure_wait_seconds_total', 'counter'],
      ['wal_backpressure_active_waiters', 'gauge'],
      ['wal_backpressure_aborted_total', 'counter'],
    ]) {
      expect(text).toContain(`# TYPE ${family} ${type}\n`);
      expect(text).toMatch(new RegExp(`^${family}\\{store="events"\\} \\d`, 'm'));
    }
    const bad = await fetch(`${w.url}/put?store=metrics`, { method: 'POST', body: JSON.stringify([{ nope: 1 }]) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'InvalidArgument' });
    await w.kill();
  });
});

describe('scale-out: a Durable Object store and a Node store drain into one Lance dataset (SPEC §12)', () => {
  const doSchema = new Schema([
    new Field('id', new Utf8(), false),
    new Field('value', new Float64(), true),
    new Field('note', new Utf8(), true),
  ]);

  it('the example Worker posts its store to the example Lance server while it writes; a Lance query equals each scan()', async () => {
    const worker = await build('../examples/cloudflare/worker.ts', '../examples/cloudflare/config.capnp', 'dist/worker.js');
    const disk = await mkdtemp(join(tmpdir(), 'memwal-do-drain-'));
    const uri = await mkdtemp(join(tmpdir(), 'memwal-do-lance-'));
    temporary.push(disk, uri);
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
          id: `k${(i * 7 + k * 3) % 60}`,
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

      const doScan = (await (await fetch(`${workerd.url}/scan?store=d1`)).json()) as {
        id: string;
        value: number | null;
        note: string | null;
      }[];
      const doRows = doScan.map((r) => JSON.stringify([r.id, r.value ?? null, r.note ?? null])).sort();
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
