// Typed manifest edits (LevelDB's VersionEdit): what a flush, a compaction or a consumer changes,
// validated against the current manifest before any compare-and-set. No closure builds a
// manifest by hand. Pure; runs in every runtime.

import { MemWalError } from '../../util/errors.js';
import { cloneManifest, type Manifest, type TableFileEntry } from './manifest.js';

/** One change to a store's committed state. Every field is optional; absent fields keep their value. */
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
 * `InvalidArgument` when the edit breaks one of its REQUIRES (a bug, never retried).
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
  return next;
}
