// RemoteStorage over a MessageChannel to a host serving MemoryStorage (the I/O worker's protocol,
// in one Node thread): every conformance case, and a store whose flushes and compactions are built
// on the far side.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Field, Int32, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it, vi } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { open, rows, schema, storeName } from '../engine/testkit.test-util.js';
import { conformanceCases } from '../testing/conformance.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MemoryStorage } from '../storage/memory.js';
import { type IoEndpoint, type LocalTableOpener, RemoteStorage } from './remote-storage.js';
import type { SyncAccessHandle } from '../storage/opfs-files.js';
import { MemWalError } from '../util/errors.js';
import { type IoScope, type KeptPlane, makeIoHost, serveStorage, type TableThread } from './io-host.js';
import { serveTableWriter, TableWriterClient } from './table-writer.js';
import { encodeSchema } from '../data/schema.js';
import { type DecodedFrame, encodeFrame, scanSegment } from '../format/wal/codec.js';
import type { StorageAdapter, StoreHandle } from '../storage/adapter.js';
import { type IoPlane, inlinePlane, type IoPlacement, placeStorage } from '../lsm/io-plane.js';
import { crc32c } from '../util/crc32c.js';

/**
 * A RemoteStorage whose I/O "worker" is the other end of a MessageChannel; counts the jobs run
 * there, lists every request it gets (`ops`) and holds a weak reference to each WAL payload the
 * far side receives.
 */
function remote(
  inner: StorageAdapter = new MemoryStorage(),
  tables?: TableThread,
): { storage: RemoteStorage; jobs: string[]; ops: string[]; payloads: WeakRef<ArrayBuffer>[] } {
  const jobs: string[] = [];
  const ops: string[] = [];
  const payloads: WeakRef<ArrayBuffer>[] = [];
  const storage = new RemoteStorage('memory', () => {
    const { port1, port2 } = new MessageChannel();
    port2.addEventListener('message', (ev: MessageEvent) => {
      const { op, args } = ev.data as { op?: string; args?: unknown[] };
      if (op === 'buildFlush' || op === 'compactOpen') jobs.push(op);
      if (op) ops.push(op);
      if (op === 'walAppendEntry')
        for (const a of args ?? []) if (a instanceof Uint8Array) payloads.push(new WeakRef(a.buffer as ArrayBuffer));
    });
    serveStorage(port2 as unknown as IoScope, inner, tables);
    port2.start();
    port1.start();
    return port1 as unknown as IoEndpoint;
  });
  return { storage, jobs, ops, payloads };
}

/** The I/O plane store `w` was opened onto (its WAL entries and table files go through it). */
function planeOf(w: MemWal): IoPlane {
  return (w as unknown as { ctx: { io: IoPlane } }).ctx.io;
}

/** How many of `refs` are still reachable after a few collections. */
async function reachable(refs: readonly WeakRef<ArrayBuffer>[]): Promise<number> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
  return refs.filter((r) => r.deref() !== undefined).length;
}

/** A MemoryStorage that counts the WAL segment reads made on it. */
function countingWalReads(): { storage: MemoryStorage; walReads: () => number } {
  const storage = new MemoryStorage();
  let reads = 0;
  const openStore = storage.openStore.bind(storage);
  storage.openStore = async (...args) => {
    const h = await openStore(...args);
    const walRead = h.walRead.bind(h);
    h.walRead = (...a) => {
      reads += 1;
      return walRead(...a);
    };
    return h;
  };
  return { storage, walReads: () => reads };
}

/** The frames of every WAL segment of `handle`, each checked to be byte for byte `encodeFrame`'s. */
async function walFrames(handle: StoreHandle): Promise<DecodedFrame[]> {
  const frames: DecodedFrame[] = [];
  for (const seg of await handle.walList()) {
    const bytes = await handle.walRead(seg.name);
    const scan = scanSegment(bytes);
    expect(scan.status).toBe('clean');
    expect(scan.validEnd).toBe(bytes.length);
    for (const f of scan.frames) {
      const onDisk = bytes.subarray(f.offset, f.offset + f.frameBytes);
      expect(Buffer.from(onDisk).equals(encodeFrame(f.epoch, f.position, f.payload))).toBe(true);
      frames.push(f);
    }
  }
  return frames;
}

describe('RemoteStorage conformance (over a MessageChannel)', () => {
  for (const c of conformanceCases(() => remote().storage)) it(c.name, () => c.run());
});

