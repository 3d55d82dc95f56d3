// Scheduling helpers shared by the engine, the adapters and the tests: the clock (time, timers,
// yields and randomness, replaceable as a whole), a notification signal, interruptible sleeps and
// backoff. A leaf module: it imports nothing of memwal. Runs in every runtime.

/** A timer handle, as the host's `setTimeout` returns it. */
export type Timer = ReturnType<typeof setTimeout>;

/**
 * Where the engine takes time, timers, yields and randomness from (LevelDB's `Env`, for time). By
 * default the host's own ({@link hostClock}); a deterministic simulation installs a virtual one
 * with {@link setClock}, so that a run depends on its seed alone. Engine code never calls
 * `setTimeout`, `Date.now`, `performance.now` or `Math.random` itself: it calls {@link nowMs},
 * {@link setTimer}, {@link clearTimer}, {@link setRepeating}, {@link yieldToEventLoop},
 * {@link random} and {@link wallClockMs}.
 */
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Run `fn` once, `ms` from now (never before). */
  setTimeout(fn: () => void, ms: number): Timer;
  clearTimeout(timer: Timer): void;
  /** Run `fn` every `ms`, until cleared. */
  setInterval(fn: () => void, ms: number): Timer;
  clearInterval(timer: Timer): void;
  /** Resolves on a later turn of the event loop (a macrotask). */
  yield(): Promise<void>;
  /** A float in [0, 1). */
  random(): number;
  /** Milliseconds since 1970: the wall clock, for ids that sort by creation time (never for durations). */
  wallMs(): number;
}

/**
 * The host's clock: `performance.now` (else `Date.now`), the global timer functions (looked up at
 * each call, so test doubles of them apply), the yield of {@link hostYield} and `Math.random`.
 */
export const hostClock: Clock = {
  now: () => (typeof performance !== 'undefined' && typeof performance.now === 'function' ? performance.now() : Date.now()),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (timer) => clearInterval(timer),
  yield: () => hostYield(),
  random: () => Math.random(),
  wallMs: () => Date.now(),
};

let clock: Clock = hostClock;

/**
 * Install `next` as the clock of everything that schedules through this module (undefined: the
 * host's again). Returns the clock it replaced. For simulations and tests; an app never needs it.
 */
export function setClock(next: Clock | undefined): Clock {
  const previous = clock;
  clock = next ?? hostClock;
  return previous;
}

/** Monotonic milliseconds (performance.now where the runtime has it). */
export function nowMs(): number {
  return clock.now();
}

/** Milliseconds since 1970 through the clock (ids ordered by creation time; not for durations). */
export function wallClockMs(): number {
  return clock.wallMs();
}

/** `setTimeout` through the clock. */
export function setTimer(fn: () => void, ms: number): Timer {
  return clock.setTimeout(fn, ms);
}

/** `clearTimeout` through the clock. */
export function clearTimer(timer: Timer): void {
  clock.clearTimeout(timer);
}

/** `setInterval` through the clock; returns the function that stops it. */
export function setRepeating(fn: () => void, ms: number): () => void {
  const c = clock;
  const timer = c.setInterval(fn, ms);
  (timer as { unref?: () => void }).unref?.(); // a warning timer never keeps a Node process alive
  return () => c.clearInterval(timer);
}

/** A float in [0, 1) from the clock (jitter; not for cryptography). */
export function random(): number {
  return clock.random();
}

/**
 * A broadcast notification: `wait()` resolves at the next `notify()`. Waiters re-check their
 * own condition after waking, so a notify carries no data and can never be "missed" by a
 * waiter that checks its condition before waiting in the same synchronous step. A wait that
 * ends another way (a timer, an abort) removes itself, so waiters never pile up.
 */
export class Signal {
  private waiters = new Set<() => void>();

  /** Resolves at the next `notify()`, or when `abort` aborts, or after `ms` (if given). Never rejects. */
  wait(abort?: AbortSignal, ms?: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: Timer | undefined;
      const done = (): void => {
        this.waiters.delete(done);
        if (timer !== undefined) clearTimer(timer);
        abort?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      if (ms !== undefined && Number.isFinite(ms)) timer = setTimer(done, Math.max(0, ms));
      if (abort?.aborted) done();
      else abort?.addEventListener('abort', done, { once: true });
    });
  }

  notify(): void {
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const w of waiters) w();
  }

  /** Waits registered now (for tests of the no-pile-up property). */
  get waiting(): number {
    return this.waiters.size;
  }
}

