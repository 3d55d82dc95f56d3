// MemTable mode's tier: the active memtable, the frozen ones (waiting, retrying, or in grace),
// freeze, insert and publish-on-durable. Invariants: `frozen` is in generation order; the active
// memtable's generation is above every frozen one; a memtable leaves the read view only after its
// flush committed (and its grace passed). Every method here is synchronous.

import type { RecordBatch } from 'apache-arrow';
import type { Manifest } from '../manifest/manifest.js';
import type { ResolvedOptions } from '../options.js';
import { clearTimer, nowMs, setTimer } from '../util/schedule.js';
import type { Backpressure } from './backpressure.js';
import type { Key } from './keys.js';
import type { Lifecycle } from './lifecycle.js';
import { MemTable } from './memtable.js';
import type { MemTableStats } from './stats.js';
import type { Tier } from './tier.js';
import type { PendingEntry, WalWriter } from './wal-writer.js';

/** The memtables of one writer. */
export class MemtableTier implements Tier {
  readonly mode = 'memtable';
  active: MemTable;
  /** Frozen memtables in generation order: waiting, failed, or committed within grace. */
  frozen: MemTable[] = [];
  /** Highest generation whose flush committed. */
  committedGeneration = 0;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly keyed: boolean,
    private readonly life: Lifecycle,
    private readonly wal: WalWriter,
    private readonly bp: Backpressure,
    /** Starts the background loop if it is idle. */
    private readonly kickBackground: () => void,
    /** Starts the compaction lane if it is idle (files held in grace may be compacted now). */
    private readonly kickCompaction: () => void,
  ) {
    this.active = new MemTable(1, keyed);
    life.onTerminal(() => {
      for (const f of this.frozen) if (f.graceTimer !== undefined) clearTimer(f.graceTimer);
    });
  }

  /** After the claim: the active memtable takes the manifest's next generation. */
  start(m: Manifest): void {
    this.committedGeneration = m.nextGeneration - 1;
    this.active = new MemTable(m.nextGeneration, this.keyed);
  }

  /** Active memtable + frozen memtables whose flush has not committed. */
  unflushedBytes(): number {
    return this.active.estimatedBytes + this.frozenUncommittedBytes();
  }

  frozenUncommittedBytes(): number {
    let n = 0;
    for (const f of this.frozen) if (f.state === 'frozen') n += f.estimatedBytes;
    return n;
  }

  insert(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined, sizes: number[], bytes: number, rows: number): PendingEntry {
    const m = this.active;
    const end = m.append(batches, keys, sizes);
    if (!this.o.durableWrite) m.publish(end);
    const e = this.wal.join(m, batches, bytes, rows, end);
    if (this.freezeTriggered(m)) this.freeze();
    return e;
  }

  freezeTriggered(m: MemTable): boolean {
    return m.estimatedBytes >= this.o.maxMemtableBytes || m.rows >= this.o.maxMemtableRows || m.batches.length >= this.o.maxMemtableBatches;
  }

  /**
   * Freeze the active memtable: close its WAL entry, swap in generation + 1, put the frozen one in
   * the read view before anything can fail, and push its WAL append and flush. Null when empty.
   */
  freeze(): number | null {
    const m = this.active;
    if (m.rows === 0) return null;
    this.wal.closeFor(m);
    m.state = 'frozen';
    this.frozen.push(m);
    this.active = new MemTable(m.generation + 1, this.keyed);
    this.wal.kick();
    this.kickBackground();
    return m.generation;
  }

  /** Freeze if nothing else is frozen, so that a blocked put's wait can end; push the flush. */
  onBlocked(): void {
    if (!this.hasUncommittedFrozen() && this.active.rows > 0) this.freeze();
    this.kickBackground();
  }

  onDurable(e: PendingEntry): void {
    const m = e.memtable!;
    if (e.batchEnd > m.durableBatches) m.durableBatches = e.batchEnd;
    if (this.o.durableWrite) m.publish(e.batchEnd);
    if (m.state === 'frozen' && m.fullyDurable) this.kickBackground();
  }

  hasUncommittedFrozen(): boolean {
    return this.frozen.some((f) => f.state === 'frozen');
  }

  /** The oldest frozen memtable whose flush has not committed (the only one that may flush). */
  oldestUncommitted(): MemTable | undefined {
    return this.frozen.find((f) => f.state === 'frozen');
  }

  /** A flush committed (sync, docs/impl.md §4): out of the budget now, out of the read view after grace. */
  committed(m: MemTable): void {
    this.committedGeneration = m.generation;
    m.state = 'committed';
    m.committedAtMs = nowMs();
    if (this.o.frozenMemtableGraceMs === 0) {
      this.frozen = this.frozen.filter((f) => f !== m);
    } else {
      m.graceTimer = setTimer(() => {
        m.graceTimer = undefined;
        this.frozen = this.frozen.filter((f) => f !== m);
        // Its file may be compacted now: a flush lane stopped at the level-0 trigger (and puts
        // and close behind it) waits for that compaction.
        this.life.progress.notify();
        this.kickCompaction();
      }, this.o.frozenMemtableGraceMs);
    }
    this.bp.wake();
    this.life.progress.notify();
  }

  /** The invariants of the file header, checked (cheap; for tests). Throws an Error naming the broken one. */
  checkInvariants(): void {
    for (let i = 1; i < this.frozen.length; i++) {
      if (this.frozen[i]!.generation <= this.frozen[i - 1]!.generation) throw new Error('frozen memtables out of generation order');
    }
    const last = this.frozen[this.frozen.length - 1];
    if (last && last.generation >= this.active.generation)
      throw new Error(`frozen generation ${last.generation} >= active ${this.active.generation}`);
    for (const m of [...this.frozen, this.active]) {
      if (m.visibleBatches > m.batches.length || m.durableBatches > m.batches.length)
        throw new Error(`memtable ${m.generation}: a prefix beyond its batches`);
    }
  }

  retainedFrom(m: Manifest): number {
    return m.replayCursor;
  }

  retentionCursor(m: Manifest): number {
    return m.consumerCursor === null ? m.replayCursor : Math.min(m.replayCursor, m.consumerCursor);
  }

  snapshot(): MemTableStats {
    let frozenBytes = 0;
    let graceBytes = 0;
    for (const f of this.frozen) {
      if (f.state === 'frozen') frozenBytes += f.estimatedBytes;
      else graceBytes += f.estimatedBytes;
    }
    return {
      rowCount: this.active.rows,
      batchCount: this.active.batches.length,
      estimatedBytes: this.active.estimatedBytes,
      generation: this.active.generation,
      frozenCount: this.frozen.length,
      frozenBytes,
      graceBytes,
      durableBatchCount: this.wal.durableBatchCount,
      pendingWalBatchCount: this.wal.pendingBatches,
      pendingWalBytes: this.wal.pendingBytes,
    };
  }
}
