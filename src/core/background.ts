// The background slot (LevelDB's BackgroundCompaction, SlateDB's dispatcher): one loop runs the
// store's background work, one job at a time, in a commented order of priority. Never on the put
// path; a failed job is retried in place with backoff; on shutdown the loop drains and stops.

import type { ResolvedOptions } from '../options.js';
import { backoffMs, sleep } from '../util/schedule.js';
import type { Flusher } from './flusher.js';
import type { Lifecycle } from './lifecycle.js';
import type { MemtableTier } from './memtables.js';

/** Runs flushes (and, in time, compactions) of one writer. */
export class BackgroundLoop {
  private running = false;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly life: Lifecycle,
    private readonly tier: MemtableTier,
    private readonly flusher: Flusher,
  ) {}

  /** True while a job runs or the loop waits to retry one. */
  get busy(): boolean {
    return this.running;
  }

  /** Start the loop if it is idle (a memtable froze, an entry turned durable, close wants a try). */
  kick(): void {
    if (this.running || this.life.dead) return;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        // 0. A dead writer does no I/O.
        if (this.life.dead) return;
        // 1. Flush the oldest frozen memtable first: it holds budget that puts wait for, and a
        //    younger generation never commits past an older one (its replay cursor would skip
        //    the older one's WAL entries; Lance issue 8293).
        const m = this.tier.oldestUncommitted();
        if (m) {
          // 1a. Not all of it is in the WAL yet: its entries are being appended.
          if (!m.fullyDurable) {
            await this.life.progress.wait();
            continue;
          }
          const outcome = await this.flusher.flushOnce(m);
          if (outcome === 'fatal') return;
          if (outcome === 'failed') {
            // 1b. Failed: close gets one more try each, then reports; otherwise back off and
            //     retry in place (kick cuts the wait short).
            if (this.life.stopping) return;
            await sleep(backoffMs(m.flushAttempts, this.o.flushRetry.baseMs, this.o.flushRetry.maxMs), this.life.kick);
          }
          continue;
        }
        // 2. Nothing frozen: the loop ends until the next freeze.
        return;
      }
    } finally {
      this.running = false;
      this.life.progress.notify();
    }
  }
}
