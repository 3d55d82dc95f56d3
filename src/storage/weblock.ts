// The browser writer lock: one Web Lock `memwal:{store}` per store, held for a store handle's
// lifetime, and WriterSession, the live/released/lost state every browser store handle checks.
// Runs in any browser context (page, dedicated/shared/service worker).

import { MemWalError, toMemWalError } from '../util/errors.js';
import type { LockOptions } from './adapter.js';
import { warnWhileWaiting } from './lock-wait.js';

/** The subset of the Web Locks `LockManager` used here; also implemented by the in-process fallback. */
interface LockManagerLike {
  request(
    name: string,
    options: { mode?: 'exclusive'; ifAvailable?: boolean; steal?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => unknown,
  ): Promise<unknown>;
}

/**
 * Stand-in for `navigator.locks` where it is missing (old browsers, non-browser runtimes): the
 * same request semantics (FIFO, `ifAvailable`, `steal`, `signal`), but only within this JavaScript
 * context, so it does NOT exclude writers in other tabs or workers.
 */
class InProcessLocks implements LockManagerLike {
  /** Per lock name: a function that steals the lock from its current holder. */
  private readonly holders = new Map<string, () => void>();
  private readonly queues = new Map<string, (() => void)[]>();

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
          this.queues.get(name)?.shift()?.();
        };
        this.holders.set(name, steal);
        Promise.resolve()
          .then(() => callback({ name, mode: 'exclusive' }))
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
        const queue = this.queues.get(name) ?? [];
        this.queues.set(name, queue);
        const { signal } = options;
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

let fallbackLocks: InProcessLocks | undefined;

function lockManager(): LockManagerLike {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks;
  return locks ?? (fallbackLocks ??= new InProcessLocks());
}

/** A held lock. `release()` is idempotent and resolves once the lock manager has let go. */
interface HeldLock {
  release(): Promise<void>;
}

/**
 * Requests `name`; resolves the held lock, or `null` when `ifAvailable` found it taken. After it
 * is granted, losing it without `release()` (a steal) calls `onLost('stolen')`.
 */
function requestLock(
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
    const settled = lockManager()
      .request(name, { mode: 'exclusive', ...options }, (lock) => {
        if (lock === null) return resolve(null);
        granted = true;
        resolve({ release: () => (letGo(), settled) });
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
 * Claims the writer lock of `store` (Web Lock `memwal:{store}`, exclusive) as `LockOptions`
 * describes: free → taken at once; `steal` → taken from the holder (whose `onLost` fires);
 * `timeoutMs: 0` → `Locked` at once; otherwise `onWaiting` once, then waits (warning through
 * `logger` every few seconds) up to `timeoutMs`
 * (undefined: for ever) → `Locked`, or `Aborted` when `signal` aborts. Rejects `InvalidArgument`
 * for a negative `timeoutMs`. `onLost('stolen')` fires if the lock is later stolen.
 * Without `navigator.locks` the lock is in-process only (see InProcessLocks).
 */
async function claimLock(store: string, options: LockOptions, onLost: (reason: string) => void): Promise<HeldLock> {
  const { timeoutMs, steal, onWaiting, signal } = options;
  const name = `memwal:${store}`;
  if (timeoutMs !== undefined && !(timeoutMs >= 0)) {
    throw new MemWalError('InvalidArgument', `timeoutMs must be >= 0, got ${timeoutMs}`);
  }
  const aborted = (): MemWalError => new MemWalError('Aborted', `opening store "${store}" was aborted`);
  if (signal?.aborted) throw aborted();
  try {
    // Web Locks forbid `signal` and `ifAvailable` together with `steal`: a steal never waits.
    if (steal) return (await requestLock(name, { steal: true }, onLost))!;
    const free = await requestLock(name, { ifAvailable: true }, onLost);
    if (free) return free;
  } catch (e) {
    throw toMemWalError(e, `claiming the writer lock of store "${store}"`);
  }
  if (timeoutMs === 0) throw new MemWalError('Locked', `store "${store}" is locked by another writer`);
  onWaiting?.();
  const stopWarning = warnWhileWaiting(store, options, () => `Web Lock "${name}" is held by another tab or worker`);
  const controller = new AbortController();
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(TIMED_OUT), timeoutMs);
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return (await requestLock(name, { signal: controller.signal }, onLost))!;
  } catch (e) {
    if (controller.signal.reason === TIMED_OUT) {
      throw new MemWalError('Locked', `store "${store}" is still locked after ${timeoutMs} ms`);
    }
    if (controller.signal.aborted) throw aborted();
    throw toMemWalError(e, `claiming the writer lock of store "${store}"`);
  } finally {
    stopWarning();
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The life of one browser store handle: holds the writer lock, and answers whether the handle
 * may still touch storage. Lost (lock stolen, database closed by `versionchange`): every later
 * `check()` throws `Fenced`, `onLoss` runs once at once (to close sync handles) and the user's
 * `onLost(reason)` fires once. Released: `check()` throws `Closed`.
 */
export class WriterSession {
  private state: 'open' | 'released' | 'lost' = 'open';
  private lostReason = '';
  private lock: HeldLock | undefined;
  private readonly cleanups: (() => void)[] = [];

  private constructor(
    readonly store: string,
    private readonly options: LockOptions,
  ) {}

  /**
   * Claims the writer lock of `store` (see LockOptions; `Locked`, `Aborted`, `InvalidArgument`).
   * Browser contexts; in-process only where `navigator.locks` is missing.
   */
  static async claim(store: string, options: LockOptions): Promise<WriterSession> {
    const session = new WriterSession(store, options);
    session.lock = await claimLock(store, options, (reason) => session.lose(reason));
    return session;
  }

  /** Throws `Closed` after `release()`, `Fenced` after the lock or database was lost. */
  check(): void {
    if (this.state === 'released') throw new MemWalError('Closed', 'store handle was released');
    if (this.state === 'lost') {
      throw new MemWalError('Fenced', `store handle of "${this.store}" is fenced: ${this.lostReason}`);
    }
  }

  /** Whether `check()` passes. */
  get live(): boolean {
    return this.state === 'open';
  }

  /** Runs `cleanup` on loss and on release (once, whichever comes first). */
  onEnd(cleanup: () => void): void {
    this.cleanups.push(cleanup);
  }

  /** Marks the handle lost (reason: `'stolen'`, `'versionchange'`, ...) and tells the owner. */
  lose(reason: string): void {
    if (this.state !== 'open') return;
    this.state = 'lost';
    this.lostReason = reason === 'stolen' ? 'its writer lock was stolen by a newer writer' : reason;
    this.end();
    const onLost = this.options.onLost;
    if (onLost) queueMicrotask(() => onLost(reason));
  }

  /**
   * Ends the session: cleanups run at once, then the lock is released; resolves once it is free
   * for the next claim. Idempotent, never rejects.
   */
  async release(): Promise<void> {
    if (this.state === 'open') this.state = 'released';
    this.end();
    const lock = this.lock;
    this.lock = undefined;
    await lock?.release();
  }

  private end(): void {
    for (const cleanup of this.cleanups.splice(0)) {
      try {
        cleanup();
      } catch {
        // Closing a handle that is already closed throws; nothing else can be done here.
      }
    }
  }
}
