// A WAL of many segments (OpenHooks.walSegmentTargetBytes, a test knob: segments otherwise roll
// over at WAL_SEGMENT_TARGET_BYTES, 8 MiB): the writer rolls over, a writer that ends without a
// close is replayed across every segment, and a clean close removes them all (docs/impl.md §4).

import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import { MemWal } from './memwal.js';
import { rows, schema, storeName } from './testkit.test-util.js';

type Stored = { wal: Map<string, unknown> };
const segmentsOf = (mem: MemoryStorage, name: string): string[] => [
  ...(mem as unknown as { stores: Map<string, Stored> }).stores.get(name)!.wal.keys(),
];

describe('a WAL of many segments', () => {
  it('rolls over at the segment target, replays across every segment, and a clean close removes them all', async () => {
    const mem = new MemoryStorage();
    const name = storeName('segments');
    const opts = { name, schema, primaryKey: ['id'], storage: mem, logger: { warn: () => undefined } };
    const small = { walSegmentTargetBytes: 1 }; // every entry starts a segment of its own
    const w = await MemWal.open(opts, small);
    for (let i = 0; i < 6; i++) await w.put(rows(i * 10, 10, `p${i}-`));
    expect(segmentsOf(mem, name).length).toBe(6);
    await w.abort(); // no close: nothing flushed, the WAL is all there is
    const again = await MemWal.open(opts, small);
    const ids = Array.from((await again.scan()).getChild('id')!.toArray(), Number);
    expect(ids).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(await again.get({ id: 55 })).toMatchObject({ name: 'p5-55' });
    await again.put(rows(100, 5, 'q'));
    expect(segmentsOf(mem, name).length).toBe(7);
    await again.close(); // flushes, then checkpoints: every segment goes, the last one too
    expect(segmentsOf(mem, name)).toEqual([]);
    const third = await MemWal.open(opts);
    expect((await third.scan()).numRows).toBe(65);
    await third.close();
  });
});