describe('a store on RemoteStorage', () => {
  it('flushes and compactions are built on the far side, and the store reads right', async () => {
    const { storage, jobs } = remote();
    const name = storeName();
    const w = await MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableRows: 200, logger: { warn: () => undefined } });
    for (let round = 0; round < 3; round++) for (let i = 0; i < 2_000; i += 100) await w.put(rows(i, 100, `r${round}-`));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    expect(jobs).toContain('buildFlush');
    expect(jobs).toContain('compactOpen');
    expect((await w.scan()).numRows).toBe(2_000);
    expect(await w.get({ id: 1234 })).toMatchObject({ name: 'r2-1234' });
    await w.close();
    const again = await MemWal.open({ name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } });
    expect((await again.scan()).numRows).toBe(2_000);
    await again.close();
  });

  it('a WAL payload is handed over (transferred, not copied), and an append that failed on the far side is retried with a fresh encoding', async () => {
    const far = new FaultInjectingStorage(new MemoryStorage());
    const { storage } = remote(far);
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } };
    const w = await MemWal.open({ ...opts, walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 5_000 } });
    const plane = planeOf(w);
    const sent: Uint8Array[] = [];
    const original = plane.appendEntry.bind(plane);
    plane.appendEntry = (...a) => {
      sent.push(a[4]);
      return original(...a);
    };
    far.failNext('walAppend', 2);
    await w.put(rows(0, 50));
    expect(sent.length).toBe(3); // two failed attempts, then the good one
    for (const p of sent) expect(p.byteLength).toBe(0); // each payload's buffer went to the far side
    expect((await w.writeStats()).walAppendRetries).toBe(2);
    await w.abort(); // replay reads what the far side wrote
    const again = await MemWal.open(opts);
    expect((await again.scan()).numRows).toBe(50);
    await again.close();
  });

  it("the engine sends each WAL payload's CRC-32C with it, and the frames the far side writes are byte for byte encodeFrame's", async () => {
    const { storage } = remote();
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } };
    const w = await MemWal.open(opts);
    const handle = (w as unknown as { handle: StoreHandle }).handle;
    const plane = planeOf(w);
    const crcs: (number | undefined)[] = [];
    const lengths: number[] = [];
    const original = plane.appendEntry.bind(plane);
    plane.appendEntry = (...a) => {
      crcs.push(a[5] === crc32c(a[4]) ? a[5] : undefined); // before the payload is handed over
      lengths.push(a[4].length);
      return original(...a);
    };
    for (let i = 0; i < 2_000; i += 500) await w.put(rows(i, 500));
    await w.put(rows(2_000, 60_000)); // checksummed in slices of 1 MiB
    expect(crcs).toHaveLength(5);
    expect(crcs.every((c) => c !== undefined)).toBe(true);
    expect(Math.max(...lengths)).toBeGreaterThan(1024 * 1024);
    const frames = await walFrames(handle);
    expect(frames.map((f) => f.position)).toEqual([1, 2, 3, 4, 5]);
    await w.abort(); // replay reads what the far side wrote
    const again = await MemWal.open(opts);
    expect((await again.scan()).numRows).toBe(62_000);
    await again.close();
  });

  it('the far side still frames an entry sent without a CRC-32C (a pass over the payload there): the same bytes, and replay reads them', async () => {
    const { storage } = remote();
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } };
    const w = await MemWal.open(opts);
    const handle = (w as unknown as { handle: StoreHandle }).handle;
    const plane = planeOf(w);
    const original = plane.appendEntry.bind(plane);
    plane.appendEntry = (...a) => original(a[0], a[1], a[2], a[3], a[4]);
    await w.put(rows(0, 10));
    await w.put(rows(10, 10));
    expect((await walFrames(handle)).map((f) => f.position)).toEqual([1, 2]);
    await w.abort();
    const again = await MemWal.open(opts);
    expect((await again.scan()).numRows).toBe(20);
    await again.close();
  });

  it('the far side frames a WAL entry from the CRC-32C it is sent, with no pass over the payload: a wrong one makes a frame that replay finds torn', async () => {
    const { storage } = remote();
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } };
    const w = await MemWal.open(opts);
    const handle = (w as unknown as { handle: StoreHandle }).handle;
    const plane = planeOf(w);
    const original = plane.appendEntry.bind(plane);
    plane.appendEntry = (...a) => {
      if (a[3] === 2) a[5] = (a[5]! ^ 1) >>> 0; // the CRC of other bytes
      return original(...a);
    };
    await w.put(rows(0, 10));
    await w.put(rows(10, 10));
    const [segment] = await handle.walList();
    const scan = scanSegment(await handle.walRead(segment!.name));
    expect(scan.frames.map((f) => f.position)).toEqual([1]);
    expect(scan.status).toBe('torn');
    await w.abort();
    const again = await MemWal.open(opts);
    expect((await again.scan()).numRows).toBe(10);
    await again.close();
  });

  it("a built table is handed whole to the far-side store's plane (the OPFS table writer thread there), not streamed through its handle", async () => {
    const whole: string[] = [];
    const chunked: string[] = [];
    const inner = new MemoryStorage();
    const placement: IoPlacement = {
      async openStore(name, options) {
        const h = await inner.openStore(name, options);
        const tableWrite = h.tableWrite.bind(h);
        h.tableWrite = (file, chunks) => {
          chunked.push(file);
          return tableWrite(file, chunks);
        };
        const plane = inlinePlane(h);
        plane.writeTable = (file, bytes) => {
          whole.push(file);
          return tableWrite(file, [bytes.slice()]);
        };
        return { handle: h, plane };
      },
    };
    placeStorage(inner, placement);
    const { storage, jobs } = remote(inner);
    const name = storeName();
    const w = await MemWal.open({ name, schema, primaryKey: ['id'], storage });
    await w.put(rows(0, 10));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect(jobs).toContain('buildFlush');
    expect(whole.length).toBe(1);
    expect(chunked).toEqual([]);
    await w.close();
    const again = await MemWal.open({ name, schema, primaryKey: ['id'], storage });
    expect((await again.scan()).numRows).toBe(10);
    await again.close();
  });

  it('a FaultInjectingStorage over it is an adapter of its own: its stores are inline, so its faults fail every table write (a failed flush keeps its rows)', async () => {
    const { storage, jobs, ops } = remote();
    const faults = new FaultInjectingStorage(storage);
    const w = await MemWal.open({
      name: storeName(),
      schema,
      primaryKey: ['id'],
      storage: faults,
      flushRetry: { baseMs: 1, maxMs: 5 },
      logger: { warn: () => undefined },
    });
    await w.put(rows(0, 10));
    faults.failNext('tableWrite', 2);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.writeStats()).flushFailureCount).toBe(2);
    expect(jobs).toEqual([]); // built on the engine's thread, and written through the faults
    expect(ops).not.toContain('tableWriteBuilt');
    expect(ops).toContain('tableWriteOpen');
    expect((await w.scan()).numRows).toBe(10);
    await w.close();
    expect(await storage.send('builtKept')).toBe(0);
  });

  it('a flush built on the far side reads WAL entries of older schema versions by their writer: a column dropped and added again reads null', async () => {
    const { storage, jobs } = remote();
    const name = storeName();
    const withX = (x?: Field) => new Schema([new Field('id', new Int64(), false), ...(x ? [x] : [])]);
    const openAs = (s: Schema, extra = {}) =>
      MemWal.open({ name, schema: s, primaryKey: ['id'], storage, logger: { warn: () => undefined }, ...extra });
    const a = await openAs(withX(new Field('x', new Int32(), true)));
    await a.put([{ id: 1, x: 11 }]);
    await a.abort(); // in the WAL only, written in version 1
    await (await openAs(withX(), { dropColumns: ['x'] })).abort(); // version 2 drops x
    const c = await openAs(withX(new Field('x', new Int32(), true))); // version 3 adds x again
    await c.put([{ id: 2, x: 22 }]);
    await c.forceSealActive();
    await c.waitForFlushDrain();
    expect(jobs).toContain('buildFlush');
    expect(await c.get({ id: 1 })).toEqual({ id: 1n, x: null });
    expect(await c.get({ id: 2 })).toEqual({ id: 2n, x: 22 });
    await c.close();
  });
});

