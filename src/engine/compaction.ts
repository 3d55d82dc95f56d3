// Compaction (docs/impl.md §3, "Compaction"): the policy that picks table files to merge, and the job
// that merges them into level 1 and swaps inputs for outputs in one manifest commit. Never on the
// put path; never moves the replay cursor; outputs are orphans until the commit; inputs are
// deleted only after the commit is known and no reader holds them.

import { checkEpoch } from '../storage/fencing.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import { settleWithin } from './limits.js';
import type { Manifest, TableFileEntry } from '../format/manifest/manifest.js';
import type { BackgroundJobs } from '../lsm/jobs.js';
import { keyFromHex } from '../data/keys.js';
import type { ClaimedContext } from './context.js';
import type { CompactionStats, LevelStats } from '../metrics/stats.js';
import { generationsOf, levelOf, removeTableFile, writeTableFile } from './table-file-io.js';
import { indexIds } from '../format/manifest/index-set.js';
import type { TableCache } from '../lsm/table-cache.js';

const MiB = 1024 * 1024;
/** Level-0 files that trigger a compaction (LevelDB: 4): bounds the files a `get` consults. */
export const L0_COMPACTION_TRIGGER = 4;
/** Level-0 files at which flushes stop until compaction catches up (LevelDB: 12). */
export const L0_STOP_TRIGGER = 12;
/**
 * Level-0 bytes, as a fraction of the level-1 bytes they overlap, that trigger a compaction: under
 * uniform overwrite level 0 holds stale versions of level-1 rows, so this bounds space
 * amplification near 1 + 0.3 (docs/impl.md §3, "Compaction", has the measurement behind it).
 */
export const SPACE_AMP_TRIGGER = 0.3;
/** Level-1 files of keyed stores are cut at about this size (so compaction rewrites ranges, not everything). */
export const KEYED_OUTPUT_BYTES = 8 * MiB;
/** Append-only compaction concatenates level-0 files into files of about this size. */
export const APPEND_ONLY_OUTPUT_BYTES = 64 * MiB;

/** The compaction policy's numbers (docs/impl.md §3, "Compaction", says how the defaults were chosen). */
export interface CompactionPolicy {
  level0Trigger: number;
  level0Stop: number;
  spaceAmpTrigger: number;
  keyedOutputBytes: number;
  appendOnlyOutputBytes: number;
}

export const DEFAULT_COMPACTION_POLICY: CompactionPolicy = {
  level0Trigger: L0_COMPACTION_TRIGGER,
  level0Stop: L0_STOP_TRIGGER,
  spaceAmpTrigger: SPACE_AMP_TRIGGER,
  keyedOutputBytes: KEYED_OUTPUT_BYTES,
  appendOnlyOutputBytes: APPEND_ONLY_OUTPUT_BYTES,
};

/** The files one compaction merges. */
export interface CompactionPlan {
  /** Level-0 inputs, oldest first (always a prefix of level 0 by generation). */
  l0: TableFileEntry[];
  /** Level-1 inputs (keyed: those overlapping the level-0 key range), in key order. */
  l1: TableFileEntry[];
  /** A level-0 file moved to level 1 by a manifest edit alone (no overlap: nothing to merge). */
  move: boolean;
  bytes: number;
}

const sumBytes = (ts: readonly TableFileEntry[]): number => ts.reduce((n, t) => n + t.bytes, 0);

/**
 * What to compact now, or undefined. `held`: generations still held in memory (grace), which
 * compaction must not take (a reader would see their rows twice). `force`: every level-0 file
 * (`compact()`), whatever the triggers say.
 */
