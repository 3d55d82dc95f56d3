// The two modes of a store as two implementations of one interface (SlateDB's wal_disabled
// pattern): MemTable mode (memtables.ts) and WAL-only mode, a durable queue (below). The writer
// asks the tier; it never tests the mode.

import type { RecordBatch } from 'apache-arrow';
import type { Manifest } from '../format/manifest/manifest.js';
import type { Backpressure } from './backpressure.js';
import type { Key } from '../data/keys.js';
import type { PendingEntry, WalWriter } from './wal-writer.js';

/** What differs between MemTable mode and WAL-only mode. Methods marked sync must not await. */
export interface Tier {
  readonly mode: 'memtable' | 'wal-only';
  /** Bytes held against the budget (sync). */
  unflushedBytes(): number;
  /** Insert admitted batches and join them to a WAL entry (sync, one step with admission). */
  insert(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined, sizes: number[], bytes: number, rows: number): PendingEntry;
  /** A put is blocked: make sure something can free room (sync). */
  onBlocked(): void;
  /** A WAL entry turned durable (sync). */
  onDurable(e: PendingEntry): void;
  /** WAL entries after this position must stay (replay or an unconsumed tail). */
  retainedFrom(m: Manifest): number;
  /** WAL entries at or below this position may be removed. */
  retentionCursor(m: Manifest): number;
}

/** WAL-only mode: puts are appended, nothing is held in memory once durable. */
export class WalOnlyTier implements Tier {
  readonly mode = 'wal-only';

  constructor(
    private readonly wal: WalWriter,
    private readonly bp: Backpressure,
  ) {}

  /** Bytes accepted but not yet appended. */
  unflushedBytes(): number {
    return this.wal.pendingBytes;
  }

  insert(batches: RecordBatch[], _keys: ArrayLike<Key>[] | undefined, _sizes: number[], bytes: number, rows: number): PendingEntry {
    return this.wal.join(undefined, batches, bytes, rows, 0);
  }

  onBlocked(): void {
    this.wal.closeOpen();
    this.wal.kick();
  }

  onDurable(): void {
    this.bp.wake();
  }

  retainedFrom(m: Manifest): number {
    return m.consumerCursor ?? 0;
  }

  retentionCursor(m: Manifest): number {
    return m.consumerCursor ?? 0;
  }
}