describe('a flush built on the far side keeps what an opener does not see (SPEC §9.1)', () => {
  it('a hidden column and a renamed one keep their values through flush and compaction in the I/O worker', async () => {
    const { storage, jobs } = remote();
    const name = storeName();
    const quiet = { warn: () => undefined };
    const full = new Schema([new Field('id', new Int64(), false), new Field('title', new Utf8(), true), new Field('x', new Int32(), true)]);
    const a = await MemWal.open({ name, schema: full, primaryKey: ['id'], storage, logger: quiet });
    await a.put([{ id: 1, title: 'one', x: 11 }]);
    await a.abort(); // in the WAL only
    // An opener that renames title and lacks x: x hidden, title renamed; its flush runs in the I/O worker.
    const renamed = new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]);
    const b = await MemWal.open({ name, schema: renamed, primaryKey: ['id'], storage, logger: quiet, renameColumns: { title: 'name' } });
    await b.put([{ id: 2, name: 'two' }]);
    await b.forceSealActive();
    await b.waitForFlushDrain();
    await b.compact();
    expect(jobs).toContain('buildFlush');
    expect(await b.get({ id: 1 })).toEqual({ id: 1n, name: 'one' });
    await b.close();
    const c = await MemWal.open({
      name,
      schema: new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true), new Field('x', new Int32(), true)]),
      primaryKey: ['id'],
      storage,
      logger: quiet,
    });
    expect(await c.getMany([{ id: 1 }, { id: 2 }])).toEqual([
      { id: 1n, name: 'one', x: 11 },
      { id: 2n, name: 'two', x: null },
    ]);
    await c.close();
  });
});

/** The table files of store `name` in `inner` that its manifest does not name (orphans). */
async function orphans(inner: MemoryStorage, name: string): Promise<string[]> {
  const h = await inner.openStore(name);
  try {
    const named = new Set(((await h.manifestLoad())?.tables ?? []).map((t) => t.name));
    return (await h.tableList()).filter((f) => !named.has(f));
  } finally {
    await h.release();
  }
}

describe('tables built in the I/O worker are written there', () => {
  const quiet = { warn: () => undefined };

  it('a flush and a compaction write their tables in the I/O worker: no table byte crosses to the engine, and nothing stays kept', async () => {
    const inner = new MemoryStorage();
    const { storage, ops } = remote(inner);
    const name = storeName();
    const w = await MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableRows: 200, logger: quiet });
    for (let round = 0; round < 2; round++) for (let i = 0; i < 1_000; i += 100) await w.put(rows(i, 100, `r${round}-`));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    expect(ops.filter((o) => o === 'tableWriteBuilt').length).toBeGreaterThan(1);
    for (const o of ['tableWriteOpen', 'tableWriteChunk', 'builtTake']) expect(ops).not.toContain(o);
    expect(await storage.send('builtKept')).toBe(0);
    expect(await w.get({ id: 567 })).toMatchObject({ name: 'r1-567' });
    await w.close();
    expect(await orphans(inner, name)).toEqual([]);
  });

  it('the endpoint hears that tables are coming once, at the first flush, not at open, a put or a reopen (the OPFS table writer thread starts there)', async () => {
    const { port1, port2 } = new MessageChannel();
    const ops: string[] = [];
    port2.addEventListener('message', (ev: MessageEvent) => ops.push((ev.data as { op: string }).op));
    serveStorage(port2 as unknown as IoScope, new MemoryStorage());
    port2.start();
    port1.start();
    let told: string[] | undefined;
    const endpoint = Object.assign(port1, { tablesAhead: () => (told ??= []).push(`after ${ops.length} requests`) });
    const storage = new RemoteStorage('memory', () => endpoint as unknown as IoEndpoint);
    const name = storeName();
    const w = await MemWal.open({ name, schema, primaryKey: ['id'], storage, logger: quiet });
    await w.put(rows(0, 300));
    expect(told).toBeUndefined();
    const before = ops.length;
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect(ops.slice(before)).toContain('buildFlush');
    expect(told).toHaveLength(1);
    await w.put(rows(300, 300));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.close();
    expect(told).toHaveLength(1);
    expect(ops.filter((o) => o === 'buildFlush')).toHaveLength(2);
  });

  it('a table write that fails in the I/O worker leaves no file and keeps its rows in the WAL; the retry builds again and writes', async () => {
    const inner = new MemoryStorage();
    const far = new FaultInjectingStorage(inner);
    const { storage, jobs } = remote(far as unknown as MemoryStorage);
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, flushRetry: { baseMs: 1, maxMs: 2 }, logger: quiet };
    const w = await MemWal.open(opts);
    await w.put(rows(0, 300));
    far.tearNext('tableWrite'); // a prefix reaches storage, then the write fails
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.writeStats()).flushFailureCount).toBe(1);
    expect(jobs.filter((j) => j === 'buildFlush').length).toBe(2); // the retry built the table again
    expect(await storage.send('builtKept')).toBe(0); // the failed attempt's bytes were dropped
    expect(await w.get({ id: 299 })).toMatchObject({ id: 299n });
    await w.close();
    expect(await orphans(inner, name)).toEqual([]);
    const again = await MemWal.open(opts);
    expect((await again.scan()).numRows).toBe(300);
    await again.close();
  });

  it('a table write that does not finish in time fails the flush (its rows stay in the WAL) and the retry writes', async () => {
    const inner = new MemoryStorage();
    const far = new FaultInjectingStorage(inner);
    const { storage } = remote(far as unknown as MemoryStorage);
    const name = storeName();
    const w = await MemWal.open({
      name,
      schema,
      primaryKey: ['id'],
      storage,
      flushRetry: { baseMs: 1, maxMs: 2, stallMs: 50 },
      logger: quiet,
    });
    await w.put(rows(0, 100));
    far.hangNext('tableWrite');
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.writeStats()).flushFailureCount).toBe(1);
    expect(await storage.send('builtKept')).toBe(0);
    expect((await w.scan()).numRows).toBe(100);
    await w.close();
    expect(await orphans(inner, name)).toEqual([]);
  });

  it('the I/O worker drops a built table on release, with its store, and after a write whatever its outcome; a dropped table is not written', async () => {
    const inner = new MemoryStorage();
    const host = makeIoHost(inner, () => undefined);
    const name = storeName();
    const handle = await host.openStore(1, name, {});
    const wire = { schema: encodeSchema(schema), primaryKey: ['id'] };
    const build = () =>
      host.buildFlush(
        handle,
        wire,
        { generation: 1, firstPosition: 1, lastPosition: 0, segments: [] },
        { versions: [{ version: 1, schema: wire.schema }], currentVersion: 1 },
      );
    const a = await build();
    const b = await build();
    const c = await build();
    expect(await host.builtKept()).toBe(3);
    await host.builtRelease(handle, a.id);
    expect(await host.builtKept()).toBe(2);
    await expect(host.tableWriteBuilt(handle, a.id, '1-1-1.arrow')).rejects.toMatchObject({ code: 'IOError' });
    await host.tableWriteBuilt(handle, b.id, '1-1-2.arrow');
    expect(await host.builtKept()).toBe(1);
    await expect(host.tableWriteBuilt(handle, b.id, '1-1-3.arrow')).rejects.toMatchObject({ code: 'IOError' }); // written once
    expect(await host.tableList(handle)).toEqual(['1-1-2.arrow']);
    expect((await host.tableRead(handle, '1-1-2.arrow')).length).toBe(b.length);
    await host.release(handle); // c was never written: it goes with its store
    expect(await host.builtKept()).toBe(0);
    expect(c.id).toBeGreaterThan(0);
  });

  it('a close or an abort while the I/O worker writes a table: nothing stays kept, and every row is there after reopening', async () => {
    for (const end of ['close', 'abort'] as const) {
      const inner = new MemoryStorage();
      const far = new FaultInjectingStorage(inner);
      const { storage, ops } = remote(far as unknown as MemoryStorage);
      const name = storeName();
      const opts = { name, schema, primaryKey: ['id'], storage, logger: quiet };
      const w = await MemWal.open(opts);
      await w.put(rows(0, 100));
      const resume = far.hold('tableWrite');
      await w.forceSealActive();
      await vi.waitFor(() => expect(ops).toContain('tableWriteBuilt'));
      const ended = end === 'close' ? w.close() : w.abort();
      await new Promise((r) => setTimeout(r, 5));
      resume();
      await ended;
      expect(await storage.send('builtKept'), end).toBe(0);
      const again = await MemWal.open(opts);
      expect((await again.scan()).numRows, end).toBe(100);
      await again.close();
      expect(await orphans(inner, name), end).toEqual([]);
    }
  });
});

