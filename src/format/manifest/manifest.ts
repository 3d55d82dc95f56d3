// The manifest: a store's committed state. Adapters persist it as they like (a JSON file, an
// IndexedDB record, a Durable Object value); its fields are specified in docs/format.md.

import { MemWalError } from '../../util/errors.js';
import { wallClockMs } from '../../util/schedule.js';
import { checkIndexSet, type IndexRecord } from './index-set.js';

/**
 * Written to disk: never renumber. Version 2 adds `commitId`, schema versions and the table
 * fields of format v2; version 3 adds renames (`schemas[].renamed`) and means "a stored column
 * the opener lacks is kept" (SPEC §9.1), which a build reading only 1 and 2 would drop. This
 * build writes 3 and reads 1, 2 and 3 (docs/format.md §11). Readers reject versions they do not
 * know.
 */
export const MANIFEST_FORMAT_VERSION = 3;
/** Manifest format versions this build reads. */
export const READABLE_MANIFEST_VERSIONS: readonly number[] = [1, 2, 3];

/** A flushed memtable: one Arrow IPC file. */
export interface TableFileEntry {
  generation: number;
  /**
   * File name inside the store's `tables/` area: `{generation}-{epoch}-{attempt}.arrow` (a flush)
   * or `c{maxGeneration}-{epoch}-{sequence}.arrow` (a compaction output).
   */
  name: string;
  bytes: number;
  rows: number;
  /** CRC-32C of the whole file, lowercase hex (8 digits). */
  checksum: string;
  /** Smallest and largest encoded primary key, hex of the key bytes; absent without a key. */
  minKey?: string;
  maxKey?: string;
  /** Table file format: 1 (one record batch per put, unsorted) or 2 (sorted blocks, index, Bloom filter). Absent: 1. */
  format?: number;
  /** LSM level: 0 for flushed memtables (may overlap), 1 for the compacted sorted run. Absent: 0. */
  level?: number;
  /** The generations whose rows the file holds (a flush: one; a compaction output: a range). Absent: `generation` only. */
  minGeneration?: number;
  /** See `minGeneration`; `generation` equals it. */
  maxGeneration?: number;
  /** The schema version the file was written with (`Manifest.schemas`). Absent: 1. */
  schemaVersion?: number;
  /**
   * Ids of the `Manifest.indexes` records whose section the file holds (format 3, index-set.ts):
   * set when the file is written; an id no longer in the set is a dropped index's section (ignored,
   * gone at the file's next rewrite). Absent: not recorded (written before the set was kept).
   */
  indexes?: number[];
}

export type StoreMode = 'memtable' | 'wal-only';

/** One schema version of a store (docs/impl.md §12, schema evolution). */
export interface SchemaVersion {
  version: number;
  /** base64 of an Arrow IPC stream with the schema and no batches. */
  schema: string;
  /**
   * The writer epoch whose claim recorded this version: WAL entries of that epoch and later ones
   * (up to the next version's) are in it. Absent in versions recorded before it was kept.
   */
  writerEpoch?: number;
  /**
   * Columns this version renamed (format 3): new name → the name the same column had in the
   * version before. Absent: none.
   */
  renamed?: Record<string, string>;
}

