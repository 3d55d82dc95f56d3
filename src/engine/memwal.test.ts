import { Field, Int64, Schema, Utf8, tableFromArrays } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MemWal } from './memwal.js';
import { idsOf, open, rejection, rows, schema, storeName, tick, until } from './testkit.test-util.js';

describe('open and options', () => {
  it('in-process open without a named storage fails InvalidArgument naming storage', async () => {
    const e = await rejection(MemWal.open({ name: 'x', schema }));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('storage');
  });

  it('invalid options fail before anything is claimed or written', async () => {
    const storage = new MemoryStorage();
    const e = await rejection(open(storage, { maxMemtableBytes: -5 }, 'bad'));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('maxMemtableBytes');
    const h = await storage.openStore('bad', { timeoutMs: 0 });
    expect(await h.manifestLoad()).toBeUndefined();
    await h.release();
  });

  it('a float primary key is rejected naming the column', async () => {
    const e = await rejection(open(new MemoryStorage(), { primaryKey: ['value'] }));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('value');
  });

  it("storage 'memory' is a per-process registry: a reopen finds the data", async () => {
    const name = storeName('mem');
    const a = await MemWal.open({ name, schema, primaryKey: ['id'], storage: 'memory' });
    await a.put(rows(1, 3));
    await a.close();
    const b = await MemWal.open({ name, schema, primaryKey: ['id'], storage: 'memory' });
    expect(idsOf(await b.scan())).toEqual([1, 2, 3]);
    await b.close();
    await MemWal.destroy(name, { storage: 'memory' });
  });

  it('reopening with another schema, key or mode fails InvalidArgument and leaves the store intact', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(1, 2));
    await w.close();
    // 'value' changes type: no schema evolution covers that.
    const other = new Schema([
      new Field('id', new Int64(), false),
      new Field('value', new Utf8(), true),
      new Field('name', new Utf8(), true),
    ]);
    expect((await rejection(MemWal.open({ name, schema: other, primaryKey: ['id'], storage }))).code).toBe('InvalidArgument');
    expect((await rejection(open(storage, { primaryKey: ['name'] }, name))).code).toBe('InvalidArgument');
    expect((await rejection(open(storage, { primaryKey: [], enableMemtable: false }, name))).code).toBe('InvalidArgument');
    const again = await open(storage, {}, name);
    expect(idsOf(await again.scan())).toEqual([1, 2]);
    await again.close();
  });

  it('destroy removes a store and is Locked while it is open', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(1, 2));
    expect((await rejection(MemWal.destroy(name, { storage }))).code).toBe('Locked');
    await w.close();
    await MemWal.destroy(name, { storage });
    const fresh = await open(storage, {}, name);
    expect((await fresh.scan()).numRows).toBe(0);
    await fresh.close();
  });
});