describe('the I/O worker under a flush', () => {
  it('a flush is built from the payloads the I/O worker appended, without reading the WAL back; entries replayed at open are read back', async () => {
    const far = countingWalReads();
    const { storage } = remote(far.storage);
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } };
    const w = await MemWal.open(opts);
    for (let i = 0; i < 3_000; i += 100) await w.put(rows(i, 100));
    await w.put(rows(0, 10, 'newer-'));
    const before = far.walReads();
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.writeStats()).flushCount).toBe(1);
    expect(far.walReads()).toBe(before);
    expect((await w.scan()).numRows).toBe(3_000);
    expect(await w.get({ id: 5 })).toMatchObject({ name: 'newer-5' });
    await w.put(rows(3_000, 100));
    await w.abort(); // the last put is in the WAL only
    const again = await MemWal.open(opts);
    const replayed = far.walReads();
    await again.forceSealActive();
    await again.waitForFlushDrain();
    expect(far.walReads()).toBeGreaterThan(replayed);
    expect((await again.scan()).numRows).toBe(3_100);
    await again.close();
  });

  it('the payloads the I/O worker keeps are dropped once flushed (close flushes) and when their store aborts, each store of one worker alike', async () => {
    const { storage, payloads } = remote();
    const quiet = { warn: () => undefined };
    const stores = await Promise.all(
      [0, 1, 2, 3].map(() => MemWal.open({ name: storeName(), schema, primaryKey: ['id'], storage, logger: quiet, maxMemtableRows: 500 })),
    );
    for (const w of stores) for (let i = 0; i < 2_000; i += 100) await w.put(rows(i, 100));
    for (const w of stores) await w.waitForFlushDrain();
    expect(payloads.length).toBe(80);
    expect(await reachable(payloads)).toBe(0); // every one flushed
    for (const w of stores) await w.put(rows(0, 10)); // in each store's active memtable
    expect(await reachable(payloads)).toBe(4);
    await stores[0]!.close();
    await stores[1]!.abort();
    expect(await reachable(payloads)).toBe(2);
    await stores[2]!.close();
    await stores[3]!.close();
    expect(await reachable(payloads)).toBe(0);
  });

  it('an append that lands in the I/O worker after its writer poisoned (past its limit) is dropped when the store closes', async () => {
    const faults = new FaultInjectingStorage(new MemoryStorage()); // under the plane: in the I/O worker
    const { storage, payloads } = remote(faults);
    const w = await open(storage, { walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 100 } });
    await w.put(rows(0, 10));
    const release = faults.hold('walAppend');
    const put = w.put(rows(10, 10)).then(
      () => 'resolved',
      (e: { code?: string }) => e.code,
    );
    expect(await put).not.toBe('resolved'); // the append is past its limit: the writer poisons
    release(); // the held append reaches the I/O worker now, and is kept there
    await new Promise((r) => setTimeout(r, 50));
    expect(payloads.length).toBe(2);
    expect(await reachable(payloads)).toBe(2);
    await w.close().catch(() => undefined); // poisoned: released without I/O
    expect(await reachable(payloads)).toBe(0);
  });

  it("a flush built from kept payloads holds the right rows after an append applied but reported failed (retried), a failed flush retried, and a steal; the fenced writer's payloads go when it closes", async () => {
    const faults = new FaultInjectingStorage(new MemoryStorage()); // under the plane: in the I/O worker
    const { storage, payloads } = remote(faults);
    const name = storeName();
    const quiet = { warn: () => undefined };
    const w = await MemWal.open({
      name,
      schema,
      primaryKey: ['id'],
      storage,
      logger: quiet,
      walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 5_000 },
      flushRetry: { baseMs: 1, maxMs: 5 },
    });
    await w.put(rows(0, 100, 'a'));
    faults.failAfter('walAppend', 2); // applied, reported failed: truncated and appended again
    await w.put(rows(50, 100, 'b'));
    faults.failNext('tableWrite', 1); // the retry reads the WAL back
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.writeStats()).walAppendRetries).toBe(2);
    expect((await w.writeStats()).flushFailureCount).toBe(1);
    expect((await w.scan()).numRows).toBe(150);
    expect(await w.get({ id: 60 })).toMatchObject({ name: 'b60' });
    expect(await w.get({ id: 10 })).toMatchObject({ name: 'a10' });
    await w.put(rows(200, 100, 'c')); // kept for w when the thief takes the store over
    const thief = await MemWal.open({ name, schema, primaryKey: ['id'], storage, logger: quiet, steal: true });
    await thief.put(rows(250, 100, 'd'));
    await thief.forceSealActive();
    await thief.waitForFlushDrain();
    expect((await thief.scan()).numRows).toBe(300);
    expect(await thief.get({ id: 220 })).toMatchObject({ name: 'c220' });
    expect(await thief.get({ id: 260 })).toMatchObject({ name: 'd260' });
    await w.close().catch(() => undefined); // fenced: its kept payloads go with its handle
    await thief.close();
    expect(await reachable(payloads)).toBe(0);
  });

  it('a WAL append sent while a large table build runs completes before the build', async () => {
    const { storage } = remote();
    const w = await MemWal.open({
      name: storeName(),
      schema,
      primaryKey: ['id'],
      storage,
      maxMemtableBytes: 256 * 1024 * 1024,
      maxUnflushedMemtableBytes: 512 * 1024 * 1024,
      logger: { warn: () => undefined },
    });
    for (let i = 0; i < 200_000; i += 20_000) await w.put(rows(i, 20_000));
    const order: string[] = [];
    let put: Promise<void> | undefined;
    const send = storage.send.bind(storage) as (op: string, ...args: unknown[]) => Promise<unknown>;
    (storage as unknown as { send: typeof send }).send = (op, ...args) => {
      const reply = send(op, ...args);
      if (op === 'buildFlush' && !put) {
        void reply.then(() => order.push('table build'));
        put = w.put(rows(500_000, 10)).then(() => void order.push('put'));
      }
      return reply;
    };
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await put;
    expect(order).toEqual(['put', 'table build']);
    expect((await w.scan()).numRows).toBe(200_010);
    await w.close();
  });
});

