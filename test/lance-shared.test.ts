// The example Lance server under one store's many parallel uploads (docs/scale-out.md "Running a
// shared sink"): what a store has in flight is bounded before its bodies are read, so one token
// cannot make the server buffer and check without limit. Linux for the memory figure.

import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import type { ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bool, Field, Int32, Int64, RecordBatch, Schema, Struct, Table, Time, TimeUnit, makeData, tableToIPC } from 'apache-arrow';
import type { Data } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { POSITION_COLUMN, drainRequestHeaders, parseDrainHeaders } from '../src/drain/wire.js';
import { DEFAULT_MAX_PENDING_PER_STORE, LanceSink } from '../src/lance.js';
import { crc32c } from '../src/util/crc32c.js';
import { type LanceServer, peakRss, startLanceServer, testPort } from './lance-server-process.js';

const dirs: string[] = [];
const servers: LanceServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const HEADERS = {
  'memwal-drain-version': '1',
  'memwal-first-position': '1',
  'memwal-last-position': '1',
  'memwal-epoch': '1',
  'memwal-rows': '1',
  'memwal-crc32c': '1',
};

/**
 * A POST to `store` announcing `length` body bytes, of which `sent` are sent (the rest never
 * comes: a slow or stalled upload). Resolves the answer's status, or undefined if none came
 * within `waitMs`.
 */
function stalledUpload(
  server: LanceServer,
  store: string,
  token: string,
  length: number,
  sent: number,
  waitMs: number,
): { req: ClientRequest; status: Promise<number | undefined> } {
  const req = request(`${server.url}/drain/${store}`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: `Bearer ${token}`, 'content-length': String(length) },
  });
  req.on('error', () => undefined);
  const status = new Promise<number | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), waitMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      res.resume();
      resolve(res.statusCode);
    });
  });
  req.flushHeaders();
  const chunk = Buffer.alloc(1024 * 1024, 7);
  for (let left = sent; left > 0; left -= chunk.length) req.write(left >= chunk.length ? chunk : chunk.subarray(0, left));
  return { req, status };
}

describe('one store’s parallel uploads', () => {
  it('beyond maxPendingPerStore, a store’s requests are answered 503 before their bodies are read, and stalled uploads do not pile up in memory', async () => {
    const uri = mkdtempSync(join(tmpdir(), 'memwal-lance-shared-'));
    dirs.push(uri);
    // Byte budgets above the 4 uploads this store may have in flight: the per-store bound is what is tested.
    const env = { MAX_BYTES_PER_TOKEN: String(64 * 2 ** 20), MAX_BYTES_IN_FLIGHT: String(64 * 2 ** 20) };
    const server = await startLanceServer({ uri, port: testPort(11), tokens: { 'token-flood': 'flood', 'token-small': 'small' }, env });
    servers.push(server);
    const size = 7 * 1024 * 1024;
    const before = peakRss(server);
    const stalled = Array.from({ length: 40 }, () => stalledUpload(server, 'flood', 'token-flood', size + 1, size, 5_000));
    const statuses = await Promise.all(stalled.map((s) => s.status));
    // Those in flight wait for the rest of their bodies; every other one is answered at once.
    expect(statuses.filter((s) => s === undefined)).toHaveLength(DEFAULT_MAX_PENDING_PER_STORE);
    expect(statuses.filter((s) => s === 503)).toHaveLength(40 - DEFAULT_MAX_PENDING_PER_STORE);
    if (before !== undefined) expect(peakRss(server)! - before).toBeLessThan(128 * 2 ** 20); // before: + 280 MiB
    // Another store is not held by any of it.
    const small = stalledUpload(server, 'small', 'token-small', 10, 0, 5_000);
    small.req.end(Buffer.alloc(10));
    expect(await small.status).toBe(400); // a 10-byte body is no Arrow stream: refused at once
    for (const s of stalled) s.req.destroy();
  }, 60_000);
});

/**
 * A keyed drain request of `rows` rows (ids from `firstId`) at `position`, as headers' meta and
 * body; `extra` columns go between the key and `_tombstone`.
 */
