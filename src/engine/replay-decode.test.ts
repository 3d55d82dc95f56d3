// Open decodes each WAL payload it replays once: validation (before the claim) keeps the table it
// decoded, and replay inserts that one. Counted through a wrapped decodePayload.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodePayload } from '../format/wal/payload.js';
import { MemoryStorage } from '../storage/memory.js';
import { idsOf, open, rows, storeName } from './testkit.test-util.js';

vi.mock('../format/wal/payload.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../format/wal/payload.js')>();
  return { ...real, decodePayload: vi.fn(real.decodePayload) };
});

const decodes = vi.mocked(decodePayload);

afterEach(() => {
  decodes.mockClear();
});

describe('replay at open', () => {
  it('decodes each WAL entry it replays once, and replays every row', async () => {
    const storage = new MemoryStorage();
    const name = storeName('decode-once');
    const w = await open(storage, {}, name);
    for (let i = 0; i < 5; i++) await w.put(rows(i * 10, 10));
    await w.abort(); // a reload: the rows stay in the WAL
    decodes.mockClear();
    const again = await open(storage, {}, name);
    const stats = await again.writeStats();
    expect(stats.replayedEntries).toBe(5);
    expect(decodes).toHaveBeenCalledTimes(5);
    expect(idsOf(await again.scan())).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await again.close();
  });

  it("in 'wal-only' mode validates the entries without keeping their tables (nothing replays them)", async () => {
    const storage = new MemoryStorage();
    const name = storeName('decode-wal-only');
    const w = await open(storage, { enableMemtable: false, primaryKey: [] }, name);
    for (let i = 0; i < 3; i++) await w.put(rows(i * 10, 10));
    await w.abort();
    decodes.mockClear();
    const again = await open(storage, { enableMemtable: false, primaryKey: [] }, name);
    expect(decodes.mock.calls.map(([, , copy]) => copy)).toEqual([false, false, false]);
    await again.close();
  });
});