export function planCompaction(
  m: Manifest,
  keyed: boolean,
  held: ReadonlySet<number>,
  force: boolean,
  policy: CompactionPolicy = DEFAULT_COMPACTION_POLICY,
): CompactionPlan | undefined {
  const level0 = m.tables.filter((t) => levelOf(t) === 0).sort((a, b) => a.generation - b.generation);
  const level1 = m.tables.filter((t) => levelOf(t) >= 1);
  const l0: TableFileEntry[] = [];
  for (const t of level0) {
    if (held.has(t.generation)) break;
    l0.push(t);
  }
  if (l0.length === 0) return undefined;
  if (!keyed) {
    if (!force && level0.length < policy.level0Trigger) return undefined;
    // Rows stay in generation order: merge the oldest run of consecutive small files (any level)
    // that fits the output size; files still held in memory are never taken. A file of an
    // eighth of the output size or more (a full memtable's, at the defaults) is never rewritten:
    // merging it would copy many bytes to save one file.
    const small = policy.appendOnlyOutputBytes / 8;
    const files = m.tables
      .filter((t) => !(levelOf(t) === 0 && held.has(t.generation)))
      .sort((a, b) => generationsOf(a).min - generationsOf(b).min);
    const limit = held.size > 0 ? Math.min(...held) : Number.POSITIVE_INFINITY;
    for (let i = 0; i < files.length; i++) {
      const run: TableFileEntry[] = [];
      for (let j = i; j < files.length && generationsOf(files[j]!).max < limit && files[j]!.bytes < small; j++) {
        if (run.length > 0 && sumBytes(run) + files[j]!.bytes > policy.appendOnlyOutputBytes) break;
        run.push(files[j]!);
      }
      if (run.length >= 2) {
        return { l0: run.filter((t) => levelOf(t) === 0), l1: run.filter((t) => levelOf(t) >= 1), move: false, bytes: sumBytes(run) };
      }
    }
    // Nothing to merge: the level-0 files move down by a manifest edit (their rows are in
    // generation order wherever they sit), so level 0 never fills with large files.
    return { l0, l1: [], move: true, bytes: 0 };
  }
  let lo: string | undefined;
  let hi: string | undefined;
  for (const t of l0) {
    if (t.minKey === undefined || t.maxKey === undefined) continue;
    if (lo === undefined || t.minKey < lo) lo = t.minKey;
    if (hi === undefined || t.maxKey > hi) hi = t.maxKey;
  }
  // Hex of the key bytes orders like the bytes (same length per byte), so compare as strings.
  const l1 = level1
    .filter((t) => lo !== undefined && hi !== undefined && t.minKey !== undefined && !(t.maxKey! < lo || t.minKey > hi))
    .sort((a, b) => (a.minKey! < b.minKey! ? -1 : 1));
  const l0Bytes = sumBytes(l0);
  const l1Bytes = sumBytes(l1);
  const due = force || level0.length >= policy.level0Trigger || l0Bytes >= policy.spaceAmpTrigger * l1Bytes;
  if (!due) return undefined;
  // The oldest level-0 file overlapping nothing moves down without a rewrite.
  if (l1.length === 0 && l0.length === 1) return { l0, l1: [], move: true, bytes: 0 };
  return { l0, l1, move: false, bytes: l0Bytes + l1Bytes };
}

/** Whether flushes must wait for compaction: too many level-0 files, or too many pending bytes. */
export function compactionBehind(
  m: Manifest,
  pendingBytes: number,
  maxPendingBytes: number,
  policy: CompactionPolicy = DEFAULT_COMPACTION_POLICY,
): boolean {
  let level0 = 0;
  for (const t of m.tables) if (levelOf(t) === 0) level0++;
  return level0 >= policy.level0Stop || pendingBytes > maxPendingBytes;
}

/** What a compaction job ended with. */
export type CompactionOutcome = 'committed' | 'failed' | 'fatal';

