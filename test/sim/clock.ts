// The simulation's time: a virtual clock installed as the engine's clock (src/util/schedule.ts), and
// the scheduler that drives it — run every real microtask until the process is quiet, then jump
// virtual time to the next timer and run it. Nothing waits for real time, so a seed runs as fast as
// the engine computes, and the same seed always runs the same way.

import { fileURLToPath } from 'node:url';
import { type Clock, setClock, type Timer } from '../../src/util/schedule.js';

/** The host's setImmediate, saved before the leak guard wraps it: the scheduler's own way to wait for quiet. */
const hostSetImmediate = globalThis.setImmediate;

/** Resolves once every pending microtask (and every microtask those queue) has run. */
export const quiet = (): Promise<void> => new Promise((resolve) => hostSetImmediate(resolve));

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  /** Set for intervals: re-armed this many ms after each run. */
  every?: number;
  cancelled: boolean;
}

/** A timer handle as the engine sees it (`unref` and `ref` exist so host-style code may call them). */
interface Handle {
  pending: Pending;
  unref(): Handle;
  ref(): Handle;
}

/** How a `run` ended: its condition held, nothing was left to run, or its virtual-time budget ran out. */
export type RunEnd = 'done' | 'idle' | 'budget';

/**
 * A virtual clock and its scheduler. Time starts at 0 and moves only in `run`. Timers run in the
 * order they fall due (those due at the same time in the order they were set), as a host runs
 * them. `stall` (drawn from the seeded `random`) makes the host busy now and then: time jumps
 * ahead before the next timer runs, so timers fire late, never early, and never out of order.
 */
export class VirtualClock implements Clock {
  private t = 0;
  private seq = 0;
  private readonly heap: Pending[] = [];
  /** Timer callbacks that threw (a timer callback of the engine must never throw). */
  readonly thrown: unknown[] = [];
  /** Timers run so far. */
  steps = 0;

  constructor(
    private readonly rand: () => number,
    private readonly stallChance = 0,
    private readonly stallMaxMs = 0,
  ) {}

  now(): number {
    return this.t;
  }

  /** The wall clock: virtual time from 2026-01-01. */
  wallMs(): number {
    return Date.UTC(2026, 0, 1) + this.t;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.add(fn, ms, undefined);
  }

  clearTimeout(timer: Timer): void {
    const h = timer as unknown as Handle | undefined;
    if (h && typeof h === 'object' && 'pending' in h) h.pending.cancelled = true;
  }

  setInterval(fn: () => void, ms: number): Timer {
    return this.add(fn, ms, Math.max(1, ms));
  }

  clearInterval(timer: Timer): void {
    this.clearTimeout(timer);
  }

  /** A macrotask: runs after everything due now, in order. */
  yield(): Promise<void> {
    return new Promise((resolve) => this.add(resolve, 0, undefined));
  }

  random(): number {
    return this.rand();
  }

  /** Timers still armed (not cancelled). */
  get armed(): number {
    let n = 0;
    for (const p of this.heap) if (!p.cancelled) n++;
    return n;
  }

  /**
   * Run until `done()` holds (checked whenever the process is quiet), until nothing is left to run,
   * or until virtual time would pass `now + budgetMs` (time then stands at that point).
   */
  async run(done: () => boolean, budgetMs: number): Promise<RunEnd> {
    const end = this.t + budgetMs;
    for (;;) {
      await quiet();
      if (done()) return 'done';
      const next = this.peek();
      if (!next) return 'idle';
      if (next.at > end) {
        this.t = end;
        return 'budget';
      }
      this.pop();
      this.t = Math.max(this.t, next.at);
      // A busy host: the timer runs late (and so does everything due meanwhile, in order).
      if (this.stallChance > 0 && this.rand() < this.stallChance)
        this.t = Math.min(end, this.t + Math.floor(this.rand() * (this.stallMaxMs + 1)));
      if (next.every !== undefined) this.push({ ...next, at: this.t + next.every, seq: this.seq++ }, next);
      this.steps++;
      try {
        next.fn();
      } catch (e) {
        this.thrown.push(e);
      }
    }
  }

  /** Let virtual time pass for `ms`, running whatever falls due. */
  async advance(ms: number): Promise<void> {
    await this.run(() => false, ms);
  }

  private add(fn: () => void, ms: number, every: number | undefined): Timer {
    const delay = Number.isFinite(ms) ? Math.max(0, ms) : 2 ** 40;
    const pending: Pending = { at: this.t + delay, seq: this.seq++, fn, cancelled: false };
    if (every !== undefined) pending.every = every;
    const handle: Handle = {
      pending,
      unref: () => handle,
      ref: () => handle,
    };
    this.push(pending);
    return handle as unknown as Timer;
  }

  // A binary heap ordered by (at, seq). An interval's next run replaces the handle's pending entry.
  private push(p: Pending, replaces?: Pending): void {
    if (replaces) {
      // Keep the handle pointing at the live entry: intervals mutate in place.
      replaces.at = p.at;
      replaces.seq = p.seq;
      p = replaces;
    }
    const h = this.heap;
    h.push(p);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private peek(): Pending | undefined {
    while (this.heap.length > 0 && this.heap[0]!.cancelled) this.pop();
    return this.heap[0];
  }

  private pop(): Pending | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

const before = (a: Pending, b: Pending): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** Where memwal's own code lives (a caller from there is the engine). */
const ENGINE_DIR = fileURLToPath(new URL('../../src/', import.meta.url));

/** A use of the host's time or timers by engine code during a simulated run. */
export interface Leak {
  what: string;
  stack: string;
}

/**
 * Installs `clock` as the engine's clock and wraps the host's timer, time and randomness functions
 * so that a call from memwal's own code (`/src/` in the caller's frame) is recorded as a leak: a
 * simulated run must not touch real time. Returns the function that undoes both.
 */
export function installClock(clock: Clock, leaks: Leak[]): () => void {
  const previous = setClock(clock);
  const g = globalThis as unknown as Record<string, unknown>;
  const restore: (() => void)[] = [];
  const guard = (obj: Record<string, unknown>, key: string, what: string): void => {
    const original = obj[key] as ((...args: unknown[]) => unknown) | undefined;
    if (typeof original !== 'function') return;
    const check = (): void => {
      const stack = new Error().stack ?? '';
      const caller = stack.split('\n').find((line, i) => i > 0 && !line.includes('clock.ts')) ?? '';
      if (caller.includes(ENGINE_DIR)) leaks.push({ what, stack });
    };
    obj[key] = new Proxy(original, {
      apply(target, self, args) {
        check();
        return Reflect.apply(target, self, args);
      },
      construct(target, args, newTarget) {
        check();
        return Reflect.construct(target, args, newTarget);
      },
    });
    restore.push(() => {
      obj[key] = original;
    });
  };
  for (const name of ['setTimeout', 'setInterval', 'setImmediate', 'MessageChannel']) guard(g, name, name);
  guard(Date as unknown as Record<string, unknown>, 'now', 'Date.now');
  guard(performance as unknown as Record<string, unknown>, 'now', 'performance.now');
  guard(Math as unknown as Record<string, unknown>, 'random', 'Math.random');
  return () => {
    for (const r of restore.reverse()) r();
    setClock(previous);
  };
}
