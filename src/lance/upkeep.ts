// Compaction of a LanceSink's tables (`optimizeEvery`): each table (data, positions) is compacted
// every `optimizeEvery` applies in a turn of its own, and a table whose compaction fails backs off
// on its own while the other is compacted all the same.

import type { Table as LanceTable } from '@lancedb/lancedb';
import type { Logger } from '../util/logger.js';
import type { Turns } from './turns.js';

/** The turn key of compactions: never a store id (those are 1-200 characters of A-Z a-z 0-9 . _ -). */
const MAINTENANCE = '';
/** A table whose compaction keeps failing is tried again after at most 2^this × `optimizeEvery` applies. */
const MAX_BACKOFF_DOUBLINGS = 6;

/** The sink's counters compaction reads (`applies`) and counts into. */
export interface UpkeepCounters {
  readonly applies: number;
  optimizations: number;
  optimizeFailures: number;
}

/** When each table is next compacted, and compacting it. */
export class Upkeep {
  /** Per table: the apply count at which its next compaction is due, and its failures in a row. */
  private readonly tables = new Map<string, { due: number; failures: number }>();

  /**
   * `every`: `optimizeEvery` (0: never); `names`: the tables; `open`: the table of a name
   * (undefined while it does not exist).
   */
  constructor(
    private readonly every: number,
    private readonly names: readonly string[],
    private readonly open: (name: string) => Promise<LanceTable | undefined>,
    private readonly counters: UpkeepCounters,
    private readonly logger: Logger,
  ) {}

  /**
   * Compact each table that is due, in a turn of its own. A failure is counted
   * (`optimizeFailures`) and logged, not thrown: the apply it follows is already durable. It
   * stays that table's: the other table is compacted all the same, and the failing one is tried
   * again after `every` × 2^k more applies (k its failures in a row, at most
   * {@link MAX_BACKOFF_DOUBLINGS}), so a table that cannot be compacted (one made by an older
   * release with an encoding this Lance cannot rewrite) costs a logged failure now and then.
   */
  async maybeOptimize(turns: Turns): Promise<void> {
    const every = this.every;
    if (every === 0) return;
    const due = (name: string): boolean => {
      let u = this.tables.get(name);
      if (!u) this.tables.set(name, (u = { due: every, failures: 0 }));
      return this.counters.applies >= u.due;
    };
    if (!this.names.some(due)) return;
    await turns.run(MAINTENANCE, async () => {
      for (const name of this.names) {
        if (!due(name)) continue; // compacted by an earlier turn meanwhile, or waiting out a failure
        const u = this.tables.get(name)!;
        try {
          const table = await this.open(name);
          await table?.optimize();
          u.failures = 0;
          u.due = this.counters.applies + every;
          this.counters.optimizations += 1;
        } catch (e) {
          u.failures += 1;
          const wait = every * 2 ** Math.min(u.failures, MAX_BACKOFF_DOUBLINGS);
          u.due = this.counters.applies + wait;
          this.counters.optimizeFailures += 1;
          this.logger.warn(
            `memwal: optimize of Lance table ${name} failed (${u.failures} in a row); tried again after ${wait} more applies`,
            e,
          );
        }
      }
    });
  }
}