/** Runs compactions of one writer, one at a time, and counts them. */
export class Compactor {
  private seq = 0;
  private readonly counters = { completedCount: 0, failureCount: 0, bytesRead: 0, bytesWritten: 0, l0StallCount: 0 };
  running = false;
  /** Outputs of a compaction whose commit outcome is unknown, with its inputs. */
  private doubt: { inputs: TableFileEntry[]; outputs: TableFileEntry[] } | undefined;
  /** The live bytes the last full compaction wrote (its outputs: newest versions only). */
  private liveBytesEstimate = 0;

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly parts: {
      /** Where compaction outputs are built. */
      jobs: BackgroundJobs;
      /** The table files readers use: inputs are pinned while merged and deleted once unused. */
      cache: TableCache;
    },
  ) {}

  private get keyed(): boolean {
    return this.ctx.keyEncoder !== undefined;
  }

  /** A flush had to wait for compaction (the leading indicator). */
  noteStall(): void {
    this.counters.l0StallCount++;
  }

  /** One compaction of `plan`; `fatal` when the writer was poisoned. */
  async run(plan: CompactionPlan, signal: AbortSignal | undefined): Promise<CompactionOutcome> {
    this.running = true;
    const outputs: TableFileEntry[] = [];
    // Keyed: level 0 then level 1 (the merge takes them apart); append-only: generation order.
    const inputs = this.keyed
      ? [...plan.l0, ...plan.l1]
      : [...plan.l0, ...plan.l1].sort((a, b) => generationsOf(a).min - generationsOf(b).min);
    let committing = false;
    try {
      if (this.doubt) {
        // Resolved (here or by an earlier commit): the manifest says which side of the commit is
        // live, file by file. Never judge by the outputs alone: a move keeps its input's name and
        // an empty merge has no output, so "every output is named" holds whether it landed or not.
        await this.ctx.log.resolveDoubt();
        const { inputs: was, outputs: wrote } = this.doubt;
        this.doubt = undefined;
        const named = new Set(this.ctx.log.manifest.tables.map((t) => t.name));
        this.retire(was.filter((t) => !named.has(t.name)));
        for (const t of wrote)
          if (!named.has(t.name)) await removeTableFile(this.ctx.handle, t.name, this.ctx.options.flushRetry.stallMs, this.warn);
        return 'committed';
      }
      if (plan.move) {
        const moved = plan.l0.map((t) => ({ ...t, level: 1 }));
        committing = true;
        await this.ctx.log.commit({ removeTables: plan.l0.map((t) => t.name), addTables: moved }, 0);
        this.counters.completedCount++;
        return 'committed';
      }
      const gens = inputs.map(generationsOf);
      const minGeneration = Math.min(...gens.map((g) => g.min));
      const maxGeneration = Math.max(...gens.map((g) => g.max));
      const job = {
        inputs,
        level0: plan.l0.length,
        minGeneration,
        maxGeneration,
        targetBytes: this.keyed ? this.ctx.policy.keyedOutputBytes : this.ctx.policy.appendOnlyOutputBytes,
      };
      this.parts.cache.pin(inputs.map((t) => t.name));
      try {
        for await (const built of this.parts.jobs.compactionOutputs(job, signal)) {
          if (signal?.aborted || this.ctx.life.dead) {
            built.release();
            throw new MemWalError('Aborted', 'compaction stopped: the store is closing');
          }
          const name = `c${maxGeneration}-${this.ctx.log.epoch}-${++this.seq}.arrow`;
          const placement = {
            name,
            level: 1,
            minGeneration,
            maxGeneration,
            schemaVersion: this.ctx.log.manifest.schemaVersion ?? 1,
            indexes: indexIds(this.ctx.log.manifest),
          };
          outputs.push(await writeTableFile(built, placement, this.ctx.options.flushRetry.stallMs));
        }
      } finally {
        this.parts.cache.unpin(inputs.map((t) => t.name));
      }
      committing = true;
      await this.ctx.log.commit({ removeTables: inputs.map((t) => t.name), addTables: outputs }, 0);
      this.counters.completedCount++;
      this.counters.bytesRead += sumBytes(inputs);
      this.counters.bytesWritten += sumBytes(outputs);
      // Everything in level 1 right after a compaction: its bytes are the newest versions only.
      if (this.ctx.log.manifest.tables.every((t) => levelOf(t) >= 1)) this.liveBytesEstimate = sumBytes(this.ctx.log.manifest.tables);
      this.retire(inputs);
      return 'committed';
    } catch (raw) {
      let err = toMemWalError(raw, 'compaction');
      const aborted = err.code === 'Aborted';
      if (!aborted) {
        // Counted at once, in the step that met the failure (the fence check below takes a call).
        this.counters.failureCount++;
        if (err.code !== 'Fenced' && !this.ctx.life.dead) err = (await this.fenceOf()) ?? err;
      }
      if (err.code === 'Fenced' || err.code === 'Corruption' || err.code === 'InvalidArgument' || this.ctx.log.unresolvable) {
        if (aborted) this.counters.failureCount++;
        this.ctx.life.poison(err);
        return 'fatal';
      }
      if (!aborted) this.ctx.options.logger.warn(`memwal: ${err.message}; compaction retried later`);
      if (committing && this.ctx.log.inDoubt) {
        this.doubt = { inputs, outputs };
      } else if (!committing || !outputs.every((t) => this.ctx.log.manifest.tables.some((x) => x.name === t.name))) {
        for (const t of outputs) await removeTableFile(this.ctx.handle, t.name, this.ctx.options.flushRetry.stallMs, this.warn);
      }
      return 'failed';
    } finally {
      this.running = false;
      this.ctx.life.progress.notify();
    }
  }

  /**
   * After a failed compaction: `Fenced` when another writer has claimed the store since (its own
   * compactions may have removed this writer's inputs: "table file … does not exist"), found by
   * reading the stored manifest's writer epoch; else undefined. Without it a stolen writer whose
   * flushes wait for compaction (level 0 at its stop) retried for ever, and its puts never
   * settled: only a manifest commit finds the fence, and none was reached. A check that fails or
   * does not settle within `flushRetry.stallMs` leaves the retry as it was.
   */
  private async fenceOf(): Promise<MemWalError | undefined> {
    try {
      const stored = await settleWithin(this.ctx.handle.manifestLoad(), this.ctx.options.flushRetry.stallMs, 'manifest load');
      checkEpoch('compaction', this.ctx.log.epoch, stored?.writerEpoch);
    } catch (e) {
      if (e instanceof MemWalError && e.code === 'Fenced') return e;
    }
    return undefined;
  }

  /** Inputs left the manifest: delete each once no reader holds it (in the background). */
  private retire(inputs: readonly TableFileEntry[]): void {
    for (const t of inputs) {
      void this.parts.cache.whenUnused(t.name).then(async () => {
        this.parts.cache.forget(t.name);
        if (!this.ctx.life.dead) await removeTableFile(this.ctx.handle, t.name, this.ctx.options.flushRetry.stallMs, this.warn);
      });
    }
  }

  private readonly warn = (m: string, e: unknown): void => {
    if (!this.ctx.life.dead) this.ctx.options.logger.warn(m, e);
  };

  /** The stats of compaction and of the table files in `m`. */
  snapshot(m: Manifest, pendingBytes: number): CompactionStats {
    const byLevel = new Map<number, LevelStats>();
    for (const t of m.tables) {
      const level = levelOf(t);
      const s = byLevel.get(level) ?? { level, files: 0, bytes: 0 };
      s.files++;
      s.bytes += t.bytes;
      byLevel.set(level, s);
    }
    const tableBytes = sumBytes(m.tables);
    const level1 = byLevel.get(1)?.bytes ?? 0;
    // Level 1 holds one version per key; level 0 at most as much again in stale versions.
    const live = Math.max(this.liveBytesEstimate, level1);
    return {
      tableCount: m.tables.length,
      tableBytes,
      levels: [...byLevel.values()].sort((a, b) => a.level - b.level),
      pendingBytes,
      running: this.running,
      ...this.counters,
      spaceAmplification: live > 0 ? tableBytes / live : 1,
    };
  }
}

/** Key range (hex) of a table entry as key strings, for readers. */
export function keyRange(t: TableFileEntry): { min: string; max: string } | undefined {
  return t.minKey === undefined || t.maxKey === undefined ? undefined : { min: keyFromHex(t.minKey), max: keyFromHex(t.maxKey) };
}