describe('put, get, scan, delete', () => {
  it('plain rows, RecordBatch and Table inputs all land; PutResult names the WAL entry', async () => {
    const w = await open();
    const r1 = await w.put(rows(1, 2));
    expect(r1).toEqual({ rows: 2, position: 1, durable: true });
    const table = tableFromArrays({ id: BigInt64Array.from([10n, 11n]) });
    const r2 = await w.put(table);
    expect(r2.position).toBe(2);
    const r3 = await w.put(table.batches[0]!);
    expect(r3.rows).toBe(2);
    expect(idsOf(await w.scan())).toEqual([1, 2, 10, 11]);
    expect(await w.get({ id: 10 })).toMatchObject({ id: 10n, value: null, name: null });
    await w.close();
  });

  it('newest version wins per key and deletes hide older versions in every tier', async () => {
    const w = await open(new MemoryStorage(), { frozenMemtableGraceMs: 0 });
    await w.put(rows(1, 5, 'old'));
    await w.forceSealActive();
    await w.waitForFlushDrain(); // ids 1..5 in a table file
    await w.put(rows(3, 2, 'frozen'));
    await w.forceSealActive(); // 3,4 in a frozen memtable (maybe flushed by now)
    await w.put(rows(4, 1, 'active'));
    await w.delete([{ id: 1 }]);
    expect(await w.get({ id: 1 })).toBeUndefined();
    expect((await w.get({ id: 2 }))!.name).toBe('old2');
    expect((await w.get({ id: 3 }))!.name).toBe('frozen3');
    expect((await w.get({ id: 4 }))!.name).toBe('active4');
    const s = await w.scan();
    expect(idsOf(s)).toEqual([2, 3, 4, 5]);
    const names = new Map(Array.from(s.getChild('id')!.toArray(), (id, i) => [Number(id), s.getChild('name')!.get(i)]));
    expect(names.get(4)).toBe('active4');
    // The delete survives a flush of its own memtable and a reopen.
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect(await w.get({ id: 1 })).toBeUndefined();
    expect(idsOf(await w.scan())).toEqual([2, 3, 4, 5]);
    await w.close();
  });

  it('a bad put rejects InvalidArgument naming the column and writes nothing', async () => {
    const w = await open();
    const e = await rejection(w.put([{ id: 1, nope: 2 }]));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('nope');
    expect((await w.walStats()).entriesWritten).toBe(0);
    expect((await w.memtableStats()).rowCount).toBe(0);
    await w.close();
  });

  it('append-only stores reject get and delete with NotSupported and keep duplicates', async () => {
    const w = await open(new MemoryStorage(), { primaryKey: [] });
    await w.put(rows(1, 2));
    await w.put(rows(1, 2));
    expect((await w.scan()).numRows).toBe(4);
    expect((await rejection(w.get({ id: 1 }))).code).toBe('NotSupported');
    expect((await rejection(w.delete([{ id: 1 }]))).code).toBe('NotSupported');
    await w.close();
  });

  it('scan projects columns and scanBatches honours limit', async () => {
    const w = await open();
    await w.put(rows(1, 10));
    await w.forceSealActive();
    await w.put(rows(11, 10));
    const s = await w.scan({ columns: ['id'] });
    expect(s.schema.fields.map((f) => f.name)).toEqual(['id']);
    let n = 0;
    for await (const b of w.scanBatches({ limit: 15 })) {
      n += b.numRows;
      expect(b.schema.fields.map((f) => f.name)).toEqual(['id', 'value', 'name']);
    }
    expect(n).toBe(15);
    expect((await rejection(w.scan({ columns: ['missing'] }))).code).toBe('InvalidArgument');
    await w.close();
  });

  it('scanBatches after a key reads no table block wholly before it; a bad or keyless after is rejected', async () => {
    const w = await open(new MemoryStorage(), { blockCacheBytes: 0 });
    for (let i = 0; i < 20; i++) await w.put(rows(i * 1000, 1000));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    const ids = async (opts: { after?: { id: number } }): Promise<number[]> => {
      const out: number[] = [];
      for await (const b of w.scanBatches({ columns: ['id'], ...opts })) out.push(...Array.from(b.getChild('id')!.toArray(), Number));
      return out;
    };
    const reads = async (f: () => Promise<unknown>): Promise<number> => {
      const before = (await w.readStats()).blockReads;
      await f();
      return (await w.readStats()).blockReads - before;
    };
    const all = await reads(() => ids({}));
    const last = await reads(() => ids({ after: { id: 19_500 } }));
    expect(await ids({ after: { id: 19_500 } })).toEqual(Array.from({ length: 499 }, (_, i) => 19_501 + i));
    expect(await ids({ after: { id: 99_999 } })).toEqual([]);
    expect((await ids({ after: { id: -5 } })).length).toBe(20_000);
    expect(all).toBeGreaterThan(4);
    expect(last).toBeLessThanOrEqual(2);
    const bad = w.scanBatches({ after: { nope: 1 } as never })[Symbol.asyncIterator]();
    expect((await rejection(bad.next())).code).toBe('InvalidArgument');
    await w.close();
    const a = await open(new MemoryStorage(), { primaryKey: [] });
    await a.put(rows(1, 2));
    const keyless = a.scanBatches({ after: { id: 1 } })[Symbol.asyncIterator]();
    expect((await rejection(keyless.next())).code).toBe('NotSupported');
    await a.close();
  });
});

