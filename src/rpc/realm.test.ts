// Same-realm reopen (realm.ts): an openMemWal of a store this page already opens joins that open,
// reference-counted, instead of starting a second worker that would wait on the first's lock.

import { Field, Int32, Schema } from 'apache-arrow';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import type { MemWalClient } from './client.js';
import { openMemWal, type OpenMemWalOptions } from './open-memwal.js';
import { quiet, rejection, rows, schema, storeName, stubGlobalWorker } from './rpc.test-util.js';

let stub: ReturnType<typeof stubGlobalWorker> | undefined;
const clients: MemWalClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.abort()));
  stub?.restore();
  stub = undefined;
});

/** Workers as memwal starts them (a fake global Worker), all over one MemoryStorage. */
function startedWorkers(storage = new MemoryStorage()): ReturnType<typeof stubGlobalWorker> {
  stub = stubGlobalWorker({ resolveStorage: () => storage });
  return stub;
}

function open(name: string, extra: Partial<OpenMemWalOptions> = {}, hooks = {}): Promise<MemWalClient> {
  const p = openMemWal({ name, schema, primaryKey: ['id'], storage: 'memory', logger: quiet, workerUrl: 'w.js', ...extra }, hooks);
  p.then(
    (c) => clients.push(c),
    () => undefined,
  );
  return p;
}

describe('openMemWal of a store already open in this page', () => {
  it('joins the open one at once (no second worker, no lock wait: lockTimeoutMs 0 would fail Locked otherwise)', async () => {
    const workers = startedWorkers();
    const name = storeName('join');
    const a = await open(name);
    await a.put(rows(1, 3));
    const states: string[] = [];
    const b = await open(name, { lockTimeoutMs: 0 }, { onStateChange: (s: string) => states.push(s) });
    expect(workers.started).toHaveLength(1);
    expect(states).toEqual(['open']);
    expect(b.writerState).toBe('open');
    expect((await b.get({ id: 2 }))?.name).toBe('v2');
    await b.put(rows(10, 1));
    expect((await a.get({ id: 10 }))?.name).toBe('v10');
  });

  it("an open with steal does not join: it starts its own worker, fences the page's open, and later opens join it", async () => {
    const workers = startedWorkers();
    const name = storeName('steal');
    const a = await open(name);
    await a.put(rows(1, 2));
    const thief = await open(name, { steal: true, maxMemtableBytes: 1 << 20 });
    expect(workers.started).toHaveLength(2);
    expect((await thief.get({ id: 2 }))?.name).toBe('v2');
    await expect.poll(() => a.writerState).toBe('fenced');
    const c = await open(name, { maxMemtableBytes: 1 << 20 });
    expect(workers.started).toHaveLength(2);
    await c.put(rows(5, 1));
    expect((await thief.get({ id: 5 }))?.name).toBe('v5');
  });

  it('opens started together share one worker and one open', async () => {
    const workers = startedWorkers();
    const name = storeName('together');
    const [a, b, c] = await Promise.all([open(name), open(name), open(name)]);
    expect(workers.started).toHaveLength(1);
    await a.put(rows(1, 1));
    expect((await c.get({ id: 1 }))?.name).toBe('v1');
    expect(b.writerState).toBe('open');
  });

  it('the store stays open until the last close(); then it is closed and a new open opens it afresh', async () => {
    const storage = new MemoryStorage();
    const workers = startedWorkers(storage);
    const name = storeName('refs');
    const a = await open(name);
    const b = await open(name);
    await a.put(rows(1, 2));
    await a.close();
    expect(a.writerState).toBe('closed');
    expect((await rejection(a.get({ id: 1 }))).code).toBe('Closed');
    expect(workers.started[0]!.terminated).toBe(false);
    await b.put(rows(3, 1));
    expect((await b.scan()).numRows).toBe(3);
    await b.close();
    expect(workers.started[0]!.terminated).toBe(true);
    const c = await open(name, { lockTimeoutMs: 0 });
    expect(workers.started).toHaveLength(2);
    expect((await c.scan()).numRows).toBe(3);
  });

  it('React StrictMode: open → close → open, the close landing after the second open began, keeps one store open', async () => {
    const workers = startedWorkers();
    const name = storeName('strict');
    const first = open(name);
    const second = open(name);
    await (await first).close();
    const db = await second;
    await db.put(rows(1, 1));
    expect((await db.get({ id: 1 }))?.name).toBe('v1');
    expect(workers.started).toHaveLength(1);
    expect(workers.started[0]!.terminated).toBe(false);
  });

  it('abort() of one handle lets go of that handle only; the last abort aborts the store', async () => {
    const workers = startedWorkers();
    const name = storeName('abort');
    const a = await open(name);
    const b = await open(name);
    await a.abort();
    expect((await rejection(a.put(rows(1, 1)))).code).toBe('Closed');
    await b.put(rows(1, 1));
    expect(workers.started[0]!.terminated).toBe(false);
    await b.abort();
    expect(workers.started[0]!.terminated).toBe(true);
  });

  it('other options than the open store’s are refused InvalidArgument naming the option, not joined', async () => {
    startedWorkers();
    const name = storeName('differ');
    const a = await open(name);
    const other = new Schema([new Field('id', new Int32(), false)]);
    const bySchema = await rejection(open(name, { schema: other }));
    expect(bySchema.code).toBe('InvalidArgument');
    expect(bySchema.message).toMatch(/^option schema: store .* is already open in this page/);
    expect((await rejection(open(name, { primaryKey: [] }))).message).toMatch(/^option primaryKey/);
    expect((await rejection(open(name, { durableWrite: false }))).message).toMatch(/^option durableWrite/);
    expect((await rejection(open(name, { workerUrl: 'other.js' }))).message).toMatch(/^option workerUrl/);
    // What only governs waiting for the lock may differ (a steal does not join: test above).
    const b = await open(name, { lockTimeoutMs: 5, persist: false });
    await b.put(rows(1, 1));
    expect((await a.get({ id: 1 }))?.name).toBe('v1');
  });

  it('a failed first open fails every open that joined it, and the next open starts afresh', async () => {
    const workers = startedWorkers();
    const name = storeName('fail');
    await (await open(name)).close();
    // The store was made with `id` as its key: an open keyed on `name` fails in the worker.
    const [x, y] = await Promise.all([rejection(open(name, { primaryKey: ['name'] })), rejection(open(name, { primaryKey: ['name'] }))]);
    expect(x.code).toBe('InvalidArgument');
    expect(y.code).toBe('InvalidArgument');
    expect(workers.started).toHaveLength(2);
    expect(workers.started[1]!.terminated).toBe(true);
    const ok = await open(name, { lockTimeoutMs: 0 });
    expect(ok.writerState).toBe('open');
  });

  it('a worker the app passes hosts its own opens: one opened on another worker is not joined (it waits for the lock)', async () => {
    const workers = startedWorkers();
    const name = storeName('own');
    await open(name);
    const w = workers.started[0]!;
    const onOwn = await rejection(
      openMemWal({ name, schema, primaryKey: ['id'], storage: 'memory', logger: quiet, worker: w, lockTimeoutMs: 0 }),
    );
    expect(onOwn.code).toBe('Locked');
  });
});
