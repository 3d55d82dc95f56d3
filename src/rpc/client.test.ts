// MemWalClient against a host over a MessageChannel (and a real worker thread for deaths): the
// same results and errors as in-process, signals as messages, paged iterators, state events.

import { Field, List, RecordBatch, Schema, Struct, Table, vectorFromArray, Int32, Utf8 } from 'apache-arrow';
import { afterEach, describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import type { MemWalClient, WorkerLike } from './client.js';
import { openMemWal, type OpenMemWalOptions } from './open-memwal.js';
import { PAGE_MAX_ITEMS } from './host.js';
import {
  channelWorker,
  lateHostWorker,
  quiet,
  rejection,
  rows,
  schema,
  storeName,
  stubGlobalWorker,
  threadWorker,
} from './rpc.test-util.js';

const clients: MemWalClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.abort()));
});

async function open(worker: WorkerLike, extra: Partial<OpenMemWalOptions> = {}, hooks = {}): Promise<MemWalClient> {
  const c = await openMemWal({ name: storeName(), schema, primaryKey: ['id'], storage: 'memory', logger: quiet, worker, ...extra }, hooks);
  clients.push(c);
  return c;
}

async function until(cond: () => Promise<boolean> | boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Spy on MessagePort.postMessage while `run` runs: every message, with the sizes of the buffers it transfers. */
async function posted(run: () => Promise<unknown>): Promise<{ message: unknown; transferredBytes: number[] }[]> {
  const proto = MessagePort.prototype as unknown as { postMessage: (m: unknown, t?: unknown) => void };
  const original = proto.postMessage;
  const seen: { message: unknown; transferredBytes: number[] }[] = [];
  proto.postMessage = function (this: MessagePort, m: unknown, t?: unknown) {
    const buffers = (Array.isArray(t) ? t : []).filter((x): x is ArrayBuffer => x instanceof ArrayBuffer);
    seen.push({ message: m, transferredBytes: buffers.map((b) => b.byteLength) }); // before the transfer detaches them
    return original.call(this, m, t);
  };
  try {
    await run();
  } finally {
    proto.postMessage = original;
  }
  return seen;
}

/** Byte sizes of the ArrayBuffers transferred while `run` runs. */
async function transferredBytes(run: () => Promise<unknown>): Promise<number[]> {
  return (await posted(run)).flatMap((p) => p.transferredBytes);
}

/** The comlink method names called while `run` runs. */
async function calledMethods(run: () => Promise<unknown>): Promise<string[]> {
  return (await posted(run)).flatMap((p) => {
    const m = p.message as { type?: string; path?: string[] };
    return m?.type === 'APPLY' && m.path ? [m.path.join('.')] : [];
  });
}

describe('MemWalClient over a MessageChannel', () => {
  it("gets the store's storage ready as it connects, before the open arrives", async () => {
    const events: string[] = [];
    const storage = new MemoryStorage();
    const estimate = storage.estimate.bind(storage);
    storage.estimate = (name: string) => {
      events.push(`estimate ${name}`);
      return estimate(name);
    };
    const openStore = storage.openStore.bind(storage);
    storage.openStore = (name, options) => {
      events.push(`open ${name}`);
      return openStore(name, options);
    };
    const name = storeName();
    const c = await openMemWal({
      name,
      schema,
      primaryKey: ['id'],
      logger: quiet,
      worker: channelWorker({ resolveStorage: () => storage }),
    });
    clients.push(c);
    expect(events).toEqual([`estimate ${name}`, `open ${name}`]);
  });

  it("getMany: one message each way, rows in the caller's order, undefined for absent keys, errors with their codes", async () => {
    const c = await open(channelWorker());
    await c.put(rows(1, 5));
    await c.get({ id: 1 }); // the channel is warm
    let out: unknown;
    const messages = await posted(async () => {
      out = await c.getMany([{ id: 4 }, { id: 99 }, { id: 1 }, { id: 4 }]);
    });
    expect(out).toEqual([{ id: 4, name: 'v4' }, undefined, { id: 1, name: 'v1' }, { id: 4, name: 'v4' }]);
    expect(messages).toHaveLength(2);
    const e = await rejection(c.getMany([{ id: 1 }, { nope: 1 } as never]));
    expect(e).toBeInstanceOf(MemWalError);
    expect(e).toMatchObject({ code: 'InvalidArgument' });
    expect((e as Error).message).toContain('keys[1]');
  });

  it('puts rows, a Table and a RecordBatch, and reads them back through get and scan', async () => {
    const c = await open(channelWorker());
    const r1 = await c.put(rows(1, 3));
    expect(r1).toEqual({ rows: 3, position: 1, durable: true });
    const t = new Table({ id: vectorFromArray([10, 11], new Int32()), name: vectorFromArray(['t10', 't11'], new Utf8()) });
    await c.put(t);
    await c.put(t.batches[0]!.slice(0, 1));
    expect(await c.get({ id: 2 })).toEqual({ id: 2, name: 'v2' });
    expect(await c.get({ id: 99 })).toBeUndefined();
    const scanned = await c.scan();
    expect(scanned).toBeInstanceOf(Table);
    expect(scanned.numRows).toBe(5);
    expect(
      scanned
        .toArray()
        .map((r) => r.toJSON().id)
        .sort((a, b) => a - b),
    ).toEqual([1, 2, 3, 10, 11]);
  });

  it('a put stores the data as it was at the call: the caller may reuse its table or rows as soon as put() returns', async () => {
    const c = await open(channelWorker());
    const ids = Int32Array.from([1, 2]);
    const t = new Table({ id: vectorFromArray(ids), name: vectorFromArray(['a', 'b'], new Utf8()) });
    const rowsAfter = [{ id: 3, name: 'c' }];
    const puts = [c.put(t), c.put(rowsAfter)];
    // The caller reuses its buffers at once (no await): what it sent is what is stored.
    (t.getChild('id')!.data[0]!.values as Int32Array).set([7, 8]);
    rowsAfter[0]!.name = 'changed';
    rowsAfter.push({ id: 4, name: 'd' });
    await Promise.all(puts);
    expect(await c.getMany([{ id: 1 }, { id: 2 }, { id: 7 }, { id: 3 }, { id: 4 }])).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
      undefined,
      { id: 3, name: 'c' },
      undefined,
    ]);
  });

  it('get and getMany answer rows with nested lists, structs and maps as plain data the page receives', async () => {
    const entry = new Struct([new Field('a', new Int32(), true), new Field('b', new Utf8(), true)]);
    const nested = new Schema([
      new Field('id', new Int32(), false),
      new Field('items', new List(new Field('item', entry, true)), true),
      new Field('grid', new List(new Field('item', new List(new Field('item', new Int32(), true)), true)), true),
      new Field(
        'st',
        new Struct([new Field('inner', entry, true), new Field('tags', new List(new Field('item', new Utf8(), true)), true)]),
        true,
      ),
    ]);
    const c = await open(channelWorker(), { schema: nested });
    const row = { id: 1, items: [{ a: 1, b: 'x' }, null], grid: [[1, 2], [], [3]], st: { inner: { a: null, b: 'y' }, tags: ['t'] } };
    await c.put([row]);
    expect(await c.get({ id: 1 })).toEqual(row);
    expect(await c.getMany([{ id: 1 }, { id: 2 }])).toEqual([row, undefined]);
  });

  it("a put of Arrow's own empty batches (list columns without child data) is a no-op as in-process, not a TypeError", async () => {
    const listed = new Schema([
      new Field('id', new Int32(), false),
      new Field('tags', new List(new Field('item', new Utf8(), true)), true),
    ]);
    const c = await open(channelWorker(), { schema: listed });
    const empty = new RecordBatch(listed, undefined as never);
    expect(await c.put(empty)).toMatchObject({ rows: 0 });
    expect(await c.put(new Table([empty]))).toMatchObject({ rows: 0 });
    const one = new Table({ id: vectorFromArray([1], new Int32()), tags: vectorFromArray([['a']], listed.fields[1]!.type) });
    expect(await c.put(new Table(listed, [empty, new RecordBatch(listed, one.batches[0]!.data), empty]))).toMatchObject({ rows: 1 });
    expect(await c.get({ id: 1 })).toEqual({ id: 1, tags: ['a'] });
  });

  it('Arrow data crosses as transferred buffers both ways (put and scan)', async () => {
    const c = await open(channelWorker());
    const big = new Table({
      id: vectorFromArray(
        Array.from({ length: 20_000 }, (_, i) => i),
        new Int32(),
      ),
      name: vectorFromArray(
        Array.from({ length: 20_000 }, (_, i) => `name-${i}`),
        new Utf8(),
      ),
    });
    const sum = (sizes: number[]): number => sizes.reduce((a, b) => a + b, 0);
    const putSizes = await transferredBytes(() => c.put(big));
    expect(sum(putSizes)).toBeGreaterThan(200_000);
    const scanSizes = await transferredBytes(() => c.scan());
    expect(sum(scanSizes)).toBeGreaterThan(200_000);
    expect(big.getChild('name')!.get(19_999)).toBe('name-19999'); // the caller's table is intact
  });

  it('plain rows are built into columns in the page and cross as transferred buffers, not as cloned row objects', async () => {
    const c = await open(channelWorker());
    const many = rows(1, 5000);
    const seen = await posted(() => c.put(many));
    const put = seen.find((p) => (p.message as { path?: string[] }).path?.join('.') === 'put')!;
    const sent = JSON.stringify((put.message as { argumentList: unknown[] }).argumentList, (_, v) =>
      ArrayBuffer.isView(v) ? `<${v.byteLength} bytes>` : v,
    );
    expect(sent).not.toContain('v4999'); // no row object in the message
    expect(put.transferredBytes.reduce((a, b) => a + b, 0)).toBeGreaterThan(5000 * 4 + 5000 * 5); // ids and names
    expect(await c.getMany([{ id: 1 }, { id: 5000 }, { id: 5001 }])).toEqual([
      { id: 1, name: 'v1' },
      { id: 5000, name: 'v5000' },
      undefined,
    ]);
    many[0]!.name = 'changed'; // the caller's rows are untouched and its own
    expect(await c.get({ id: 1 })).toEqual({ id: 1, name: 'v1' });
  });

  it('rows the page does not build cross as they are: the worker stores them or refuses them with its own message', async () => {
    const c = await open(channelWorker());
    const bad = await rejection(
      c.put([
        { id: 1, name: 'a' },
        { id: 2.5, name: 'b' },
      ]),
    );
    expect([bad.code, bad.message]).toEqual([
      'InvalidArgument',
      expect.stringContaining('put: row 1: column "id": expected an integer in'),
    ]);
    const missing = await rejection(c.put([{ name: 'no id' }]));
    expect(missing.message).toContain('row 0: column "id" is non-nullable but has no value');
    class Row {
      constructor(
        readonly id: number,
        readonly name: string,
      ) {}
    }
    await c.put([new Row(7, 'seven')] as never); // cloned as a plain object, built in the worker
    expect(await c.get({ id: 7 })).toEqual({ id: 7, name: 'seven' });
    expect(await c.get({ id: 1 })).toBeUndefined(); // nothing of the refused puts was stored
  });

  it('MemWalError code and message survive: a real MemWalError is rebuilt on the client', async () => {
    const c = await open(channelWorker());
    const bad = await rejection(c.put([{ id: 1, name: 'x', nope: 1 }]));
    expect(bad).toBeInstanceOf(MemWalError);
    expect(bad.code).toBe('InvalidArgument');
    expect(bad.message).toContain('nope');
    const appendOnly = await open(channelWorker(), { primaryKey: [] });
    const ns = await rejection(appendOnly.get({ id: 1 }));
    expect(ns).toBeInstanceOf(MemWalError);
    expect(ns.code).toBe('NotSupported');
  });

  it('a put or delete of something that is not data rejects InvalidArgument as in-process (not IOError)', async () => {
    const c = await open(channelWorker());
    for (const bad of [null, undefined, 42]) {
      const put = await rejection(c.put(bad as never));
      expect([put.code, put.message]).toEqual(['InvalidArgument', expect.stringContaining('put expects')]);
      const del = await rejection(c.delete(bad as never));
      expect(del.code).toBe('InvalidArgument');
    }
  });

  it('an argument that cannot be cloned rejects InvalidArgument', async () => {
    const c = await open(channelWorker());
    const e = await rejection(c.put([{ id: 1, name: (() => 'x') as unknown as string }]));
    expect(e.code).toBe('InvalidArgument');
  });

  it('an adapter object in storage is refused before any worker starts', async () => {
    const e = await rejection(openMemWal({ name: 'x', schema, storage: new MemoryStorage() as never, worker: channelWorker() }));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('an adapter object cannot be posted to a worker; host it with memwal/worker');
  });

  it('invalid options fail InvalidArgument on the client, naming the option', async () => {
    const e = await rejection(openMemWal({ name: 'x', schema, maxMemtableBytes: -1, worker: channelWorker() }));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('maxMemtableBytes');
  });

  it("a put's AbortSignal crosses as a message: aborting on the client ends the backpressure wait in the worker", async () => {
    const storage = new FaultInjectingStorage();
    const c = await open(channelWorker({ resolveStorage: () => storage }), {
      maxMemtableBytes: 1024,
      maxUnflushedMemtableBytes: 2048,
    });
    const release = storage.hold('tableWrite');
    try {
      // Fill the budget; the frozen memtables cannot flush while table writes are held.
      for (let i = 0; i < 20 && (await c.backpressureStats()).activeCount === 0; i++) {
        const ac = new AbortController();
        const p = c.put(rows(i * 50, 50, 'x'.repeat(20)), { signal: ac.signal });
        // Either the put goes through, or it starts waiting for room (visible at once in activeCount).
        let settled = false;
        void p.then(
          () => (settled = true),
          () => (settled = true),
        );
        const deadline = Date.now() + 10_000;
        while (!settled && (await c.backpressureStats()).activeCount === 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 5));
        if (!settled) {
          expect((await c.backpressureStats()).activeCount).toBe(1);
          ac.abort();
          const e = await rejection(p);
          expect(e.code).toBe('Aborted');
          const bp = await c.backpressureStats();
          expect(bp.activeCount).toBe(0);
          expect(bp.abortedCount).toBe(1);
          return;
        }
      }
      throw new Error('no put ever blocked');
    } finally {
      release();
    }
  });

  /** A store whose frozen memtable cannot flush (table writes held) until `release()`. */
  async function stuckFlush(): Promise<{ c: MemWalClient; release: () => void }> {
    const storage = new FaultInjectingStorage();
    const c = await open(channelWorker({ resolveStorage: () => storage }));
    const release = storage.hold('tableWrite');
    await c.put(rows(1, 10));
    await c.forceSealActive();
    return { c, release };
  }

  it('an already-aborted signal reaches the worker with the call', async () => {
    const { c, release } = await stuckFlush();
    const ac = new AbortController();
    ac.abort();
    expect((await rejection(c.waitForFlushDrain({ signal: ac.signal }))).code).toBe('Aborted');
    release();
  });

  it("waitForFlushDrain's signal aborts the wait in the worker", async () => {
    const { c, release } = await stuckFlush();
    const ac = new AbortController();
    const p = c.waitForFlushDrain({ signal: ac.signal });
    await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    expect((await rejection(p)).code).toBe('Aborted');
    release();
    await c.waitForFlushDrain();
  });

  it('tail yields every durable entry in order across several pages', async () => {
    const c = await open(channelWorker(), { primaryKey: [], enableMemtable: false });
    const n = PAGE_MAX_ITEMS + 40;
    await Promise.all(Array.from({ length: n }, (_, i) => c.put([{ id: i, name: `r${i}` }])));
    const seen: number[] = [];
    for await (const e of c.tail(1)) {
      expect(e.data).toBeInstanceOf(Table);
      for (const r of e.data.toArray()) seen.push(r.toJSON().id as number);
    }
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('a following tail sees new entries, and its signal ends it', async () => {
    const c = await open(channelWorker(), { primaryKey: [], enableMemtable: false });
    await c.put([{ id: 1, name: 'a' }]);
    const ac = new AbortController();
    const got: number[] = [];
    const done = (async () => {
      for await (const e of c.tail(1, { follow: true, signal: ac.signal })) {
        got.push(e.position);
        if (got.length === 2) ac.abort();
      }
    })();
    await until(() => got.length === 1);
    await c.put([{ id: 2, name: 'b' }]);
    await done;
    expect(got).toEqual([1, 2]);
    expect(await c.sync()).toEqual({ position: 2 }); // the connection still works
  });

  it('breaking out of a following tail releases the worker-side iterator', async () => {
    const c = await open(channelWorker(), { primaryKey: [], enableMemtable: false });
    await c.put([{ id: 1, name: 'a' }]);
    const calls = await calledMethods(async () => {
      for await (const e of c.tail(1, { follow: true })) {
        expect(e.position).toBe(1);
        break;
      }
      await c.walStats(); // the release message goes out before this call (its first call asks the worker for the stats snapshot)
    });
    expect(calls).toEqual(['tail', 'nextEntries', 'release', 'stats']);
    expect((await c.walStats()).nextPosition).toBe(2);
    await c.close();
  });

  it('a host that starts listening late (after an await in its worker) still gets the connection', async () => {
    const c = await open(lateHostWorker(100));
    expect(await c.put(rows(1, 2))).toMatchObject({ rows: 2 });
  });

  it("tail's own errors reach the client's iterator", async () => {
    const c = await open(channelWorker(), { primaryKey: [], enableMemtable: false });
    const e = await rejection(
      (async () => {
        for await (const _ of c.tail(0)) void _;
      })(),
    );
    expect(e.code).toBe('InvalidArgument');
  });

  it('scanBatches pulls batches page by page and honours limit', async () => {
    const c = await open(channelWorker(), { primaryKey: [] });
    for (let i = 0; i < 5; i++) await c.put(rows(i * 10, 10));
    let total = 0;
    for await (const b of c.scanBatches({ limit: 23 })) total += (b as RecordBatch).numRows;
    expect(total).toBe(23);
    expect(() => c.scanBatches({ limit: -1 })).toThrow(MemWalError);
  });

  it('scanBatches after a key crosses to the worker: pages of a keyed store end to end', async () => {
    const c = await open(channelWorker());
    for (let i = 0; i < 5; i++) await c.put(rows(i * 10, 10));
    const ids: number[] = [];
    for (let after: number | undefined; ; ) {
      const page: number[] = [];
      for await (const b of c.scanBatches({ columns: ['id'], limit: 7, ...(after === undefined ? {} : { after: { id: after } }) }))
        page.push(...Array.from((b as RecordBatch).getChild('id')!.toArray(), Number));
      ids.push(...page);
      if (page.length < 7) break;
      after = page[page.length - 1];
    }
    expect(ids).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it("onStateChange: a second opener reports 'waiting-for-lock', lockTimeoutMs 0 gives Locked, steal fences the first", async () => {
    const name = storeName('lock');
    const first = await open(channelWorker(), { name });
    const firstStates: string[] = [];
    first.onStateChange((s) => firstStates.push(s));
    await first.put(rows(1, 5));

    const locked = await rejection(open(channelWorker(), { name, lockTimeoutMs: 0 }));
    expect(locked.code).toBe('Locked');

    const states: string[] = [];
    const waiting = open(channelWorker(), { name, lockTimeoutMs: 200 }, { onStateChange: (s: string) => states.push(s) });
    expect((await rejection(waiting)).code).toBe('Locked');
    expect(states).toContain('waiting-for-lock');

    const thief = await open(channelWorker(), { name, steal: true });
    await until(() => first.writerState === 'fenced');
    expect(firstStates).toContain('fenced');
    expect((await rejection(first.put(rows(100, 1)))).code).toBe('Fenced');
    expect((await thief.scan()).numRows).toBe(5);
  });

  it("hooks.onSchemaReset({ name, reason }) reaches the page when onSchemaMismatch 'reset' destroyed the store in the worker; the warning too", async () => {
    const storage = new MemoryStorage();
    const name = storeName('reset');
    const first = await open(channelWorker({ resolveStorage: () => storage }), { name });
    await first.put(rows(1, 3));
    await first.close();
    const warnings: string[] = [];
    const resets: unknown[] = [];
    const incompatible = new Schema([new Field('id', new Utf8(), false)]);
    const c = await open(
      channelWorker({ resolveStorage: () => storage }),
      { name, schema: incompatible, onSchemaMismatch: 'reset', logger: { warn: (m: string) => warnings.push(m) } },
      { onSchemaReset: (r: unknown) => resets.push(r) },
    );
    expect(resets).toEqual([{ name, reason: expect.stringMatching(/id/) }]);
    expect(warnings.join('\n')).toMatch(/onSchemaMismatch 'reset': destroying store/);
    expect((await c.scan()).numRows).toBe(0);
  });

  it('a stored column the page schema lacks is kept and hidden (SPEC §9.1): onSchemaChange and schemaInfo() reach the page', async () => {
    const storage = new MemoryStorage();
    const name = storeName('migrate');
    const withNote = new Schema([...schema.fields, new Field('note', new Utf8(), true)]);
    const newer = await open(channelWorker({ resolveStorage: () => storage }), { name, schema: withNote });
    await newer.put([{ id: 1, name: 'a', note: 'kept' }]);
    await newer.close();
    const changes: unknown[] = [];
    const older = await open(
      channelWorker({ resolveStorage: () => storage }),
      { name },
      { onSchemaChange: (c: unknown) => changes.push(c) },
    );
    expect(changes).toEqual([{ name, from: 1, to: 1, added: [], hidden: ['note'], dropped: [], renamed: {} }]);
    const info = await older.schemaInfo();
    expect(info.hidden).toEqual(['note']);
    expect(info.schema).toBeInstanceOf(Schema);
    expect(info.schema.fields.map((f) => f.name)).toEqual(['id', 'name', 'note']);
    expect(info.versions.map((v) => [v.version, v.schema.fields.length])).toEqual([[1, 3]]);
    expect(await older.get({ id: 1 })).toEqual({ id: 1, name: 'a' });
    await older.put([{ id: 2, name: 'b' }]);
    await older.close();
    const again = await open(channelWorker({ resolveStorage: () => storage }), { name, schema: withNote });
    expect(await again.getMany([{ id: 1 }, { id: 2 }])).toEqual([
      { id: 1, name: 'a', note: 'kept' },
      { id: 2, name: 'b', note: null },
    ]);
  });

  it('after close every call rejects Closed, and close is idempotent', async () => {
    const c = await open(channelWorker());
    await c.put(rows(1, 2));
    const states: string[] = [];
    c.onStateChange((s) => states.push(s));
    await c.close();
    await c.close();
    expect(states).toEqual(['closed']);
    expect((await rejection(c.put(rows(3, 1)))).code).toBe('Closed');
    expect((await rejection(c.memtableStats())).code).toBe('Closed');
  });

  it('the worker forwards logger warnings to the client logger', async () => {
    const warnings: string[] = [];
    const storage = new FaultInjectingStorage();
    const c = await open(channelWorker({ resolveStorage: () => storage }), {
      logger: { warn: (m: string) => warnings.push(m) },
      maxMemtableBytes: 512,
      maxUnflushedMemtableBytes: 1024,
      backpressureLogIntervalMs: 20,
    });
    const release = storage.hold('tableWrite');
    const puts = [c.put(rows(1, 50)), c.put(rows(100, 50)), c.put(rows(200, 50))];
    await until(() => warnings.length > 0);
    release();
    await Promise.all(puts);
  });
});

describe('a worker openMemWal starts itself (workerUrl)', () => {
  it('close() closes the store, then terminates the worker', async () => {
    const stub = stubGlobalWorker();
    try {
      const c = await openMemWal({ name: storeName(), schema, storage: 'memory', logger: quiet, workerUrl: 'memwal-worker.js' });
      await c.put(rows(1, 2));
      await c.close();
      expect(stub.started).toHaveLength(1);
      expect(stub.started[0]!.terminated).toBe(true);
    } finally {
      stub.restore();
    }
  });

  it("an uncaught error in the worker ('error' event) rejects pending and later calls Closed and ends the worker", async () => {
    const storage = new FaultInjectingStorage();
    const stub = stubGlobalWorker({ resolveStorage: () => storage });
    try {
      const c = await openMemWal({ name: storeName(), schema, storage: 'memory', logger: quiet, workerUrl: 'memwal-worker.js' });
      storage.hold('walAppend');
      const pending = rejection(c.put(rows(1, 2)));
      stub.started[0]!.fireError('boom');
      const e = await pending;
      expect(e.code).toBe('Closed');
      expect(e.message).toContain('boom');
      expect((await rejection(c.walStats())).code).toBe('Closed');
      expect(stub.started[0]!.terminated).toBe(true);
    } finally {
      stub.restore();
    }
  });

  it('worker and workerUrl together are refused', async () => {
    const e = await rejection(openMemWal({ name: 'x', schema, worker: channelWorker(), workerUrl: 'w.js' }));
    expect(e.code).toBe('InvalidArgument');
  });
});

describe('MemWalClient and a dying worker', () => {
  it('a terminated worker makes pending and later calls reject Closed instead of hanging', async () => {
    const t = threadWorker();
    const c = await open(t.worker);
    await c.put(rows(1, 3));
    t.control('hold-wal');
    await new Promise((r) => setTimeout(r, 50));
    const pending = rejection(c.put(rows(10, 3)));
    const pendingSync = rejection(c.sync());
    await new Promise((r) => setTimeout(r, 50));
    await t.terminate();
    const e = await pending;
    expect(e).toBeInstanceOf(MemWalError);
    expect(e.code).toBe('Closed');
    expect((await pendingSync).code).toBe('Closed');
    expect((await rejection(c.memtableStats())).code).toBe('Closed');
    expect(c.writerState).toBe('closed');
    expect((await rejection(c.close())).code).toBe('Closed');
    await c.abort();
  }, 20_000);
});
