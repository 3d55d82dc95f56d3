// The table file a flush writes, read back from outside: its blocks, its checksum against its
// bytes, and a keyed flush's newest row per key in key order (docs/impl.md §3, docs/format.md).

import { Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { BLOCK_TARGET_BYTES, KEYED_BLOCK_TARGET_BYTES } from '../format/table/format.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { blockRanges } from '../format/table/reader.js';
import { MemoryStorage } from '../storage/memory.js';
import { crc32c } from '../util/crc32c.js';
import { MemWal } from './memwal.js';
import { open, rows, storeName, until } from './testkit.test-util.js';

/** The table files of every store on `storage`, by name. */
function tableFiles(storage: MemoryStorage): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const s of (storage as unknown as { stores: Map<string, { tables: Map<string, Uint8Array> }> }).stores.values())
    for (const [name, bytes] of s.tables) out.set(name, bytes);
  return out;
}

function manifestTables(w: MemWal): readonly TableFileEntry[] {
  return (w as unknown as { ctx: { log: { manifest: { tables: TableFileEntry[] } } } }).ctx.log.manifest.tables;
}

async function flushAll(w: MemWal): Promise<void> {
  await w.forceSealActive();
  await w.waitForFlushDrain();
}

/** Every table file the manifest names has the manifest's length and CRC-32C. */
function expectChecksumsOfBytes(w: MemWal, storage: MemoryStorage): number {
  const files = tableFiles(storage);
  const tables = manifestTables(w);
  for (const t of tables) {
    const bytes = files.get(t.name)!;
    expect(bytes.length).toBe(t.bytes);
    expect(crc32c(bytes).toString(16).padStart(8, '0')).toBe(t.checksum);
  }
  return tables.length;
}

