// The Node example service answers /put, /scan, /stats and /metrics, and its data survives a
// SIGKILL and restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'memwal-node-example-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function start(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/node/server.ts', dir, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('memwal example on') && resolve());
    child.on('exit', (code) => reject(new Error(`example exited with ${code}`)));
  });
  return child;
}

it('serves put, scan, stats and metrics, and keeps acknowledged rows across a SIGKILL', async () => {
  const port = await freePort();
  const child = await start(port);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 5; i++) {
    const r = await fetch(`${base}/put`, { method: 'POST', body: JSON.stringify([{ id: i, value: i / 2, name: `n${i}` }]) });
    expect(r.status).toBe(200);
  }
  const bad = await fetch(`${base}/put`, { method: 'POST', body: JSON.stringify([{ id: 1, nope: 1 }]) });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { code: string }).code).toBe('InvalidArgument');
  expect(((await (await fetch(`${base}/scan`)).json()) as unknown[]).length).toBe(5);
  const stats = (await (await fetch(`${base}/stats`)).json()) as { memtable: { rowCount: number } };
  expect(stats.memtable.rowCount).toBe(5);
  const metrics = await (await fetch(`${base}/metrics`)).text();
  expect(metrics).toContain('wal_unflushed_bytes{store="events"}');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const port2 = await freePort();
  await start(port2);
  const rows = (await (await fetch(`http://127.0.0.1:${port2}/scan`)).json()) as { id: number }[];
  expect(rows.map((r) => r.id).sort()).toEqual([0, 1, 2, 3, 4]);
}, 60_000);
