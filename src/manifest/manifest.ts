// The manifest: a store's committed state. Adapters persist it as they like (a JSON file, an
// IndexedDB record, a Durable Object value); its fields are specified in docs/format.md.

import { MemWalError } from '../errors.js';

/** Written to disk: never renumber. Readers reject versions they do not know. */
export const MANIFEST_FORMAT_VERSION = 1;

/** A flushed memtable: one Arrow IPC file. */
export interface TableFileEntry {
  generation: number;
  /** File name inside the store's `tables/` area: `{generation}-{epoch}-{attempt}.arrow`. */
  name: string;
  bytes: number;
  rows: number;
  /** CRC-32C of the whole file, lowercase hex (8 digits). */
  checksum: string;
  /** Smallest and largest encoded primary key, hex of the key bytes; absent without a key. */
  minKey?: string;
  maxKey?: string;
}

export type StoreMode = 'memtable' | 'wal-only';

export interface Manifest {
  formatVersion: number;
  layout: string;
  mode: StoreMode;
  /** The Arrow schema: base64 of an Arrow IPC stream with the schema and no batches. */
  schema: string;
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
  tables: TableFileEntry[];
}

/** Structural validation of a manifest read from storage; `Corruption` when it is not one. */
export function checkManifest(value: unknown): Manifest {
  const m = value as Partial<Manifest> | null;
  const bad = (why: string): never => {
    throw new MemWalError('Corruption', `manifest is invalid: ${why}`);
  };
  if (typeof m !== 'object' || m === null) return bad('not an object');
  if (m.formatVersion !== MANIFEST_FORMAT_VERSION) {
    throw new MemWalError(
      'NotSupported',
      `manifest format version ${String(m.formatVersion)} is not supported (this build reads ${MANIFEST_FORMAT_VERSION})`,
    );
  }
  const ints: (keyof Manifest)[] = ['writerEpoch', 'version', 'nextGeneration', 'replayCursor', 'positionHint'];
  for (const k of ints) if (!Number.isSafeInteger(m[k]) || (m[k] as number) < 0) bad(`${k} is not a non-negative integer`);
  if (m.consumerCursor !== null && !Number.isSafeInteger(m.consumerCursor)) bad('consumerCursor');
  if (typeof m.layout !== 'string' || typeof m.schema !== 'string') bad('layout/schema');
  if (m.mode !== 'memtable' && m.mode !== 'wal-only') bad('mode');
  if (!Array.isArray(m.primaryKey) || !Array.isArray(m.tables)) bad('primaryKey/tables');
  return m as Manifest;
}

/** A deep copy, so a handed-out manifest never aliases the writer's. */
export function cloneManifest(m: Manifest): Manifest {
  return { ...m, primaryKey: [...m.primaryKey], tables: m.tables.map((t) => ({ ...t })) };
}
