// The in-process writer lock, written once: a lock table with the request semantics of Web Locks
// (InProcessLocks) and the claim every adapter makes through LockOptions (claimLock: free, steal,
// fail fast, or wait with warnings, a timeout and a signal). The memory and Durable Object
// adapters claim on a table of their own; the browser adapters on navigator.locks, or on a table
// where it is missing (weblock.ts). Any runtime.

import { MemWalError, toMemWalError } from '../util/errors.js';
import { clearTimer, setTimer } from '../util/schedule.js';
import type { LockOptions } from './adapter.js';
import { beginWait } from './lock-wait.js';

/** The subset of the Web Locks `LockManager` a claim uses; `InProcessLocks` implements it too. */
export interface LockManagerLike {
  request(
    name: string,
    options: { mode?: 'exclusive'; ifAvailable?: boolean; steal?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => unknown,
  ): Promise<unknown>;
}

/**
 * A lock granted by InProcessLocks. Beyond Web Locks' lock: `release()` frees it at once (and
 * grants it to the next request in line), before the callback's promise settles; idempotent.
 */
interface InProcessLock {
  name: string;
  mode: 'exclusive';
  release(): void;
}

/**
 * Locks held within this JavaScript context, with the request semantics of Web Locks (FIFO,
 * `ifAvailable`, `steal`, `signal`): the lock table of the memory and Durable Object adapters,
 * and the stand-in for `navigator.locks` where it is missing (weblock.ts), where it does NOT
 * exclude writers in other tabs or workers. A lock it grants can also be released at once
 * (`InProcessLock`), so a held lock released through `claimLock` is free when `release()` is
 * called, as the memory adapter does every operation's work when called.
 */
export class InProcessLocks implements LockManagerLike {
  /** Per lock name: a function that steals the lock from its current holder. */
  private readonly holders = new Map<string, () => void>();
  private readonly queues = new Map<string, (() => void)[]>();

  /** Whether lock `name` is held now. */
  held(name: string): boolean {
    return this.holders.has(name);
  }

  /** Lock `name` was let go: grant it to the first request in line (a table keeps no entry for a free lock). */
  private next(name: string): void {
    const queue = this.queues.get(name);
    const enter = queue?.shift();
    if (queue?.length === 0) this.queues.delete(name);
    enter?.();
  }

  request(
    name: string,
    options: { ifAvailable?: boolean; steal?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => unknown,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const run = (): void => {
        let stolen = false;
        const steal = (): void => {
          stolen = true;
          this.holders.delete(name);
          reject(new DOMException('the lock was stolen', 'AbortError'));
        };
        const finish = (): void => {
          if (this.holders.get(name) !== steal) return;
          this.holders.delete(name);
          this.next(name);
        };
        this.holders.set(name, steal);
        const lock: InProcessLock = { name, mode: 'exclusive', release: finish };
        Promise.resolve()
          .then(() => callback(lock))
          .then(
            (v) => (finish(), stolen || resolve(v)),
            (e: unknown) => (finish(), stolen || reject(e)),
          );
      };
      if (options.steal) {
        this.holders.get(name)?.();
        run();
      } else if (!this.holders.has(name)) {
        run();
      } else if (options.ifAvailable) {
        Promise.resolve()
          .then(() => callback(null))
          .then(resolve, reject);
      } else {
        const { signal } = options;
        if (signal?.aborted) return reject(signal.reason);
        const queue = this.queues.get(name) ?? [];
        this.queues.set(name, queue);
        const onAbort = (): void => {
          queue.splice(queue.indexOf(enter), 1);
          reject(signal?.reason);
        };
        const enter = (): void => {
          signal?.removeEventListener('abort', onAbort);
          run();
        };
        queue.push(enter);
        signal?.addEventListener('abort', onAbort, { once: true });
      }
    });
  }
}

/** A held lock. `release()` is idempotent and resolves once the lock manager has let go. */
export interface HeldLock {
  release(): Promise<void>;
}

