// Stats from the page (SPEC §15.3): the worker publishes snapshots on the client's port ahead of
// its replies, and the client answers stats() and the accessors from the newest one without a
// round trip; onStats pushes; maxWaitMsSinceLast gathers every published interval.

import { afterEach, describe, expect, it } from 'vitest';
import type { StatsSnapshot } from '../metrics/stats.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import type { MemWalClient, WorkerLike } from './client.js';
import { STATS_CHECK_MS } from './host.js';
import { openMemWal, type OpenMemWalOptions } from './open-memwal.js';
import type { HostEvent } from './protocol.js';
import { channelWorker, quiet, rows, schema, storeName } from './rpc.test-util.js';
import type { ClientLink, LinkSink, Remote } from './worker-link.js';
import { MemWalClient as Client } from './client.js';

const clients: MemWalClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.abort()));
});

async function open(worker: WorkerLike, extra: Partial<OpenMemWalOptions> = {}): Promise<MemWalClient> {
  const c = await openMemWal({ name: storeName(), schema, primaryKey: ['id'], storage: 'memory', logger: quiet, worker, ...extra });
  clients.push(c);
  return c;
}

const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The comlink method names the client calls while `run` runs. */
async function calledMethods(run: () => Promise<unknown>): Promise<string[]> {
  const proto = MessagePort.prototype as unknown as { postMessage: (m: unknown, t?: unknown) => void };
  const original = proto.postMessage;
  const seen: string[] = [];
  proto.postMessage = function (this: MessagePort, m: unknown, t?: unknown) {
    const msg = m as { type?: string; path?: string[] };
    if (msg?.type === 'APPLY' && msg.path) seen.push(msg.path.join('.'));
    return original.call(this, m, t);
  };
  try {
    await run();
  } finally {
    proto.postMessage = original;
  }
  return seen;
}

describe('stats from the page', () => {
  it('after the first call, stats() and every accessor answer without calling the worker', async () => {
    const c = await open(channelWorker());
    await c.put(rows(1, 5));
    const first = await c.stats();
    expect(first.write.putCount).toBe(1);
    const calls = await calledMethods(async () => {
      for (let i = 0; i < 20; i++) {
        await c.stats();
        await c.memtableStats();
        await c.backpressureStats();
        await c.walStats();
        await c.writeStats();
        await c.compactionStats();
        await c.readStats();
        await c.storageStats();
      }
    });
    expect(calls).toEqual([]);
  });

  it("is never older than a reply already received: each put's effect shows in the next stats() (read-your-writes)", async () => {
    const c = await open(channelWorker(), { durableWrite: true });
    await c.stats(); // the worker publishes from now on
    for (let i = 1; i <= 30; i++) {
      await c.put(rows(i * 10, 2));
      const s = await c.stats();
      expect(s.write.putCount, `after put ${i}`).toBe(i);
      expect(s.memtable!.durableBatchCount, `after put ${i}`).toBe(i);
      expect((await c.memtableStats()).rowCount, `after put ${i}`).toBe(2 * i);
    }
  });

  it('a point read is answered without a snapshot ahead of it; its counters follow within the next check', async () => {
    const c = await open(channelWorker());
    await c.put(rows(1, 20));
    await c.stats(); // the worker publishes from now on
    const proto = MessagePort.prototype as unknown as { postMessage: (m: unknown, t?: unknown) => void };
    const original = proto.postMessage;
    let snapshots = 0;
    proto.postMessage = function (this: MessagePort, m: unknown, t?: unknown) {
      if ((m as { memwalEvent?: string })?.memwalEvent === 'stats') snapshots++;
      return original.call(this, m, t);
    };
    const t0 = performance.now();
    try {
      for (let i = 0; i < 100; i++) expect((await c.get({ id: 1 + (i % 20) }))?.id).toBe(1 + (i % 20));
    } finally {
      proto.postMessage = original;
    }
    // Only the timer's checks publish (one per STATS_CHECK_MS at most), not one per get.
    expect(snapshots).toBeLessThanOrEqual(Math.ceil((performance.now() - t0) / STATS_CHECK_MS) + 1);
    expect(snapshots).toBeLessThan(100);
    await tick(STATS_CHECK_MS * 4);
    expect((await c.readStats()).gets).toBe(100);
    // A write still publishes ahead of its reply (read-your-writes above).
    await c.put(rows(100, 1));
    expect((await c.stats()).write.putCount).toBe(2);
  });

  it('a backpressure wait between two pushes shows in the next push, through the worker', async () => {
    const fs = new FaultInjectingStorage();
    const c = await open(channelWorker({ resolveStorage: () => fs }), { maxUnflushedMemtableBytes: 4_000, maxMemtableBytes: 1_000_000 });
    const pushes: StatsSnapshot[] = [];
    const stop = c.onStats((s) => pushes.push(s), { intervalMs: 500 });
    const deadline = Date.now() + 5000;
    while (pushes.length === 0 && Date.now() < deadline) await tick(5);
    expect(pushes).toHaveLength(1);
    const release = fs.hold('tableWrite');
    await c.put(rows(1, 100));
    const blocked = c.put(rows(200, 1));
    await tick(80);
    release();
    await blocked;
    const before = pushes.length;
    while (pushes.length === before && Date.now() < deadline + 2000) await tick(5);
    const shown = pushes.slice(before)[0]!;
    expect(shown.backpressure.activeCount).toBe(0);
    expect(shown.backpressure.totalCount).toBe(1);
    expect(shown.backpressure.maxWaitMsSinceLast).toBeGreaterThanOrEqual(50);
    stop();
  });
});

