// The warning every adapter logs while an open waits for a store's writer lock, so a stuck open
// is never silent. Runs in every runtime; imports nothing runtime-specific.

import { toMemWalError } from '../util/errors.js';
import { nowMs, setRepeating } from '../util/schedule.js';
import type { LockOptions } from './adapter.js';

/** How long an open waits before the first warning, and then between warnings, in ms. */
export const LOCK_WAIT_WARN_MS = 5_000;

/**
 * Starts warning through `options.logger` (nothing without one) every `LOCK_WAIT_WARN_MS` while
 * the open of store `name` waits for its writer lock; `detail()` adds what the adapter knows about
 * the holder. Returns the function that stops the warnings (call it however the wait ends). The
 * timer does not keep a Node process alive. Any runtime.
 */
export function warnWhileWaiting(name: string, options: LockOptions, detail?: () => string): () => void {
  const logger = options.logger;
  if (!logger) return () => undefined;
  const started = nowMs();
  return setRepeating(() => {
    const waited = Math.round((nowMs() - started) / 1000);
    const more = detail?.();
    try {
      logger.warn(
        `memwal: opening store "${name}" has waited ${waited} s for its writer lock, held by another writer${more ? `: ${more}` : ''}`,
      );
    } catch {
      // A throwing logger must not break the open.
    }
  }, LOCK_WAIT_WARN_MS);
}

/**
 * An open of store `name` starts to wait for its writer lock: calls `options.onWaiting` (a throw
 * rejects the open, mapped) and starts the warnings (`warnWhileWaiting`). Returns the function
 * that stops them.
 */
export function beginWait(name: string, options: LockOptions, detail?: () => string): () => void {
  try {
    options.onWaiting?.();
  } catch (e) {
    throw toMemWalError(e, 'onWaiting callback');
  }
  return warnWhileWaiting(name, options, detail);
}
