// drain() against sinks and endpoints that misbehave on purpose: consumption follows only what
// the sink reported durable, failures back off and are counted, refusals end the drain, and
// the metrics pass promtool. Stores are in-memory; the Lance side is tested in src/lance/.

import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { Bool, Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { estimateBatchBytes } from '../data/size.js';
import type { MemWalApi, WalEntry } from '../engine/api.js';
import { MemWalError } from '../util/errors.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { type DrainSink, drain } from './drain.js';
import { until } from '../engine/testkit.test-util.js';
import { DRAIN_HEADERS, parseDrainHeaders } from './wire.js';

const schema = new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]);
const quiet = { warn: () => undefined };
const fast = { baseMs: 1, maxMs: 5 };

async function storeWith(puts: number): Promise<MemWal> {
  const store = await MemWal.open({ name: 'd', schema, primaryKey: ['id'], storage: new MemoryStorage(), logger: quiet });
  for (let i = 0; i < puts; i++) await store.put([{ id: i, name: `n${i}` }]);
  return store;
}

/** The store with its markConsumed calls recorded. */
function recording(store: MemWal): { api: MemWalApi; consumed: number[] } {
  const consumed: number[] = [];
  const api = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'markConsumed') {
        return (p: number) => {
          consumed.push(p);
          return target.markConsumed(p);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { api, consumed };
}

/** A sink in memory: applies consecutive entries, skips duplicates, refuses gaps. */
class MemorySink implements DrainSink {
  applied = 0;
  rows = 0;
  failNext = 0;
  /** Report durable only up to this many entries behind what was applied (a lagging commit). */
  calls: { first: number; last: number }[] = [];
  async appliedPosition(): Promise<number> {
    return this.applied;
  }
  async apply(_storeId: string, entries: readonly WalEntry[]): Promise<{ appliedPosition: number }> {
    this.calls.push({ first: entries[0]!.position, last: entries[entries.length - 1]!.position });
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new MemWalError('IOError', 'sink down');
    }
    if (entries[0]!.position > this.applied + 1) throw new MemWalError('InvalidArgument', 'positions skip');
    for (const e of entries) {
      if (e.position <= this.applied) continue;
      this.rows += e.data.numRows;
      this.applied = e.position;
    }
    return { appliedPosition: this.applied };
  }
}

