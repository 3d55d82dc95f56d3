// The page's stats (SPEC §15.3, docs/impl.md §6): the newest snapshot the worker published or
// answered, the intervals of `maxWaitMsSinceLast` (`stats()` callers' and each `onStats`
// listener's), and the `onStats` pushes. MemWalClient (client.ts) answers its stats API here,
// without a round trip while the published snapshot is fresh.

import type { OnStatsOptions } from '../engine/api.js';
import type { StatsSnapshot } from '../metrics/stats.js';
import { checkStatsInterval } from '../metrics/views.js';
import type { MemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { nowMs, setRepeating } from '../util/schedule.js';

/**
 * A published stats snapshot older than this (received this long ago) is not answered from:
 * `stats()` asks the worker instead, which also restarts publishing where it stopped (a new leader
 * tab). A publishing host posts at least every STATS_HEARTBEAT_MS (250 ms) and within 25 ms of a
 * change, so a snapshot older than two heartbeats means the publications stopped. ms.
 */
export const STATS_FRESH_MS = 500;

/** A reader's interval of `maxWaitMsSinceLast` on the page: the longest wait the snapshots received in it showed. */
interface PageWaitWindow {
  max: number;
}

/** What the page's stats need of their client. */
export interface StatsClient {
  /** Ask the worker for a snapshot (it publishes from then on). */
  ask(): Promise<StatsSnapshot>;
  /** Set once the client is closed or its worker gone. */
  gone(): MemWalError | undefined;
  /** The client's `persist()` answer, the fallback of `storage.persisted`. */
  persisted(): boolean | undefined;
  logger: Logger;
}

/** The stats of one client on the page. */
export class PageStats {
  /** The newest stats snapshot the host published or answered, and when it arrived (nowMs). */
  private latestStats: { snapshot: StatsSnapshot; atMs: number } | undefined;
  /** The intervals of `maxWaitMsSinceLast`: `stats()` callers' and each `onStats` listener's. */
  private readonly windows = new Set<PageWaitWindow>();
  private readonly pullWindow: PageWaitWindow = { max: 0 };
  /** Stop functions of the `onStats` subscriptions (ended when the client is). */
  private readonly subscriptions = new Set<() => void>();

  constructor(private readonly client: StatsClient) {
    this.windows.add(this.pullWindow);
  }

  /** A snapshot the host published or answered: the newest, and every interval sees its longest wait. */
  accept(snapshot: StatsSnapshot): StatsSnapshot {
    if (!this.latestStats || snapshot.takenAt >= this.latestStats.snapshot.takenAt) this.latestStats = { snapshot, atMs: nowMs() };
    const m = snapshot.backpressure.maxWaitMsSinceLast;
    for (const w of this.windows) if (m > w.max) w.max = m;
    return snapshot;
  }

  /**
   * The newest snapshot: the one the host published last when it is recent (no round trip; it is
   * never older than any reply received, as the host posts it ahead of them), else asked of the
   * worker, which from then on publishes.
   */
  latest(): Promise<StatsSnapshot> {
    const gone = this.client.gone();
    if (gone) return Promise.reject(gone);
    const l = this.latestStats;
    if (l && nowMs() - l.atMs <= STATS_FRESH_MS) return Promise.resolve(l.snapshot);
    return this.client.ask().then((s) => this.accept(s));
  }

  /** `MemWalClient.stats`: the newest snapshot, `maxWaitMsSinceLast` over `stats()` callers' interval. */
  async stats(): Promise<StatsSnapshot> {
    return this.forWindow(await this.latest(), this.pullWindow);
  }

  /** `MemWalClient.onStats`. */
  onStats(listener: (s: StatsSnapshot) => void, opts: OnStatsOptions = {}): () => void {
    const intervalMs = checkStatsInterval(opts.intervalMs);
    const interval: PageWaitWindow = { max: 0 };
    this.windows.add(interval);
    let stopped = false;
    const push = (): void => {
      this.latest().then(
        (s) => {
          if (stopped) return;
          try {
            listener(this.forWindow(s, interval));
          } catch (e) {
            this.client.logger.warn('memwal: onStats listener threw', e);
          }
        },
        () => undefined, // the client is gone (teardown stops this subscription) or the call failed: the next push tries again
      );
    };
    const stopTimer = setRepeating(push, intervalMs);
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      stopTimer();
      this.windows.delete(interval);
      this.subscriptions.delete(stop);
    };
    this.subscriptions.add(stop);
    push();
    return stop;
  }

  /** Ends every `onStats` subscription (the client is gone). */
  endSubscriptions(): void {
    for (const stop of [...this.subscriptions]) stop();
  }

  /** `snapshot` as reader `w` sees it: `maxWaitMsSinceLast` over w's interval, which restarts now. */
  private forWindow(snapshot: StatsSnapshot, w: PageWaitWindow): StatsSnapshot {
    const maxWaitMsSinceLast = Math.max(w.max, snapshot.backpressure.longestActiveWaitMs);
    w.max = 0;
    const persisted = snapshot.storage.persisted ?? this.client.persisted();
    return {
      ...snapshot,
      backpressure: { ...snapshot.backpressure, maxWaitMsSinceLast },
      storage: persisted === undefined ? snapshot.storage : { ...snapshot.storage, persisted },
    };
  }
}
