// The memtables of one MemTable-mode writer (memtable-tier.ts): the active memtable, the frozen
// ones (waiting, retrying, or in grace), freeze, insert and publish-on-durable. Invariants: `frozen` is in generation order; the active
// memtable's generation is above every frozen one; a memtable leaves the read view only after its
// flush committed (and its grace passed). Every method here is synchronous.

import type { RecordBatch } from 'apache-arrow';
import type { Manifest } from '../format/manifest/manifest.js';
import { clearTimer, nowMs, setTimer } from '../util/schedule.js';
import type { Key } from '../data/keys.js';
import type { EngineContext } from './context.js';
import { MemTable, type MemTableIndexing, type PreparedIndexing, prepareIndexing } from '../lsm/memtable.js';
import type { MemTableStats } from '../metrics/stats.js';
import type { PendingEntry, WalWriter } from './wal-writer.js';

/** The memtables of one writer. */
export class MemtableSet {
  active: MemTable;
  /** Frozen memtables in generation order: waiting, failed, or committed within grace. */
  frozen: MemTable[] = [];
  /** Highest generation whose flush committed. */
  committedGeneration: number;

  /** The memtables after a claim of manifest `m`: the active one takes its next generation. */
  constructor(
    private readonly ctx: EngineContext,
    private readonly wal: WalWriter,
    private readonly kicks: {
      /** Starts the flush lane if it is idle. */
      flush(): void;
      /** Starts the compaction lane if it is idle (files held in grace may be compacted now). */
      compaction(): void;
    },
    m: Manifest,
  ) {
    this.committedGeneration = m.nextGeneration - 1;
    this.active = new MemTable(m.nextGeneration, this.keyed, this.indexing);
    ctx.life.onTerminal(() => {
      for (const f of this.frozen) if (f.graceTimer !== undefined) clearTimer(f.graceTimer);
    });
  }

  private get indexing(): MemTableIndexing {
    return {
      indexes: this.ctx.options.indexes,
      vectorIndexes: this.ctx.options.vectorIndexes,
      textIndexes: this.ctx.options.textIndexes,
      storeSchema: this.ctx.schema,
    };
  }

  private get keyed(): boolean {
    return this.ctx.keyEncoder !== undefined;
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

  /**
   * Each batch's index work for the memtables' indexes (`prepareIndexing`), done before a put is
   * checked and admitted; undefined when memtables keep no index (no index declared, or no key).
   */
  prepareIndexing(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined): PreparedIndexing[] | undefined {
    const indexing = this.indexing;
    const declared = indexing.indexes.length + (indexing.vectorIndexes?.length ?? 0) + (indexing.textIndexes?.length ?? 0);
    if (!keys || !this.keyed || declared === 0) return undefined;
    return batches.map((b, i) => prepareIndexing(indexing, b, keys[i]!));
  }

  insert(
    batches: RecordBatch[],
    keys: ArrayLike<Key>[] | undefined,
    sizes: number[],
    bytes: number,
    rows: number,
    prepared?: PreparedIndexing[],
  ): PendingEntry {
    const m = this.active;
    const end = m.append(batches, keys, sizes, prepared);
    if (!this.ctx.options.durableWrite) m.publish(end);
    const e = this.wal.join(m, batches, bytes, rows, end);
    if (this.freezeTriggered(m)) this.freeze();
    return e;
  }

  freezeTriggered(m: MemTable): boolean {
    return (
      m.estimatedBytes >= this.ctx.options.maxMemtableBytes ||
      m.rows >= this.ctx.options.maxMemtableRows ||
      m.batches.length >= this.ctx.options.maxMemtableBatches
    );
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
    this.active = new MemTable(m.generation + 1, this.keyed, this.indexing);
    this.wal.kick();
    this.kicks.flush();
    return m.generation;
  }

  /** Freeze if nothing else is frozen, so that a blocked put's wait can end; push the flush. */
  onBlocked(): void {
    if (!this.hasUncommittedFrozen() && this.active.rows > 0) this.freeze();
    this.kicks.flush();
  }

  onDurable(e: PendingEntry): void {
    const m = e.memtable!;
    if (e.batchEnd > m.durableBatches) m.durableBatches = e.batchEnd;
    if (this.ctx.options.durableWrite) m.publish(e.batchEnd);
    if (m.state === 'frozen' && m.fullyDurable) this.kicks.flush();
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
    if (this.ctx.options.frozenMemtableGraceMs === 0) {
      this.frozen = this.frozen.filter((f) => f !== m);
    } else {
      m.graceTimer = setTimer(() => {
        m.graceTimer = undefined;
        this.frozen = this.frozen.filter((f) => f !== m);
        // Its file may be compacted now: a flush lane stopped at the level-0 trigger (and puts
        // and close behind it) waits for that compaction.
        this.ctx.life.progress.notify();
        this.kicks.compaction();
      }, this.ctx.options.frozenMemtableGraceMs);
    }
    this.ctx.backpressure.wake();
    this.ctx.life.progress.notify();
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