function keyedRequest(rows: number, position: number, firstId = 0, extra: { field: Field; data: Data }[] = [], int32Key = false) {
  const fields = [
    new Field('id', int32Key ? new Int32() : new Int64(), false),
    ...extra.map((c) => c.field),
    new Field('_tombstone', new Bool(), false),
    new Field(POSITION_COLUMN, new Int64(), false),
  ];
  const schema = new Schema(fields);
  const children = [
    int32Key
      ? makeData({ type: new Int32(), length: rows, nullCount: 0, data: Int32Array.from({ length: rows }, (_, i) => firstId + i) })
      : makeData({
          type: new Int64(),
          length: rows,
          nullCount: 0,
          data: BigInt64Array.from({ length: rows }, (_, i) => BigInt(firstId + i)),
        }),
    ...extra.map((c) => c.data),
    makeData({ type: new Bool(), length: rows, nullCount: 0, data: new Uint8Array(Math.ceil(rows / 8)) }),
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: new BigInt64Array(rows).fill(BigInt(position)) }),
  ];
  const body = tableToIPC(
    new Table(schema, [new RecordBatch(schema, makeData({ type: new Struct(fields), length: rows, nullCount: 0, children }))]),
    'stream',
  );
  const headers = drainRequestHeaders({ firstPosition: position, lastPosition: position, epoch: 1, rows, crc32c: crc32c(body) });
  return { meta: parseDrainHeaders((name) => headers[name]), body };
}

describe('checking a large request', () => {
  // A request used to be checked in one synchronous block on the server's only thread (500,000
  // keyed rows, 7.7 MiB: 250-490 ms, up to 2 s under load), so whoever sent such bodies held every
  // other store: 4 refused ones in flight took a small store's 1-row apply from 15 ms to 5.0 s
  // (p50). The check now runs in time slices that give the event loop a turn.
  it('another store’s small apply is answered while a large request of 500,000 rows is still being checked', async () => {
    const uri = mkdtempSync(join(tmpdir(), 'memwal-lance-shared-'));
    dirs.push(uri);
    const sink = new LanceSink({ uri, table: 'events', primaryKey: ['id'] });
    const first = keyedRequest(1, 1, 10_000_000);
    await sink.applyEncoded('small', first.meta, first.body); // the table exists
    // Refused only after its check, in its turn: an Int32 key where the table's is Int64 (a request
    // whose positions skip is refused from its headers, before any check).
    const large = keyedRequest(500_000, 1, 0, [], true);
    const small = keyedRequest(1, 2, 10_000_000);
    const order: string[] = [];
    const settled = [
      sink.applyEncoded('flood', large.meta, large.body).then(
        () => order.push('large'),
        () => order.push('large'),
      ),
      sink.applyEncoded('small', small.meta, small.body).then(() => order.push('small')),
    ];
    await Promise.all(settled);
    expect(order).toEqual(['small', 'large']);
    await sink.close();
  }, 60_000);
});

describe('types Lance cannot take', () => {
  it('a time column whose unit does not fit its width is refused with InvalidArgument, not a Lance panic', async () => {
    const uri = mkdtempSync(join(tmpdir(), 'memwal-lance-shared-'));
    dirs.push(uri);
    const sink = new LanceSink({ uri, table: 'events', primaryKey: ['id'], logger: { warn: () => undefined } });
    for (const [unit, bitWidth] of [
      [TimeUnit.MICROSECOND, 32],
      [TimeUnit.SECOND, 64],
    ] as const) {
      const type = new Time(unit, bitWidth);
      const values = bitWidth === 32 ? Int32Array.of(1) : BigInt64Array.of(1n);
      const req = keyedRequest(1, 1, 0, [
        { field: new Field('at', type, true), data: makeData({ type, length: 1, nullCount: 0, data: values } as never) },
      ]);
      await expect(sink.applyEncoded('odd', req.meta, req.body)).rejects.toMatchObject({ code: 'InvalidArgument', message: /at/ });
    }
    await sink.close();
  });
});