describe('WAL group commit and durability', () => {
  it('a put on an idle log is appended at once; puts arriving meanwhile ride the next append', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs);
    const release = fs.hold('walAppend');
    const first = w.put(rows(1, 1));
    await tick(5);
    const riders = [w.put(rows(2, 1)), w.put(rows(3, 1)), w.put(rows(4, 1))];
    await tick(5);
    release();
    const results = await Promise.all([first, ...riders]);
    expect(results[0]!.position).toBe(1);
    expect(new Set(results.slice(1).map((r) => r.position))).toEqual(new Set([2]));
    expect((await w.walStats()).entriesWritten).toBe(2);
    await w.close();
  });

  it('durable puts are visible only once durable', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs);
    const release = fs.hold('walAppend');
    const p = w.put(rows(1, 1));
    await tick(5);
    expect(await w.get({ id: 1 })).toBeUndefined();
    expect((await w.scan()).numRows).toBe(0);
    expect((await w.memtableStats()).pendingWalBatchCount).toBe(1);
    release();
    await p;
    expect(await w.get({ id: 1 })).toBeDefined();
    await w.close();
  });

  it('non-durable puts are visible at once and appended within maxWalFlushIntervalMs; sync forces it', async () => {
    const w = await open(new MemoryStorage(), { durableWrite: false, maxWalFlushIntervalMs: 50 });
    const r = await w.put(rows(1, 1));
    expect(r.durable).toBe(false);
    expect(await w.get({ id: 1 })).toBeDefined();
    expect((await w.walStats()).entriesWritten).toBe(0);
    await until(async () => (await w.walStats()).entriesWritten === 1, 2000, 'timer append');
    await w.put(rows(2, 1));
    const s = await w.sync();
    expect(s.position).toBe(2);
    expect((await w.walStats()).entriesWritten).toBe(2);
    await w.close();
  });

  it('a failing WAL append is retried within walRetry, then poisons with the error', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { walRetry: { baseMs: 1, maxMs: 5, timeoutMs: 10_000 } });
    fs.failNext('walAppend', 2);
    await w.put(rows(1, 1));
    expect((await w.writeStats()).walAppendRetries).toBe(2);
    const w2 = await open(fs, { walRetry: { baseMs: 1, maxMs: 5, timeoutMs: 30 } });
    fs.failNext('walAppend', Infinity);
    const e = await rejection(w2.put(rows(1, 1)));
    expect(e.code).toBe('IOError');
    // Poisoned: writes and reads reject with the latched error; stats still answer.
    expect((await rejection(w2.put(rows(2, 1)))).code).toBe('IOError');
    expect((await rejection(w2.scan())).code).toBe('IOError');
    expect((await w2.memtableStats()).pendingWalBatchCount).toBe(1);
    expect(await w2.metrics()).toContain('wal_writer_state{store=');
    fs.clearFaults();
    await w2.close();
    await w.close();
  });

  it('a QuotaExceededError from storage maps to QuotaExceeded', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 10 } });
    const q = new Error('full');
    q.name = 'QuotaExceededError';
    fs.failNext('walAppend', Infinity, q);
    expect((await rejection(w.put(rows(1, 1)))).code).toBe('QuotaExceeded');
    await w.close();
  });
});

