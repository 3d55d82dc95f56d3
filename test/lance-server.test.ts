// The example Lance server (examples/lance-server) as its clients meet it: a drain over HTTP from
// a Node file store lands equal to scan(); and every refusal — no or foreign credential (401,
// 403), a body above the limit (413), IPC that does not decode, a schema that does not match,
// positions that go backwards or skip (400), random and truncated bodies (fuzz) — changes
// nothing in the Lance table.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, Int64, RecordBatch, Schema, Struct, Table, makeData, tableToIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemWal } from '../src/engine/memwal.js';
import type { WalEntry } from '../src/engine/api.js';
import { drain } from '../src/drain/drain.js';
import { DRAIN_HEADERS, POSITION_COLUMN, drainRequestHeaders, encodeDrainBatch } from '../src/drain/wire.js';
import { keyedSchema, lanceRows, lanceSnapshot, randomKeyedLoad, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { MemoryStorage } from '../src/storage/memory.js';
import { crc32c } from '../src/util/crc32c.js';
import { int, rng } from '../src/testing/rng.js';
import { type LanceServer, startLanceServer, testPort } from './lance-server-process.js';

/** The deno executable from the `deno` dev dependency (as src/storage/fs.test.ts runs it). */
const DENO = (createRequire(import.meta.url)('deno/install_api.cjs') as { runInstall(): string }).runInstall();
const dirs: string[] = [];
const tempDir = (tag: string): string => {
  const d = mkdtempSync(join(tmpdir(), `memwal-lance-server-${tag}-`));
  dirs.push(d);
  return d;
};
const quiet = { warn: () => undefined };
const TOKENS = { 'token-a': 'a', 'token-b': 'b', 'token-fuzz': 'fuzz', 'token-fuzz-2': 'fuzz-2', 'token-deno': 'deno' };
const MAX_BODY_BYTES = 256 * 1024;

let server: LanceServer;
let uri: string;
beforeAll(async () => {
  uri = tempDir('lance');
  server = await startLanceServer({ uri, port: testPort(1), tokens: TOKENS, maxBodyBytes: MAX_BODY_BYTES, adminToken: 'admin' });
}, 30_000);
afterAll(async () => {
  await server?.kill();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Entries of a fresh in-memory keyed store after a small random load. */
async function someEntries(seed: number, schema: Schema = keyedSchema, ops = 10): Promise<WalEntry[]> {
  const store = await MemWal.open({ name: `gen${seed}`, schema, primaryKey: [schema.fields[0]!.name], storage: new MemoryStorage() });
  if (schema === keyedSchema) await randomKeyedLoad(store, rng(seed), ops);
  else for (let i = 0; i < ops; i++) await store.put([{ id: i, name: i }]);
  const out: WalEntry[] = [];
  for await (const e of store.tail(1)) out.push(e);
  await store.close();
  return out;
}

function post(store: string, token: string | undefined, headers: Record<string, string>, body: Uint8Array): Promise<Response> {
  return fetch(`${server.url}/drain/${store}`, {
    method: 'POST',
    headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body as Uint8Array<ArrayBuffer>,
  });
}

function postEntries(store: string, token: string, entries: readonly WalEntry[]): Promise<Response> {
  const batch = encodeDrainBatch(entries);
  return post(store, token, drainRequestHeaders(batch), batch.body);
}

/** Expect `res` to be a refusal with `status` (and `code`), and the table to be as `before`. */
async function expectRefused(
  res: Response,
  status: number,
  before: Awaited<ReturnType<typeof lanceSnapshot>>,
  code?: string,
): Promise<void> {
  const body = (await res.json()) as { code: string; message: string };
  expect(res.status, body.message).toBe(status);
  if (code) expect(body.code).toBe(code);
  expect(await lanceSnapshot(uri, 'events')).toEqual(before);
}

describe('the example Lance server', () => {
  it('a Node file store drains over HTTP while it writes; the Lance table equals scan()', async () => {
    const store = await MemWal.open({
      name: 'a',
      schema: keyedSchema,
      primaryKey: ['id'],
      storage: new NodeFileStorage(tempDir('store')),
      logger: quiet,
    });
    const d = drain(store, { endpoint: `${server.url}/drain/a`, token: 'token-a', batchBytes: 8192, logger: quiet });
    await randomKeyedLoad(store, rng(3), 80);
    await d.waitForApplied((await store.sync()).position);
    expect(await lanceRows(uri, 'events', 'a', keyedSchema)).toEqual(await scanRows(store, keyedSchema));
    const stats = await d.drainStats();
    expect(stats).toMatchObject({ storeId: 'a', lagEntries: 0, failureCount: 0 });
    expect(stats.shippedBytes).toBeGreaterThan(0);
    const metrics = await d.metrics();
    expect(metrics).toContain('wal_drain_lag_entries{store="a"} 0');
    expect(metrics).toContain('# TYPE wal_drain_failures_total counter');
    const serverStats = (await (await fetch(`${server.url}/stats`, { headers: { authorization: 'Bearer admin' } })).json()) as {
      stores: { storeId: string; position: number }[];
    };
    expect(serverStats.stores).toContainEqual(expect.objectContaining({ storeId: 'a', position: stats.appliedPosition }));
    await d.stop();
    await store.close();
  });

  it('a Deno file store drains over HTTP while it writes (drain() in Deno); the Lance table equals its scan()', async () => {
    const lines: string[] = [];
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        DENO,
        [
          'run',
          '-A',
          '--no-check',
          '--unstable-sloppy-imports',
          'test/fixtures/deno-drain.ts',
          tempDir('deno'),
          `${server.url}/drain/deno`,
          'token-deno',
        ],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
          env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
        },
      );
      createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
      child.on('error', reject);
      child.on('close', resolve);
    });
    expect(code, lines.join('\n')).toBe(0);
    const scan = JSON.parse(lines.find((l) => l.startsWith('scan '))!.slice(5)) as string[];
    expect(scan.length).toBeGreaterThan(50);
    expect(await lanceRows(uri, 'events', 'deno', keyedSchema)).toEqual(scan);
    const stats = JSON.parse(lines.find((l) => l.startsWith('stats '))!.slice(6)) as { lagEntries: number; failureCount: number };
    expect(stats).toMatchObject({ lagEntries: 0, failureCount: 0 });
  }, 60_000);

  it('refuses a missing or unknown bearer token with 401 and another store’s token with 403, changing nothing', async () => {
    const entries = await someEntries(1);
    const before = await lanceSnapshot(uri, 'events');
    await expectRefused(await postEntries('b', '', entries), 401, before, 'Unauthorized');
    await expectRefused(await postEntries('b', 'not-a-token', entries), 401, before, 'Unauthorized');
    await expectRefused(await postEntries('b', 'token-a', entries), 403, before, 'Forbidden');
    const get = await fetch(`${server.url}/drain/b`, { headers: { authorization: 'Bearer token-a' } });
    expect(get.status).toBe(403);
    expect((await postEntries('b', 'token-b', entries)).status).toBe(200); // the right token works
  });

  it('refuses a body above the limit with 413, changing nothing', async () => {
    const before = await lanceSnapshot(uri, 'events');
    const big = new Uint8Array(MAX_BODY_BYTES + 1);
    const headers = drainRequestHeaders({ firstPosition: 1, lastPosition: 1, epoch: 1, rows: 1, crc32c: crc32c(big) });
    await expectRefused(await post('fuzz', 'token-fuzz', headers, big), 413, before, 'PayloadTooLarge');
  });

  it('refuses with 400 IPC that does not decode, a schema that does not match, and positions that go backwards or skip, changing nothing', async () => {
    const entries = await someEntries(2);
    expect((await postEntries('fuzz', 'token-fuzz', entries.slice(0, 3))).status).toBe(200);
    const before = await lanceSnapshot(uri, 'events');

    const garbage = new TextEncoder().encode('this is not Arrow IPC at all, but its checksum is right');
    const garbageHeaders = drainRequestHeaders({ firstPosition: 4, lastPosition: 4, epoch: 1, rows: 1, crc32c: crc32c(garbage) });
    await expectRefused(await post('fuzz', 'token-fuzz', garbageHeaders, garbage), 400, before, 'InvalidArgument');

    const other = await someEntries(3, new Schema([new Field('id', new Int64(), false), new Field('name', new Int64(), true)]));
    await expectRefused(await postEntries('fuzz', 'token-fuzz', other.slice(3, 5)), 400, before, 'InvalidArgument');

    const next = encodeDrainBatch(entries.slice(3, 5));
    const backwards = { ...drainRequestHeaders(next), [DRAIN_HEADERS.firstPosition]: '5', [DRAIN_HEADERS.lastPosition]: '4' };
    await expectRefused(await post('fuzz', 'token-fuzz', backwards, next.body), 400, before, 'InvalidArgument');
    // Rows whose positions run backwards inside the body (entry 5's rows before entry 4's).
    const mixed = bodyWithPositions(
      [
        { entry: entries[4]!, position: 5 },
        { entry: entries[3]!, position: 4 },
      ],
      4,
      5,
    );
    await expectRefused(await post('fuzz', 'token-fuzz', mixed.headers, mixed.body), 400, before, 'InvalidArgument');
    await expectRefused(await postEntries('fuzz', 'token-fuzz', entries.slice(5, 7)), 400, before, 'InvalidArgument'); // skips 4
    const truncated = next.body.subarray(0, next.body.length - 20);
    await expectRefused(await post('fuzz', 'token-fuzz', drainRequestHeaders(next), truncated), 400, before, 'InvalidArgument');

    expect((await postEntries('fuzz', 'token-fuzz', entries.slice(3))).status).toBe(200); // and the right one goes in
  });

  it('fuzz: random and truncated bodies are refused with 400 and leave the table unchanged', async () => {
    const entries = await someEntries(4, keyedSchema, 30);
    const r = rng(99);
    const before = await lanceSnapshot(uri, 'events');
    const valid = encodeDrainBatch(entries.slice(0, 20));
    const reasons = new Set<string>();
    for (let i = 0; i < 60; i++) {
      let body: Uint8Array;
      if (i % 3 === 0) {
        body = new Uint8Array(int(r, 4096));
        for (let k = 0; k < body.length; k++) body[k] = int(r, 256);
      } else if (i % 3 === 1) {
        body = valid.body.subarray(0, int(r, valid.body.length));
      } else {
        body = valid.body.slice();
        const at = int(r, body.length - 8);
        body.set(
          new Uint8Array(Math.min(64, body.length - 8 - at)).map(() => int(r, 256)),
          at,
        ); // scribbled over
      }
      // Most random and truncated bodies get an end-of-stream marker, to reach the decoder.
      if (i % 3 !== 2 && i % 4 !== 3) body = new Uint8Array([...body, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
      // Random and truncated bodies: half announce their own checksum (reaching the decoder),
      // half the valid body's. A scribbled body with its own checksum would be data the client
      // really sent, so it always announces the valid body's.
      const crc = i % 2 === 0 && i % 3 !== 2 ? crc32c(body) : valid.crc32c;
      const headers = drainRequestHeaders({ ...valid, crc32c: crc });
      const res = await post('fuzz-2', 'token-fuzz-2', headers, body);
      const refusal = (await res.json()) as { message: string };
      expect(res.status, refusal.message).toBe(400);
      reasons.add(
        refusal.message
          .replace(/[0-9]+/g, 'N')
          .split(':')
          .slice(0, 2)
          .join(':'),
      );
      const res2 = await post('fuzz', 'token-fuzz', { ...headers, [DRAIN_HEADERS.firstPosition]: '1' }, body);
      const text = await res2.text();
      // The only 200 allowed is a duplicate (positions 1..20 of "fuzz" were applied above).
      if (res2.status === 200) expect(JSON.parse(text)).toMatchObject({ duplicate: true });
      else expect(res2.status, text).toBe(400);
    }
    expect(await lanceSnapshot(uri, 'events')).toEqual(before);
    // The bodies reached every check: end-of-stream marker, checksum, and the IPC decoder.
    const all = [...reasons].join('\n');
    expect(all).toMatch(/end-of-stream/);
    expect(all).toMatch(/CRC-/);
    expect(all).toMatch(/not an Arrow IPC stream|rows, header/);
  });
});

/**
 * A drain body whose rows carry the given positions in the given order (encodeDrainBatch only
 * makes well-formed ones), announced as covering `first..last`.
 */
function bodyWithPositions(parts: { entry: WalEntry; position: number }[], first: number, last: number) {
  const schema = new Schema([...parts[0]!.entry.data.schema.fields, new Field(POSITION_COLUMN, new Int64(), false)]);
  const batches = parts.flatMap(({ entry, position }) =>
    entry.data.batches.map((b) => {
      const positions = makeData({
        type: new Int64(),
        length: b.numRows,
        nullCount: 0,
        data: new BigInt64Array(b.numRows).fill(BigInt(position)),
      });
      return new RecordBatch(
        schema,
        makeData({ type: new Struct(schema.fields), length: b.numRows, nullCount: 0, children: [...b.data.children, positions] }),
      );
    }),
  );
  const body = tableToIPC(new Table(schema, batches), 'stream');
  const rows = batches.reduce((n, b) => n + b.numRows, 0);
  return { body, headers: drainRequestHeaders({ firstPosition: first, lastPosition: last, epoch: 1, rows, crc32c: crc32c(body) }) };
}
