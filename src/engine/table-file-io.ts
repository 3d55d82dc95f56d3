// Writing and removing table files, shared by the flush and compaction: a built file is written
// where it was built, through the store's I/O plane (lsm/io-plane.ts: the I/O worker writes what
// it built; an inline build goes to the adapter in chunks, a yield between), time-limited, and
// becomes the manifest entry that names it (with the CRC-32C its builder computed).

import type { TableFileEntry } from '../format/manifest/manifest.js';
import type { StoreHandle } from '../storage/adapter.js';
import { TABLE_FORMAT_V3 } from '../format/table/format.js';
import type { JobTable } from '../lsm/jobs.js';
import { keyToHex } from '../data/keys.js';
import { settleWithin } from './limits.js';

export { TABLE_WRITE_CHUNK_BYTES } from '../storage/adapter.js';

/** Where and how a built table file becomes a manifest entry. */
export interface TablePlacement {
  name: string;
  level: number;
  minGeneration: number;
  maxGeneration: number;
  /** The schema version the rows are written in (the current one). */
  schemaVersion: number;
  /**
   * Ids of the manifest's index set whose sections the file holds: the set as claimed
   * (`indexIds`), since every build writes the declared indexes' sections.
   */
  indexes: number[];
}

/**
 * Write `built` as table file `p.name` where it was built (durable on resolve; `IOError` when it
 * has not finished within `limitMs`) and return its manifest entry. `built` is released either way.
 */
export async function writeTableFile(built: JobTable, p: TablePlacement, limitMs: number): Promise<TableFileEntry> {
  try {
    await settleWithin(built.write(p.name), limitMs, `table write of ${p.name}`);
  } finally {
    built.release();
  }
  const entry: TableFileEntry = {
    generation: p.maxGeneration,
    name: p.name,
    bytes: built.length,
    rows: built.rows,
    checksum: built.crc.toString(16).padStart(8, '0'),
    format: TABLE_FORMAT_V3,
    level: p.level,
    minGeneration: p.minGeneration,
    maxGeneration: p.maxGeneration,
    schemaVersion: p.schemaVersion,
    indexes: [...p.indexes],
  };
  if (built.minKey !== undefined && built.maxKey !== undefined) {
    entry.minKey = keyToHex(built.minKey);
    entry.maxKey = keyToHex(built.maxKey);
  }
  return entry;
}

/** Remove a table file; a failure is reported through `warn` (an orphan is swept at the next open). */
export async function removeTableFile(
  handle: StoreHandle,
  name: string,
  limitMs: number,
  warn: ((m: string, e: unknown) => void) | undefined,
): Promise<void> {
  try {
    await settleWithin(handle.tableRemove(name), limitMs, `removal of ${name}`);
  } catch (e) {
    warn?.(`memwal: could not remove table file ${name} (swept at the next open)`, e);
  }
}

/** Level of an entry (absent: 0, a flushed memtable). */
export function levelOf(t: TableFileEntry): number {
  return t.level ?? 0;
}

/** Generation range of an entry. */
export function generationsOf(t: TableFileEntry): { min: number; max: number } {
  return { min: t.minGeneration ?? t.generation, max: t.maxGeneration ?? t.generation };
}
