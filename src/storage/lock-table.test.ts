// The lock table and claimLock (lock-table.ts): an abort that arrives at any moment of a waiting
// claim rejects it `Aborted` and leaves the lock to others.

import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { InProcessLocks, type LockManagerLike, claimLock } from './lock-table.js';

const never = (): void => undefined;

/** `locks`, but every `ifAvailable` answer comes `ms` late (a busy browser's Web Locks round trip). */
function slowToAnswer(locks: InProcessLocks, ms: number): LockManagerLike {
  return {
    request: (name, options, callback) =>
      options.ifAvailable
        ? new Promise((r) => setTimeout(r, ms)).then(() => locks.request(name, options, callback))
        : locks.request(name, options, callback),
  };
}

/** `promise`'s rejection, or a failure naming `what` when it is still pending after `ms`. */
async function rejectionWithin(promise: Promise<unknown>, ms: number, what: string): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still pending after ${ms} ms`)), ms);
  });
  try {
    await Promise.race([promise, late]);
    throw new Error(`${what} resolved`);
  } catch (e) {
    return e;
  } finally {
    clearTimeout(timer);
  }
}

describe('claimLock', () => {
  it('an abort while the first, non-waiting request is still unanswered rejects the claim Aborted', async () => {
    const locks = new InProcessLocks();
    const held = await claimLock(locks, 's', { timeoutMs: 0 }, never, { lock: 's' });
    const controller = new AbortController();
    const waiting = claimLock(slowToAnswer(locks, 50), 's', { signal: controller.signal }, never, { lock: 's' });
    setTimeout(() => controller.abort(), 10);
    const e = await rejectionWithin(waiting, 2_000, 'the aborted claim');
    expect(e).toBeInstanceOf(MemWalError);
    expect((e as MemWalError).code).toBe('Aborted');
    await held.release();
    // The aborted claim does not hold or wait for the lock.
    const next = await claimLock(locks, 's', { timeoutMs: 0 }, never, { lock: 's' });
    await next.release();
  });

  it('the in-process lock table rejects a queued request whose signal is already aborted, as Web Locks do', async () => {
    const locks = new InProcessLocks();
    const held = await claimLock(locks, 's', { timeoutMs: 0 }, never, { lock: 's' });
    const signal = AbortSignal.abort(new Error('gone'));
    const e = await rejectionWithin(
      locks.request('s', { signal }, () => undefined),
      2_000,
      'a request with an aborted signal',
    );
    expect((e as Error).message).toBe('gone');
    await held.release();
    expect(locks.held('s')).toBe(false);
  });
});