/** A sync access handle as a test opens it: reads `bytes`; counts itself in `open` until closed. */
function fakeReader(bytes: Uint8Array, open: Set<object>): SyncAccessHandle {
  const sync: SyncAccessHandle = {
    read(buffer, options) {
      if (!open.has(sync)) throw new DOMException('the handle is closed', 'InvalidStateError');
      const part = bytes.subarray(options?.at ?? 0, (options?.at ?? 0) + buffer.length);
      buffer.set(part);
      return part.length;
    },
    getSize: () => bytes.length,
    write: () => {
      throw new DOMException('read-only', 'NoModificationAllowedError');
    },
    truncate: () => {
      throw new DOMException('read-only', 'NoModificationAllowedError');
    },
    flush: () => undefined,
    close: () => void open.delete(sync),
  };
  open.add(sync);
  return sync;
}

/**
 * A RemoteStorage over MemoryStorage whose table files also live in a simulated OPFS directory
 * that the engine side opens read-only handles on, with Chromium's rule: removing a file while a
 * handle is open on it fails `NoModificationAllowedError`. `open`: the engine side's handles open
 * now, per store handle opened; `gate`: when set, each local open waits for it; `fail`: the error a
 * local open throws.
 */
function withLocalReads() {
  const files = new Map<string, Uint8Array>();
  const open: Set<object>[] = [];
  const ops: string[] = [];
  const warnings: string[] = [];
  const ctl: { gate?: Promise<void>; fail?: () => Error; opens: number; attempts: number } = { opens: 0, attempts: 0 };
  const far = new MemoryStorage();
  const openStore = far.openStore.bind(far);
  far.openStore = async (...args) => {
    const h = await openStore(...args);
    const write = h.tableWrite.bind(h);
    const remove = h.tableRemove.bind(h);
    h.tableWrite = async (name, chunks) => {
      const got: Uint8Array[] = [];
      for await (const c of chunks) got.push(c.slice());
      await write(name, got);
      files.set(name, new Uint8Array(await new Blob(got as Uint8Array<ArrayBuffer>[]).arrayBuffer()));
    };
    h.tableRemove = async (name) => {
      if (open.some((s) => [...s].some((sync) => (sync as { file?: string }).file === name))) {
        throw new DOMException(`${name} has an open access handle`, 'NoModificationAllowedError');
      }
      await remove(name);
      files.delete(name);
    };
    return h;
  };
  const local: LocalTableOpener = () => {
    const mine = new Set<object>();
    open.push(mine);
    return async (name) => {
      ctl.attempts += 1;
      await ctl.gate;
      if (ctl.fail) throw ctl.fail();
      const bytes = files.get(name);
      if (!bytes) throw new DOMException(`${name} not found`, 'NotFoundError');
      ctl.opens += 1;
      return Object.assign(fakeReader(bytes, mine), { file: name });
    };
  };
  let port: MessagePort | undefined;
  const storage = new RemoteStorage(
    'memory',
    () => {
      const { port1, port2 } = new MessageChannel();
      port2.addEventListener('message', (ev: MessageEvent) => void ops.push((ev.data as { op: string }).op));
      serveStorage(port2 as unknown as IoScope, far);
      port2.start();
      port1.start();
      port = port1;
      return port1 as unknown as IoEndpoint;
    },
    console,
    local,
  );
  const opts = { schema, primaryKey: ['id'], storage, logger: { warn: (m: string) => void warnings.push(m) } };
  const openCount = (i?: number): number => (i === undefined ? open.reduce((n, s) => n + s.size, 0) : open[i]!.size);
  /** Waits until none of `names` is stored or a removal was reported failed (retired files are removed in the background). */
  const removedOrWarned = (names: string[]) =>
    vi.waitFor(() => {
      if (!warnings.some((m) => m.includes('could not remove'))) expect(names.filter((n) => files.has(n))).toEqual([]);
    });
  return { storage, files, ops, warnings, ctl, opts, openCount, removedOrWarned, die: () => port!.dispatchEvent(new Event('error')) };
}

