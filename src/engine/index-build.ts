// The background index build (SPEC §17 "Indexes added to a store with data are built in the
// background"; docs/impl.md "Indexes", "Building an added index"): brings the table files up to the
// manifest's index set (format/manifest/index-set.ts) one piece at a time, in the compaction lane
// (so it never races a compaction for the same file), never at open nor on the query path. Until
// a file holds an index's section, queries build that file's entries from its rows (query.ts), so
// they stay correct meanwhile. A piece is one of:
//   - record: files whose manifest entry does not say which sections they hold (written before
//     the set was kept): read their section directories, record what they hold (no rewrite);
//   - rewrite: files lacking a section of the set are rewritten by a compaction (compaction.ts),
//     whose outputs carry every declared index's section and no dropped one's: level-0 files by a
//     compaction of level 0 (their delete markers must meet the older rows they hide), a level-1
//     file alone (level 1 is the bottom and holds one version per key).
// Crash-safe as compaction is: outputs are orphans until the commit swaps them in, and the next
// open finds what is left to build in the manifest.

import { indexCoverage, lacksIndex, sameDefinition } from '../format/manifest/index-set.js';
import type { Manifest, TableFileEntry } from '../format/manifest/manifest.js';
import type { TableCache } from '../lsm/table-cache.js';
import { toMemWalError } from '../util/errors.js';
import { type CompactionOutcome, type CompactionPlan, type Compactor, planCompaction } from './compaction.js';
import type { ClaimedContext } from './context.js';
import { levelOf } from './table-file-io.js';

/** Files whose directories one `record` piece reads (a footer read each). */
export const RECORD_FILES_PER_PIECE = 8;

/** One piece of build work. */
export type IndexBuildPiece = { record: TableFileEntry[] } | { rewrite: CompactionPlan };

/** One index's build progress: live table files holding its section as defined now, and the others. */
export interface IndexBuildProgress {
  filesBuilt: number;
  filesPending: number;
}

/** The index build of one MemTable-mode writer. */
export class IndexBuild {
  /** Pieces committed since this open, and pieces that failed (retried with backoff). */
  readonly counters = { rewriteCount: 0, recordCount: 0, failureCount: 0 };

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly parts: { cache: TableCache; compactor: Compactor },
  ) {}

  /**
   * The next piece for manifest `m`, or undefined when every live file holds every index of the
   * set (or what is left is level-0 files still `held` in memory). Pure over `m`.
   */
  next(m: Manifest, held: ReadonlySet<number>): IndexBuildPiece | undefined {
    const lacking = m.tables.filter((t) => lacksIndex(m, t));
    if (lacking.length === 0) return undefined;
    const unknown = lacking.filter((t) => t.indexes === undefined);
    if (unknown.length > 0) return { record: unknown.slice(0, RECORD_FILES_PER_PIECE) };
    if (lacking.some((t) => levelOf(t) === 0 && !held.has(t.generation))) {
      const plan = planCompaction(m, this.ctx.keyEncoder !== undefined, held, true, this.ctx.policy);
      if (plan) return { rewrite: plan };
    }
    const l1 = lacking.find((t) => levelOf(t) >= 1);
    if (l1) return { rewrite: { l0: [], l1: [l1], move: false, bytes: l1.bytes } };
    return undefined;
  }

  /** Run `piece`; `fatal` when the writer was poisoned. */
  async run(piece: IndexBuildPiece, signal: AbortSignal | undefined): Promise<CompactionOutcome> {
    if ('rewrite' in piece) {
      const outcome = await this.parts.compactor.run(piece.rewrite, signal);
      if (outcome === 'committed') this.counters.rewriteCount++;
      else this.counters.failureCount++;
      return outcome;
    }
    try {
      const m = this.ctx.log.manifest;
      const set = m.indexes ?? [];
      const entries: TableFileEntry[] = [];
      for (const t of piece.record) {
        const open = await this.parts.cache.open(t);
        const holds = set.filter((r) => open.sections.some((s) => sameDefinition(s, r))).map((r) => r.id);
        entries.push({ ...t, indexes: holds });
      }
      // The same files, now saying what they hold (their bytes do not change).
      await this.ctx.log.commit({ removeTables: piece.record.map((t) => t.name), addTables: entries }, 0);
      this.counters.recordCount++;
      return 'committed';
    } catch (raw) {
      this.counters.failureCount++;
      const err = toMemWalError(raw, 'index build');
      if (err.code === 'Fenced' || err.code === 'Corruption' || err.code === 'InvalidArgument' || this.ctx.log.unresolvable) {
        this.ctx.life.poison(err);
        return 'fatal';
      }
      if (!this.ctx.life.dead) this.ctx.options.logger.warn(`memwal: ${err.message}; index build retried later`);
      return 'failed';
    } finally {
      this.ctx.life.progress.notify();
    }
  }

  /** Per index of the claimed set: its build progress in the manifest `m`. */
  progress(m: Manifest): Map<string, IndexBuildProgress> {
    return indexCoverage(m);
  }
}