/** Sleep `ms`, ending early when `interrupt` notifies. Never rejects. */
export function sleep(ms: number, interrupt?: Signal): Promise<void> {
  if (interrupt) return interrupt.wait(undefined, ms);
  return new Promise<void>((resolve) => setTimer(resolve, Math.max(0, ms)));
}

/** `baseMs * 2^(attempt-1)`, capped at `maxMs` (attempt counts from 1). */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
}

/**
 * One channel for every yield, held for the life of the module: a MessageChannel that only a
 * pending promise refers to can be garbage-collected with its message undelivered, and the
 * yield would never resume (seen as a stalled flush under memory pressure).
 */
let yieldChannel: MessageChannel | undefined;
const yieldWaiters: (() => void)[] = [];

/** Node's MessagePort can keep the process alive (`ref`) or not (`unref`); browsers have neither. */
type Refable = { ref?: () => void; unref?: () => void };

/** Give the event loop a turn (so stats and messages are served between chunks of long work). */
export function yieldToEventLoop(): Promise<void> {
  return clock.yield();
}

/**
 * The runtime's `setImmediate` as this module found it when loaded: a test that fakes the timers
 * later (vitest's and sinon's fake timers replace `setImmediate` too) does not stop every yield,
 * as it never stopped the MessageChannel yield.
 */
const loadedSetImmediate: ((fn: () => void) => unknown) | undefined = typeof setImmediate === 'function' ? setImmediate : undefined;

/**
 * The host's yield: `setImmediate` where the runtime has it (Node: one turn of the event loop,
 * so I/O and messages of every port are served in between; a MessageChannel there would be drained
 * up to 1,000 messages at a time, starving other ports), else a MessageChannel where available (no 4 ms timer
 * clamping), else setTimeout(0). In Node the channel keeps the process alive only while a yield is pending.
 */
function hostYield(): Promise<void> {
  const immediate = loadedSetImmediate;
  if (immediate) return new Promise<void>((resolve) => immediate(resolve));
  if (typeof MessageChannel !== 'function') return new Promise<void>((resolve) => setTimeout(resolve, 0));
  if (!yieldChannel) {
    yieldChannel = new MessageChannel();
    const port = yieldChannel.port1 as MessagePort & Refable;
    port.onmessage = () => {
      const resume = yieldWaiters.shift();
      if (yieldWaiters.length === 0) port.unref?.();
      resume?.();
    };
    port.unref?.();
  }
  const channel = yieldChannel;
  return new Promise<void>((resolve) => {
    if (yieldWaiters.length === 0) (channel.port1 as MessagePort & Refable).ref?.();
    yieldWaiters.push(resolve);
    channel.port2.postMessage(null);
  });
}

/**
 * For calls that may resolve through microtasks only (a get answered from memory, a cached block
 * or a synchronous read handle): a caller awaiting them in a loop would otherwise hold the event
 * loop for ever, and no timer, message or background step of the store would run. `turn()` resolves
 * at once unless the event loop has had no turn for `sliceMs` since a call of this run began;
 * then it resolves after one.
 */
export class EventLoopTurns {
  /** When the current run began (undefined: the event loop had a turn since the last call). */
  private since: number | undefined;

  constructor(private readonly sliceMs = SLICE_MS) {}

  turn(): Promise<void> | undefined {
    if (this.since === undefined) {
      this.since = nowMs();
      void yieldToEventLoop().then(() => {
        this.since = undefined;
      });
      return undefined;
    }
    return nowMs() - this.since >= this.sliceMs ? yieldToEventLoop() : undefined;
  }
}

/**
 * Long work as a generator of steps: each `yield` marks a point where the work may pause (a
 * table build yields after each block). {@link runSteps} runs it to its end at once;
 * {@link runStepsSliced} gives the event loop a turn whenever a slice has run `sliceMs`.
 */
export type Steps<T> = Generator<void, T, void>;

/** A slice of long work in a worker that also serves short requests (WAL appends) runs at most about this long. */
export const SLICE_MS = 5;

/** Run `steps` to its end on this turn of the event loop; returns its result. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Run `steps` to its end, yielding to the event loop (through the clock) once a slice has run
 * `sliceMs`, so that messages and timers are served between slices; resolves its result. A
 * single step longer than `sliceMs` is not cut.
 */
export async function runStepsSliced<T>(steps: Steps<T>, sliceMs = SLICE_MS): Promise<T> {
  let sliceStart = nowMs();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (nowMs() - sliceStart >= sliceMs) {
      await yieldToEventLoop();
      sliceStart = nowMs();
    }
  }
}