describe("the engine thread's own read-only handles on table files", () => {
  it('serve every table read: no read crosses to the I/O worker, and the rows read right', async () => {
    const t = withLocalReads();
    const w = await MemWal.open({ ...t.opts, name: storeName(), maxMemtableRows: 500 });
    for (let i = 0; i < 2_000; i += 100) await w.put(rows(i, 100));
    await w.waitForFlushDrain();
    for (const id of [0, 777, 1_999]) expect(await w.get({ id })).toMatchObject({ name: `v${id}` });
    expect(t.ctl.opens).toBeGreaterThan(0);
    expect(t.ops).not.toContain('tableReadRange');
    expect(t.ops).not.toContain('tableRead');
    await w.close();
  });

  it('a compaction that retires files the engine thread read removes them: its handles are closed before the removal', async () => {
    const t = withLocalReads();
    const w = await MemWal.open({ ...t.opts, name: storeName(), maxMemtableRows: 500 });
    for (let i = 0; i < 2_000; i += 100) await w.put(rows(i, 100, 'a'));
    await w.waitForFlushDrain();
    for (let id = 0; id < 2_000; id += 250) await w.get({ id }); // a handle on every flushed file
    const read = [...t.files.keys()];
    expect(t.openCount()).toBe(read.length);
    for (let i = 0; i < 2_000; i += 100) await w.put(rows(i, 100, 'b')); // overlaps every file read
    await w.waitForFlushDrain();
    await w.compact();
    await t.removedOrWarned(read);
    expect(t.warnings.filter((m) => m.includes('could not remove'))).toEqual([]);
    for (const name of read) expect(t.files.has(name)).toBe(false);
    expect(await w.get({ id: 1_500 })).toMatchObject({ name: 'b1500' });
    expect(t.ops).not.toContain('tableReadRange');
    await w.close();
    expect(t.openCount()).toBe(0);
  });

  it('a release, a steal and a dead I/O worker each close every handle the engine thread kept', async () => {
    const t = withLocalReads();
    const name = storeName();
    const w = await MemWal.open({ ...t.opts, name });
    await w.put(rows(0, 100));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.get({ id: 5 });
    expect(t.openCount(0)).toBe(1);
    await w.close();
    expect(t.openCount(0)).toBe(0); // release

    const old = await MemWal.open({ ...t.opts, name });
    await old.get({ id: 5 });
    expect(t.openCount(1)).toBe(1);
    const readByOld = [...t.files.keys()];
    const thief = await MemWal.open({ ...t.opts, name, steal: true });
    expect(t.openCount(1)).toBe(0); // lost
    await thief.put(rows(50, 100));
    await thief.forceSealActive();
    await thief.waitForFlushDrain();
    await thief.compact(); // retires the file the old writer read
    await t.removedOrWarned(readByOld);
    expect(t.warnings.filter((m) => m.includes('could not remove'))).toEqual([]);
    expect(await thief.get({ id: 5 })).toMatchObject({ name: 'v5' }); // from the compaction's output
    expect(t.openCount(2)).toBe(1);
    t.die();
    expect(t.openCount()).toBe(0); // the I/O worker died: every store lost
    await old.close().catch(() => undefined);
    await thief.close().catch(() => undefined);
  });

  it("a store handle whose lock is stolen closes the engine thread's handles when the loss is reported, before anyone releases it", async () => {
    const t = withLocalReads();
    const name = storeName();
    const lost: string[] = [];
    const h = await t.storage.openStore(name, { onLost: (reason) => void lost.push(reason) });
    await h.tableWrite('t.arrow', [new Uint8Array([1, 2, 3, 4])]);
    await h.tableRead('t.arrow');
    expect(t.openCount(0)).toBe(1);
    const thief = await t.storage.openStore(name, { steal: true });
    await vi.waitFor(() => expect(lost).toHaveLength(1));
    expect(t.openCount(0)).toBe(0);
    await thief.tableRemove('t.arrow'); // the file the stolen-from handle read
    expect(t.files.has('t.arrow')).toBe(false);
    await h.release();
    await thief.release();
  });

  it('a read racing a tableRemove or a release answers with the bytes of the file it asked for, or the error the I/O worker gives, and leaves no handle open', async () => {
    const t = withLocalReads();
    const h = await t.storage.openStore(storeName());
    await h.tableWrite('t.arrow', [new Uint8Array([1, 2, 3, 4])]);
    let open!: () => void;
    t.ctl.gate = new Promise((r) => (open = r));
    const read = h.tableReadRange('t.arrow', 1, 2).then(
      (b) => [...b],
      (e: MemWalError) => e.message,
    );
    const removed = h.tableRemove('t.arrow');
    open();
    await removed; // the removal was not refused: the handle opened meanwhile was closed first
    expect([[2, 3], 'table file t.arrow does not exist']).toContainEqual(await read);
    expect(t.openCount()).toBe(0);
    await h.tableWrite('t.arrow', [new Uint8Array([9, 9, 9, 9])]); // the same name again: read through the I/O worker
    expect([...(await h.tableReadRange('t.arrow', 1, 2))]).toEqual([9, 9]);
    expect(t.openCount()).toBe(0);

    await h.tableWrite('u.arrow', [new Uint8Array([5, 6])]);
    t.ctl.gate = new Promise((r) => (open = r));
    const late = h.tableRead('u.arrow').then(
      () => 'read',
      (e: MemWalError) => e.code,
    );
    await h.release();
    open();
    expect(await late).toBe('Closed'); // as the I/O worker answers a released handle
    expect(t.openCount()).toBe(0);
  });

  it('a handle that cannot be opened here sends the read to the I/O worker: the same bytes, and the same error for a missing file', async () => {
    const t = withLocalReads();
    const h = await t.storage.openStore(storeName());
    await h.tableWrite('t.arrow', [new Uint8Array([1, 2, 3, 4])]);
    for (const name of ['NoModificationAllowedError', 'InvalidStateError', 'NotSupportedError']) {
      t.ctl.fail = () => new DOMException('refused', name);
      expect([...(await h.tableReadRange('t.arrow', 0, 4))]).toEqual([1, 2, 3, 4]);
    }
    expect(t.ctl.attempts).toBe(1); // then the file is read there only
    expect(t.ops.filter((op) => op === 'tableReadRange')).toHaveLength(3);
    t.ctl.fail = undefined;
    const fail = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: MemWalError) => ({ type: e.constructor, code: e.code, message: e.message }),
      );
    const missing = await fail(h.tableReadRange('gone.arrow', 0, 4));
    const before = await fail((await remote().storage.openStore(storeName())).tableReadRange('gone.arrow', 0, 4));
    expect(missing).toEqual({ type: MemWalError, code: 'IOError', message: 'table file gone.arrow does not exist' });
    expect(missing).toEqual(before);
    await expect(h.tableReadRange('t.arrow', -1, 4)).rejects.toMatchObject({ code: 'InvalidArgument' });
    await h.release();
  });
});