export interface Manifest {
  formatVersion: number;
  layout: string;
  mode: StoreMode;
  /** The current Arrow schema: base64 of an Arrow IPC stream with the schema and no batches. */
  schema: string;
  /** The current schema's version (format 2; absent: 1). */
  schemaVersion?: number;
  /** Every schema version the store's data may carry, oldest first (format 2; absent: just `schema` as version 1). */
  schemas?: SchemaVersion[];
  primaryKey: string[];
  writerEpoch: number;
  /** Bumped by every commit; commits are compare-and-set on it. */
  version: number;
  /** The generation of the active memtable after this commit. */
  nextGeneration: number;
  /** WAL entries at or below this position are covered by table files (0: none). */
  replayCursor: number;
  /** Highest position a consumer marked consumed; `null` until `markConsumed` is first called. */
  consumerCursor: number | null;
  /** The highest durable WAL position any writer reached; positions of durable entries are never reused. */
  positionHint: number;
  /**
   * A random id of the commit that wrote this version (format 2). A writer whose commit had an
   * unknown outcome (the reply was lost) re-reads the manifest and finds out by this id.
   */
  commitId?: string;
  /**
   * The id of this incarnation of the store (format 2, {@link newIncarnationId}): created with the
   * store, kept by every commit. A store destroyed (or reset) and created again under the same
   * name gets a new one, so a drain's sink can tell its positions, which start again at 1, from
   * the old store's. Absent in manifests written before it was kept; the next claim adds one.
   */
  incarnation?: string;
  /**
   * The ordered indexes the last claiming writer declared, each under an id for its definition
   * (format 3, index-set.ts; docs/format.md §9 "Index set"). Absent: not recorded (a manifest
   * written before it was kept; the next claim in MemTable mode records it).
   */
  indexes?: IndexRecord[];
  tables: TableFileEntry[];
}

/** The time part of the last incarnation id made here: ids made in one process always increase. */
let lastIncarnationMs = 0;

/**
 * A new incarnation id: 32 lowercase hex digits, the creation time (milliseconds since 1970, 12
 * digits; one more than the previous id's when made within the same millisecond in this process)
 * then 20 random ones, so that of two incarnations the later created sorts after the earlier
 * (docs/format.md §9).
 */
export function newIncarnationId(): string {
  lastIncarnationMs = Math.max(wallClockMs(), lastIncarnationMs + 1);
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  const bytes = new Uint8Array(10);
  if (c?.getRandomValues) c.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  let random = '';
  for (const b of bytes) random += b.toString(16).padStart(2, '0');
  return lastIncarnationMs.toString(16).padStart(12, '0').slice(-12) + random;
}

/** Structural validation of a manifest read from storage; `Corruption` when it is not one. */
export function checkManifest(value: unknown): Manifest {
  const m = value as Partial<Manifest> | null;
  const bad = (why: string): never => {
    throw new MemWalError('Corruption', `manifest is invalid: ${why}`);
  };
  if (typeof m !== 'object' || m === null) return bad('not an object');
  if (!READABLE_MANIFEST_VERSIONS.includes(m.formatVersion as number)) {
    throw new MemWalError(
      'NotSupported',
      `manifest format version ${String(m.formatVersion)} is not supported (this build reads ${READABLE_MANIFEST_VERSIONS.join(', ')})`,
    );
  }
  const ints: (keyof Manifest)[] = ['writerEpoch', 'version', 'nextGeneration', 'replayCursor', 'positionHint'];
  for (const k of ints) if (!Number.isSafeInteger(m[k]) || (m[k] as number) < 0) bad(`${k} is not a non-negative integer`);
  if (m.consumerCursor !== null && !Number.isSafeInteger(m.consumerCursor)) bad('consumerCursor');
  if (typeof m.layout !== 'string' || typeof m.schema !== 'string') bad('layout/schema');
  if (m.mode !== 'memtable' && m.mode !== 'wal-only') bad('mode');
  if (!Array.isArray(m.primaryKey) || !Array.isArray(m.tables)) bad('primaryKey/tables');
  if (m.incarnation !== undefined && (typeof m.incarnation !== 'string' || !/^[0-9a-f]{32}$/.test(m.incarnation))) bad('incarnation');
  checkIndexSet(m.indexes, m.tables as unknown[]);
  return m as Manifest;
}

/** A deep copy, so a handed-out manifest never aliases the writer's. */
export function cloneManifest(m: Manifest): Manifest {
  return {
    ...m,
    primaryKey: [...m.primaryKey],
    tables: m.tables.map((t) => ({ ...t, ...(t.indexes ? { indexes: [...t.indexes] } : {}) })),
    ...(m.indexes ? { indexes: m.indexes.map((r) => ({ ...r })) } : {}),
    ...(m.schemas ? { schemas: m.schemas.map((v) => ({ ...v, ...(v.renamed ? { renamed: { ...v.renamed } } : {}) })) } : {}),
  };
}