/** A snapshot with the given backpressure figures. */
function snapshot(takenAt: number, bp: Partial<StatsSnapshot['backpressure']> = {}): StatsSnapshot {
  return {
    takenAt,
    store: 'fake',
    mode: 'wal-only',
    state: 'open',
    unflushedBytes: 0,
    budgetBytes: 1,
    backpressure: {
      totalCount: 0,
      totalWaitMs: 0,
      activeCount: 0,
      activeWaitMs: 0,
      abortedCount: 0,
      abortedWaitMs: 0,
      cause: null,
      maxWaitMsSinceLast: 0,
      longestActiveWaitMs: 0,
      startedCount: 0,
      ...bp,
    },
    wal: { nextPosition: 1, oldestPosition: 1, retainedBytes: 0, bytesWritten: 0, entriesWritten: 0, tornTailBytes: 0 },
    write: {
      putCount: 0,
      putRows: 0,
      putTimeMs: 0,
      walAppendCount: 0,
      walAppendTimeMs: 0,
      walAppendRetries: 0,
      flushCount: 0,
      flushRows: 0,
      flushBytes: 0,
      flushTimeMs: 0,
      flushFailureCount: 0,
      lastFlushMs: 0,
      replayedEntries: 0,
      replayedRows: 0,
      replayTimeMs: 0,
    },
    storage: { tableFileCount: 0, tableFileBytes: 0, storeBytes: 0 },
    indexes: [],
  };
}

/** A client over a link whose host events the test posts itself. */
function fakeClient(): { client: MemWalClient; post(e: HostEvent): void; statsCalls: number } {
  let sink: LinkSink | undefined;
  const state = { statsCalls: 0 };
  const remote = {
    stats: async () => {
      state.statsCalls++;
      return snapshot(1);
    },
  } as unknown as Remote;
  const link: ClientLink = { remote, role: () => 'leader', start: (s) => (sink = s), end: async () => undefined };
  const client = new Client(link, 'fake', quiet, {});
  return {
    client,
    post: (e) => sink!.event(e),
    get statsCalls() {
      return state.statsCalls;
    },
  };
}

describe('maxWaitMsSinceLast on the page', () => {
  it('gathers the longest wait of every snapshot published since the reader last got one, per reader', async () => {
    const f = fakeClient();
    const pushes: StatsSnapshot[] = [];
    f.client.onStats((s) => pushes.push(s), { intervalMs: 60_000 });
    await tick(10);
    expect(f.statsCalls).toBe(1); // no snapshot yet: asked once
    expect(pushes).toHaveLength(1);
    // Three publications between two reads: a 400 ms wait ended inside the interval, then none.
    f.post({ memwalEvent: 'stats', stats: snapshot(2, { totalCount: 1, totalWaitMs: 400, maxWaitMsSinceLast: 400, startedCount: 1 }) });
    f.post({ memwalEvent: 'stats', stats: snapshot(3, { totalCount: 1, totalWaitMs: 400, startedCount: 1 }) });
    f.post({ memwalEvent: 'stats', stats: snapshot(4, { totalCount: 1, totalWaitMs: 400, startedCount: 1 }) });
    const pulled = await f.client.stats();
    expect(pulled.takenAt).toBe(4);
    expect(pulled.backpressure.maxWaitMsSinceLast).toBe(400);
    expect((await f.client.stats()).backpressure.maxWaitMsSinceLast).toBe(0); // its interval restarted
    expect(f.statsCalls).toBe(1); // answered from the publications
    // A wait in progress shows by its elapsed time.
    f.post({
      memwalEvent: 'stats',
      stats: snapshot(5, { activeCount: 1, activeWaitMs: 70, longestActiveWaitMs: 70, maxWaitMsSinceLast: 70 }),
    });
    expect((await f.client.stats()).backpressure.maxWaitMsSinceLast).toBe(70);
    expect((await f.client.stats()).backpressure.maxWaitMsSinceLast).toBe(70);
    await f.client.abort();
  });

  it("an onStats listener's interval is its own: a stats() call does not take its wait away", async () => {
    const f = fakeClient();
    const pushes: StatsSnapshot[] = [];
    f.client.onStats((s) => pushes.push(s), { intervalMs: 50 });
    await tick(10);
    f.post({ memwalEvent: 'stats', stats: snapshot(2, { maxWaitMsSinceLast: 250 }) });
    expect((await f.client.stats()).backpressure.maxWaitMsSinceLast).toBe(250);
    const before = pushes.length;
    const deadline = Date.now() + 3000;
    while (pushes.length === before && Date.now() < deadline) await tick(5);
    expect(pushes[before]!.backpressure.maxWaitMsSinceLast).toBe(250);
    await f.client.abort();
    const atEnd = pushes.length;
    await tick(120);
    expect(pushes.length).toBe(atEnd); // the client ended: no more pushes
  });
});