/**
 * A table writer thread (table-writer.ts) at the other end of a MessageChannel, its files
 * fakes written into `files` by name; lists the requests it gets (`ops`). Resolves once it serves.
 */
async function writerThread(): Promise<{ client: TableWriterClient; ops: string[]; kept: () => number; files: Map<string, Uint8Array> }> {
  const { port1, port2 } = new MessageChannel();
  const ops: string[] = [];
  const files = new Map<string, Uint8Array>();
  port2.addEventListener('message', (ev: MessageEvent) => ops.push((ev.data as { op: string }).op));
  const open = async (file: FileSystemFileHandle): Promise<SyncAccessHandle> => {
    let bytes = new Uint8Array(0);
    return {
      read: () => 0,
      write(buffer, options) {
        const at = options?.at ?? 0;
        const next = new Uint8Array(Math.max(bytes.length, at + buffer.length));
        next.set(bytes);
        next.set(buffer, at);
        bytes = next;
        return buffer.length;
      },
      truncate: () => undefined,
      getSize: () => bytes.length,
      flush: () => void files.set(file.name, bytes),
      close: () => undefined,
    };
  };
  const server = serveTableWriter(port2 as unknown as MessagePort, open);
  const client = new TableWriterClient(port1 as unknown as MessagePort);
  await vi.waitFor(() => expect(client.usable).toBe(true));
  return { client, ops, kept: server.kept, files };
}

/**
 * The table writer thread `writer` as an I/O worker's builder, with a placement over `storage`
 * whose planes write a table the thread keeps there (`writeKept`, as the OPFS plane does), then
 * store the bytes it wrote through the handle; lists the names written so (`kept`).
 */
function keptWriting(
  writer: { client: TableWriterClient; files: Map<string, Uint8Array> },
  storage: StorageAdapter = new MemoryStorage(),
): { storage: StorageAdapter; tables: TableThread; kept: string[] } {
  const kept: string[] = [];
  const placement: TableThread['placement'] = {
    async openStore(name, options) {
      const h = await storage.openStore(name, options);
      const plane: KeptPlane = {
        ...inlinePlane(h),
        async writeKept(file, table) {
          // As the OPFS handle: a name that exists fails before the write reaches the writer thread.
          if ((await h.tableList()).includes(file)) throw new MemWalError('IOError', `table file ${file} already exists`);
          await writer.client.writeKept({ name: file } as FileSystemFileHandle, table);
          kept.push(file);
          await h.tableWrite(file, [writer.files.get(file) ?? new Uint8Array(0)]);
        },
      };
      return { handle: h, plane };
    },
  };
  return { storage, tables: { builder: writer.client, placement }, kept };
}

/** Every table file of store `name` in `inner`, by name. */
async function tableFiles(inner: StorageAdapter, name: string): Promise<Map<string, Uint8Array>> {
  const h = await inner.openStore(name, {});
  try {
    const out = new Map<string, Uint8Array>();
    for (const f of (await h.tableList()).sort()) out.set(f, await h.tableRead(f));
    return out;
  } finally {
    await h.release();
  }
}

