// The flush of one frozen memtable (docs/impl.md §3): its newest row per key sorted into a table file of
// format 2 (blocks, index, Bloom filter), made durable, committed by a manifest edit, published.
// Never deletes a file that a commit of unknown outcome may name: such a commit is resolved by
// content before the next attempt (docs/impl.md, "Manifest commits").

import { type MemWalError, toMemWalError } from '../util/errors.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { nowMs } from '../util/schedule.js';
import type { BackgroundJobs, FlushJob } from '../lsm/jobs.js';
import type { ClaimedContext } from './context.js';
import type { MemTable } from '../lsm/memtable.js';
import type { MemtableSet } from './memtable-set.js';
import { removeTableFile, writeTableFile } from './table-file-io.js';
import { indexIds } from '../format/manifest/index-set.js';

/** What one flush attempt ended with. */
export type FlushOutcome = 'committed' | 'failed' | 'fatal';

/** Flushes frozen memtables, one attempt at a time (the background loop schedules them). */
export class Flusher {
  /** What the flush is doing (for diagnosing a slow or stuck flush). */
  stage = 'idle';
  /** A failure while closing (reported by close). */
  closeError: MemWalError | undefined;

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly parts: {
      /** Where table files are built. */
      jobs: BackgroundJobs;
      memtables: MemtableSet;
      /** The WAL segments holding positions `first..last` (remote jobs read the rows there). */
      segmentsOf(first: number, last: number): FlushJob['segments'];
      /** The highest durable WAL position (the manifest's position hint). */
      durablePosition(): number;
      /** Called after a commit is published (tables changed). */
      onCommitted(): void;
    },
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
        if (this.ctx.log.inDoubt) await this.ctx.log.resolveDoubt();
        if (this.ctx.log.manifest.tables.some((t) => t.name === m.pendingTable!.name)) {
          this.publish(m, m.pendingTable, start);
          return 'committed';
        }
        await removeTableFile(this.ctx.handle, m.pendingTable.name, this.ctx.options.flushRetry.stallMs, this.warn);
        m.pendingTable = undefined;
      }
      phase = 'write';
      m.flushAttempts += 1;
      name = `${m.generation}-${this.ctx.log.epoch}-${m.flushAttempts}.arrow`;
      this.setStage(m, 'building the table file');
      const built = await this.parts.jobs.buildFlush({
        memtable: m,
        generation: m.generation,
        firstPosition: m.firstPosition,
        lastPosition: m.lastPosition,
        segments: this.parts.segmentsOf(m.firstPosition, m.lastPosition),
      });
      this.setStage(m, 'writing the table file');
      const entry = await writeTableFile(
        built,
        {
          name,
          level: 0,
          minGeneration: m.generation,
          maxGeneration: m.generation,
          schemaVersion: this.ctx.log.manifest.schemaVersion ?? 1,
          indexes: indexIds(this.ctx.log.manifest),
        },
        this.ctx.options.flushRetry.stallMs,
      );
      this.setStage(m, 'committing the manifest');
      phase = 'commit';
      m.pendingTable = entry; // from here on the commit may land even if it reports a failure
      await this.ctx.log.commit(
        { addTables: [entry], nextGeneration: m.generation + 1, replayCursor: m.lastPosition },
        this.parts.durablePosition(),
      );
      this.publish(m, entry, start);
      return 'committed';
    } catch (raw) {
      const err = toMemWalError(raw, `flush of generation ${m.generation}`);
      this.ctx.writeStats.flushFailureCount += 1;
      if (err.code === 'Fenced' || err.code === 'Corruption' || err.code === 'InvalidArgument' || this.ctx.log.unresolvable) {
        this.ctx.life.poison(err);
        return 'fatal';
      }
      // A file no commit can name any more is removed; one a commit in doubt may name is kept.
      if (phase === 'commit' && !this.ctx.log.inDoubt && !this.ctx.log.manifest.tables.some((t) => t.name === name))
        m.pendingTable = undefined;
      if (name !== undefined && m.pendingTable?.name !== name && !this.ctx.life.dead) {
        await removeTableFile(this.ctx.handle, name, this.ctx.options.flushRetry.stallMs, this.warn);
      }
      if (this.ctx.life.stopping) this.closeError ??= err;
      else this.ctx.options.logger.warn(`memwal: ${err.message}; retrying in place`);
      this.ctx.life.progress.notify();
      return 'failed';
    }
  }

  private readonly warn = (m: string, e: unknown): void => {
    if (!this.ctx.life.dead) this.ctx.options.logger.warn(m, e);
  };

  private setStage(m: MemTable, s: string): void {
    this.stage = `generation ${m.generation} attempt ${m.flushAttempts}: ${s}`;
  }

  /** The synchronous publish step of a committed flush (docs/impl.md §4). */
  private publish(m: MemTable, entry: TableFileEntry, start: number): void {
    m.pendingTable = undefined;
    this.parts.memtables.committed(m);
    const ms = nowMs() - start;
    this.ctx.writeStats.flushCount += 1;
    this.ctx.writeStats.flushRows += entry.rows;
    this.ctx.writeStats.flushBytes += entry.bytes;
    this.ctx.writeStats.flushTimeMs += ms;
    this.ctx.writeStats.lastFlushMs = ms;
    this.stage = 'idle';
    this.parts.onCommitted();
  }
}