/**
 * Requests `name`; resolves the held lock, or `null` when `ifAvailable` found it taken. After it
 * is granted, losing it without `release()` (a steal) calls `onLost('stolen')`.
 */
function requestLock(
  manager: LockManagerLike,
  name: string,
  options: { ifAvailable?: boolean; steal?: boolean; signal?: AbortSignal },
  onLost: (reason: string) => void,
): Promise<HeldLock | null> {
  return new Promise((resolve, reject) => {
    let granted = false;
    let letGo!: () => void;
    const held = new Promise<void>((r) => (letGo = r));
    // Settles after the lock is released (or stolen): `release()` waits for it so that a new
    // request made right after `release()` resolves finds the lock free.
    const settled = manager
      .request(name, { mode: 'exclusive', ...options }, (lock) => {
        if (lock === null) return resolve(null);
        granted = true;
        // An in-process lock is freed at once; a Web Lock once `held` settles.
        const freeNow = (lock as Partial<InProcessLock>).release;
        resolve({ release: () => (freeNow?.(), letGo(), settled) });
        return held;
      })
      .then(
        () => undefined,
        (e: unknown) => (granted ? onLost('stolen') : reject(e)),
      );
  });
}

const TIMED_OUT = Symbol('timed out');

/**
 * Claims the writer lock of store `store` — lock `lock` of `manager` — as `LockOptions`
 * describes: free → taken at once; `steal` → taken from the holder (whose `onLost` fires);
 * `timeoutMs: 0` → `Locked` at once; otherwise `onWaiting` once, then waits (warning through
 * `logger` every few seconds, with `heldBy` saying where the holder is) up to `timeoutMs`
 * (undefined: for ever) → `Locked`, or `Aborted` when `signal` aborts. Rejects `InvalidArgument`
 * for a negative `timeoutMs`. `onLost('stolen')` fires if the lock is later stolen.
 */
export async function claimLock(
  manager: LockManagerLike,
  store: string,
  options: LockOptions,
  onLost: (reason: string) => void,
  where: { lock: string; heldBy?: string },
): Promise<HeldLock> {
  const { timeoutMs, steal, signal } = options;
  const name = where.lock;
  if (timeoutMs !== undefined && !(timeoutMs >= 0)) {
    throw new MemWalError('InvalidArgument', `timeoutMs must be >= 0, got ${timeoutMs}`);
  }
  const aborted = (): MemWalError => new MemWalError('Aborted', `opening store "${store}" was aborted`);
  if (signal?.aborted) throw aborted();
  try {
    // Web Locks forbid `signal` and `ifAvailable` together with `steal`: a steal never waits.
    if (steal) return (await requestLock(manager, name, { steal: true }, onLost))!;
    const free = await requestLock(manager, name, { ifAvailable: true }, onLost);
    if (free) return free;
  } catch (e) {
    throw toMemWalError(e, `claiming the writer lock of store "${store}"`);
  }
  if (timeoutMs === 0) throw new MemWalError('Locked', `store "${store}" is locked by another writer`);
  const stopWarning = beginWait(store, options, where.heldBy === undefined ? undefined : () => where.heldBy!);
  const controller = new AbortController();
  const timer = timeoutMs === undefined ? undefined : setTimer(() => controller.abort(TIMED_OUT), timeoutMs);
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  // An abort during the `ifAvailable` request above fired no listener: take it now.
  if (signal?.aborted) onAbort();
  try {
    return (await requestLock(manager, name, { signal: controller.signal }, onLost))!;
  } catch (e) {
    if (controller.signal.reason === TIMED_OUT) {
      throw new MemWalError('Locked', `store "${store}" is still locked after ${timeoutMs} ms`);
    }
    if (controller.signal.aborted) throw aborted();
    throw toMemWalError(e, `claiming the writer lock of store "${store}"`);
  } finally {
    stopWarning();
    if (timer !== undefined) clearTimer(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