describe('flush tables built on the table writer thread', () => {
  const quiet = { warn: () => undefined };

  it('a flush whose payloads are all kept is built there and written there; nothing stays kept on either side', async () => {
    const writer = await writerThread();
    const far = keptWriting(writer);
    const there = remote(far.storage, far.tables);
    const here = remote();
    const name = storeName();
    for (const { storage } of [there, here]) {
      const w = await MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableRows: 300, logger: quiet });
      for (let round = 0; round < 2; round++) for (let i = 0; i < 1_000; i += 100) await w.put(rows(i, 100, `r${round}-`));
      await w.forceSealActive();
      await w.waitForFlushDrain();
      expect(await w.get({ id: 567 })).toMatchObject({ name: 'r1-567' });
      await w.close();
    }
    const builds = writer.ops.filter((o) => o === 'build').length;
    expect(builds).toBeGreaterThan(1);
    expect(there.jobs.filter((j) => j === 'buildFlush').length).toBe(builds); // every flush built there
    expect(far.kept.length).toBe(builds); // and written there
    expect(here.jobs).toContain('buildFlush');
    expect(writer.kept()).toBe(0);
    expect(await there.storage.send('builtKept')).toBe(0);
  });

  it('byte for byte: the same flush built on the writer thread and in the I/O worker', async () => {
    const writer = await writerThread();
    const far = keptWriting(writer);
    const near = new MemoryStorage();
    const name = storeName();
    for (const [inner, tables] of [
      [far.storage, far.tables],
      [near, undefined],
    ] as const) {
      const { storage } = remote(inner, tables);
      // Compactions only when asked (compact() below): a background one lands at a moment the
      // machine's load decides, and would name different files in the two runs.
      const manualOnly = { compactionPolicy: { level0Trigger: 1_000, spaceAmpTrigger: Number.POSITIVE_INFINITY } };
      const w = await MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableRows: 300, logger: quiet }, manualOnly);
      for (let round = 0; round < 2; round++) for (let i = 0; i < 1_000; i += 100) await w.put(rows(i, 100, `r${round}-`));
      await w.forceSealActive();
      await w.waitForFlushDrain();
      await w.compact();
      await w.close();
    }
    const a = await tableFiles(far.storage, name);
    const b = await tableFiles(near, name);
    expect(far.kept.length).toBeGreaterThan(1);
    expect([...a.keys()]).toEqual([...b.keys()]);
    for (const [f, bytes] of a) expect(Buffer.from(bytes).equals(Buffer.from(b.get(f) as Uint8Array)), f).toBe(true);
  });

  it('a retry after a failed write (its payloads dropped) reads the WAL back and builds in the I/O worker; nothing stays kept on either side', async () => {
    const writer = await writerThread();
    const inner = new MemoryStorage();
    const far = new FaultInjectingStorage(inner);
    const { storage, jobs } = remote(far, keptWriting(writer, far).tables);
    const name = storeName();
    const opts = { name, schema, primaryKey: ['id'], storage, flushRetry: { baseMs: 1, maxMs: 2 }, logger: quiet };
    const w = await MemWal.open(opts);
    await w.put(rows(0, 300));
    far.failNext('tableWrite', 1); // under the plane: the kept table reached the writer thread, its file's write then fails
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.writeStats()).flushFailureCount).toBe(1);
    expect(jobs.filter((j) => j === 'buildFlush').length).toBe(2);
    expect(writer.ops.filter((o) => o === 'build').length).toBe(1); // the first attempt only
    expect(writer.kept()).toBe(0);
    expect(await storage.send('builtKept')).toBe(0);
    await w.close();
    expect(await orphans(inner, name)).toEqual([]);
    const again = await MemWal.open(opts);
    expect((await again.scan()).numRows).toBe(300);
    await again.close();
  });

  it('the writer thread drops a table the I/O worker released, with its store, and after a write whatever its outcome; a kept table is written as built', async () => {
    const writer = await writerThread();
    const { storage: inner, tables } = keptWriting(writer);
    const host = makeIoHost(inner, () => undefined, tables);
    const plain = makeIoHost(new MemoryStorage(), () => undefined);
    const name = storeName();
    const handle = await host.openStore(1, name, {});
    const plainHandle = await plain.openStore(1, name, {});
    await host.keepPayloads(handle);
    const wire = { schema: encodeSchema(schema), primaryKey: ['id'] };
    const job = { generation: 1, firstPosition: 1, lastPosition: 0, segments: [] }; // no entries: every one (none) kept
    const wv = { versions: [{ version: 1, schema: wire.schema }], currentVersion: 1 };
    const built = [];
    for (let i = 0; i < 5; i++) built.push(await host.buildFlush(handle, wire, job, wv));
    expect(writer.ops.filter((o) => o === 'build').length).toBe(5);
    expect(writer.kept()).toBe(5);
    expect(await host.builtKept()).toBe(5);
    await host.builtRelease(handle, built[0]!.id);
    await vi.waitFor(() => expect(writer.kept()).toBe(4));
    await host.tableWriteBuilt(handle, built[1]!.id, '1-1-2.arrow');
    expect(writer.kept()).toBe(3);
    await expect(host.tableWriteBuilt(handle, built[1]!.id, '1-1-3.arrow')).rejects.toMatchObject({ code: 'IOError' });
    await expect(host.tableWriteBuilt(handle, built[2]!.id, '1-1-2.arrow')).rejects.toMatchObject({ code: 'IOError' }); // the name exists
    await vi.waitFor(() => expect(writer.kept()).toBe(2));
    await host.tableWriteBuilt(handle, built[3]!.id, '1-1-4.arrow');
    const local = await plain.buildFlush(plainHandle, wire, job, wv);
    await plain.tableWriteBuilt(plainHandle, local.id, '1-1-4.arrow');
    const written = await host.tableRead(handle, '1-1-4.arrow');
    expect(Buffer.from(written).equals(Buffer.from(await plain.tableRead(plainHandle, '1-1-4.arrow')))).toBe(true);
    expect(written.length).toBe(built[3]!.length);
    expect(writer.kept()).toBe(1);
    await host.release(handle); // the fifth was never written: it goes with its store, there too
    expect(await host.builtKept()).toBe(0);
    await vi.waitFor(() => expect(writer.kept()).toBe(0));
    await plain.release(plainHandle);
  });

  it('a build that fails on the writer thread rejects buildFlush as one in the I/O worker does', async () => {
    const codes: unknown[] = [];
    for (const tables of [keptWriting(await writerThread()).tables, undefined]) {
      const host = makeIoHost(new MemoryStorage(), () => undefined, tables);
      const handle = await host.openStore(1, storeName(), {});
      await host.keepPayloads(handle);
      await host.walAppendEntry(handle, '1-1', 0, 1, 1, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
      const wire = { schema: encodeSchema(schema), primaryKey: ['id'] };
      const build = host.buildFlush(
        handle,
        wire,
        { generation: 1, firstPosition: 1, lastPosition: 1, segments: [{ name: '1-1' }] },
        { versions: [{ version: 1, schema: wire.schema }], currentVersion: 1 },
      );
      codes.push(
        await build.then(
          () => 'built',
          (e: { code?: string }) => e.code,
        ),
      );
      await host.release(handle);
    }
    expect(codes).toEqual(['Corruption', 'Corruption']);
  });
});
