// Scheduling helpers shared by the engine, the adapters and the tests: a monotonic clock, a
// notification signal, interruptible sleeps, backoff and a yield to the event loop. A leaf
// module: it imports nothing of memwal. Runs in every runtime.

/** Monotonic milliseconds (performance.now where the runtime has it). */
export function nowMs(): number {
  return typeof performance !== 'undefined' && typeof performance.now === 'function' ? performance.now() : Date.now();
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
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (): void => {
        this.waiters.delete(done);
        if (timer !== undefined) clearTimeout(timer);
        abort?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      if (ms !== undefined && Number.isFinite(ms)) timer = setTimeout(done, Math.max(0, ms));
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
  return new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
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

/**
 * Give the event loop a turn (so stats and messages are served between chunks of long work).
 * Uses a MessageChannel where available (no 4 ms timer clamping), else setTimeout(0). In Node the
 * channel keeps the process alive only while a yield is pending.
 */
export function yieldToEventLoop(): Promise<void> {
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