describe('freeze and flush', () => {
  it('freezes on bytes, rows and batches, never rejecting a put', async () => {
    for (const opt of [{ maxMemtableRows: 10 }, { maxMemtableBatches: 3 }, { maxMemtableBytes: 1000 }]) {
      const w = await open(new MemoryStorage(), opt);
      for (let i = 0; i < 6; i++) await w.put(rows(i * 5, 5));
      const st = await w.memtableStats();
      expect(st.generation).toBeGreaterThan(1);
      await w.waitForFlushDrain();
      expect(idsOf(await w.scan()).length).toBe(30);
      await w.close();
    }
  });

  it('forceSealActive returns the sealed generation, or null when empty', async () => {
    const w = await open();
    expect(await w.forceSealActive()).toEqual({ sealedGeneration: null });
    await w.put(rows(1, 1));
    expect(await w.forceSealActive()).toEqual({ sealedGeneration: 1 });
    expect((await w.memtableStats()).generation).toBe(2);
    await w.close();
  });

  it('a failed flush keeps its bytes in frozenBytes, deletes its partial file and is retried in place', async () => {
    const fs = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(fs, { flushRetry: { baseMs: 20, maxMs: 20 } }, name);
    await w.put(rows(1, 3));
    fs.failNext('tableWrite', 2);
    await w.forceSealActive();
    await until(async () => (await w.writeStats()).flushFailureCount >= 1, 2000, 'a flush failure');
    const st = await w.memtableStats();
    expect(st.frozenCount).toBe(1);
    expect(st.frozenBytes).toBeGreaterThan(0);
    await w.waitForFlushDrain();
    const after = await w.memtableStats();
    expect(after.frozenBytes).toBe(0);
    expect((await w.writeStats()).flushFailureCount).toBe(2);
    const h = fs.inner;
    await w.close();
    const handle = await h.openStore(name, { timeoutMs: 0 });
    const m = (await handle.manifestLoad())!;
    expect(m.tables.map((t) => t.name)).toEqual([await handle.tableList()].flat());
    expect(m.tables[0]).toMatchObject({ generation: 1, rows: 3 });
    expect(m.tables[0]!.checksum).toMatch(/^[0-9a-f]{8}$/);
    expect(m.tables[0]!.minKey).toBeDefined();
    await handle.release();
  });

  it('a table write that never settles counts as a failed attempt after flushRetry.stallMs and is retried', async () => {
    const fs = new FaultInjectingStorage();
    const w = await open(fs, { flushRetry: { baseMs: 5, maxMs: 5, stallMs: 50 } });
    await w.put(rows(1, 3));
    const release = fs.hold('tableWrite'); // the first attempt hangs
    await w.forceSealActive();
    await until(async () => (await w.writeStats()).flushFailureCount >= 1, 3000, 'the stalled attempt to fail');
    release(); // later attempts (and the late first one) go through
    await w.waitForFlushDrain();
    expect((await w.memtableStats()).frozenBytes).toBe(0);
    expect(idsOf(await w.scan())).toEqual([1, 2, 3]);
    await w.close();
  });

  it('a younger generation never commits past an older uncommitted one (Lance #8293)', async () => {
    const fs = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(fs, { flushRetry: { baseMs: 10, maxMs: 10 } }, name);
    await w.put(rows(1, 2));
    fs.failNext('tableWrite', 3);
    await w.forceSealActive(); // gen 1 fails 3 times
    await w.put(rows(3, 2));
    await w.forceSealActive(); // gen 2 must wait behind gen 1
    await until(async () => (await w.writeStats()).flushFailureCount >= 1, 2000, 'failure');
    expect((await w.memtableStats()).frozenCount).toBe(2);
    await w.waitForFlushDrain();
    await w.close();
    // Crash-equivalent check: reopen replays nothing lost, generations committed in order.
    const again = await open(fs, {}, name);
    expect(idsOf(await again.scan())).toEqual([1, 2, 3, 4]);
    await again.close();
    const h = await fs.inner.openStore(name, { timeoutMs: 0 });
    expect((await h.manifestLoad())!.tables.map((t) => t.generation)).toEqual([1, 2]);
    await h.release();
  });

  it('after a committed flush under a long grace frozenCount stays up while frozenBytes is 0', async () => {
    const w = await open(new MemoryStorage(), { frozenMemtableGraceMs: 60_000 });
    await w.put(rows(1, 3));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const st = await w.memtableStats();
    expect(st.frozenCount).toBe(1);
    expect(st.frozenBytes).toBe(0);
    expect(st.graceBytes).toBeGreaterThan(0);
    // Reads serve the grace generation from memory (and see it exactly once).
    expect(idsOf(await w.scan())).toEqual([1, 2, 3]);
    await w.close();
  });

  it('grace 0 evicts the memtable on commit', async () => {
    const w = await open();
    await w.put(rows(1, 3));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.memtableStats()).frozenCount).toBe(0);
    expect(idsOf(await w.scan())).toEqual([1, 2, 3]);
    expect((await w.storageStats()).tableFileCount).toBe(1);
    await w.close();
  });

  it('orphaned table files are swept at open', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.close();
    // A writer of the current epoch that wrote a table file and crashed before committing it.
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const m = (await h.manifestLoad())!;
    await h.manifestCommit(m.version, { ...m, version: m.version + 1 });
    await h.tableWrite('99-1-1.arrow', [new Uint8Array([1, 2, 3])]);
    await h.release();
    const again = await open(storage, {}, name);
    await again.close();
    const h2 = await storage.openStore(name, { timeoutMs: 0 });
    expect(await h2.tableList()).toEqual([]);
    await h2.release();
  });

  it('WAL segments below the replay cursor are removed after flushes', async () => {
    const w = await open(new MemoryStorage(), { maxMemtableRows: 5 });
    for (let i = 0; i < 10; i++) await w.put(rows(i * 5, 5, 'x'.repeat(200_000)));
    await w.waitForFlushDrain();
    await until(async () => (await w.walStats()).oldestPosition > 1, 2000, 'retention');
    const ws = await w.walStats();
    expect(ws.retainedBytes).toBeLessThan(ws.bytesWritten);
    await w.close();
  });
});

