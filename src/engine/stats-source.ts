// The stats snapshot of an in-process writer (SPEC §15.3): every figure read in one synchronous
// step (`now`), the pull interval of `stats()` callers, the `onStats` pushes, the cheap change
// mark a host compares before republishing (rpc/host.ts), and the accessor views (metrics/views.ts).
// MemWal (memwal.ts) routes its stats API here.

import type { StatsSnapshot, WalStats, WriteStats, WriterState } from '../metrics/stats.js';
import { checkStatsInterval } from '../metrics/views.js';
import type { StorageAdapter, StorageEstimate } from '../storage/adapter.js';
import { setRepeating, wallClockMs } from '../util/schedule.js';
import type { OnStatsOptions } from './api.js';
import type { WaitWindow } from './backpressure.js';
import type { ClaimedContext } from './context.js';
import type { AsyncRwLock } from './rwlock.js';
import { CachedEstimate } from './storage-estimate.js';
import type { Tier } from './tier.js';
import type { WalWriter } from './wal-writer.js';

const WRITER_STATES: readonly WriterState[] = ['waiting-for-lock', 'open', 'fenced', 'poisoned', 'closed'];

/** A writer's counters at open (`EngineContext.writeStats`). */
export function zeroWriteStats(): WriteStats {
  return {
    putCount: 0,
    putRows: 0,
    putTimeMs: 0,
    walAppendCount: 0,
    walAppendTimeMs: 0,
    walAppendRetries: 0,
    flushCount: 0,
    flushRows: 0,
    flushBytes: 0,
    flushTimeMs: 0,
    flushFailureCount: 0,
    lastFlushMs: 0,
    replayedEntries: 0,
    replayedRows: 0,
    replayTimeMs: 0,
  };
}

/** The snapshot and everything that reads it, for one writer. */
export class StatsSource {
  private readonly estimates: CachedEstimate;
  /** The interval of `stats()` callers' `maxWaitMsSinceLast` (each call restarts it). */
  private readonly pullWindow: WaitWindow;
  /** Stop functions of the `onStats` subscriptions (`endSubscriptions` ends them). */
  private readonly subscriptions = new Set<() => void>();

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly wal: WalWriter,
    private readonly tier: Tier,
    private readonly statsLock: AsyncRwLock,
    adapter: StorageAdapter,
  ) {
    this.estimates = new CachedEstimate(adapter, ctx.options.name);
    this.pullWindow = ctx.backpressure.openWindow();
  }

  /** `MemWal.stats`: the usage figures' wait, then the snapshot in one step. */
  async stats(): Promise<StatsSnapshot> {
    const est = await this.estimates.get();
    return this.statsLock.read(() => this.snapshotNow(est, this.pullWindow));
  }

  /** `MemWal.onStats`. */
  onStats(listener: (s: StatsSnapshot) => void, opts: OnStatsOptions = {}): () => void {
    const intervalMs = checkStatsInterval(opts.intervalMs);
    const interval = this.ctx.backpressure.openWindow();
    let stopped = false;
    const push = async (): Promise<void> => {
      const est = await this.estimates.get();
      if (stopped) return;
      const snapshot = this.snapshotNow(est, interval);
      try {
        listener(snapshot);
      } catch (e) {
        this.ctx.options.logger.warn('memwal: onStats listener threw', e);
      }
    };
    const stopTimer = setRepeating(() => void push(), intervalMs);
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      stopTimer();
      this.ctx.backpressure.closeWindow(interval);
      this.subscriptions.delete(stop);
    };
    this.subscriptions.add(stop);
    void push();
    return stop;
  }

  /** Ends every `onStats` subscription (close, abort). */
  endSubscriptions(): void {
    for (const stop of [...this.subscriptions]) stop();
  }

  /**
   * The snapshot, synchronously, with the usage figures the cache holds (no wait): for hosts
   * that publish it (rpc/host.ts). `interval`: whose `maxWaitMsSinceLast` interval.
   */
  now(interval: WaitWindow): StatsSnapshot {
    this.estimates.refresh();
    return this.snapshotNow(this.estimates.peek(), interval);
  }

  /** A new interval for `maxWaitMsSinceLast` (a host's connection); `closeWindow` ends it. */
  openWindow(): WaitWindow {
    return this.ctx.backpressure.openWindow();
  }

  closeWindow(interval: WaitWindow): void {
    this.ctx.backpressure.closeWindow(interval);
  }

  /**
   * Cheap figures that change when the stats do (compared, never shown): a host republishes its
   * snapshot when they differ (rpc/host.ts). Figures that drift on their own (elapsed wait time,
   * the storage estimate, retention) are left to the host's heartbeat. `reads` false: without
   * the read counters (gets, block reads), which a point read changes and nothing else does.
   */
  mark(reads = true): number[] {
    const w = this.ctx.writeStats;
    return [
      w.putCount,
      w.walAppendCount,
      w.walAppendRetries,
      w.flushCount,
      w.flushFailureCount,
      this.ctx.backpressure.changeCount,
      this.ctx.log.manifest.version,
      this.wal.pendingBytes,
      WRITER_STATES.indexOf(this.ctx.life.state),
      ...this.tier.statsMark(reads),
    ];
  }

  /** A view of one snapshot (MemWal's accessors): the same figures `stats()` returns. */
  async view<T>(pick: (s: StatsSnapshot) => T): Promise<T> {
    return this.statsLock.read(() => pick(this.snapshotNow(this.estimates.peek(), undefined)));
  }

  /** The snapshot after the usage figures' first wait, without restarting `stats()` callers' interval. */
  async settled(): Promise<StatsSnapshot> {
    const est = await this.estimates.get();
    return this.statsLock.read(() => this.snapshotNow(est, undefined));
  }

  /** The snapshot: every figure read in this one synchronous step. */
  private snapshotNow(est: StorageEstimate, interval: WaitWindow | undefined): StatsSnapshot {
    const { memtable, compaction, read } = this.tier.statsParts();
    const wal: WalStats = { ...this.wal.snapshot(), incarnation: this.ctx.log.manifest.incarnation };
    const tables = this.ctx.log.manifest.tables;
    let tableFileBytes = 0;
    for (const t of tables) tableFileBytes += t.bytes;
    const snapshot: StatsSnapshot = {
      takenAt: wallClockMs(),
      store: this.ctx.options.name,
      mode: this.tier.mode,
      state: this.ctx.life.state,
      unflushedBytes: memtable ? memtable.estimatedBytes + memtable.frozenBytes : this.wal.pendingBytes,
      budgetBytes: this.ctx.options.maxUnflushedMemtableBytes,
      backpressure: this.ctx.backpressure.stats(this.tier.compactionStalled(), interval),
      wal,
      write: { ...this.ctx.writeStats },
      storage: { ...est, tableFileCount: tables.length, tableFileBytes, storeBytes: tableFileBytes + wal.retainedBytes },
      indexes: Object.entries(this.tier.indexStats()).map(([name, ix]) => ({
        name,
        kind: ix.graphVectors !== undefined ? 'vector' : this.ctx.options.textIndexes.some((t) => t.name === name) ? 'text' : 'ordered',
        entries: ix.entries,
        bytes: ix.bytes,
        ...(ix.filesBuilt !== undefined && { filesBuilt: ix.filesBuilt, filesPending: ix.filesPending }),
      })),
    };
    if (memtable) snapshot.memtable = memtable;
    if (compaction) snapshot.compaction = compaction;
    if (read) snapshot.read = read;
    return snapshot;
  }
}
