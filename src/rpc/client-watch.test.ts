// MemWalClient.watch over a MessageChannel host: the worker matches commits to watches and posts
// one message per affected watch per commit group; unsubscribe, abort and close release the
// worker-side watch; a result older than one delivered is never delivered.

import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import type { MemWalClient } from './client.js';
import { openMemWal } from './open-memwal.js';
import { channelWorker, quiet, rows, schema, storeName, stubGlobalWorker } from './rpc.test-util.js';

const clients: MemWalClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.abort()));
});

async function open(extra: { indexes?: Record<string, { column: string }> } = {}): Promise<MemWalClient> {
  const c = await openMemWal({
    name: storeName('watch'),
    schema,
    primaryKey: ['id'],
    ...extra,
    storage: 'memory',
    logger: quiet,
    worker: channelWorker(),
  });
  clients.push(c);
  return c;
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Count the `watch` events the host posts (to any port) while the test runs. */
function countWatchEvents(): { count(): number; restore(): void } {
  const proto = MessagePort.prototype as unknown as { postMessage: (m: unknown, t?: unknown) => void };
  const original = proto.postMessage;
  let n = 0;
  proto.postMessage = function (this: MessagePort, m: unknown, t?: unknown) {
    if ((m as { memwalEvent?: string } | null)?.memwalEvent === 'watch') n++;
    return original.call(this, m, t);
  };
  return { count: () => n, restore: () => (proto.postMessage = original) };
}

type Row = { id: number; name: string } | undefined;

describe('MemWalClient.watch', () => {
  it('delivers the result at once and after each commit writing a watched key; writes elsewhere post nothing to the page', async () => {
    const db = await open();
    await db.put(rows(1, 5));
    const spy = countWatchEvents();
    try {
      const got: Row[][] = [];
      db.watch({ getMany: [{ id: 2 }, { id: 4 }] }, (v) => got.push(v as Row[]));
      await until(() => got.length === 1);
      expect(got[0]!.map((r) => r?.name)).toEqual(['v2', 'v4']);
      for (let i = 0; i < 5; i++) await db.put(rows(100 + i, 1));
      await db.delete([{ id: 1 }]);
      await tick(30);
      expect(spy.count()).toBe(1);
      expect(got).toHaveLength(1);
      await db.put([{ id: 4, name: 'four' }]);
      await until(() => got.length === 2);
      expect(got[1]!.map((r) => r?.name)).toEqual(['v2', 'four']);
      expect(spy.count()).toBe(2);
    } finally {
      spy.restore();
    }
  });

  it('a scan watch delivers an Arrow table', async () => {
    const db = await open();
    const sizes: number[] = [];
    db.watch({ scan: { columns: ['id'] } }, (t) => sizes.push(t.numRows));
    await until(() => sizes.length === 1);
    await db.put(rows(1, 3));
    await until(() => sizes.at(-1) === 3);
    expect(sizes[0]).toBe(0);
  });

  it('unsubscribe and an aborted signal release the watch in the worker: nothing more is posted', async () => {
    const db = await open();
    const spy = countWatchEvents();
    try {
      const a: unknown[] = [];
      const b: unknown[] = [];
      const stop = db.watch({ get: { id: 1 } }, (v) => a.push(v));
      const controller = new AbortController();
      db.watch({ get: { id: 1 } }, (v) => b.push(v), { signal: controller.signal });
      await until(() => a.length === 1 && b.length === 1);
      stop();
      controller.abort();
      expect(db.watchCount).toBe(0);
      await db.sync(); // the unwatch calls went before this one
      await db.put(rows(1, 1));
      await db.sync();
      await tick(30);
      expect(spy.count()).toBe(2);
      expect(a).toHaveLength(1);
      expect(b).toHaveLength(1);
    } finally {
      spy.restore();
    }
  });

  it("close() of one of a page's clients releases its watches in the worker; the store's other client keeps its own", async () => {
    const stub = stubGlobalWorker({ resolveStorage: () => storage });
    const storage = new MemoryStorage();
    const spy = countWatchEvents();
    try {
      const name = storeName('watch-close');
      const opts = { name, schema, primaryKey: ['id'], storage: 'memory' as const, logger: quiet, workerUrl: 'w.js' };
      const a = await openMemWal(opts);
      const b = await openMemWal(opts);
      clients.push(b);
      const gotA: unknown[] = [];
      const gotB: unknown[] = [];
      a.watch({ get: { id: 1 } }, (v) => gotA.push(v));
      b.watch({ get: { id: 1 } }, (v) => gotB.push(v));
      await until(() => gotA.length === 1 && gotB.length === 1);
      await a.close();
      expect(a.watchCount).toBe(0);
      await b.put(rows(1, 1));
      await until(() => gotB.length === 2);
      await tick(30);
      expect(spy.count()).toBe(3);
      expect(gotA).toHaveLength(1);
      expect(() => a.watch({ get: { id: 1 } }, () => undefined)).toThrow(/closed/);
    } finally {
      spy.restore();
      stub.restore();
    }
  });

  it('never delivers a result older than one it delivered (a stale answer, as after a leader change, is dropped)', async () => {
    const db = await open();
    const got: { name: unknown; position: number }[] = [];
    db.watch({ get: { id: 1 } }, (v, info) => got.push({ name: (v as Row)?.name, position: info.position }));
    await until(() => got.length === 1);
    await db.put([{ id: 1, name: 'new' }]);
    await until(() => got.length === 2);
    const id = [...(db as unknown as { watches: { watches: Map<number, unknown> } }).watches.watches.keys()][0]!;
    const onEvent = (db as unknown as { onEvent(e: unknown): void }).onEvent.bind(db);
    onEvent({ memwalEvent: 'watch', id, position: got[1]!.position - 1, value: { id: 1, name: 'old' } });
    expect(got.map((g) => g.name)).toEqual([undefined, 'new']);
    onEvent({ memwalEvent: 'watch', id, position: got[1]!.position, value: { id: 1, name: 'same position' } });
    expect(got.at(-1)!.name).toBe('same position');
  });

  it('a spec naming no read throws InvalidArgument at once; a bad key reaches onError as final and drops the watch', async () => {
    const db = await open();
    expect(() => db.watch({ lookup: 'x' } as never, () => undefined)).toThrow(/spec must name one read/);
    const errors: [string, boolean][] = [];
    db.watch({ get: { nope: 1 } as never }, () => undefined, { onError: (e, final) => errors.push([e.code, final]) });
    await until(() => errors.length === 1);
    expect(errors[0]).toEqual(['InvalidArgument', true]);
    expect(db.watchCount).toBe(0);
  });
});

describe('MemWalClient.watch of an index query or count', () => {
  it('runs in the worker: a write outside the range posts nothing; a write into it and a returned row moving out re-run it', async () => {
    const db = await open({ indexes: { byName: { column: 'name' } } });
    await db.put(rows(1, 5)); // v1 .. v5
    const spy = countWatchEvents();
    try {
      const got: { name: string }[][] = [];
      const counts: number[] = [];
      db.watch({ query: 'byName', range: { gte: 'v2', lt: 'v4' } }, (v) => got.push(v as { name: string }[]));
      db.watch({ count: 'byName', prefix: 'v' }, (v) => counts.push(v as number));
      await until(() => got.length === 1 && counts.length === 1);
      expect(got[0]!.map((r) => r.name)).toEqual(['v2', 'v3']);
      expect(counts).toEqual([5]);
      const before = spy.count();
      await db.put([{ id: 9, name: 'x9' }]); // outside both ranges
      await db.sync();
      await tick(30);
      expect(spy.count()).toBe(before);
      await db.put([{ id: 7, name: 'v25' }]); // into both
      await until(() => got.length === 2 && counts.length === 2);
      expect(got[1]!.map((r) => r.name)).toEqual(['v2', 'v25', 'v3']);
      expect(counts[1]).toBe(6);
      await db.put([{ id: 3, name: 'z3' }]); // a returned (and counted) row moves out
      await until(() => got.length === 3 && counts.length === 3);
      expect(got[2]!.map((r) => r.name)).toEqual(['v2', 'v25']);
      expect(counts[2]).toBe(5);
    } finally {
      spy.restore();
    }
  });

  it('a spec naming no read, or two, throws InvalidArgument before anything is posted', async () => {
    const db = await open();
    expect(() => db.watch({ range: {} } as never, () => undefined)).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    expect(() => db.watch({ query: 'a', count: 'a' } as never, () => undefined)).toThrow(
      expect.objectContaining({ code: 'InvalidArgument' }),
    );
    expect(() => db.watch({ get: { id: 1 }, limit: 1 } as never, () => undefined)).toThrow(
      expect.objectContaining({ code: 'InvalidArgument' }),
    );
  });
});
