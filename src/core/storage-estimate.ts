// Storage usage figures for stats, never waiting on storage for long: the adapter is asked at
// most once a second, in the background, and a stats call uses the newest answer it has.
// Invariant: at most one estimate is in flight. Any runtime.

import type { StorageAdapter, StorageEstimate } from '../storage/adapter.js';
import { nowMs } from '../util/schedule.js';

/** Figures older than this are refreshed (in the background) by the next call. */
const ESTIMATE_MAX_AGE_MS = 1000;

/** One store's usage figures, cached. */
export class CachedEstimate {
  private last: { atMs: number; value: StorageEstimate } | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly adapter: StorageAdapter,
    private readonly name: string,
  ) {}

  /**
   * The newest figures: a fresh-enough answer, or (one being asked) the previous one; only the
   * very first call waits for the adapter. A failing adapter gives `{}`.
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
        }
      })();
    }
    if (this.last === undefined) await this.inFlight;
    return this.last?.value ?? {};
  }
}