describe('writer lock, fencing and poison', () => {
  it('a second opener fails fast with Locked, waits, or steals and fences the first', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, {}, name);
    await a.put(rows(1, 2));
    expect((await rejection(open(storage, { lockTimeoutMs: 0 }, name))).code).toBe('Locked');
    expect((await rejection(open(storage, { lockTimeoutMs: 30 }, name))).code).toBe('Locked');
    const states: string[] = [];
    a.onStateChange((s) => states.push(s));
    const b = await open(storage, { steal: true }, name);
    await until(() => states.includes('fenced'), 1000, 'fenced state');
    expect((await rejection(a.put(rows(5, 1)))).code).toBe('Fenced');
    expect(idsOf(await b.scan())).toEqual([1, 2]);
    await b.put(rows(3, 1));
    await a.close();
    await b.close();
  });

  it('a waiting opener reports waiting-for-lock and gets the store when the holder closes', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const a = await open(storage, {}, name);
    const states: string[] = [];
    const pb = MemWal.open(
      { name, schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } },
      { onStateChange: (s) => states.push(s) },
    );
    await until(() => states.includes('waiting-for-lock'), 1000, 'waiting state');
    await a.close();
    const b = await pb;
    expect(b.writerState).toBe('open');
    await b.close();
  });

  it('a commit that finds a newer epoch poisons with Fenced and is not retried', async () => {
    const fs = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(fs, {}, name);
    await w.put(rows(1, 1));
    // Another writer claims the store behind this one's back (its lock notwithstanding).
    const h = await fs.inner.openStore(name, { steal: true });
    const m = (await h.manifestLoad())!;
    await h.manifestCommit(m.version, { ...m, version: m.version + 1, writerEpoch: m.writerEpoch + 1 });
    await w.forceSealActive().catch(() => undefined);
    const e = await rejection(w.waitForFlushDrain());
    expect(e.code).toBe('Fenced');
    expect(w.writerState).toBe('fenced');
    await h.release();
    await w.close();
  });

  it('close on a poisoned writer releases without I/O; abort is idempotent', async () => {
    const fs = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(fs, { walRetry: { baseMs: 1, maxMs: 1, timeoutMs: 5 } }, name);
    fs.failNext('walAppend', Infinity);
    await rejection(w.put(rows(1, 1)));
    fs.clearFaults();
    const before = fs.opCount;
    await w.close();
    expect(fs.opCount).toBe(before);
    const again = await open(fs, {}, name);
    await again.abort();
    await again.abort();
    expect(again.writerState).toBe('closed');
  });

  it('close makes accepted puts durable and flushes the active memtable', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, { durableWrite: false, maxWalFlushIntervalMs: 10_000 }, name);
    await w.put(rows(1, 4));
    await w.close();
    expect((await rejection(w.put(rows(9, 1)))).code).toBe('Closed');
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const m = (await h.manifestLoad())!;
    expect(m.tables.length).toBe(1);
    expect(m.replayCursor).toBe(1);
    await h.release();
  });

  it('close reports a WAL append that fails past walRetry while closing', async () => {
    const fs = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(
      fs,
      { durableWrite: false, maxWalFlushIntervalMs: 60_000, walRetry: { baseMs: 1, maxMs: 1, timeoutMs: 10 } },
      name,
    );
    await w.put(rows(1, 2)); // accepted, not yet appended
    fs.failNext('walAppend', Infinity);
    expect((await rejection(w.close())).code).toBe('IOError');
    fs.clearFaults();
    const again = await open(fs, { lockTimeoutMs: 0 }, name); // the lock was released
    await again.close();
  });

  it('close with a failing flush releases the lock and rejects; the rows replay at the next open', async () => {
    const fs = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(fs, {}, name);
    await w.put(rows(1, 3));
    fs.failNext('tableWrite', Infinity);
    const e = await rejection(w.close());
    expect(e.code).toBe('IOError');
    fs.clearFaults();
    const again = await open(fs, { lockTimeoutMs: 0 }, name);
    expect(idsOf(await again.scan())).toEqual([1, 2, 3]);
    expect((await again.writeStats()).replayedRows).toBe(3);
    await again.close();
  });
});

