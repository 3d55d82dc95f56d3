// The background work of one MemTable-mode writer (LevelDB's BackgroundCompaction, SlateDB's
// dispatcher): two lanes (lane.ts) — flushes (one at a time, oldest first) and compactions (one at a
// time) — each a commented ladder of one pass. Never on the put path; a failed job is retried
// with backoff; a long compaction never holds back a flush. Their manifest commits are
// serialized by ManifestLog.

import { MemWalError } from '../util/errors.js';
import { backoffMs, sleep } from '../util/schedule.js';
import type { CompactionResult } from '../metrics/stats.js';
import { type CompactionOutcome, type CompactionPlan, type Compactor, compactionBehind, planCompaction } from './compaction.js';
import type { ClaimedContext } from './context.js';
import type { Flusher } from './flusher.js';
import type { BackgroundLane, LaneStep } from './lane.js';
import type { MemtableSet } from './memtable-set.js';
import type { MemTable } from '../lsm/memtable.js';
import type { IndexBuild } from './index-build.js';

/** Runs the flushes and compactions of one writer. */
export class Background {
  /** Flushes frozen memtables, oldest first. */
  readonly flushLane: BackgroundLane;
  /** Merges level 0 into level 1 when the policy says so. */
  readonly compactionLane: BackgroundLane;
  /** Consecutive failed compactions (backoff). */
  private compactionFailures = 0;
  /** True while flushes wait for compaction (BackpressureStats.cause). */
  stalled = false;
  /** Serializes `compact()` calls. */
  private manual: Promise<unknown> = Promise.resolve();
  /** A `compact()` waits for the lane: the lane yields after a failed attempt instead of retrying. */
  private manualWaiting = false;
  /** Aborted at shutdown: a compaction in progress stops. */
  private readonly stop = new AbortController();

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly parts: { memtables: MemtableSet; flusher: Flusher; compactor: Compactor; indexBuild: IndexBuild },
  ) {
    ctx.life.onTerminal(() => this.stop.abort());
    this.flushLane = ctx.lanes.add('flush', () => this.flushPass(), { atClose: 'stop' });
    this.compactionLane = ctx.lanes.add('compaction', () => this.compactionPass(), {
      atClose: 'stop',
      mayRun: () => !ctx.life.stopping,
    });
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
        return await this.compactionLane.exclusive(
          () => {
            this.manualWaiting = false;
            return this.compactAll(signal);
          },
          signal,
          'compact aborted',
        );
      } finally {
        this.manualWaiting = false;
        this.compactionLane.wake(); // the background lane goes on (it yielded to this call)
      }
    };
    const p = this.manual.then(run, run);
    this.manual = p.catch(() => undefined);
    return p;
  }

  private async compactAll(signal: AbortSignal | undefined): Promise<CompactionResult> {
    const { life, log } = this.ctx;
    const before = log.manifest.tables.length;
    const c0 = this.parts.compactor.snapshot(log.manifest, 0);
    let compactions = 0;
    for (;;) {
      life.throwIfUnusable();
      if (signal?.aborted) throw new MemWalError('Aborted', 'compact aborted');
      const plan = this.plan(true);
      if (!plan) break;
      const outcome = await this.parts.compactor.run(plan, signal);
      if (outcome === 'fatal') life.throwIfUnusable();
      if (outcome === 'failed')
        throw new MemWalError('IOError', 'compaction failed (see the logger); the store is unchanged and will retry');
      compactions++;
    }
    const c1 = this.parts.compactor.snapshot(log.manifest, 0);
    return {
      compactions,
      bytesRead: c1.bytesRead - c0.bytesRead,
      bytesWritten: c1.bytesWritten - c0.bytesWritten,
      tablesBefore: before,
      tablesAfter: log.manifest.tables.length,
    };
  }

  private plan(force: boolean): CompactionPlan | undefined {
    return planCompaction(this.ctx.log.manifest, this.ctx.keyEncoder !== undefined, this.held(), force, this.ctx.policy);
  }

  /** Generations still held in memory (frozen memtables, grace included): compaction must not take them. */
  private held(): Set<number> {
    const held = new Set<number>();
    for (const f of this.parts.memtables.frozen) held.add(f.generation);
    return held;
  }

  /** One pass of the flush lane (synchronous while it finds nothing to do). */
  private flushPass(): LaneStep | Promise<LaneStep> {
    // 0. A dead writer does no I/O.
    if (this.ctx.life.dead) return 'stop';
    // 1. Flush the oldest frozen memtable first: it holds budget that puts wait for, and a
    //    younger generation never commits past an older one (its replay cursor would skip the
    //    older one's WAL entries; Lance issue 8293).
    const m = this.parts.memtables.oldestUncommitted();
    // 2. Nothing frozen: the lane rests until the next freeze.
    if (!m) return 'idle';
    return this.flushStep(m);
  }

  private async flushStep(m: MemTable): Promise<LaneStep> {
    const { life, log, options, policy } = this.ctx;
    // 3. Not all of it is in the WAL yet: its entries are being appended.
    if (!m.fullyDurable) {
      await life.progress.wait();
      return 'more';
    }
    // 4. Compaction is behind (too many level-0 files or pending bytes): wait for it, so that
    //    reads stay bounded; puts feel it through the budget (cause 'compaction'). A close
    //    flushes anyway: the data must reach a table file.
    if (!life.stopping && compactionBehind(log.manifest, this.pendingBytes(), options.maxPendingCompactionBytes, policy)) {
      if (!this.stalled) this.parts.compactor.noteStall();
      this.stalled = true;
      this.compactionLane.wake();
      await life.progress.wait();
      return 'more';
    }
    this.stalled = false;
    const outcome = await this.parts.flusher.flushOnce(m);
    if (outcome === 'fatal') return 'stop';
    if (outcome === 'committed') {
      this.compactionLane.wake();
      return 'more';
    }
    // 5. Failed: close gets one more try each, then reports; otherwise back off and retry in
    //    place (a kick cuts the wait short).
    if (life.stopping) return 'stop';
    await sleep(backoffMs(m.flushAttempts, options.flushRetry.baseMs, options.flushRetry.maxMs), life.kick);
    return 'more';
  }

  /** One pass of the compaction lane (synchronous while it finds nothing to do). */
  private compactionPass(): LaneStep | Promise<LaneStep> {
    // 0. Closing or dead: no new compaction.
    if (this.ctx.life.dead || this.ctx.life.stopping) return 'stop';
    // 1. A compaction due by the policy first.
    const plan = this.plan(false);
    if (plan) return this.compactStep(() => this.parts.compactor.run(plan, this.stop.signal));
    // 2. Else one piece of the index build (index-build.ts): table files lacking a section of an
    //    index the store declares. Nothing left: the lane rests until the next flush commits.
    const piece = this.parts.indexBuild.next(this.ctx.log.manifest, this.held());
    if (!piece) return 'idle';
    return this.compactStep(() => this.parts.indexBuild.run(piece, this.stop.signal));
  }

  private async compactStep(run: () => Promise<CompactionOutcome>): Promise<LaneStep> {
    const { life, options } = this.ctx;
    // 3. Merge (or build); a failure backs off (the stats count it) and is retried: a compaction
    //    that keeps failing never blocks flushes below the stop trigger, and is visible.
    const outcome = await run();
    if (outcome === 'fatal') return 'stop';
    if (outcome === 'failed') {
      this.compactionFailures++;
      // A compact() waits: it makes its own attempt (and reports the failure) before the next retry.
      if (this.manualWaiting) return 'stop';
      await sleep(backoffMs(this.compactionFailures, options.flushRetry.baseMs, options.flushRetry.maxMs), life.kick);
    } else this.compactionFailures = 0;
    return 'more';
  }
}
