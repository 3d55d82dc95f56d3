// A store whose table files a release before index sections wrote (table format 2, docs/format.md
// §8 and §11) opens unchanged, reads and queries right (each file's index section built from its
// rows), and compaction rewrites the files in the current format (3).

import { describe, expect, it } from 'vitest';
import type { Manifest } from '../format/manifest/manifest.js';
import { asFormat2 } from '../format/table/previous-format.test-util.js';
import { MemoryStorage } from '../storage/memory.js';
import { open, rows, storeName } from './testkit.test-util.js';

type Stored = { manifest?: Manifest; tables: Map<string, Uint8Array> };
const storeOf = (mem: MemoryStorage, name: string): Stored => (mem as unknown as { stores: Map<string, Stored> }).stores.get(name)!;

/** Rewrite every table file of store `name` as format 2, as the previous release would have written it. */
async function downgrade(mem: MemoryStorage, name: string): Promise<number> {
  const store = storeOf(mem, name);
  let n = 0;
  for (const t of store.manifest!.tables) {
    const { bytes, checksum } = await asFormat2(store.tables.get(t.name)!);
    store.tables.set(t.name, bytes);
    Object.assign(t, { format: 2, bytes: bytes.length, checksum });
    n++;
  }
  return n;
}

const indexes = { byName: { column: 'name' } };

describe('table files of the previous format (2)', () => {
  it('read, query and count like the files they were, and compaction rewrites them in format 3', async () => {
    const mem = new MemoryStorage();
    const name = storeName('prev');
    const w = await open(mem, { indexes }, name);
    // Three level-0 files: rows 0–99, then 50–149 (overwrites) with deletes of 10, 99 and 149.
    await w.put(rows(0, 100, 'a'));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.put(rows(50, 100, 'b'));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.delete([{ id: 10 }, { id: 99 }, { id: 149 }]);
    await w.close(); // flushes the delete markers into a third file
    expect(await downgrade(mem, name)).toBeGreaterThanOrEqual(2);
    expect(storeOf(mem, name).manifest!.tables.every((t) => t.format === 2)).toBe(true);

    const again = await open(mem, { indexes }, name);
    const expectedIds = [...Array.from({ length: 150 }, (_, i) => i)].filter((i) => ![10, 99, 149].includes(i));
    const ids = Array.from((await again.scan()).getChild('id')!.toArray(), Number);
    expect(ids).toEqual(expectedIds);
    expect(await again.get({ id: 20 })).toMatchObject({ name: 'a20' });
    expect(await again.get({ id: 60 })).toMatchObject({ name: 'b60' });
    expect(await again.get({ id: 99 })).toBeUndefined();
    expect(await again.get({ id: 0 })).toMatchObject({ name: 'a0' });
    expect(await again.get({ id: 148 })).toMatchObject({ name: 'b148' });
    // Through the index: each file's section is built from its rows (format 2 carries none).
    expect((await again.query('byName', { equals: 'a20' })).map((r) => Number(r.id))).toEqual([20]);
    expect(await again.query('byName', { equals: 'a60' })).toEqual([]); // overwritten by b60
    expect(await again.query('byName', { equals: 'b99' })).toEqual([]); // deleted
    expect(await again.count('byName', { prefix: 'a' })).toBe(49); // 0–49 less 10
    expect(await again.count('byName', { prefix: 'b' })).toBe(98); // 50–149 less 99, 149
    const page = await again.query('byName', { range: { gte: 'b140' }, limit: 3 });
    expect(page.map((r) => r.name)).toEqual(['b140', 'b141', 'b142']);

    // Compaction rewrites every file in the current format, and nothing changes for readers.
    await again.compact();
    const after = storeOf(mem, name).manifest!.tables;
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((t) => t.format === 3)).toBe(true);
    expect(Array.from((await again.scan()).getChild('id')!.toArray(), Number)).toEqual(expectedIds);
    expect(await again.count('byName', { prefix: 'b' })).toBe(98);
    await again.close();
  });
});