describe('a flushed table file', () => {
  it('a keyed flush cuts blocks of about the target size even when most of its memtable rows were overwritten by smaller ones', async () => {
    const storage = new MemoryStorage();
    const w = await open(storage, { maxMemtableRows: 1_000_000, maxMemtableBytes: 1 << 30 });
    // 100,000 small rows on five keys, then 4,000 rows of ~1 KB: the memtable's average row is
    // ~60 bytes, the rows the file holds ~1 KB.
    for (let r = 0; r < 100; r++) await w.put(Array.from({ length: 1_000 }, (_, i) => ({ id: 100_000 + (i % 5), value: r, name: 'a' })));
    const big = 'x'.repeat(1_000);
    await w.put(Array.from({ length: 4_000 }, (_, i) => ({ id: i, value: 1, name: big + i })));
    await flushAll(w);
    const [file] = [...tableFiles(storage).values()];
    const blocks = blockRanges(file!);
    expect(Math.max(...blocks.map((b) => b.length))).toBeLessThanOrEqual(2 * KEYED_BLOCK_TARGET_BYTES);
    expect((await w.scan()).numRows).toBe(4_005);
    expect(expectChecksumsOfBytes(w, storage)).toBe(1);
    await w.close();
  });

  it('a keyed store cuts its table files into blocks of about 16 KiB, an append-only store into blocks of about 64 KiB', async () => {
    for (const keyed of [true, false]) {
      const storage = new MemoryStorage();
      const w = keyed ? await open(storage) : await open(storage, { primaryKey: [] });
      await w.put(Array.from({ length: 40_000 }, (_, i) => ({ id: i, value: i, name: `name-${i}` })));
      await flushAll(w);
      const [file] = [...tableFiles(storage).values()];
      const blocks = blockRanges(file!).slice(0, -1); // the last block holds what is left
      const target = keyed ? KEYED_BLOCK_TARGET_BYTES : BLOCK_TARGET_BYTES;
      expect(blocks.length).toBeGreaterThan(1);
      for (const b of blocks) {
        expect(b.length).toBeGreaterThan(target / 2);
        expect(b.length).toBeLessThanOrEqual(2 * target);
      }
      await w.close();
    }
  });

  it("a flushed file's checksum is the CRC-32C of its bytes: one row, empty and odd-length strings, nulls, many blocks, tombstones only, append-only", async () => {
    const cases: { keyed: boolean; write: (w: MemWal) => Promise<unknown> }[] = [
      { keyed: true, write: (w) => w.put([{ id: 7, value: 1, name: 'x' }]) },
      {
        keyed: true,
        write: (w) =>
          w.put([
            { id: 1, value: null, name: '' },
            { id: 2, value: 2, name: null },
            { id: 3, value: 3, name: 'abc' },
          ]),
      },
      { keyed: true, write: (w) => w.put(Array.from({ length: 9_001 }, (_, i) => ({ id: i * 7919, value: i, name: 'y'.repeat(i % 13) }))) },
      { keyed: true, write: (w) => w.delete([{ id: 1 }, { id: 2 }, { id: 3 }]) },
      { keyed: false, write: (w) => w.put(Array.from({ length: 5_003 }, (_, i) => ({ id: i, value: i, name: 'z'.repeat(i % 7) }))) },
      { keyed: false, write: (w) => w.put([{ id: 1, value: null, name: null }]) },
    ];
    for (const c of cases) {
      const storage = new MemoryStorage();
      const w = c.keyed ? await open(storage) : await open(storage, { primaryKey: [] });
      await c.write(w);
      await flushAll(w);
      expect(expectChecksumsOfBytes(w, storage)).toBe(1);
      await w.close();
    }
  });

  it("a compaction output's checksum is the CRC-32C of its bytes (several outputs, overwritten keys, tombstones)", async () => {
    const storage = new MemoryStorage();
    const w = await open(storage, { maxMemtableRows: 3_000 });
    for (let round = 0; round < 4; round++) {
      await w.put(
        Array.from({ length: 6_000 }, (_, i) => ({ id: (i * 13 + round) % 9_000, value: round, name: 'c'.repeat((i + round) % 11) })),
      );
      await w.delete(Array.from({ length: 50 }, (_, i) => ({ id: i * 17 + round })));
      await flushAll(w);
    }
    await w.compact();
    expect(manifestTables(w).some((t) => (t.level ?? 0) > 0)).toBe(true); // compaction outputs
    expect(expectChecksumsOfBytes(w, storage)).toBeGreaterThan(0);
    await w.close();
  });

  it('a keyed flush holds the newest row of each key in key order: duplicates within one memtable, deletes, -2^53 and its neighbours, strings "a" < "a\\0" < "ab"', async () => {
    const storage = new MemoryStorage();
    const w = await open(storage);
    const big = 2n ** 53n;
    await w.put([
      { id: -big, value: 1, name: 'old' },
      { id: 5, value: 1, name: 'old5' },
      { id: big, value: 1, name: 'big' },
    ]);
    await w.put([
      { id: -big, value: 2, name: 'new' },
      { id: -big + 1n, value: 1, name: 'm' },
      { id: -big - 1n, value: 1, name: 'l' },
    ]);
    await w.delete([{ id: 5 }]);
    await w.put([
      { id: 6, value: 1, name: 'a' },
      { id: 6, value: 2, name: 'b' },
    ]);
    await flushAll(w);
    const ids = (await w.scan()).getChild('id')!.toArray() as BigInt64Array;
    expect([...ids]).toEqual([-big - 1n, -big, -big + 1n, 6n, big]);
    expect(await w.get({ id: -big })).toMatchObject({ name: 'new', value: 2 });
    expect(await w.get({ id: 6 })).toMatchObject({ name: 'b' });
    expect(await w.get({ id: 5 })).toBeUndefined();
    expect(await w.get({ id: big })).toMatchObject({ name: 'big' });
    expectChecksumsOfBytes(w, storage);
    await w.close();

    const s2 = new Schema([new Field('k', new Utf8(), false), new Field('n', new Int64(), false), new Field('v', new Utf8(), true)]);
    const composite = await MemWal.open({
      name: storeName(),
      schema: s2,
      primaryKey: ['k', 'n'],
      storage,
      logger: { warn: () => undefined },
    });
    await composite.put([
      { k: 'ab', n: 1, v: 'old' },
      { k: 'a\0', n: 1, v: '1' },
      { k: 'a', n: 2, v: '2' },
      { k: 'a', n: 1, v: '3' },
      { k: 'ab', n: 1, v: 'new' },
      { k: '', n: -1, v: '4' },
    ]);
    await composite.delete([{ k: 'a', n: 2 }]);
    await flushAll(composite);
    const t = await composite.scan();
    const got = [...t].map((r) => `${r.k}|${r.n}|${r.v}`);
    expect(got).toEqual(['|-1|4', 'a|1|3', 'a\0|1|1', 'ab|1|new']);
    expect(await composite.get({ k: 'ab', n: 1 })).toMatchObject({ v: 'new' });
    expect(await composite.get({ k: 'a', n: 2 })).toBeUndefined();
    await composite.close();
  });

  it('abort() while a flush build runs in slices writes no table file and loses no durable row', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, { maxMemtableBytes: 256 << 20, maxUnflushedMemtableBytes: 512 << 20 }, name);
    for (let i = 0; i < 200_000; i += 20_000) await w.put(rows(i, 20_000));
    await w.forceSealActive();
    const stage = (): string => (w as unknown as { tier: { flushStage(): string } }).tier.flushStage();
    await until(() => stage().includes('building'), 5_000, 'the flush build');
    await w.abort();
    await new Promise((r) => setTimeout(r, 1_000)); // the build runs on to its end
    expect(tableFiles(storage).size).toBe(0);
    const again = await open(storage, {}, name);
    expect((await again.scan()).numRows).toBe(200_000);
    await again.close();
  });
});
