// Turns and Lanes, the sink's sharing of one Lance table between stores: turns go round-robin over
// the keys that wait, whatever one key queues; each key's operations keep their order; a key's
// queue is bounded.

import { describe, expect, it } from 'vitest';
import { Lanes, Turns } from './turns.js';

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('Turns', () => {
  it('hands turns out round-robin: a key that queued many operations does not hold one that queued one', async () => {
    const turns = new Turns();
    const order: string[] = [];
    let release!: () => void;
    const first = turns.run('flood', () => new Promise<void>((r) => (release = r)).then(() => void order.push('flood 0')));
    const flood = [1, 2, 3].map((i) => turns.run('flood', async () => void order.push(`flood ${i}`)));
    const small = turns.run('small', async () => void order.push('small'));
    const other = turns.run('other', async () => void order.push('other'));
    await tick();
    release();
    await Promise.all([first, ...flood, small, other]);
    expect(order).toEqual(['flood 0', 'flood 1', 'small', 'other', 'flood 2', 'flood 3']);
  });

  it('othersActive: another key waiting, or served within the window, makes a key share; alone after the window', async () => {
    const turns = new Turns();
    expect(turns.othersActive('a', 50)).toBe(false);
    await turns.run('b', async () => undefined);
    expect(turns.othersActive('a', 50)).toBe(true); // b was just served
    expect(turns.othersActive('b', 50)).toBe(false); // its own turns do not count
    await new Promise((r) => setTimeout(r, 60));
    expect(turns.othersActive('a', 50)).toBe(false);
    let release!: () => void;
    const held = turns.run('a', () => new Promise<void>((r) => (release = r)));
    const waiting = turns.run('c', async () => undefined);
    await tick();
    expect(turns.othersActive('a', 0)).toBe(true); // c waits
    release();
    await Promise.all([held, waiting]);
  });

  it('a failed operation passes the turn on', async () => {
    const turns = new Turns();
    await expect(turns.run('a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await turns.run('b', async () => 7)).toBe(7);
  });
});

describe('Lanes', () => {
  it('runs each key’s operations in order, keys side by side, and refuses Locked past maxPending', async () => {
    const lanes = new Lanes(2);
    const order: string[] = [];
    let release!: () => void;
    const a1 = lanes.run('a', () => new Promise<void>((r) => (release = r)).then(() => void order.push('a1')));
    const a2 = lanes.run('a', async () => void order.push('a2'));
    await expect(lanes.run('a', async () => undefined)).rejects.toMatchObject({ code: 'Locked' });
    await lanes.run('b', async () => void order.push('b1')); // not behind a
    release();
    await Promise.all([a1, a2]);
    expect(order).toEqual(['b1', 'a1', 'a2']);
    await lanes.idle();
    await lanes.run('a', async () => void order.push('a3')); // the queue drained: room again
    expect(order).toEqual(['b1', 'a1', 'a2', 'a3']);
  });
});
