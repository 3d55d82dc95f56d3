// Behaviour of AsyncRwLock: reader preference, writer FIFO, release on throw.

import { describe, expect, it } from 'vitest';
import { AsyncRwLock } from './rwlock.js';

/** A promise plus its resolver, to hold a critical section open from the test. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Let every pending microtask and one macrotask run. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

describe('AsyncRwLock', () => {
  it('runs the read callback in the same tick when the lock is free', () => {
    const lock = new AsyncRwLock();
    let ran = false;
    void lock.read(() => {
      ran = true;
    });
    expect(ran).toBe(true);
    expect(lock.readers).toBe(1);
  });

  it('runs readers concurrently', async () => {
    const lock = new AsyncRwLock();
    const g = gate();
    const a = lock.read(() => g.promise.then(() => 'a'));
    const b = lock.read(() => g.promise.then(() => 'b'));
    expect(lock.readers).toBe(2);
    g.open();
    expect(await Promise.all([a, b])).toEqual(['a', 'b']);
    expect(lock.readers).toBe(0);
  });

  it('does not block a reader that arrives while a writer waits for readers to drain', async () => {
    const lock = new AsyncRwLock();
    const firstReader = gate();
    const events: string[] = [];
    const r1 = lock.read(() => firstReader.promise);
    const w = lock.write(() => {
      events.push('write');
    });
    await settle();
    expect(lock.writing).toBe(false); // the writer waits, it does not hold

    let lateReaderRan = false;
    const r2 = lock.read(() => {
      lateReaderRan = true;
      events.push('late read');
    });
    expect(lateReaderRan).toBe(true);

    firstReader.open();
    await Promise.all([r1, r2, w]);
    expect(events).toEqual(['late read', 'write']);
  });

  it('makes a reader that arrives while a writer holds the lock wait until it releases', async () => {
    const lock = new AsyncRwLock();
    const held = gate();
    const events: string[] = [];
    const w = lock.write(async () => {
      events.push('write start');
      await held.promise;
      events.push('write end');
    });
    expect(lock.writing).toBe(true);

    const r = lock.read(() => {
      events.push('read');
      return 42;
    });
    await settle();
    expect(events).toEqual(['write start']);
    expect(lock.readers).toBe(0);

    held.open();
    expect(await r).toBe(42);
    await w;
    expect(events).toEqual(['write start', 'write end', 'read']);
    expect(lock.writing).toBe(false);
  });

  it('lets readers blocked by a writer go before the next queued writer', async () => {
    const lock = new AsyncRwLock();
    const held = gate();
    const events: string[] = [];
    const w1 = lock.write(() => held.promise.then(() => void events.push('w1')));
    const w2 = lock.write(() => void events.push('w2'));
    const r = lock.read(() => void events.push('r'));
    held.open();
    await Promise.all([w1, w2, r]);
    expect(events).toEqual(['w1', 'r', 'w2']);
  });

  it('grants writers in arrival order, one at a time', async () => {
    const lock = new AsyncRwLock();
    const order: number[] = [];
    let inside = 0;
    let maxInside = 0;
    const writers = [1, 2, 3, 4].map((n) =>
      lock.write(async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        await settle();
        order.push(n);
        inside--;
      }),
    );
    await Promise.all(writers);
    expect(order).toEqual([1, 2, 3, 4]);
    expect(maxInside).toBe(1);
  });

  it('releases the lock when the callback throws, synchronously or asynchronously', async () => {
    const lock = new AsyncRwLock();
    const boom = new Error('boom');
    await expect(
      lock.read(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(lock.readers).toBe(0);

    await expect(lock.write(() => Promise.reject(boom))).rejects.toBe(boom);
    expect(lock.writing).toBe(false);

    await expect(
      lock.write(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await lock.write(() => 'after')).toBe('after');
    expect(await lock.read(() => 'after')).toBe('after');
  });

  it('hands the lock to a waiting writer when a throwing reader releases', async () => {
    const lock = new AsyncRwLock();
    const g = gate();
    const r = lock.read(() => g.promise.then(() => Promise.reject(new Error('read failed'))));
    const w = lock.write(() => 'written');
    g.open();
    await expect(r).rejects.toThrow('read failed');
    expect(await w).toBe('written');
  });
});
