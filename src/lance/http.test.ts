// createDrainRequestHandler's answers for what is not the client's fault: the server's own failure
// is a 500 that says nothing of the server's insides (those go to the logger), a store with too
// many requests waiting a 503 with retry-after. The sink is a stand-in that fails on purpose.

import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainRequestHeaders } from '../drain/wire.js';
import { MemWalError } from '../util/errors.js';
import { crc32c } from '../util/crc32c.js';
import { createDrainRequestHandler, tokenAuthorizer } from './http.js';
import type { LanceSink } from './sink.js';

const port = Number(process.env.MEMWAL_TEST_PORT_BASE ?? 5290) + 11;
const logged: unknown[][] = [];
const asked: unknown[][] = [];
let failWith: MemWalError;
let server: Server;

beforeAll(async () => {
  const sink = {
    appliedPosition: async (...args: unknown[]) => {
      asked.push(args);
      return 0;
    },
    applyEncoded: async () => {
      throw failWith;
    },
  } as unknown as LanceSink;
  const handle = createDrainRequestHandler({
    sink,
    authorize: tokenAuthorizer({ t: 's' }),
    logger: { warn: (...args: unknown[]) => void logged.push(args) },
  });
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function post(): Promise<Response> {
  const body = new Uint8Array([1, 2, 3]);
  return fetch(`http://127.0.0.1:${port}/drain/s`, {
    method: 'POST',
    headers: {
      ...drainRequestHeaders({ firstPosition: 1, lastPosition: 1, epoch: 1, rows: 1, crc32c: crc32c(body) }),
      authorization: 'Bearer t',
    },
    body,
  });
}

it('a failure of the server’s own is answered 500 without its details, which go to the logger', async () => {
  const secret =
    'lance error: LanceError(IO): /srv/lance-data/events.lance/_versions, /usr/local/cargo/registry/src/lance-8.0.0/src/io/commit.rs:646:26';
  failWith = new MemWalError('IOError', secret);
  const res = await post();
  expect(res.status).toBe(500);
  const text = await res.text();
  expect(text).not.toContain('/srv/lance-data');
  expect(text).not.toContain('cargo');
  expect(JSON.parse(text)).toMatchObject({ code: 'IOError', message: expect.stringMatching(/retry/) });
  expect(String(logged.at(-1))).toContain(secret);
});

it('a store with too many requests waiting is answered 503 with retry-after, and a refusal 400 with its reason', async () => {
  failWith = new MemWalError('Locked', '4 requests of s are already waiting; retry later');
  const busy = await post();
  expect(busy.status).toBe(503);
  expect(busy.headers.get('retry-after')).toBe('1');
  failWith = new MemWalError('InvalidArgument', 'schema: column "a.b": names may not hold "."');
  const refused = await post();
  expect(refused.status).toBe(400);
  expect(await refused.json()).toMatchObject({ code: 'InvalidArgument', message: 'schema: column "a.b": names may not hold "."' });
});

it('GET passes the store’s incarnation to the sink, and a malformed one is a 400 naming the header', async () => {
  const incarnation = '0123456789abcdef0123456789abcdef';
  const url = `http://127.0.0.1:${port}/drain/s`;
  const ok = await fetch(url, { headers: { authorization: 'Bearer t', 'memwal-incarnation': incarnation } });
  expect(ok.status).toBe(200);
  expect(asked.at(-1)).toEqual(['s', incarnation]);
  const bad = await fetch(url, { headers: { authorization: 'Bearer t', 'memwal-incarnation': 'x' } });
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({ code: 'InvalidArgument', message: /memwal-incarnation/ });
});

describe('budgets checked before a body is read', () => {
  const budgetPort = port + 1;
  let budgetServer: Server;
  let applyWith: () => Promise<unknown> = async () => ({ storeId: 's', appliedPosition: 1, epoch: 1, rows: 1, duplicate: false });
  beforeAll(async () => {
    const sink = { appliedPosition: async () => 0, applyEncoded: () => applyWith() } as unknown as LanceSink;
    const handle = createDrainRequestHandler({
      sink,
      authorize: tokenAuthorizer({ t: ['s', 's2'], u: 'u' }),
      maxBytesInFlight: 1000,
      maxBytesPerToken: 600,
      bodyTimeoutMs: 300,
      refusalCooldownMs: 5_000,
      logger: { warn: () => undefined },
    });
    budgetServer = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => budgetServer.listen(budgetPort, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => budgetServer.close(() => resolve())));

  const send = (store: string, token: string, body: Uint8Array) =>
    fetch(`http://127.0.0.1:${budgetPort}/drain/${store}`, {
      method: 'POST',
      headers: {
        ...drainRequestHeaders({ firstPosition: 1, lastPosition: 1, epoch: 1, rows: 1, crc32c: crc32c(body) }),
        authorization: `Bearer ${token}`,
      },
      body: body as Uint8Array<ArrayBuffer>,
    });

  it('a body over the token’s or the server’s byte budget is 503 with retry-after; one within both is applied', async () => {
    const over = await send('s', 't', new Uint8Array(700)); // 700 > 600 of the token
    expect(over.status).toBe(503);
    expect(over.headers.get('retry-after')).toBe('1');
    expect(over.headers.get('connection')).toBe('close');
    expect((await send('s', 't', new Uint8Array(500))).status).toBe(200);
  });

  it('a body that does not arrive within bodyTimeoutMs is answered 408', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number | undefined>((resolve) => {
      const req = request(`http://127.0.0.1:${budgetPort}/drain/s`, {
        method: 'POST',
        headers: {
          ...drainRequestHeaders({ firstPosition: 1, lastPosition: 1, epoch: 1, rows: 1, crc32c: 0 }),
          authorization: 'Bearer t',
          'content-length': '100',
        },
      });
      req.on('error', () => resolve(undefined));
      req.on('response', (res) => resolve(res.statusCode));
      req.write(new Uint8Array(10)); // and the other 90 bytes never come
    });
    expect(status).toBe(408);
  });

  it('after a 400 a token may have one request in flight until its cooldown ends; other tokens are not held', async () => {
    applyWith = async () => {
      throw new MemWalError('InvalidArgument', 'positions skip');
    };
    expect((await send('s', 't', new Uint8Array(10))).status).toBe(400);
    const held: (() => void)[] = [];
    const applied = { storeId: 's', appliedPosition: 1, epoch: 1, rows: 1, duplicate: false };
    applyWith = () => new Promise((resolve) => held.push(() => resolve(applied)));
    const first = send('s', 't', new Uint8Array(10)); // one at a time: taken
    await new Promise((r) => setTimeout(r, 100));
    const second = await send('s2', 't', new Uint8Array(10));
    expect(second.status).toBe(503);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const other = send('u', 'u', new Uint8Array(10)); // another token: not cooled
    await new Promise((r) => setTimeout(r, 100));
    expect(held).toHaveLength(2); // t's first and u's reached the sink
    for (const release of held) release();
    expect((await first).status).toBe(200);
    expect((await other).status).toBe(200);
  });
});
