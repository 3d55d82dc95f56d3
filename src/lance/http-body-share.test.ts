// The drain handler's body-byte budget is shared fairly between tokens (src/lance/body-budget.ts):
// two tokens' stalled uploads cannot fill it and keep a third token out, and a token holding
// bodies takes no more than its share while others hold theirs. The sink is a stand-in.

import { type ClientRequest, type Server, createServer, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { drainRequestHeaders } from '../drain/wire.js';
import { crc32c } from '../util/crc32c.js';
import { FairBodyBytes } from './body-budget.js';
import { createDrainRequestHandler, tokenAuthorizer } from './http.js';
import type { LanceSink } from './sink.js';

const port = Number(process.env.MEMWAL_TEST_PORT_BASE ?? 5290) + 31;
let server: Server;
const applied: string[] = [];

beforeAll(async () => {
  const sink = {
    appliedPosition: async () => 0,
    applyEncoded: async (storeId: string) => {
      applied.push(storeId);
      return { storeId, appliedPosition: 1, epoch: 1, rows: 1, duplicate: false };
    },
  } as unknown as LanceSink;
  const handle = createDrainRequestHandler({
    sink,
    authorize: tokenAuthorizer({ a: ['a1', 'a2', 'a3'], b: ['b1', 'b2'], c: 'c1' }),
    maxBodyBytes: 1000,
    maxBytesInFlight: 1200,
    maxBytesPerToken: 1200,
    bodyTimeoutMs: 20_000,
    logger: { warn: () => undefined },
  });
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const headers = (token: string, length: number) => ({
  ...drainRequestHeaders({ firstPosition: 1, lastPosition: 1, epoch: 1, rows: 1, crc32c: 0 }),
  authorization: `Bearer ${token}`,
  'content-length': String(length),
});

/** A POST that declares `length` bytes, sends 10 and stalls; `answer` resolves its status (0: cut off). */
function stalled(store: string, token: string, length: number): { req: ClientRequest; answer: Promise<number> } {
  const req = request(`http://127.0.0.1:${port}/drain/${store}`, { method: 'POST', headers: headers(token, length) });
  const answer = new Promise<number>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
  req.write(new Uint8Array(10));
  onTestFinished(() => void req.destroy());
  return { req, answer };
}

/** A whole POST of `length` bytes; its status. */
async function post(store: string, token: string, length: number): Promise<number> {
  const body = new Uint8Array(length);
  const res = await fetch(`http://127.0.0.1:${port}/drain/${store}`, {
    method: 'POST',
    headers: {
      ...headers(token, length),
      ...drainRequestHeaders({ firstPosition: 1, lastPosition: 1, epoch: 1, rows: 1, crc32c: crc32c(body) }),
    },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** Time for the server to take a request's headers (and reserve its body's bytes). */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 150));
}

describe('the body budget, shared between tokens', () => {
  it('two tokens’ stalled uploads fill the server’s bytes: a third token’s body takes back one of the largest holder’s and is applied', async () => {
    const a = stalled('a1', 'a', 600);
    await settle();
    const b = stalled('b1', 'b', 600);
    await settle(); // the server's 1,200 bytes are held by a and b
    expect(await post('c1', 'c', 100)).toBe(200); // before: 503 until a body timed out
    expect(applied).toContain('c1');
    // One of the stalled uploads was answered 503 (connection closed, unread), the other still waits.
    expect(await Promise.race([a.answer, b.answer])).toBe(503);
  });

  it('a token holding bodies takes no more than its share while another holds bytes, though the server has room', async () => {
    stalled('a1', 'a', 600);
    await settle();
    stalled('b1', 'b', 300);
    await settle(); // 900 of 1,200 held; a's share is 600, b's 600
    expect(await post('a2', 'a', 200)).toBe(503); // before: 200 (1,100 of 1,200)
    expect(await post('b2', 'b', 200)).toBe(200); // b is within its share
  });
});

describe('FairBodyBytes', () => {
  it('takes back the newest arriving body of the token most above its share, never a body that has arrived', () => {
    const bytes = new FairBodyBytes(1000, 1000);
    const takenBack: string[] = [];
    const a1 = bytes.take('a', 400, () => takenBack.push('a1'));
    const a2 = bytes.take('a', 100, () => takenBack.push('a2'));
    const b1 = bytes.take('b', 500, () => takenBack.push('b1'));
    expect([a1, a2, b1].every((h) => typeof h !== 'string')).toBe(true);
    if (typeof b1 !== 'string') b1.arrived(); // b's body is being checked: never taken back
    const c = bytes.take('c', 200, () => takenBack.push('c'));
    expect(typeof c).not.toBe('string');
    // Shares are 333 each; a holds 500 (167 above), b 500 but arrived: a's newest (100) then a1 (400).
    expect(takenBack).toEqual(['a2', 'a1']);
    expect(bytes.heldBy('a')).toBe(0);
    expect(bytes.heldBy('c')).toBe(200);
    // A body above the asking token's share takes nothing back.
    const d = bytes.take('d', 400, () => takenBack.push('d'));
    expect(d).toMatch(/server holds/);
    expect(takenBack).toEqual(['a2', 'a1']);
  });
});
