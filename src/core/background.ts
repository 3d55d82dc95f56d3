// The background work of one writer (LevelDB's BackgroundCompaction, SlateDB's dispatcher): two
// lanes that share one lifecycle — flushes (one at a time, oldest first) and compactions (one at a
// time) — each a commented ladder. Never on the put path; a failed job is retried with backoff;
// on shutdown both lanes drain and stop. Their manifest commits are serialized by ManifestLog.

import { MemWalError } from '../errors.js';
import type { ResolvedOptions } from '../options.js';
import { backoffMs, sleep } from '../util/schedule.js';
import { type CompactionPlan, type CompactionPolicy, type Compactor, compactionBehind, planCompaction } from './compaction.js';
import type { Flusher } from './flusher.js';
import type { Lifecycle } from './lifecycle.js';
import type { ManifestLog } from './manifest-log.js';
import type { MemtableTier } from './memtables.js';
import type { CompactionResult } from './stats.js';
import { levelOf } from './table-files.js';

/** Runs the flushes and compactions of one writer. */
export class BackgroundLoop {
  private flushing = false;
  private compacting = false;
  /** Consecutive failed compactions (backoff). */
  private compactionFailures = 0;
  /** True while flushes wait for compaction (BackpressureStats.cause). */
  stalled = false;
  /** Serializes `compact()` calls with the compaction lane. */
  private manual: Promise<unknown> = Promise.resolve();
  /** A `compact()` waits for the lane: the lane yields after a failed attempt instead of retrying. */
  private manualWaiting = false;
  private readonly stop = new AbortController();

  constructor(
    private readonly o: ResolvedOptions,
    private readonly life: Lifecycle,
    private readonly tier: MemtableTier,
    private readonly flusher: Flusher,
    private readonly compactor: Compactor,
    private readonly log: ManifestLog,
    private readonly keyed: boolean,
    private readonly policy: CompactionPolicy,
  ) {
    life.onTerminal(() => this.stop.abort());
  }

  /** True while a flush runs or waits to retry. */
  get busy(): boolean {
    return this.flushing;
  }

  /** Start the flush lane if it is idle (a memtable froze, an entry turned durable, close wants a try). */
  kick(): void {
    if (this.flushing || this.life.dead) return;
    this.flushing = true;
    void this.flushLane();
  }

  /** Start the compaction lane if it is idle (a flush committed, the store opened). */
  kickCompaction(): void {
    if (this.compacting || this.life.dead || this.life.stopping) return;
    this.compacting = true;
    void this.compactionLane();
  }

  /** Bytes the next compaction would read (the compaction debt). */
  pendingBytes(): number {
    return this.plan(false)?.bytes ?? 0;
  }

  /**
   * Compact until no level-0 file is left (all of them merged into level 1), waiting for a
   * compaction in progress first (a background one that fails yields to this call rather than
   * retrying). Rejects with the writer's error, `Closed`, `Aborted`, or `IOError` when an attempt
   * of its own fails.
   */
  compact(signal?: AbortSignal): Promise<CompactionResult> {
    const run = async (): Promise<CompactionResult> => {
      this.manualWaiting = true;
      try {
        while (this.compacting) await this.life.progress.wait(signal);
      } finally {
        this.manualWaiting = false;
      }
      this.compacting = true;
      const before = this.log.manifest.tables.length;
      const c0 = this.compactor.snapshot(this.log.manifest, 0);
      let compactions = 0;
      try {
        for (;;) {
          this.life.throwIfUnusable();
          if (signal?.aborted) throw new MemWalError('Aborted', 'compact aborted');
          const plan = this.plan(true);
          if (!plan) break;
          const outcome = await this.compactor.run(plan, signal);
          if (outcome === 'fatal') this.life.throwIfUnusable();
          if (outcome === 'failed')
            throw new MemWalError('IOError', 'compaction failed (see the logger); the store is unchanged and will retry');
          compactions++;
        }
      } finally {
        this.compacting = false;
        this.life.progress.notify();
        this.kickCompaction(); // the background lane goes on (it yielded to this call)
      }
      const c1 = this.compactor.snapshot(this.log.manifest, 0);
      return {
        compactions,
        bytesRead: c1.bytesRead - c0.bytesRead,
        bytesWritten: c1.bytesWritten - c0.bytesWritten,
        tablesBefore: before,
        tablesAfter: this.log.manifest.tables.length,
      };
    };
    const p = this.manual.then(run, run);
    this.manual = p.catch(() => undefined);
    return p;
  }

