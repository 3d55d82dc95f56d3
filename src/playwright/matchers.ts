// Custom matchers of memwal/playwright on a MemWalStore: they poll the store's stats until the
// condition holds (or, with .not, stops holding) within the expect timeout, and on failure print
// the few figures that decided it (and, where one helps, what to do). Node (Playwright test process).

import type { ExpectMatcherState, MatcherReturnType } from '@playwright/test';
import type { MemWalStore, StoreStats } from './store.js';

const POLL_MS = 100;

interface Check {
  name: string;
  expected: string;
  holds(s: StoreStats): boolean;
  /** The figures `holds` reads, for the message. */
  received(s: StoreStats): string;
  /** What to do about a failure with these stats, if there is something to say. */
  hint?(s: StoreStats): string | undefined;
}

async function pollStats(state: ExpectMatcherState, store: MemWalStore, check: Check, timeout?: number): Promise<MatcherReturnType> {
  const ms = timeout ?? state.timeout;
  const end = Date.now() + ms;
  let stats: StoreStats | undefined;
  let failure: unknown;
  for (;;) {
    try {
      stats = await store.stats();
      failure = undefined;
      if (check.holds(stats) !== state.isNot) break;
    } catch (e) {
      failure = e;
    }
    if (Date.now() >= end) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const pass = stats !== undefined && failure === undefined && check.holds(stats);
  const title = `expect(store '${store.name}')${state.isNot ? '.not' : ''}.${check.name}()`;
  const message = (): string => {
    if (failure !== undefined)
      return `${title}\n\nThe stats could not be read: ${failure instanceof Error ? failure.message : String(failure)}`;
    const advice = state.isNot ? undefined : check.hint?.(stats!);
    return `${title} (waited ${ms} ms)\n\nExpected: ${state.isNot ? 'not ' : ''}${check.expected}\nReceived: ${check.received(stats!)}${advice ? `\n${advice}` : ''}`;
  };
  return { pass, message, name: check.name, timeout: ms };
}

const flushed: Check = {
  name: 'toHaveFlushed',
  expected: 'nothing unflushed: an empty active memtable, no frozen memtable waiting for its flush, no WAL append pending',
  holds: (s) =>
    s.memtable !== undefined && s.memtable.rowCount === 0 && s.memtable.frozenBytes === 0 && s.memtable.pendingWalBatchCount === 0,
  received: (s) =>
    s.memtable === undefined
      ? 'no memtable stats (a WAL-only store has no flushes)'
      : `active rowCount ${s.memtable.rowCount} (${s.memtable.estimatedBytes} bytes), frozenBytes ${s.memtable.frozenBytes} in ${s.memtable.frozenCount} frozen memtable(s), pendingWalBatchCount ${s.memtable.pendingWalBatchCount}, flushFailureCount ${s.write.flushFailureCount}`,
  hint: (s) =>
    s.memtable !== undefined && s.memtable.rowCount > 0 && s.memtable.frozenCount === 0
      ? 'Rows in the active memtable reach a table file only once it fills or is sealed: call `await store.flush()` first.'
      : undefined,
};

const noBackpressure: Check = {
  name: 'toHaveNoBackpressure',
  expected: 'no put waiting for the unflushed-bytes budget (backpressure.activeCount 0)',
  holds: (s) => s.backpressure.activeCount === 0,
  received: (s) =>
    `activeCount ${s.backpressure.activeCount} (waiting ${s.backpressure.activeWaitMs} ms in all), cause ${String(s.backpressure.cause)}, unflushed ${s.unflushedBytes ?? (s.memtable?.estimatedBytes ?? 0) + (s.memtable?.frozenBytes ?? 0)} bytes`,
};

/** The matchers `expect` of memwal/playwright adds; usable with `expect.extend` on your own `expect`. */
export const memwalMatchers = {
  /**
   * Passes once the store holds nothing unflushed: its active memtable is empty and every
   * frozen memtable has committed to a table file (the app's rows are in table files, not only
   * in the WAL). So it fails while the active memtable holds even one row, until the memtable
   * fills or the test calls `store.flush()` (or `forceSealActive()`). Polls up to
   * `options.timeout` (default: the expect timeout). Fails for a WAL-only store.
   */
  toHaveFlushed(this: ExpectMatcherState, store: MemWalStore, options: { timeout?: number } = {}): Promise<MatcherReturnType> {
    return pollStats(this, store, flushed, options.timeout);
  },
  /** Passes once no put of the store waits for backpressure (`backpressure.activeCount` 0). Polls like `toHaveFlushed`. */
  toHaveNoBackpressure(this: ExpectMatcherState, store: MemWalStore, options: { timeout?: number } = {}): Promise<MatcherReturnType> {
    return pollStats(this, store, noBackpressure, options.timeout);
  },
};
