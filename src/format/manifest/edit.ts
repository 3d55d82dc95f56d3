// Typed manifest edits (LevelDB's VersionEdit): what a flush, a compaction or a consumer changes,
// validated against the current manifest before any compare-and-set. No closure builds a
// manifest by hand. Pure; runs in every runtime.

import { MemWalError } from '../../util/errors.js';
import { cloneManifest, type Manifest, type TableFileEntry } from './manifest.js';

/**
 * One change to a store's committed state. Every field is optional; absent fields keep their
 * value. Whatever the edit, the result keeps the table invariants of {@link applyEdit}.
 */
export interface ManifestEdit {
  /** Table files to add. REQUIRES: no live table file has the name. */
  addTables?: TableFileEntry[];
  /** Names of table files to remove. REQUIRES: each is live. */
  removeTables?: string[];
  /** REQUIRES: not below the current value. */
  nextGeneration?: number;
  /** REQUIRES: not below the current value (the replay cursor never moves back). */
  replayCursor?: number;
  /** REQUIRES: not below the current value. */
  consumerCursor?: number;
}

function broken(why: string): never {
  throw new MemWalError('InvalidArgument', `manifest edit: ${why}`);
}

/**
 * The manifest that `edit` makes of `cur` (a new object; `cur` is untouched), with `version`,
 * `writerEpoch`, `commitId` and `positionHint` left for the committer to set. Throws
 * `InvalidArgument` when the edit breaks one of its REQUIRES or the result breaks a table
 * invariant (generations below `nextGeneration`, level 1 without overlap): a bug, never retried.
 */
export function applyEdit(cur: Manifest, edit: ManifestEdit): Manifest {
  const next = cloneManifest(cur);
  const live = new Set(next.tables.map((t) => t.name));
  if (edit.removeTables) {
    const gone = new Set(edit.removeTables);
    for (const name of gone) if (!live.has(name)) broken(`table file ${name} is not live`);
    next.tables = next.tables.filter((t) => !gone.has(t.name));
    for (const name of gone) live.delete(name);
  }
  for (const t of edit.addTables ?? []) {
    if (live.has(t.name)) broken(`table file ${t.name} is already live`);
    live.add(t.name);
    next.tables.push({ ...t });
  }
  if (edit.nextGeneration !== undefined) {
    if (edit.nextGeneration < cur.nextGeneration) broken(`nextGeneration ${edit.nextGeneration} < ${cur.nextGeneration}`);
    next.nextGeneration = edit.nextGeneration;
  }
  if (edit.replayCursor !== undefined) {
    if (edit.replayCursor < cur.replayCursor) broken(`replayCursor ${edit.replayCursor} < ${cur.replayCursor}`);
    next.replayCursor = edit.replayCursor;
  }
  if (edit.consumerCursor !== undefined) {
    if (cur.consumerCursor !== null && edit.consumerCursor < cur.consumerCursor) {
      broken(`consumerCursor ${edit.consumerCursor} < ${cur.consumerCursor}`);
    }
    next.consumerCursor = edit.consumerCursor;
  }
  checkTables(next);
  return next;
}

/**
 * The invariants of a manifest's table files, which no edit may break: every file holds
 * generations below `nextGeneration` (they were flushed from memtables the writer froze), and the
 * level-1 files of a keyed store never overlap in keys (level 1 is one sorted run).
 */
function checkTables(m: Manifest): void {
  for (const t of m.tables) {
    const g = Math.max(t.generation, t.maxGeneration ?? t.generation);
    if (g >= m.nextGeneration) broken(`table file ${t.name} holds generation ${g}, not below nextGeneration ${m.nextGeneration}`);
  }
  const level1 = m.tables
    .filter((t) => (t.level ?? 0) >= 1 && t.minKey !== undefined && t.maxKey !== undefined)
    .sort((a, b) => (a.minKey! < b.minKey! ? -1 : a.minKey! > b.minKey! ? 1 : 0));
  for (let i = 1; i < level1.length; i++) {
    const [a, b] = [level1[i - 1]!, level1[i]!];
    // Hex of the key bytes orders like the bytes.
    if (b.minKey! <= a.maxKey!) broken(`level-1 table files ${a.name} and ${b.name} overlap in keys`);
  }
}