describe('recovery', () => {
  it('a clean close leaves nothing to replay: the next open reads no WAL entry and answers from table files', async () => {
    const storage = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(storage, { maxMemtableRows: 50 }, name);
    for (let i = 0; i < 6; i++) await w.put(rows(i * 20, 20)); // frozen memtables and an active one
    const releaseFlushes = storage.hold('tableWrite');
    await w.put(rows(500, 5));
    await w.forceSealActive();
    const { position } = await w.put(rows(600, 5));
    expect((await w.memtableStats()).frozenCount).toBeGreaterThan(0);
    const closed = w.close();
    releaseFlushes();
    await closed;
    const again = await open(storage, {}, name);
    const ws = await again.writeStats();
    expect(ws.replayedEntries).toBe(0);
    expect(ws.replayedRows).toBe(0);
    const wal = await again.walStats();
    expect(wal.retainedBytes).toBe(0);
    expect(wal.nextPosition).toBe(position + 1); // positions go on where they were
    expect((await again.memtableStats()).rowCount).toBe(0);
    expect((await again.scan()).numRows).toBe(130);
    expect((await again.get({ id: 604 }))?.name).toBe('v604');
    await again.close();
  });

  it('a reopen replays unflushed WAL entries and does not append them again', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(1, 3));
    await w.put(rows(2, 1, 'new'));
    await w.abort(); // no flush
    const again = await open(storage, {}, name);
    expect(idsOf(await again.scan())).toEqual([1, 2, 3]);
    expect((await again.get({ id: 2 }))!.name).toBe('new2');
    const ws = await again.walStats();
    expect(ws.entriesWritten).toBe(0);
    expect(ws.nextPosition).toBe(3);
    expect((await again.writeStats()).replayedEntries).toBe(2);
    await again.close();
  });

  it('a commit while an entry is still open does not reserve its position (no gap after a crash)', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, { durableWrite: false, maxWalFlushIntervalMs: 60_000 }, name);
    await w.put(rows(1, 2));
    await w.forceSealActive(); // entry 1 appended, generation 1 flushes
    await w.put(rows(3, 1)); // entry 2 assigned, not appended
    await w.waitForFlushDrain(); // the commit happens while entry 2 is open
    await w.abort(); // crash: entry 2 never reached storage
    const again = await open(storage, {}, name);
    await again.put(rows(4, 1));
    await again.abort();
    const third = await open(storage, {}, name); // a gap in positions would fail with Corruption
    expect(idsOf(await third.scan())).toEqual([1, 2, 4]);
    await third.close();
  });

  it('a torn WAL tail is truncated and counted; a corrupt middle entry fails open with Corruption', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(1, 1));
    await w.put(rows(2, 1));
    await w.abort();
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const [seg] = await h.walList();
    await h.walAppend(seg!.name, seg!.bytes, new Uint8Array([0x4d, 0x57, 0x41, 0x4c, 9, 9, 0, 0, 1]));
    await h.release();
    const again = await open(storage, {}, name);
    expect((await again.walStats()).tornTailBytes).toBe(9);
    expect(idsOf(await again.scan())).toEqual([1, 2]);
    await again.abort();
    // Flip a byte inside the first of two entries: not a torn tail, so open fails with
    // Corruption and changes nothing. (Built in a second storage, as the first writer left it.)
    const src = new MemoryStorage();
    const w1 = await open(src, {}, name);
    await w1.put(rows(1, 1));
    await w1.put(rows(2, 1));
    await w1.abort();
    const hs = await src.openStore(name, { timeoutMs: 0 });
    const manifest = (await hs.manifestLoad())!;
    const [seg1] = await hs.walList();
    const flipped = (await hs.walRead(seg1!.name)).slice();
    flipped[40] = flipped[40]! ^ 0xff;
    await hs.release();
    const dst = new MemoryStorage();
    const hd = await dst.openStore(name, { timeoutMs: 0 });
    await hd.manifestCommit(0, manifest);
    await hd.walAppend(seg1!.name, 0, flipped);
    await hd.release();
    const e = await rejection(open(dst, {}, name));
    expect(e.code).toBe('Corruption');
    const h3 = await dst.openStore(name, { timeoutMs: 0 });
    expect(await h3.walRead(seg1!.name)).toEqual(flipped);
    expect((await h3.manifestLoad())!.version).toBe(manifest.version);
    await h3.release();
  });
});

