// Storage usage figures for stats, never waiting on storage for long: the adapter is asked at
// most once a second, in the background, and a stats call uses the newest answer it has, waiting
// at most ESTIMATE_WAIT_MS for the first. Invariant: at most one estimate is in flight. Any runtime.

import type { StorageAdapter, StorageEstimate } from '../storage/adapter.js';
import { nowMs, Signal } from '../util/schedule.js';

/** Figures older than this are refreshed (in the background) by the next call. */
const ESTIMATE_MAX_AGE_MS = 1000;
/** How long a call with no figures yet waits for the adapter's answer before answering without them. */
export const ESTIMATE_WAIT_MS = 200;

/** One store's usage figures, cached. */
export class CachedEstimate {
  private last: { atMs: number; value: StorageEstimate } | undefined;
  private inFlight: Promise<void> | undefined;
  /** Notified when an answer (or failure) lands. */
  private readonly landed = new Signal();

  constructor(
    private readonly adapter: StorageAdapter,
    private readonly name: string,
  ) {}

  /** The figures held now, without waiting and without asking the adapter (`{}` before the first answer). */
  peek(): StorageEstimate {
    return this.last?.value ?? {};
  }

  /** Ask the adapter in the background when the figures are older than a second (as `get` does), without waiting. */
  refresh(): void {
    if (this.inFlight || (this.last !== undefined && nowMs() - this.last.atMs <= ESTIMATE_MAX_AGE_MS)) return; // cheap: no promise
    this.get().catch(() => undefined); // get never rejects; a failing adapter gives {}
  }

  /**
   * The newest figures: a fresh-enough answer, or (one being asked) the previous one. Only while
   * there is no answer yet does a call wait, at most {@link ESTIMATE_WAIT_MS} (200 ms), then it
   * answers `{}` (usage and quota unknown). An estimate that never settles is never asked again
   * (at most one in flight), so the figures stay as they were. A failing adapter gives `{}`.
   */
  async get(): Promise<StorageEstimate> {
    if (!this.inFlight && (this.last === undefined || nowMs() - this.last.atMs > ESTIMATE_MAX_AGE_MS)) {
      this.inFlight = (async () => {
        try {
          this.last = { atMs: nowMs(), value: (await this.adapter.estimate?.(this.name)) ?? {} };
        } catch {
          this.last = { atMs: nowMs(), value: {} };
        } finally {
          this.inFlight = undefined;
          this.landed.notify();
        }
      })();
    }
    if (this.last === undefined && this.inFlight) await this.landed.wait(undefined, ESTIMATE_WAIT_MS);
    return this.last?.value ?? {};
  }
}
