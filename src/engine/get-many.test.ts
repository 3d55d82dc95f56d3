// getMany: many point reads from one snapshot, answered in the caller's order (docs/impl.md §4).

import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MAX_GET_MANY_KEYS } from './memwal.js';
import { open, rejection, rows, storeName } from './testkit.test-util.js';

const ids = (out: ({ id: bigint | number } | undefined)[]): (number | undefined)[] =>
  out.map((r) => (r === undefined ? undefined : Number(r.id)));
const names = (out: ({ name: unknown } | undefined)[]): unknown[] => out.map((r) => r?.name);
const keys = (...n: number[]): { id: number }[] => n.map((id) => ({ id }));

describe('getMany', () => {
  it("answers in the caller's order, with undefined for absent keys and duplicates answered twice", async () => {
    const w = await open();
    await w.put(rows(0, 10));
    const out = (await w.getMany(keys(7, 3, 42, 3, 0, -1, 9))) as { id: bigint; name: string }[];
    expect(ids(out)).toEqual([7, 3, undefined, 3, 0, undefined, 9]);
    expect(names(out)).toEqual(['v7', 'v3', undefined, 'v3', 'v0', undefined, 'v9']);
    expect(await w.getMany([])).toEqual([]);
    await w.close();
  });

  it('answers what get answers across the active memtable, a frozen one, table files and tombstones', async () => {
    const storage = new FaultInjectingStorage();
    const w = await open(storage);
    await w.put(rows(0, 100, 'a')); // table file 1
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.put(rows(50, 30, 'b')); // table file 2: newer versions of 50..79
    await w.delete(keys(60, 61));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const releaseFlush = storage.hold('tableWrite');
    await w.put(rows(70, 20, 'c')); // a frozen memtable whose flush is held
    await w.delete(keys(5));
    await w.forceSealActive();
    await w.put(rows(80, 5, 'd')); // the active memtable
    await w.delete(keys(71, 10));
    expect((await w.memtableStats()).frozenCount).toBe(1);
    const asked = [99, 0, 5, 10, 55, 60, 61, 62, 70, 71, 72, 80, 84, 85, 89, 90, 100, 5, 55];
    const out = await w.getMany(keys(...asked));
    const one = await Promise.all(asked.map((id) => w.get({ id })));
    expect(out).toEqual(one);
    expect(names(out as { name: unknown }[])).toEqual([
      'a99',
      'a0',
      undefined,
      undefined,
      'b55',
      undefined,
      undefined,
      'b62',
      'c70',
      undefined,
      'c72',
      'd80',
      'd84',
      'c85',
      'c89',
      'a90',
      undefined,
      undefined,
      'b55',
    ]);
    releaseFlush();
    await w.close();
  });

  it('reads each table block once per batch, whatever the order of the keys', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(0, 10_000));
    await w.close();
    const again = await open(storage, {}, name); // an empty block cache
    const before = await again.readStats();
    // These keys fall in the first and the last block of the 10,000 rows, interleaved.
    const asked = [9_999, 1, 9_996, 2, 9_997, 3, 9_998, 4];
    const out = await again.getMany(keys(...asked));
    expect(ids(out as { id: bigint }[])).toEqual(asked);
    const after = await again.readStats();
    expect(after.blockReads - before.blockReads).toBe(2);
    expect(after.blockCacheHits - before.blockCacheHits).toBe(0);
    expect(after.gets - before.gets).toBe(asked.length);
    await again.close();
  });

  it('answers from the snapshot it captured when a flush commits during the batch', async () => {
    const storage = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(0, 10, 'old'));
    await w.close();
    const again = await open(storage, {}, name); // 0..9 only in a table file, not yet read
    const releaseReads = storage.hold('tableRead');
    const batch = again.getMany(keys(0, 5, 9, 10));
    await again.put(rows(0, 11, 'new'));
    await again.forceSealActive();
    await again.waitForFlushDrain(); // the new versions are in a table file now, committed
    releaseReads();
    expect(names((await batch) as { name: unknown }[])).toEqual(['old0', 'old5', 'old9', undefined]);
    expect(names((await again.getMany(keys(0, 5, 9, 10))) as { name: unknown }[])).toEqual(['new0', 'new5', 'new9', 'new10']);
    await again.close();
  });

  it('a failed block read rejects the whole batch with the storage error, and the next batch reads', async () => {
    const storage = new FaultInjectingStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(0, 10_000));
    await w.close();
    const again = await open(storage, {}, name);
    await again.getMany(keys(0)); // the file's footer and first block are read
    storage.failNext('tableRead'); // one of the two blocks this batch reads at once fails
    expect((await rejection(again.getMany(keys(1, 9_999, 5_000)))).code).toBe('IOError');
    expect(ids((await again.getMany(keys(1, 9_999, 5_000))) as { id: bigint }[])).toEqual([1, 9_999, 5_000]);
    await again.close();
  });

  it('rejects a bad key with InvalidArgument naming its index, and reads nothing', async () => {
    const w = await open();
    await w.put(rows(0, 10));
    const before = (await w.readStats()).gets;
    const bad = await rejection(w.getMany([{ id: 1 }, { id: 2 }, { nope: 3 } as never]));
    expect(bad.code).toBe('InvalidArgument');
    expect(bad.message).toContain('keys[2]');
    expect((await rejection(w.getMany([{ id: 1 }, null as never]))).message).toContain('keys[1]');
    expect((await rejection(w.getMany({ id: 1 } as never))).code).toBe('InvalidArgument');
    expect((await w.readStats()).gets).toBe(before);
    await w.close();
  });

  it(`rejects more than ${MAX_GET_MANY_KEYS} keys in one call`, async () => {
    const w = await open();
    await w.put(rows(0, 10));
    expect(await w.getMany(Array.from({ length: MAX_GET_MANY_KEYS }, (_, i) => ({ id: i % 10 })))).toHaveLength(MAX_GET_MANY_KEYS);
    const e = await rejection(w.getMany(Array.from({ length: MAX_GET_MANY_KEYS + 1 }, () => ({ id: 1 }))));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain(`more than ${MAX_GET_MANY_KEYS}`);
    await w.close();
  });

  it('rejects NotSupported without a primary key and in WAL-only mode', async () => {
    const appendOnly = await open(new MemoryStorage(), { primaryKey: [] });
    expect((await rejection(appendOnly.getMany([{ id: 1 }] as never))).code).toBe('NotSupported');
    await appendOnly.close();
    const walOnly = await open(new MemoryStorage(), { primaryKey: [], enableMemtable: false });
    expect((await rejection(walOnly.getMany([{ id: 1 }] as never))).code).toBe('NotSupported');
    await walOnly.close();
  });

  it('rejects Closed after close', async () => {
    const w = await open();
    await w.close();
    expect((await rejection(w.getMany(keys(1)))).code).toBe('Closed');
  });
});
