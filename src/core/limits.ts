// Time limits on storage calls (a call that never settles counts as failed, outcome unknown), so
// that no put, flush or close waits on storage for ever. Runs in every runtime.

import { MemWalError } from '../errors.js';

const timeouts = new WeakSet<MemWalError>();

/**
 * `p`, or an `IOError` once `ms` have passed without it settling (a storage call that never
 * settles must not stall the writer for ever). A late settlement of `p` is ignored. The error
 * is recognised by {@link isTimeout}: the call's outcome is unknown.
 */
export function settleWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  p.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stall = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new MemWalError('IOError', `${what} did not finish within ${ms} ms (outcome unknown)`);
      timeouts.add(err);
      reject(err);
    }, ms);
  });
  return Promise.race([p, stall]).finally(() => clearTimeout(timer));
}

/** True for the error of a call that {@link settleWithin} gave up on. */
export function isTimeout(e: unknown): boolean {
  return e instanceof MemWalError && timeouts.has(e);
}
