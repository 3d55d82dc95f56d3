// The browser writer lock: one Web Lock `memwal:{store}` per store, held for a store handle's
// lifetime, and WriterSession, the live/released/lost state every browser store handle checks.
// Runs in any browser context (page, dedicated/shared/service worker).

import { MemWalError } from '../util/errors.js';
import type { LockOptions } from './adapter.js';
import { claimLock, type HeldLock, InProcessLocks, type LockManagerLike } from './lock-table.js';

let fallbackLocks: InProcessLocks | undefined;

/** `navigator.locks`, or where it is missing an in-process table (which does not exclude other tabs or workers). */
function lockManager(): LockManagerLike {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks;
  return locks ?? (fallbackLocks ??= new InProcessLocks());
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
    const lock = `memwal:${store}`;
    session.lock = await claimLock(lockManager(), store, options, (reason) => session.lose(reason), {
      lock,
      heldBy: `Web Lock "${lock}" is held by another tab or worker`,
    });
    return session;
  }

  /** Runs `work` holding store `store`'s writer lock, claimed without waiting (`Locked` while a writer holds it). */
  static async whileHeld(store: string, work: () => Promise<void>): Promise<void> {
    const session = await WriterSession.claim(store, { timeoutMs: 0 });
    try {
      await work();
    } finally {
      await session.release();
    }
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
