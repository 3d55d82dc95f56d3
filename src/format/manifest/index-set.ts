// The index set a manifest records (docs/format.md §9, "Index set"): which indexes whose sections
// table files carry the store declares, each under an id that stands for one definition (kind,
// name, spec), and per table file the ids of the sections it holds. A redefined index (same name,
// other spec) gets a new id, so a file that holds its old definition's section is never taken for
// built: the check is by definition, never by name. Pure; any runtime.

import { MemWalError } from '../../util/errors.js';
import type { SectionId } from '../table/sections.js';
import type { Manifest, TableFileEntry } from './manifest.js';

/** One index of the set: an id (for this definition only) and the definition. */
export interface IndexRecord extends SectionId {
  /**
   * Positive integer; a table file lists it when it holds this index's section, as defined here.
   * Never given to another definition while any table file lists it.
   */
  id: number;
}

/** Two section ids for the same definition. */
export function sameDefinition(a: SectionId, b: SectionId): boolean {
  return a.kind === b.kind && a.name === b.name && a.spec === b.spec;
}

/** Ids used anywhere in `m` (the set, and the files' lists: a dropped index's id stays listed until its files are rewritten). */
function usedIds(m: Pick<Manifest, 'indexes' | 'tables'>): number {
  let max = 0;
  for (const r of m.indexes ?? []) max = Math.max(max, r.id);
  for (const t of m.tables) for (const id of t.indexes ?? []) max = Math.max(max, id);
  return max;
}

/**
 * The index set a claim records for `declared` (the opener's indexes, as their sections are
 * written) over `stored`: a declared index whose definition the stored set has keeps its id; any
 * other (new, or redefined) gets a fresh one; an index the opener no longer declares leaves the
 * set (dropped: its sections are ignored, and go at their files' next rewrite). The table files'
 * lists are kept as they are: they name the sections each file holds, which the claim does not
 * change. A manifest without a set (written before it was kept) leaves its files' lists absent
 * (unknown): the index build reads each such file's section directory and records what it holds.
 */
export function claimIndexSet(stored: Pick<Manifest, 'indexes' | 'tables'> | undefined, declared: readonly SectionId[]): IndexRecord[] {
  let next = stored ? usedIds(stored) : 0;
  return declared.map((d) => {
    const kept = stored?.indexes?.find((r) => sameDefinition(r, d));
    return kept ? { ...kept } : { id: ++next, kind: d.kind, name: d.name, spec: d.spec };
  });
}

/** The ids of `m`'s index set: what a table file built now holds (its builders are the declared indexes). */
export function indexIds(m: Pick<Manifest, 'indexes'>): number[] {
  return (m.indexes ?? []).map((r) => r.id);
}

/** Whether table file `t` lacks a section of `m`'s index set, or does not say (absent list). */
export function lacksIndex(m: Pick<Manifest, 'indexes'>, t: TableFileEntry): boolean {
  if (t.indexes === undefined) return (m.indexes ?? []).length > 0;
  for (const r of m.indexes ?? []) if (!t.indexes.includes(r.id)) return true;
  return false;
}

/** Per index of `m`'s set: live table files holding its section (per the manifest), and those that do not yet (or do not say). */
export function indexCoverage(m: Pick<Manifest, 'indexes' | 'tables'>): Map<string, { filesBuilt: number; filesPending: number }> {
  const out = new Map<string, { filesBuilt: number; filesPending: number }>();
  for (const r of m.indexes ?? []) {
    let built = 0;
    for (const t of m.tables) if (t.indexes?.includes(r.id)) built++;
    out.set(r.name, { filesBuilt: built, filesPending: m.tables.length - built });
  }
  return out;
}

/** Structural check of a stored manifest's index set and table lists; `Corruption` naming what is wrong. */
export function checkIndexSet(indexes: unknown, tables: readonly unknown[]): void {
  const bad = (why: string): never => {
    throw new MemWalError('Corruption', `manifest is invalid: ${why}`);
  };
  const isId = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) > 0;
  if (indexes !== undefined) {
    if (!Array.isArray(indexes)) bad('indexes is not an array');
    const ids = new Set<number>();
    const names = new Set<string>();
    for (const r of indexes as Partial<IndexRecord>[]) {
      if (typeof r !== 'object' || r === null || !isId(r.id)) bad('indexes: an entry without a positive integer id');
      if (typeof r.kind !== 'string' || typeof r.name !== 'string' || typeof r.spec !== 'string')
        bad(`indexes: entry ${r.id} lacks kind, name or spec`);
      if (ids.has(r.id!) || names.has(r.name!)) bad(`indexes: id ${r.id} or name ${JSON.stringify(r.name)} twice`);
      ids.add(r.id!);
      names.add(r.name!);
    }
  }
  for (const t of tables as Partial<TableFileEntry>[]) {
    const list = t?.indexes;
    if (list === undefined) continue;
    if (!Array.isArray(list) || !list.every(isId)) bad(`table file ${String(t.name)}: indexes is not a list of index ids`);
  }
}