  private plan(force: boolean): CompactionPlan | undefined {
    const held = new Set<number>();
    for (const f of this.tier.frozen) held.add(f.generation);
    return planCompaction(this.log.manifest, this.keyed, held, force, this.policy);
  }

  private async flushLane(): Promise<void> {
    try {
      for (;;) {
        // 0. A dead writer does no I/O.
        if (this.life.dead) return;
        // 1. Flush the oldest frozen memtable first: it holds budget that puts wait for, and a
        //    younger generation never commits past an older one (its replay cursor would skip
        //    the older one's WAL entries; Lance issue 8293).
        const m = this.tier.oldestUncommitted();
        // 2. Nothing frozen: the lane ends until the next freeze.
        if (!m) return;
        // 3. Not all of it is in the WAL yet: its entries are being appended.
        if (!m.fullyDurable) {
          await this.life.progress.wait();
          continue;
        }
        // 4. Compaction is behind (too many level-0 files or pending bytes): wait for it, so that
        //    reads stay bounded; puts feel it through the budget (cause 'compaction'). A close
        //    flushes anyway: the data must reach a table file.
        if (
          !this.life.stopping &&
          compactionBehind(this.log.manifest, this.pendingBytes(), this.o.maxPendingCompactionBytes, this.policy)
        ) {
          if (!this.stalled) this.compactor.noteStall();
          this.stalled = true;
          this.kickCompaction();
          await this.life.progress.wait();
          continue;
        }
        this.stalled = false;
        const outcome = await this.flusher.flushOnce(m);
        if (outcome === 'fatal') return;
        if (outcome === 'committed') {
          this.kickCompaction();
          continue;
        }
        // 5. Failed: close gets one more try each, then reports; otherwise back off and retry in
        //    place (a kick cuts the wait short).
        if (this.life.stopping) return;
        await sleep(backoffMs(m.flushAttempts, this.o.flushRetry.baseMs, this.o.flushRetry.maxMs), this.life.kick);
      }
    } finally {
      this.flushing = false;
      this.life.progress.notify();
    }
  }

  private async compactionLane(): Promise<void> {
    try {
      for (;;) {
        // 0. Closing or dead: no new compaction.
        if (this.life.dead || this.life.stopping) return;
        // 1. Nothing due by the policy: the lane ends until the next flush commits.
        const plan = this.plan(false);
        if (!plan) return;
        // 2. Merge; a failure backs off (the stats count it) and is retried: a compaction that
        //    keeps failing never blocks flushes below the stop trigger, and is visible.
        const outcome = await this.compactor.run(plan, this.stop.signal);
        if (outcome === 'fatal') return;
        if (outcome === 'failed') {
          this.compactionFailures++;
          // A compact() waits: it makes its own attempt (and reports the failure) before the next retry.
          if (this.manualWaiting) return;
          await sleep(backoffMs(this.compactionFailures, this.o.flushRetry.baseMs, this.o.flushRetry.maxMs), this.life.kick);
        } else this.compactionFailures = 0;
      }
    } finally {
      this.compacting = false;
      this.life.progress.notify();
    }
  }

  /** Level-0 files now (for stats). */
  level0Files(): number {
    return this.log.manifest.tables.filter((t) => levelOf(t) === 0).length;
  }
}
