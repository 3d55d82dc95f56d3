// Backpressure: the admission ladder (the one place a put may wait for room) and the
// BackpressureStats it keeps, with the active-waiter guard of the seed PR (docs/impl.md §5–6).

import { MemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { SnapshotBackpressure } from '../metrics/stats.js';
import { clearTimer, nowMs, setTimer, type Timer } from '../util/schedule.js';

/** What the ladder needs from the writer, read afresh on every step. */
export interface AdmissionContext {
  /** The latched poison error, or `Closed` once the writer stops admitting; undefined while open. */
  terminal(): MemWalError | undefined;
  /**
   * Called when a put is blocked (and again after each wake that does not admit it): the writer
   * freezes the active memtable if nothing else is frozen, so that the wait can end.
   */
  onBlocked(): void;
  /** A line for the periodic warning: unflushed bytes against the budget. */
  describe(): string;
  signal?: AbortSignal;
  timeoutMs?: number;
  logIntervalMs: number;
  logger: Logger;
}

interface Waiter {
  startMs: number;
}

/**
 * One reader's interval for `maxWaitMsSinceLast` (a `stats()` caller, an `onStats` listener, a
 * page's connection): the longest wait that ended since the reader's previous snapshot. Opened
 * with `Backpressure.openWindow`, read and restarted by `stats(_, interval)`, closed when the reader
 * goes (`closeWindow`).
 */
export interface WaitWindow {
  maxEndedMs: number;
}

/**
 * Admission control and its stats. `admit(tryAdmit)` calls `tryAdmit` — which checks the budget
 * and, when there is room, inserts in the same synchronous step — until it returns true.
 */
export class Backpressure {
  private totalCount = 0;
  private totalWaitMs = 0;
  private abortedCount = 0;
  private abortedWaitMs = 0;
  private startedCount = 0;
  private readonly active = new Set<Waiter>();
  private wakers = new Set<() => void>();
  private readonly windows = new Set<WaitWindow>();

  /** Changes with every wait that starts or ends (compared by hosts that republish stats; never shown). */
  get changeCount(): number {
    return this.startedCount + this.totalCount + this.abortedCount;
  }

  /** A new reader's interval, starting now (its first `maxWaitMsSinceLast` counts from here). */
  openWindow(): WaitWindow {
    const w: WaitWindow = { maxEndedMs: 0 };
    this.windows.add(w);
    return w;
  }

  /** The reader is gone: its interval no longer follows the waits. */
  closeWindow(w: WaitWindow): void {
    this.windows.delete(w);
  }

  /** Wake every waiter to re-check: a flush committed, the writer poisoned, closed or aborted. */
  wake(): void {
    const wakers = this.wakers;
    this.wakers = new Set();
    for (const w of wakers) w();
  }

  /**
   * The invariants, checked (cheap; for tests): the counters are finite and never negative, and
   * each waiting put has at most one wake-up pending (they never pile up). Throws an Error naming
   * the broken one.
   */
  checkInvariants(): void {
    if (this.wakers.size > this.active.size) throw new Error(`${this.wakers.size} wake-ups pending for ${this.active.size} waiting puts`);
    for (const [name, v] of Object.entries({
      totalCount: this.totalCount,
      totalWaitMs: this.totalWaitMs,
      abortedCount: this.abortedCount,
      abortedWaitMs: this.abortedWaitMs,
    })) {
      if (!(v >= 0) || !Number.isFinite(v)) throw new Error(`backpressure ${name} is ${v}`);
    }
  }

  /**
   * A snapshot (synchronous); `activeWaitMs` sums the elapsed time of the waits in progress.
   * `compactionBehind`: flushes are held back by compaction debt right now (then waiters wait for
   * compaction). `maxWaitMsSinceLast` is the longest wait in progress at any moment of the reader's
   * `interval` (waits that ended in it, and the waits in progress now), and the interval restarts
   * now; without an interval it is the longest wait in progress now.
   */
  stats(compactionBehind = false, interval?: WaitWindow): SnapshotBackpressure {
    const now = nowMs();
    let activeWaitMs = 0;
    let longestActive = 0;
    for (const w of this.active) {
      const elapsed = now - w.startMs;
      activeWaitMs += elapsed;
      if (elapsed > longestActive) longestActive = elapsed;
    }
    let maxWaitMsSinceLast = longestActive;
    if (interval) {
      maxWaitMsSinceLast = Math.max(interval.maxEndedMs, longestActive);
      interval.maxEndedMs = 0;
    }
    return {
      totalCount: this.totalCount,
      totalWaitMs: this.totalWaitMs,
      activeCount: this.active.size,
      activeWaitMs,
      abortedCount: this.abortedCount,
      abortedWaitMs: this.abortedWaitMs,
      cause: this.active.size === 0 ? null : compactionBehind ? 'compaction' : 'memtable',
      maxWaitMsSinceLast,
      longestActiveWaitMs: longestActive,
      startedCount: this.startedCount,
    };
  }

  /**
   * The ladder. Resolves once `tryAdmit` returned true (the put is then inserted). Rejects,
   * with nothing inserted: the latched error (poisoned), `Closed`, `Aborted`, or
   * `BackpressureTimeout`. A wait that starts is visible in `activeCount` at once and leaves it
   * in a `finally`, whatever ends it.
   */
  async admit(tryAdmit: () => boolean, ctx: AdmissionContext): Promise<void> {
    const early = ctx.terminal();
    if (early) throw early;
    if (ctx.signal?.aborted) throw abortedError(ctx.signal);
    if (tryAdmit()) return;

    const waiter: Waiter = { startMs: nowMs() };
    this.active.add(waiter);
    this.startedCount += 1;
    let admitted = false;
    try {
      const deadline = ctx.timeoutMs === undefined ? undefined : waiter.startMs + ctx.timeoutMs;
      let nextLogMs = waiter.startMs + ctx.logIntervalMs;
      ctx.onBlocked();
      for (;;) {
        await this.waitForWake(ctx.signal, Math.min(nextLogMs, deadline ?? Infinity) - nowMs());
        // 1. The writer can no longer admit anything.
        const terminal = ctx.terminal();
        if (terminal) throw terminal;
        // 2. The caller gave up.
        if (ctx.signal?.aborted) throw abortedError(ctx.signal);
        // 3. Room: insert in this same synchronous step.
        if (tryAdmit()) {
          admitted = true;
          this.totalCount += 1;
          this.totalWaitMs += nowMs() - waiter.startMs;
          return;
        }
        // 4. Out of patience.
        const now = nowMs();
        if (deadline !== undefined && now >= deadline) {
          throw new MemWalError(
            'BackpressureTimeout',
            `put waited ${Math.round(now - waiter.startMs)} ms for room (backpressureTimeoutMs ${ctx.timeoutMs}); ${ctx.describe()}; nothing was written`,
          );
        }
        // 5. Still blocked: warn now and then, and make sure something can free room.
        if (now >= nextLogMs) {
          ctx.logger.warn(`memwal: put blocked by backpressure for ${Math.round(now - waiter.startMs)} ms; ${ctx.describe()}`);
          while (nextLogMs <= now) nextLogMs += ctx.logIntervalMs;
        }
        ctx.onBlocked();
      }
    } finally {
      this.active.delete(waiter);
      const waitedMs = nowMs() - waiter.startMs;
      if (!admitted) {
        this.abortedCount += 1;
        this.abortedWaitMs += waitedMs;
      }
      // Every reader's interval sees this wait, however short, whatever ended it.
      for (const w of this.windows) if (waitedMs > w.maxEndedMs) w.maxEndedMs = waitedMs;
    }
  }

  private waitForWake(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: Timer | undefined;
      const done = (): void => {
        if (timer !== undefined) clearTimer(timer);
        signal?.removeEventListener('abort', done);
        this.wakers.delete(done);
        resolve();
      };
      this.wakers.add(done);
      if (Number.isFinite(timeoutMs)) timer = setTimer(done, Math.max(0, timeoutMs));
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

function abortedError(signal: AbortSignal): MemWalError {
  const reason = signal.reason instanceof Error ? `: ${signal.reason.message}` : '';
  return new MemWalError('Aborted', `put aborted while waiting for backpressure${reason}; nothing was written`);
}
