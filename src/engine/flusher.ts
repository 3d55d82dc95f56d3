// The flush of one frozen memtable (docs/impl.md §3): its newest row per key sorted into a table file of
// format 2 (blocks, index, Bloom filter), made durable, committed by a manifest edit, published.
// Never deletes a file that a commit of unknown outcome may name: such a commit is resolved by
// content before the next attempt (docs/impl.md, "Manifest commits").

import { type MemWalError, toMemWalError } from '../util/errors.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import type { ResolvedOptions } from './options.js';
import type { StoreHandle } from '../storage/adapter.js';
import { nowMs } from '../util/schedule.js';
import type { BackgroundJobs, FlushJob } from '../lsm/jobs.js';
import type { Lifecycle } from './lifecycle.js';
import type { ManifestLog } from './manifest-log.js';
import type { MemTable } from '../lsm/memtable.js';
import type { MemtableSet } from './memtable-set.js';
import type { WriteStats } from '../metrics/stats.js';
import { removeTableFile, writeTableFile } from './table-file-io.js';

/** What one flush attempt ended with. */
export type FlushOutcome = 'committed' | 'failed' | 'fatal';

/** Flushes frozen memtables, one attempt at a time (the background loop schedules them). */
export class Flusher {
  /** What the flush is doing (for diagnosing a slow or stuck flush). */
  stage = 'idle';
  /** A failure while closing (reported by close). */
  closeError: MemWalError | undefined;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly jobs: BackgroundJobs,
    /** The WAL segments holding positions `first..last` (remote jobs read the rows there). */
    private readonly segmentsOf: (first: number, last: number) => FlushJob['segments'],
    private readonly handle: StoreHandle,
    private readonly life: Lifecycle,
    private readonly log: ManifestLog,
    private readonly tier: MemtableSet,
    private readonly ws: WriteStats,
    private readonly durablePosition: () => number,
    /** Called after a commit is published (tables changed). */
    private readonly onCommitted: () => void,
  ) {}

  /**
   * One attempt for `m` (the oldest uncommitted frozen memtable, fully WAL-durable). `fatal` when
   * the writer was poisoned (fenced, a commit past its limit).
   */
  async flushOnce(m: MemTable): Promise<FlushOutcome> {
    const start = nowMs();
    let name: string | undefined;
    let phase: 'resolve' | 'write' | 'commit' = 'resolve';
    try {
      if (m.pendingTable) {
        // An earlier attempt's commit may have landed: find out by content before anything else.
        if (this.log.inDoubt) await this.log.resolveDoubt();
        if (this.log.manifest.tables.some((t) => t.name === m.pendingTable!.name)) {
          this.publish(m, m.pendingTable, start);
          return 'committed';
        }
        await removeTableFile(this.handle, m.pendingTable.name, this.o.flushRetry.stallMs, this.warn);
        m.pendingTable = undefined;
      }
      phase = 'write';
      m.flushAttempts += 1;
      name = `${m.generation}-${this.log.epoch}-${m.flushAttempts}.arrow`;
      this.setStage(m, 'building the table file');
      const built = await this.jobs.buildFlush({
        memtable: m,
        generation: m.generation,
        firstPosition: m.firstPosition,
        lastPosition: m.lastPosition,
        segments: this.segmentsOf(m.firstPosition, m.lastPosition),
      });
      this.setStage(m, 'writing the table file');
      const entry = await writeTableFile(
        this.handle,
        built,
        { name, level: 0, minGeneration: m.generation, maxGeneration: m.generation, schemaVersion: this.log.manifest.schemaVersion ?? 1 },
        this.o.flushRetry.stallMs,
      );
      this.setStage(m, 'committing the manifest');
      phase = 'commit';
      m.pendingTable = entry; // from here on the commit may land even if it reports a failure
      await this.log.commit({ addTables: [entry], nextGeneration: m.generation + 1, replayCursor: m.lastPosition }, this.durablePosition());
      this.publish(m, entry, start);
      return 'committed';
    } catch (raw) {
      const err = toMemWalError(raw, `flush of generation ${m.generation}`);
      this.ws.flushFailureCount += 1;
      if (err.code === 'Fenced' || err.code === 'Corruption' || err.code === 'InvalidArgument' || this.log.unresolvable) {
        this.life.poison(err);
        return 'fatal';
      }
      // A file no commit can name any more is removed; one a commit in doubt may name is kept.
      if (phase === 'commit' && !this.log.inDoubt && !this.log.manifest.tables.some((t) => t.name === name)) m.pendingTable = undefined;
      if (name !== undefined && m.pendingTable?.name !== name && !this.life.dead) {
        await removeTableFile(this.handle, name, this.o.flushRetry.stallMs, this.warn);
      }
      if (this.life.stopping) this.closeError ??= err;
      else this.o.logger.warn(`memwal: ${err.message}; retrying in place`);
      this.life.progress.notify();
      return 'failed';
    }
  }

  private readonly warn = (m: string, e: unknown): void => {
    if (!this.life.dead) this.o.logger.warn(m, e);
  };

  private setStage(m: MemTable, s: string): void {
    this.stage = `generation ${m.generation} attempt ${m.flushAttempts}: ${s}`;
  }

  /** The synchronous publish step of a committed flush (docs/impl.md §4). */
  private publish(m: MemTable, entry: TableFileEntry, start: number): void {
    m.pendingTable = undefined;
    this.tier.committed(m);
    const ms = nowMs() - start;
    this.ws.flushCount += 1;
    this.ws.flushRows += entry.rows;
    this.ws.flushBytes += entry.bytes;
    this.ws.flushTimeMs += ms;
    this.ws.lastFlushMs = ms;
    this.stage = 'idle';
    this.onCommitted();
  }
}
