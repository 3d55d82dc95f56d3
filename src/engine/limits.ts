// Time limits on storage calls (a call that never settles counts as failed, outcome unknown), so
// that no put, flush or close waits on storage for ever. Runs in every runtime.

import { MemWalError } from '../util/errors.js';
import { clearTimer, setTimer, type Timer } from '../util/schedule.js';

const timeouts = new WeakSet<MemWalError>();

/** The shortest limit on a manifest commit, a WAL removal or a lock release (not on WAL appends). */
export const MIN_CALL_LIMIT_MS = 1000;

/**
 * The limit on manifest commits, WAL removals and the release of the lock: `walRetry.timeoutMs`,
 * but at least {@link MIN_CALL_LIMIT_MS} (a commit is one small write; a short append retry
 * budget must not turn a slow commit under load into a poisoned writer).
 */
export function callLimitMs(walRetryTimeoutMs: number): number {
  return Math.max(walRetryTimeoutMs, MIN_CALL_LIMIT_MS);
}

/**
 * `p`, or an `IOError` once `ms` have passed without it settling (a storage call that never
 * settles must not stall the writer for ever). A late settlement of `p` is ignored. The error
 * is recognised by {@link isTimeout}: the call's outcome is unknown.
 */
export function settleWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  p.catch(() => undefined);
  let timer: Timer | undefined;
  const stall = new Promise<never>((_, reject) => {
    timer = setTimer(() => {
      const err = new MemWalError('IOError', `${what} did not finish within ${ms} ms (outcome unknown)`);
      timeouts.add(err);
      reject(err);
    }, ms);
  });
  return Promise.race([p, stall]).finally(() => timer !== undefined && clearTimer(timer));
}

/** True for the error of a call that {@link settleWithin} gave up on. */
export function isTimeout(e: unknown): boolean {
  return e instanceof MemWalError && timeouts.has(e);
}
