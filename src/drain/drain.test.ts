// drain() against sinks and endpoints that misbehave on purpose: consumption follows only what
// the sink reported durable, failures back off and are counted, refusals end the drain, and
// the metrics pass promtool. Stores are in-memory; the Lance side is tested in src/lance/.

import { spawnSync } from 'node:child_process';
import { Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal } from '../core/memwal.js';
import type { MemWalApi, WalEntry } from '../core/stats.js';
import { MemWalError } from '../errors.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { type DrainSink, drain } from './drain.js';
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
    await expect(refused.done).rejects.toMatchObject({ code: 'InvalidArgument', message: 'drain endpoint answered 403: not yours' });
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