describe('drain()', () => {
  it('a drain retrying a failing sink leaves no abort listener behind per retry', async () => {
    // Found by the simulation (test/sim): each backoff added a listener to the drain's stop signal.
    const store = await storeWith(1);
    const sink = new MemorySink();
    sink.failNext = 30;
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const d = drain(store, { sink, storeId: 'd', retry: { baseMs: 1, maxMs: 1 }, logger: quiet });
    await d.waitForApplied(1);
    await d.stop();
    await store.close();
    await new Promise((resolve) => setTimeout(resolve, 10)); // warnings are emitted on a later tick
    process.off('warning', onWarning);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('waitForApplied of a position the sink already holds resolves once the drain has started', async () => {
    // Found by the simulation (test/sim): the start learnt the sink's position without waking waiters.
    const store = await storeWith(5);
    const sink = new MemorySink();
    sink.applied = 5; // a sink that applied everything before this drain (a restarted writer)
    const d = drain(store, { sink, storeId: 'd', logger: quiet });
    const outcome = await Promise.race([
      d.waitForApplied(5).then(() => 'applied'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 2 s'), 2000)),
    ]);
    expect(outcome).toBe('applied');
    await d.stop();
    await store.close();
  });

  it('ships every entry in runs of about batchBytes and consumes only what the sink reported durable', async () => {
    const store = await storeWith(30);
    const { api, consumed } = recording(store);
    const sink = new MemorySink();
    const d = drain(api, { sink, storeId: 'd', batchBytes: 100, logger: quiet });
    await d.waitForApplied(30);
    expect(sink.rows).toBe(30);
    expect(sink.calls.length).toBeGreaterThan(3); // small batchBytes: many runs
    expect(sink.calls.every((c, i) => i === 0 || c.first === sink.calls[i - 1]!.last + 1)).toBe(true);
    await d.stop();
    expect(consumed[0]).toBe(0); // the pin at start
    expect(consumed.length).toBeGreaterThan(1);
    expect(consumed.slice(1).every((p) => sink.calls.some((c) => c.last === p))).toBe(true);
    expect(Math.max(...consumed)).toBe(30);
    await store.close();
  });

  it('follows new puts, and a sink that fails is retried with backoff; failures are counted', async () => {
    const store = await storeWith(5);
    const sink = new MemorySink();
    sink.failNext = 3;
    const d = drain(store, { sink, storeId: 'd', retry: fast, logger: quiet });
    await d.waitForApplied(5);
    for (let i = 5; i < 10; i++) await store.put([{ id: i, name: null }]);
    await d.waitForApplied(10);
    const stats = await d.drainStats();
    expect(stats).toMatchObject({
      failureCount: 3,
      consecutiveFailures: 0,
      appliedPosition: 10,
      lagEntries: 0,
      lagBytes: 0,
      state: 'running',
    });
    expect(stats.lastError).toMatchObject({ code: 'IOError', message: 'sink down' });
    expect(sink.rows).toBe(10);
    await d.stop();
    expect((await d.drainStats()).state).toBe('stopped');
    await store.close();
  });

  it('reports lag while the sink is down, and nothing is consumed meanwhile', async () => {
    const store = await storeWith(8);
    const { api, consumed } = recording(store);
    const sink = new MemorySink();
    sink.failNext = Number.POSITIVE_INFINITY;
    const d = drain(api, { sink, storeId: 'd', retry: fast, logger: quiet });
    await new Promise((r) => setTimeout(r, 50));
    const stats = await d.drainStats();
    expect(stats.lagEntries).toBe(8);
    expect(stats.lagBytes).toBeGreaterThan(0);
    expect(stats.failureCount).toBeGreaterThan(1);
    expect(consumed).toEqual([0]); // only the pin at start
    sink.failNext = 0;
    await d.waitForApplied(8);
    await d.stop();
    await store.close();
  });

  it('while the sink is down the drain holds at most two runs of entries: it stops pulling from tail', async () => {
    const store = await storeWith(200);
    let pulled = 0;
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'tail') {
          return async function* (from: number, opts: { follow?: boolean; signal?: AbortSignal }) {
            for await (const e of target.tail(from, opts)) {
              pulled += 1;
              yield e;
            }
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const sink = new MemorySink();
    sink.failNext = Number.POSITIVE_INFINITY;
    let smallest = Number.POSITIVE_INFINITY;
    for await (const e of store.tail(1))
      smallest = Math.min(
        smallest,
        e.data.batches.reduce((n, b) => n + estimateBatchBytes(b), 0),
      );
    const d = drain(counting, { sink, storeId: 'd', batchBytes: 10 * smallest, retry: fast, logger: quiet });
    await until(async () => (await d.drainStats()).failureCount >= 5);
    expect(pulled).toBeGreaterThanOrEqual(10);
    expect(pulled).toBeLessThanOrEqual(20); // two runs of at most 10 entries each
    sink.failNext = 0;
    await d.waitForApplied(200);
    await d.stop();
    await store.close();
  });

  it('a refusal (InvalidArgument) ends the drain: done and waitForApplied reject with it', async () => {
    const store = await storeWith(3);
    const sink = new MemorySink();
    sink.applied = 0;
    sink.apply = async () => {
      throw new MemWalError('InvalidArgument', 'schema: nope');
    };
    const d = drain(store, { sink, storeId: 'd', retry: fast, logger: quiet });
    await expect(d.done).rejects.toMatchObject({ code: 'InvalidArgument', message: 'schema: nope' });
    await expect(d.waitForApplied(3)).rejects.toMatchObject({ code: 'InvalidArgument' });
    expect((await d.drainStats()).state).toBe('failed');
    await store.close();
  });

  it('starts after the sink’s applied position, and refuses a sink that is ahead of the store', async () => {
    const store = await storeWith(6);
    const sink = new MemorySink();
    sink.applied = 4;
    const d = drain(store, { sink, storeId: 'd', logger: quiet });
    await d.waitForApplied(6);
    expect(sink.calls[0]!.first).toBe(5);
    await d.stop();
    sink.applied = 50;
    await expect(drain(store, { sink, storeId: 'd', logger: quiet }).done).rejects.toMatchObject({
      code: 'InvalidArgument',
      message: /beyond the store/,
    });
    await store.close();
  });

  it('ends when the store closes, after shipping what it read', async () => {
    const store = await storeWith(4);
    const sink = new MemorySink();
    const d = drain(store, { sink, storeId: 'd', logger: quiet });
    await d.waitForApplied(4);
    await store.close();
    await d.done;
    expect((await d.drainStats()).state).toBe('stopped');
  });

  it('a store that poisons ends the drain with its error, after shipping what it had read', async () => {
    const storage = new FaultInjectingStorage();
    const store = await MemWal.open({
      name: 'p',
      schema,
      primaryKey: ['id'],
      storage,
      logger: quiet,
      walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 20 },
    });
    for (let i = 0; i < 3; i++) await store.put([{ id: i, name: null }]);
    const sink = new MemorySink();
    const d = drain(store, { sink, storeId: 'p', logger: quiet });
    await d.waitForApplied(3);
    storage.failNext('walAppend', Number.POSITIVE_INFINITY);
    await expect(store.put([{ id: 9, name: null }])).rejects.toMatchObject({ code: 'IOError' });
    await expect(d.done).rejects.toMatchObject({ code: 'IOError' });
    expect((await d.drainStats()).state).toBe('failed');
    expect(sink.applied).toBe(3);
    await store.abort();
  });

  it('pins the WAL from its start, and refuses with Truncated a store that no longer holds the sink’s next entry', async () => {
    const storage = new MemoryStorage();
    const open = () => MemWal.open({ name: 'w', schema, storage, enableMemtable: false, logger: quiet });
    let store = await open();
    for (let i = 0; i < 4; i++) await store.put([{ id: i, name: null }]);
    await store.close();
    store = await open(); // a new epoch writes a new WAL segment
    for (let i = 4; i < 8; i++) await store.put([{ id: i, name: null }]);
    await store.markConsumed(5); // another consumer took 1..5: the first segment goes
    expect((await store.walStats()).oldestPosition).toBeGreaterThan(1);
    const d = drain(store, { sink: new MemorySink(), storeId: 'w', logger: quiet });
    await expect(d.done).rejects.toMatchObject({ code: 'Truncated', message: /oldest retained WAL entry/ });

    await store.close();
    const empty = await storeWith(0);
    const { api, consumed } = recording(empty);
    const fresh = drain(api, { sink: new MemorySink(), storeId: 'd', logger: quiet });
    await new Promise((r) => setTimeout(r, 20));
    expect(consumed).toEqual([0]); // markConsumed(0): the store keeps every entry until the sink has it
    await fresh.stop();
    await empty.close();
  });

  it('a drain started while the sink is unreachable pins the WAL at once: entries written and flushed meanwhile are all shipped when the sink comes back', async () => {
    const store = await MemWal.open({
      name: 'off',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      maxMemtableRows: 1000,
      logger: quiet,
    });
    const sink = new MemorySink();
    let offline = true;
    const offlineSink: DrainSink = {
      appliedPosition: async () => {
        if (offline) throw new MemWalError('IOError', 'offline');
        return sink.appliedPosition();
      },
      apply: (id, entries) => sink.apply(id, entries),
    };
    const d = drain(store, { sink: offlineSink, storeId: 'off', retry: fast, logger: quiet });
    const name = 'x'.repeat(200);
    let id = 0;
    // Past one WAL segment (8 MiB), every row flushed: retention may remove the first segment.
    while ((await store.walStats()).oldestPosition === 1 && id < 200_000) {
      await store.put(Array.from({ length: 2000 }, () => ({ id: id++, name })));
      await store.waitForFlushDrain();
    }
    const { position } = await store.sync();
    offline = false;
    await d.waitForApplied(position);
    expect(sink.rows).toBe(id);
    await d.stop();
    await store.close();
  });

  it('stop() settles while an in-process sink’s apply or appliedPosition never answers', async () => {
    const store = await storeWith(3);
    const never = new Promise<never>(() => undefined);
    const within = (p: Promise<unknown>) => Promise.race([p.then(() => 'settled'), new Promise((r) => setTimeout(() => r('hung'), 2000))]);
    const sink: DrainSink = { appliedPosition: async () => 0, apply: () => never };
    const shipping = drain(store, { sink, storeId: 'd', logger: quiet });
    await until(async () => (await shipping.drainStats()).shippedPosition > 0);
    expect(await within(shipping.stop())).toBe('settled');
    const asking = drain(store, { sink: { appliedPosition: () => never, apply: () => never }, storeId: 'd', logger: quiet });
    expect(await within(asking.stop())).toBe('settled');
    await store.close();
  });

  it('rejects bad options at once with InvalidArgument', async () => {
    const store = await storeWith(0);
    const sink = new MemorySink();
    expect(() => drain(store, { storeId: 'd' })).toThrow(/exactly one of endpoint and sink/);
    expect(() => drain(store, { sink, endpoint: 'http://x/drain/d' })).toThrow(/exactly one/);
    expect(() => drain(store, { sink })).toThrow(/storeId/);
    expect(() => drain(store, { sink, storeId: 'no spaces' })).toThrow(/storeId/);
    expect(() => drain(store, { sink, storeId: 'd', batchBytes: 0 })).toThrow(/batchBytes/);
    await store.close();
  });
});

describe('drain() to an endpoint', () => {
  /** A fetch double that applies like MemorySink and answers like the example server. */
  function endpoint(sink: MemorySink, answer?: (n: number) => Response | undefined) {
    let n = 0;
    const requests: { method: string; headers: Record<string, string> }[] = [];
    const fetch = async (_url: string, init: RequestInit): Promise<Response> => {
      const headers = init.headers as Record<string, string>;
      requests.push({ method: init.method!, headers });
      const override = answer?.(n++);
      if (override) return override;
      if (init.method === 'GET') return Response.json({ appliedPosition: sink.applied });
      const meta = parseDrainHeaders((h) => headers[h]);
      sink.applied = Math.max(sink.applied, meta.lastPosition);
      return Response.json({ appliedPosition: sink.applied });
    };
    return { fetch, requests };
  }

  it('runs of narrow rows fit the default 8 MiB body limit: a store of Bool rows drains with the default batchBytes', async () => {
    const flags = new Schema([new Field('on', new Bool(), false)]);
    const store = await MemWal.open({ name: 'flags', schema: flags, storage: new MemoryStorage(), logger: quiet });
    let position = 0;
    for (let i = 0; i < 10; i++) ({ position } = await store.put(Array.from({ length: 150_000 }, (_, k) => ({ on: k % 2 === 0 }))));
    const sink = new MemorySink();
    const limit = 8 * 1024 * 1024; // the example server's default body limit
    // The first shipment is answered 503 once, so that the reader queues the other entries meanwhile.
    const { fetch } = endpoint(sink, (n) => (n === 1 ? Response.json({ code: 'Locked' }, { status: 503 }) : undefined));
    const limited = async (url: string, init: RequestInit): Promise<Response> => {
      const size = (init.body as Uint8Array | undefined)?.byteLength ?? 0;
      if (size > limit) return Response.json({ code: 'PayloadTooLarge', message: `body above ${limit} bytes` }, { status: 413 });
      return fetch(url, init);
    };
    const d = drain(store, { endpoint: 'https://lance.example/drain/flags', fetch: limited, retry: fast, logger: quiet });
    await d.waitForApplied(position);
    await d.stop();
    await store.close();
  });

  it('sends the bearer token and the wire headers; the store id defaults to the last path segment', async () => {
    const store = await storeWith(3);
    const sink = new MemorySink();
    const { fetch, requests } = endpoint(sink);
    const d = drain(store, { endpoint: 'https://lance.example/drain/tab-7', token: 's3cret', fetch, logger: quiet });
    await d.waitForApplied(3);
    expect((await d.drainStats()).storeId).toBe('tab-7');
    const post = requests.find((r) => r.method === 'POST')!;
    expect(post.headers.authorization).toBe('Bearer s3cret');
    expect(post.headers[DRAIN_HEADERS.firstPosition]).toBe('1');
    expect(post.headers['content-type']).toBe('application/vnd.apache.arrow.stream');
    // The store's incarnation goes with the GET and every POST, so the sink can tell a store created again under the id.
    const incarnation = (await store.walStats()).incarnation;
    expect(incarnation).toMatch(/^[0-9a-f]{32}$/);
    expect(requests.map((r) => r.headers[DRAIN_HEADERS.incarnation])).toEqual(requests.map(() => incarnation));
    await d.stop();
    await store.close();
  });

  it('abandons a request that never answers after requestTimeoutMs, and the retry applies it', async () => {
    const store = await storeWith(3);
    const sink = new MemorySink();
    let hung = 0;
    const inner = endpoint(sink);
    // The first POST is accepted and never answered (a server that died mid-request, a lost reply).
    const fetch = (url: string, init: RequestInit): Promise<Response> => {
      if (init.method === 'POST' && hung++ === 0) return new Promise<Response>(() => {});
      return inner.fetch(url, init);
    };
    const d = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch, requestTimeoutMs: 50, retry: fast, logger: quiet });
    await d.waitForApplied(3);
    expect((await d.drainStats()).failureCount).toBe(1);
    await d.stop();
    expect(() => drain(store, { endpoint: 'http://x/drain/d', requestTimeoutMs: 0 })).toThrow(/requestTimeoutMs/);
    await store.close();
  });

  it('retries 5xx and network errors, and ends on a 4xx refusal', async () => {
    const store = await storeWith(3);
    const sink = new MemorySink();
    const flaky = endpoint(sink, (n) => {
      if (n === 1) return new Response('bad gateway', { status: 502 });
      if (n === 2) throw new TypeError('fetch failed');
      return undefined;
    });
    const d = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch: flaky.fetch, retry: fast, logger: quiet });
    await d.waitForApplied(3);
    expect((await d.drainStats()).failureCount).toBe(2);
    await d.stop();

    const refusing = endpoint(new MemorySink(), (n) =>
      n === 1 ? Response.json({ code: 'Forbidden', message: 'not yours' }, { status: 403 }) : undefined,
    );
    const refused = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch: refusing.fetch, retry: fast, logger: quiet });
    await expect(refused.done).rejects.toMatchObject({
      code: 'InvalidArgument',
      message: 'drain endpoint answered 403 Forbidden (the token is not for this store): not yours',
    });
    await store.close();
  });

  it('a redirect is not followed: the drain ends naming it, and the redirect’s target gets no request and no token', async () => {
    const base = Number(process.env.MEMWAL_TEST_PORT_BASE ?? 5290) + 21;
    const seen: string[] = [];
    const target = createServer((req, res) => {
      seen.push(`${req.method} ${req.headers.authorization}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"appliedPosition":0}');
    });
    const redirecting = createServer((_req, res) => res.writeHead(307, { location: `http://127.0.0.1:${base + 1}/drain/d` }).end());
    await Promise.all([
      new Promise<void>((resolve) => redirecting.listen(base, '127.0.0.1', resolve)),
      new Promise<void>((resolve) => target.listen(base + 1, '127.0.0.1', resolve)),
    ]);
    try {
      const store = await storeWith(1);
      const d = drain(store, { endpoint: `http://127.0.0.1:${base}/drain/d`, token: 'secret', retry: fast, logger: quiet });
      await expect(d.done).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: /answered 307 with a redirect, which a drain does not follow/,
      });
      expect(seen).toEqual([]);
      await store.close();
    } finally {
      await Promise.all([redirecting, target].map((s) => new Promise((resolve) => s.close(resolve))));
    }
  });

  it('reads at most MAX_ANSWER_BYTES of an answer’s body, however much the endpoint sends', async () => {
    const store = await storeWith(1);
    let pulled = 0;
    /** An endpoint whose 401 or 503 answer is 16 MiB long: 64 KiB chunks, each made when read. */
    const endless = (status: number) => async (): Promise<Response> =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            pulled += 65_536;
            controller.enqueue(new Uint8Array(65_536).fill(0x20));
            if (pulled % (16 * 2 ** 20) === 0) controller.close();
          },
        }),
        { status },
      );
    const down = drain(store, {
      endpoint: 'http://127.0.0.1:1/drain/d',
      fetch: endless(503),
      retry: fast,
      requestTimeoutMs: 1000,
      logger: quiet,
    });
    await until(async () => (await down.drainStats()).failureCount >= 3);
    await down.stop();
    expect((await down.drainStats()).lastError!.message).toBe('drain endpoint answered 503 (the sink is unavailable)');
    const unauthorized = drain(store, {
      endpoint: 'http://127.0.0.1:1/drain/d',
      fetch: endless(401),
      retry: fast,
      requestTimeoutMs: 1000,
      logger: quiet,
    });
    await expect(unauthorized.done).rejects.toMatchObject({ code: 'InvalidArgument', message: /answered 401/ });
    expect(pulled).toBeLessThan(20 * 65_536); // before: read until the time limit, without bound
    await store.close();
  });

  it('two drains of one store racing: neither marks consumed past what it shipped itself, whatever the sink answers', async () => {
    const store = await storeWith(10);
    let applied = 0;
    let firstDone!: () => void;
    const bigDone = new Promise<void>((resolve) => (firstDone = resolve));
    /** A sink shared by both drains; `shipped` keeps what each handed it. */
    const sinkFor = (shipped: number[], wait: Promise<void> | undefined): DrainSink => ({
      appliedPosition: async () => applied,
      apply: async (_id, entries) => {
        shipped.push(entries[entries.length - 1]!.position);
        await wait; // the second drain's answers come after the first drain applied everything
        applied = Math.max(applied, entries[entries.length - 1]!.position);
        if (!wait) firstDone();
        return { appliedPosition: applied };
      },
    });
    const a = recording(store);
    const b = recording(store);
    const shippedA: number[] = [];
    const shippedB: number[] = [];
    const big = drain(a.api, { sink: sinkFor(shippedA, undefined), storeId: 'd', logger: quiet });
    const small = drain(b.api, { sink: sinkFor(shippedB, bigDone), storeId: 'd', batchBytes: 1, logger: quiet });
    await big.waitForApplied(10);
    await small.waitForApplied(10);
    await until(async () => (await small.drainStats()).consumedPosition >= 1);
    await Promise.all([big.stop(), small.stop()]);
    const maxOf = (xs: number[]) => Math.max(0, ...xs);
    // Each consume after its start's (0, or the position the sink had when it asked) stays within what that drain shipped.
    expect(maxOf(b.consumed.slice(2))).toBeLessThanOrEqual(maxOf(shippedB));
    expect(maxOf(a.consumed.slice(2))).toBeLessThanOrEqual(maxOf(shippedA));
    await store.close();
  });

  it('a refused token or shipment ends the drain with the reason in lastError, counted in failureCount', async () => {
    const store = await storeWith(3);
    const wrongToken = endpoint(new MemorySink(), () => Response.json({ code: 'Unauthorized', message: 'unknown token' }, { status: 401 }));
    const d = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', token: 'nope', fetch: wrongToken.fetch, retry: fast, logger: quiet });
    await expect(d.done).rejects.toMatchObject({ code: 'InvalidArgument' });
    expect(await d.drainStats()).toMatchObject({
      state: 'failed',
      failureCount: 1,
      lastError: {
        code: 'InvalidArgument',
        message: 'drain endpoint answered 401 Unauthorized (the bearer token is missing or unknown): unknown token',
      },
    });

    // A 400 for a shipment (the GET answered): terminal too, with the sink's reason.
    const badBody = endpoint(new MemorySink(), (n) =>
      n === 1
        ? Response.json({ code: 'InvalidArgument', message: 'column note: Int64 in the table, Utf8 here' }, { status: 400 })
        : undefined,
    );
    const refused = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch: badBody.fetch, retry: fast, logger: quiet });
    await expect(refused.done).rejects.toMatchObject({ code: 'InvalidArgument' });
    const stats = await refused.drainStats();
    expect(stats).toMatchObject({ state: 'failed', failureCount: 1, appliedPosition: 0 });
    expect(stats.lastError!.message).toBe(
      'drain endpoint answered 400 InvalidArgument (the sink refused the shipment as invalid): column note: Int64 in the table, Utf8 here',
    );
    await store.close();
  });

  it('quotes an endpoint only as a short printable message, and not at all with quoteEndpointMessages: false', async () => {
    const store = await storeWith(1);
    const noisy = () =>
      endpoint(
        new MemorySink(),
        () => Response.json({ code: '<b>evil</b>', message: `secret\n\u0000${'x'.repeat(3000)}`, extra: 'y'.repeat(500) }, { status: 400 }), // within MAX_ANSWER_BYTES
      );
    const quoted = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch: noisy().fetch, logger: quiet });
    await expect(quoted.done).rejects.toMatchObject({ code: 'InvalidArgument' });
    const message = (await quoted.drainStats()).lastError!.message;
    expect(message).toMatch(/^drain endpoint answered 400 \(the sink refused the shipment as invalid\): secret x+…$/);
    expect(message.length).toBeLessThan(250);
    expect(message).not.toContain('evil');

    const silent = drain(store, {
      endpoint: 'http://127.0.0.1:1/drain/d',
      fetch: noisy().fetch,
      quoteEndpointMessages: false,
      logger: quiet,
    });
    await expect(silent.done).rejects.toMatchObject({ code: 'InvalidArgument' });
    expect((await silent.drainStats()).lastError!.message).toBe('drain endpoint answered 400 (the sink refused the shipment as invalid)');

    // A 200 that is not a drain answer (an internal page behind the URL): named, never echoed.
    const page = endpoint(new MemorySink(), () => new Response('<html>internal admin page: token=abc</html>', { status: 200 }));
    const wrong = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch: page.fetch, retry: fast, logger: quiet });
    await until(async () => (await wrong.drainStats()).failureCount > 0);
    const lastError = (await wrong.drainStats()).lastError!;
    expect(lastError.message).toBe('drain endpoint answered 200 without an appliedPosition (not a memwal drain endpoint?)');
    await wrong.stop();
    await store.close();
  });

  it('a bad endpoint is refused at once, naming what is wrong with the URL', async () => {
    const store = await storeWith(0);
    const refused = (endpoint: string) => () => drain(store, { endpoint });
    expect(refused('ftp://x')).toThrow('drain: endpoint must be an http: or https: URL, got ftp: (ftp://x/)');
    expect(refused('lance.example/drain/d')).toThrow('drain: endpoint is not a URL: lance.example/drain/d');
    expect(refused('https://lance.example')).toThrow(
      /^drain: endpoint https:\/\/lance.example\/ names no store in its path \(expected …\/drain\/<storeId>/,
    );
    expect(refused('https://lance.example/drain/a%20b')).toThrow(/the last path segment of endpoint .* is not a store id/);
    expect(refused('https://user:pw@lance.example/drain/d')).toThrow(/must not hold credentials/);
    expect(refused('https://user:pw@lance.example/drain/d')).not.toThrow(/pw/);
    for (const bad of ['ftp://x', 'https://lance.example', 'https://lance.example/drain/a%20b'])
      expect(refused(bad)).not.toThrow(/storeId must be/);
    // With storeId given, the path may be anything the server routes.
    const d = drain(store, { endpoint: 'https://lance.example/ingest', storeId: 'd', fetch: () => new Promise(() => {}), logger: quiet });
    await d.stop();
    await store.close();
  });

  it('logs one line per state change, without stacks, at most one per 30 s but the last', async () => {
    const store = await storeWith(3);
    const lines: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => lines.push(args) };
    let failures = 20;
    const flaky = endpoint(new MemorySink(), (n) => {
      if (n > 0 && failures-- > 0) return new Response('', { status: 503 });
      if (n > 25) return Response.json({ code: 'Forbidden', message: 'revoked' }, { status: 403 });
      return undefined;
    });
    const d = drain(store, { endpoint: 'http://127.0.0.1:1/drain/d', fetch: flaky.fetch, retry: fast, logger });
    await d.waitForApplied(3);
    expect((await d.drainStats()).failureCount).toBe(20);
    for (let i = 3; i < 10; i++) await store.put([{ id: i, name: null }]);
    await expect(d.done).rejects.toMatchObject({ code: 'InvalidArgument' });
    // 20 failures, a recovery and the end: the first failure and the end are logged, the
    // recovery (within 30 s of the failure) is counted in the last line.
    expect(lines).toEqual([
      ['memwal: drain of d failing (IOError: drain endpoint answered 503 (the sink is unavailable)); retrying with backoff'],
      [
        'memwal: drain of d stopped for good: InvalidArgument: drain endpoint answered 403 Forbidden (the token is not for this store): revoked (1 earlier state change not logged)',
      ],
    ]);
    await store.close();
  });
});

describe('drain metrics', () => {
  it('expose wal_drain_lag_entries and wal_drain_failures_total with HELP, TYPE and the store label, and pass promtool', async () => {
    const store = await storeWith(2);
    const sink = new MemorySink();
    sink.failNext = 1;
    const d = drain(store, { sink, storeId: 'tab-7.events', retry: fast, logger: quiet });
    await d.waitForApplied(2).catch(() => undefined);
    await d.stop();
    const text = await d.metrics();
    expect(text).toContain('# TYPE wal_drain_lag_entries gauge\n');
    expect(text).toContain('# TYPE wal_drain_failures_total counter\n');
    expect(text).toMatch(/^# HELP wal_drain_lag_entries \S/m);
    expect(text).toContain('wal_drain_failures_total{store="tab-7.events"} 1\n');
    const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 20_000 });
    if (promtool.error) {
      expect(process.env.CI, 'promtool is required in CI: apt-get install -y prometheus').toBeFalsy();
      return;
    }
    expect(promtool.status, `${promtool.stdout}${promtool.stderr}`).toBe(0);
    expect(`${promtool.stdout}${promtool.stderr}`.trim()).toBe('');
    await store.close();
  });
});
