// Point reads through the read view: the block cache sized from the data by default, and getMany
// (many keys from one capture, in key order, each block read once).

import { Binary, Decimal, Field, Int32, IntervalDayTime, List, Schema, Struct } from 'apache-arrow';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BLOCK_CACHE_DEVICE_MAX_BYTES,
  BLOCK_CACHE_MAX_BYTES,
  BLOCK_CACHE_MIN_BYTES,
  blockCacheCeiling,
  defaultBlockCacheBytes,
} from '../lsm/table-cache.js';
import { MemoryStorage } from '../storage/memory.js';
import { MemWal } from './memwal.js';
import type { ReadView } from './read-view.js';
import { open, rejection, rows } from './testkit.test-util.js';

const MiB = 1024 * 1024;

/** The writer's read view (getMany is not on the public API yet). */
const readView = (w: MemWal): ReadView => (w as unknown as { tier: { reads: ReadView } }).tier.reads;

/** `n` rows in 1,000-row puts, sealed, flushed and compacted into level 1. */
async function compacted(w: MemWal, n: number, tag = 'v'): Promise<void> {
  for (let i = 0; i < n; i += 1000) await w.put(rows(i, Math.min(1000, n - i), tag));
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await w.compact();
}

describe('read view', () => {
  it('the default block budget is the open table bytes plus a quarter, from 8 MiB up to 64 MiB', () => {
    expect(defaultBlockCacheBytes(0)).toBe(BLOCK_CACHE_MIN_BYTES);
    expect(defaultBlockCacheBytes(6 * MiB)).toBe(BLOCK_CACHE_MIN_BYTES);
    expect(defaultBlockCacheBytes(40 * MiB)).toBe(50 * MiB);
    expect(defaultBlockCacheBytes(4096 * MiB)).toBe(BLOCK_CACHE_MAX_BYTES);
    expect([BLOCK_CACHE_MIN_BYTES, BLOCK_CACHE_MAX_BYTES]).toEqual([8 * MiB, 64 * MiB]);
  });

  it('where the device has room the default budget grows past 64 MiB: an eighth of navigator.deviceMemory, up to 1 GiB', () => {
    expect(blockCacheCeiling(undefined)).toBe(64 * MiB);
    expect(blockCacheCeiling(Number.NaN)).toBe(64 * MiB);
    expect(blockCacheCeiling(0.5)).toBe(64 * MiB);
    expect(blockCacheCeiling(4)).toBe(512 * MiB);
    expect(blockCacheCeiling(8)).toBe(1024 * MiB);
    expect(blockCacheCeiling(64)).toBe(BLOCK_CACHE_DEVICE_MAX_BYTES);
    // A 4M-row store of ~400 MiB of table files is covered on an 8 GiB device, not past the ceiling on any.
    expect(defaultBlockCacheBytes(400 * MiB, blockCacheCeiling(8))).toBe(500 * MiB);
    expect(defaultBlockCacheBytes(4096 * MiB, blockCacheCeiling(8))).toBe(1024 * MiB);
    expect(defaultBlockCacheBytes(4096 * MiB, blockCacheCeiling(undefined))).toBe(BLOCK_CACHE_MAX_BYTES);
  });

  describe('on a device that reports its memory', () => {
    afterEach(() => vi.unstubAllGlobals());
    it("a store's cache takes its ceiling from this realm's navigator.deviceMemory", async () => {
      vi.stubGlobal('navigator', { deviceMemory: 4 });
      const w = await open();
      const cache = (w as unknown as { tier: { tableCache: { ceiling: number } } }).tier.tableCache;
      expect(cache.ceiling).toBe(512 * MiB);
      await w.close();
    });
  });

  it('by default a store of more than 8 MiB of tables is read from memory once warm: the second pass reads no block', async () => {
    const w = await open();
    await compacted(w, 100_000, 'x'.repeat(80));
    const { tableBytes } = await w.compactionStats();
    expect(tableBytes).toBeGreaterThan(9 * MiB);
    const pass = async (): Promise<number> => {
      const before = (await w.readStats()).blockReads;
      for (let id = 0; id < 100_000; id += 100) expect((await w.get({ id }))?.id).toBe(BigInt(id));
      return (await w.readStats()).blockReads - before;
    };
    expect(await pass()).toBeGreaterThan(100);
    expect(await pass()).toBe(0);
    const s = await w.readStats();
    expect(s.blockCacheLimitBytes).toBeGreaterThan(BLOCK_CACHE_MIN_BYTES);
    expect(s.blockCacheLimitBytes).toBe(defaultBlockCacheBytes(tableBytes));
    expect(s.blockCacheBytes).toBeLessThanOrEqual(s.blockCacheLimitBytes);
    expect(s.indexBytes).toBeGreaterThan(0);
    await w.close();
    // An explicit budget is kept as given.
    const small = await open(new MemoryStorage(), { blockCacheBytes: 4096 });
    expect((await small.readStats()).blockCacheLimitBytes).toBe(4096);
    await small.close();
  });

  it('a warm get is answered from the cached block without waiting, and counts what a cold one counts', async () => {
    const w = await open();
    await compacted(w, 3000); // level 1
    for (let i = 0; i < 3000; i += 1000) await w.put(rows(i, 1000, 'l0')); // a newer level-0 file over it
    await w.delete([{ id: 5 }]);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const view = readView(w);
    const cold = await w.readStats();
    expect((await view.get({ id: 4 }))?.name).toBe('l04');
    const afterCold = await w.readStats();
    // Warm: the same key answers before any await settles elsewhere (no block read, no pin).
    let settled = false;
    const warm = view.get({ id: 4 }).then((r) => ((settled = true), r));
    await Promise.resolve();
    expect(settled).toBe(true);
    expect((await warm)?.name).toBe('l04');
    const afterWarm = await w.readStats();
    const delta = (a: typeof cold, b: typeof cold) => ({
      gets: b.gets - a.gets,
      consulted: b.tableFilesConsulted - a.tableFilesConsulted,
      reads: b.blockReads - a.blockReads,
      hits: b.blockCacheHits - a.blockCacheHits,
    });
    expect(delta(cold, afterCold)).toEqual({ gets: 1, consulted: 1, reads: 1, hits: 0 });
    expect(delta(afterCold, afterWarm)).toEqual({ gets: 1, consulted: 1, reads: 0, hits: 1 });
    // A delete marker in the newer file hides the older version, warm or cold.
    expect(await view.get({ id: 5 })).toBeUndefined();
    expect(await view.get({ id: 5 })).toBeUndefined();
    // A put since is read from the memtable, then the table order follows a compaction.
    await w.put(rows(6, 1, 'mem'));
    expect((await view.get({ id: 6 }))?.name).toBe('mem6');
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    for (const id of [4, 6, 2999]) expect((await view.get({ id }))?.name).toBe(id === 6 ? 'mem6' : `l0${id}`);
    expect(await view.get({ id: 5 })).toBeUndefined();
    await w.close();
  });

  it('getMany answers in the order asked from one capture, and keys sharing a block read it once', async () => {
    const w = await open(new MemoryStorage(), { blockCacheBytes: 0 });
    await compacted(w, 5000);
    await w.delete([{ id: 7 }]);
    await w.put(rows(4, 1, 'new'));
    const view = readView(w);
    const before = (await w.readStats()).blockReads;
    const got = await view.getMany([{ id: 9 }, { id: 4 }, { id: 7 }, { id: 123_456 }, { id: 3 }, { id: 9 }]);
    expect(got.map((r) => r?.name)).toEqual(['v9', 'new4', undefined, undefined, 'v3', 'v9']);
    // 3 and 9 live in the first block of the one table file: read once, with no cache at all.
    expect((await w.readStats()).blockReads - before).toBe(1);
    expect(await view.getMany([])).toEqual([]);
    expect((await rejection(view.getMany([{ id: 1 }, { nope: 1 }]))).code).toBe('InvalidArgument');
    await w.close();
  });

  it("a row read back is the caller's own: changing its nested bytes, decimals or intervals changes nothing stored", async () => {
    const schema = new Schema([
      new Field('id', new Int32(), false),
      new Field('list', new List(new Field('item', new Binary(), true)), true),
      new Field('st', new Struct([new Field('b', new Binary(), true)]), true),
      new Field('dec', new Decimal(2, 10, 128), true),
      new Field('iv', new IntervalDayTime(), true),
    ]);
    const w = await MemWal.open({
      name: 'detached-rows',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: { warn: () => undefined },
    });
    const row = (id: number): Record<string, unknown> => ({
      id,
      list: [new Uint8Array([1, 2])],
      st: { b: new Uint8Array([3, 4]) },
      dec: new Uint32Array([1234, 0, 0, 0]),
      iv: new Int32Array([5, 6]),
    });
    const spoil = (r: Record<string, unknown> | undefined): void => {
      const v = r as { list: Uint8Array[]; st: { b: Uint8Array }; dec: Uint32Array; iv: Int32Array };
      v.list[0]![0] = 99;
      v.st.b[0] = 99;
      v.dec[0] = 99;
      v.iv[0] = 99;
    };
    const plain = (r: Record<string, unknown> | undefined): unknown => {
      const v = r as { list: Uint8Array[]; st: { b: Uint8Array }; dec: Uint32Array; iv: Int32Array };
      return [[...v.list[0]!], [...v.st.b], String(v.dec), [...v.iv]];
    };
    const stored = [[1, 2], [3, 4], '1234', [5, 6]];
    await w.put([row(1)] as never);
    spoil(await w.get({ id: 1 })); // from the memtable
    spoil((await w.getMany([{ id: 1 }]))[0]);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect(plain(await w.get({ id: 1 }))).toEqual(stored);
    spoil(await w.get({ id: 1 })); // from a cached table block
    spoil((await w.getMany([{ id: 1 }]))[0]);
    expect(plain(await w.get({ id: 1 }))).toEqual(stored);
    expect(plain((await w.getMany([{ id: 1 }]))[0])).toEqual(stored);
    await w.close();
  });

  it('getMany answers each duplicate key with a row of its own, from a table file as from a memtable', async () => {
    const w = await open();
    await w.put(rows(0, 10));
    await w.forceSealActive();
    await w.waitForFlushDrain(); // 0..9 in a table file
    await w.put(rows(20, 5)); // 20..24 in the memtable
    for (const id of [3, 22]) {
      const [a, b] = (await w.getMany([{ id }, { id }])) as { name: string }[];
      expect(b).toEqual(a);
      a!.name = 'changed by the caller';
      expect(b!.name).toBe(`v${id}`);
    }
    await w.close();
  });
});
