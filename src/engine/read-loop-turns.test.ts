// A loop of awaited gets whose answers need no storage round trip (memtables, cached blocks, a
// synchronous read handle) resolves through microtasks only; the engine gives the event loop a
// turn within a slice, so that timers, messages and the store's own background work still run.

import { describe, expect, it } from 'vitest';
import { open, rows } from './testkit.test-util.js';

describe('a loop of gets', () => {
  it('a loop of gets answered without a storage round trip still gives the event loop a turn: timers fire and a compaction completes meanwhile', async () => {
    const w = await open(undefined, { maxMemtableRows: 1_000 });
    for (const tag of ['a', 'b']) {
      for (let i = 0; i < 4_000; i += 500) await w.put(rows(i, 500, tag));
      await w.forceSealActive();
      await w.waitForFlushDrain();
    }
    for (let i = 0; i < 4_000; i++) await w.get({ id: i }); // every block cached
    let timers = 0;
    const timer = setInterval(() => timers++, 1);
    let compacted = false;
    const compaction = w.compact().then(() => {
      compacted = true;
    });
    // Bounded by the wall clock, checked synchronously: without turns nothing else runs until it ends.
    const end = Date.now() + 1_000;
    const wrong: number[] = [];
    const lanes = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane; Date.now() < end && !(compacted && timers > 10); i = (i + 8) % 4_000) {
        const got = (await w.get({ id: i })) as { name: string } | undefined;
        if (got?.name !== `b${i}`) wrong.push(i);
      }
    });
    await Promise.all(lanes);
    const during = { timers, compacted };
    clearInterval(timer);
    await compaction;
    expect(wrong).toEqual([]);
    expect(during).toEqual({ timers: expect.any(Number), compacted: true });
    expect(during.timers).toBeGreaterThan(10);
    await w.close();
  });
});
