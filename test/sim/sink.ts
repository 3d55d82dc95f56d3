// The drain's destination in the simulation: an in-memory sink that applies WAL entries exactly
// once per position, as LanceSink does, fails now and then (before applying, or after applying with
// the reply lost), and keeps every entry so the checks can replay it.

import { MemWalError } from '../../src/util/errors.js';
import type { WalEntry } from '../../src/engine/api.js';
import type { DrainSink } from '../../src/drain/drain.js';
import { rowObject } from '../../src/data/rows.js';

export interface SinkRow {
  tombstone: boolean;
  row: Record<string, unknown>;
}

export interface SinkEntry {
  position: number;
  rows: SinkRow[];
}

export class ModelSink implements DrainSink {
  applied = 0;
  readonly entries: SinkEntry[] = [];
  /** Contract breaches seen (a run of entries that skips a position). */
  readonly problems: string[] = [];

  constructor(
    private readonly random: () => number,
    private readonly failChance: number,
  ) {}

  async appliedPosition(): Promise<number> {
    if (this.random() < this.failChance) throw new MemWalError('IOError', 'sim sink: appliedPosition failed');
    return this.applied;
  }

  async apply(_storeId: string, entries: readonly WalEntry[]): Promise<{ appliedPosition: number }> {
    if (this.random() < this.failChance) throw new MemWalError('IOError', 'sim sink: apply failed before applying');
    const first = entries[0]?.position ?? this.applied + 1;
    if (first > this.applied + 1) {
      throw new MemWalError('InvalidArgument', `sim sink: entries start at ${first}, applied is ${this.applied}`);
    }
    for (const e of entries) {
      if (e.position <= this.applied) continue;
      if (e.position !== this.applied + 1) this.problems.push(`sink got position ${e.position} after ${this.applied}`);
      const rows: SinkRow[] = [];
      for (const batch of e.data.batches) {
        const tomb = batch.schema.fields.findIndex((f) => f.name === '_tombstone');
        for (let i = 0; i < batch.numRows; i++) {
          rows.push({ tombstone: tomb >= 0 && batch.getChildAt(tomb)!.get(i) === true, row: rowObject(batch, i) });
        }
      }
      this.entries.push({ position: e.position, rows });
      this.applied = e.position;
    }
    if (this.random() < this.failChance) throw new MemWalError('IOError', 'sim sink: applied, but the reply was lost');
    return { appliedPosition: this.applied };
  }
}