describe('WAL-only mode, tail, retention', () => {
  const walOnly = { enableMemtable: false, primaryKey: [] };

  it('rejects memtable operations with NotSupported and answers the rest', async () => {
    const w = await open(new MemoryStorage(), walOnly);
    await w.put(rows(1, 2));
    for (const p of [w.get({ id: 1 }), w.scan(), w.forceSealActive(), w.waitForFlushDrain(), w.memtableStats(), w.delete([{ id: 1 }])]) {
      expect((await rejection(p)).code).toBe('NotSupported');
    }
    expect((await w.backpressureStats()).activeCount).toBe(0);
    expect(await w.metrics()).toContain('wal_unflushed_bytes{store=');
    await w.close();
  });

  it('tail yields durable entries in order, follows new ones, and survives reopen', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, walOnly, name);
    await w.put(rows(1, 2));
    await w.put(rows(3, 1));
    const seen: number[] = [];
    for await (const e of w.tail(1)) seen.push(e.position, e.data.numRows);
    expect(seen).toEqual([1, 2, 2, 1]);
    const ac = new AbortController();
    const followed: number[] = [];
    const follower = (async () => {
      for await (const e of w.tail(3, { follow: true, signal: ac.signal })) {
        followed.push(e.position);
        if (e.position === 3) ac.abort();
      }
    })();
    await tick(5);
    expect(followed).toEqual([]);
    await w.put(rows(4, 1)); // entry 3
    await follower;
    expect(followed).toEqual([3]);
    await w.close();
    const again = await open(storage, walOnly, name);
    const all: number[] = [];
    for await (const e of again.tail(1)) all.push(e.position);
    expect(all).toEqual([1, 2, 3]);
    await again.close();
  });

  it('a following tail reads each segment from where its last read ended: bytes read per wake-up do not grow with the segment', async () => {
    const reads: number[] = [];
    const storage = new MemoryStorage();
    const counting: StorageAdapter = {
      layout: storage.layout,
      destroyStore: (name) => storage.destroyStore(name),
      openStore: async (name, options) => {
        const h = await storage.openStore(name, options);
        return new Proxy(h, {
          get(target, prop) {
            if (prop === 'walRead') {
              return async (segment: string, offset?: number) => {
                const bytes = await target.walRead(segment, offset);
                reads.push(bytes.length);
                return bytes;
              };
            }
            const v = Reflect.get(target, prop);
            return typeof v === 'function' ? v.bind(target) : v;
          },
        });
      },
    };
    const w = await open(counting, walOnly);
    const ac = new AbortController();
    let seen = 0;
    const follower = (async () => {
      for await (const _ of w.tail(1, { follow: true, signal: ac.signal })) seen += 1;
    })();
    const ENTRIES = 200;
    for (let i = 0; i < ENTRIES; i++) {
      await w.put(rows(i, 10, 'z'.repeat(50))); // about 1 KiB per entry, all in one segment
      await until(() => seen === i + 1, 5000, `entry ${i + 1} tailed`);
    }
    ac.abort();
    await follower;
    const segmentBytes = (await w.walStats()).retainedBytes;
    const entryBytes = segmentBytes / ENTRIES;
    const late = reads.slice(-50);
    // Each wake-up reads the new entry (or two), not the segment from its first byte.
    expect(Math.max(...late), `last reads ${late.join(',')}; segment ${segmentBytes} bytes`).toBeLessThan(3 * entryBytes);
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThan(3 * segmentBytes);
    await w.close();
  });

  it('markConsumed advances durably; entries are removed only at or below it; below is Truncated', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, walOnly, name);
    for (let i = 0; i < 6; i++) await w.put(rows(i, 1, 'y'.repeat(3_000_000)));
    expect((await w.walStats()).oldestPosition).toBe(1);
    await w.markConsumed(5);
    const ws = await w.walStats();
    expect(ws.oldestPosition).toBeGreaterThan(1);
    expect(ws.oldestPosition).toBeLessThanOrEqual(6);
    expect(
      (
        await rejection(
          (async () => {
            for await (const _ of w.tail(1)) void _;
          })(),
        )
      ).code,
    ).toBe('Truncated');
    await w.close();
    const again = await open(storage, walOnly, name);
    const got: number[] = [];
    for await (const e of again.tail(6)) got.push(e.position);
    expect(got).toEqual([6]);
    await again.close();
  });

  it('markConsumed beyond the durable position is InvalidArgument', async () => {
    const w = await open(new MemoryStorage(), walOnly);
    await w.put(rows(1, 1));
    expect((await rejection(w.markConsumed(5))).code).toBe('InvalidArgument');
    await w.close();
  });
});

describe('errors', () => {
  it('every rejection is a MemWalError with a code', async () => {
    const w = await open();
    const e = await rejection(w.put([{ id: 'x' }]));
    expect(e).toBeInstanceOf(MemWalError);
    await w.close();
  });
});

describe('invariants', () => {
  it('hold after every step of a concurrent load with freezes, flushes and a non-durable mode', async () => {
    for (const durableWrite of [true, false]) {
      const w = await open(new MemoryStorage(), { maxMemtableRows: 37, durableWrite, maxWalBufferBytes: 4096 });
      const pending: Promise<unknown>[] = [];
      for (let i = 0; i < 200; i++) {
        pending.push(w.put(rows(i * 3, 3)));
        w.checkInvariants();
        if (i % 17 === 0) await w.forceSealActive();
        if (i % 5 === 0) await Promise.resolve();
        w.checkInvariants();
      }
      await Promise.all(pending);
      await w.sync();
      w.checkInvariants();
      await w.close();
    }
  });
});
