// A small put's WAL append is handed to storage within the put's own task (its payload's CRC-32C is
// taken where it was encoded), so an awaited put pays no turn of the event loop before its write;
// a large payload's checksum still waits for a turn before each 1 MiB slice (no long task), and a
// run of small appends that had no turn for a slice takes one (timers and messages still run).

import { describe, expect, it } from 'vitest';
import type { StorageAdapter, StoreHandle } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';
import { WAL_CRC_SAME_TASK_BYTES } from './wal-writer.js';
import { open, rows } from './testkit.test-util.js';

/** MemoryStorage whose handles count the WAL writes they are asked for. */
function countingAppends(): { storage: StorageAdapter; appends: () => number } {
  const inner = new MemoryStorage();
  let appends = 0;
  const storage: StorageAdapter = {
    layout: inner.layout,
    destroyStore: (name) => inner.destroyStore(name),
    async openStore(name, options) {
      const h = await inner.openStore(name, options);
      return new Proxy(h, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver) as unknown;
          if (typeof v !== 'function') return v;
          if (prop === 'walAppend' || prop === 'walAppendParts' || prop === 'walAppendEntry') {
            return (...args: unknown[]) => {
              appends += 1;
              return (v as (...a: unknown[]) => unknown).apply(target, args);
            };
          }
          return (v as (...a: unknown[]) => unknown).bind(target);
        },
      }) as StoreHandle;
    },
  };
  return { storage, appends: () => appends };
}

/** Let every queued microtask run (and the ones they queue), but no macrotask. */
async function drainMicrotasks(): Promise<void> {
  for (let i = 0; i < 200; i++) await Promise.resolve();
}

describe('WAL append turns', () => {
  it("a small put's entry reaches storage without a turn of the event loop; a large one's checksum still takes turns", async () => {
    const { storage, appends } = countingAppends();
    const w = await open(storage);
    await w.put(rows(0, 10)); // the first segment exists; later appends are plain writes
    await new Promise((r) => setTimeout(r, 0)); // the event loop had a turn just now
    const before = appends();
    const small = w.put(rows(100, 1_000));
    await drainMicrotasks();
    const smallSent = appends() - before;
    await small;

    // ~12 bytes of name per row plus the fixed columns: well past one same-task payload.
    const big = rows(10_000, Math.ceil((2 * WAL_CRC_SAME_TASK_BYTES) / 24), 'x'.repeat(24));
    const atBig = appends();
    const large = w.put(big);
    await drainMicrotasks();
    const largeSentWithoutTurn = appends() - atBig;
    await large;
    const largeSent = appends() - atBig;

    expect(smallSent).toBe(1);
    expect(largeSentWithoutTurn).toBe(0);
    expect(largeSent).toBe(1);
    expect((await w.scan()).numRows).toBe(10 + 1_000 + big.length);
    await w.close();
  });

  it('a loop of awaited small puts on an adapter that answers through microtasks still gives the event loop a turn: timers fire meanwhile', async () => {
    const w = await open(new MemoryStorage());
    await w.put(rows(0, 10));
    let timers = 0;
    const timer = setInterval(() => timers++, 1);
    // Bounded by the wall clock, checked synchronously: without turns no timer runs until it ends.
    const end = Date.now() + 3_000;
    let puts = 0;
    while (Date.now() < end && timers < 3) await w.put(rows(1_000 + (puts++ % 100) * 10, 10));
    const during = timers;
    clearInterval(timer);
    expect(puts).toBeGreaterThan(0);
    expect(during).toBe(3);
    await w.close();
  });
});
