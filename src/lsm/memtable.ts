// A memtable: Arrow record batches in insert order, their encoded keys, a key index over the
// visible prefix, and a slice-aware byte estimate .

import type { RecordBatch } from 'apache-arrow';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { KeyIndex } from '../data/key-index.js';
import type { Key } from '../data/keys.js';
import { estimateBatchBytes } from '../data/size.js';
import type { Timer } from '../util/schedule.js';
import type { ResolvedIndex } from '../data/index-keys.js';
import type { StoreSchema } from '../data/schema.js';
import { MemIndex, type OrderedBatchEntries, orderedBatchEntries } from './memtable-index.js';
import type { ResolvedVectorIndex } from '../data/vector-spec.js';
import { MemVectorIndex, vectorEntryBytes } from './vector-index.js';
import type { ResolvedTextIndex } from '../data/tokenize.js';
import { type TextBatchDocs, TextMemIndex, textBatchDocs } from './text-index.js';

/** What a memtable needs to keep ordered indexes (keyed stores with `indexes` declared). */
export interface MemTableIndexing {
  indexes: readonly ResolvedIndex[];
  /** Vector indexes (vector-index.ts); none when absent. */
  vectorIndexes?: readonly ResolvedVectorIndex[];
  /** Full-text indexes (text-index.ts). */
  textIndexes?: readonly ResolvedTextIndex[];
  storeSchema: StoreSchema;
}

/**
 * Estimated bytes per indexed row with a string key, on top of the key string itself: a Map
 * entry (hash slot, key pointer, value) plus the string header. An estimate for V8; documented
 * in docs/impl.md.
 */
export const KEY_INDEX_ROW_BYTES = 64;
/**
 * Estimated bytes per indexed row with a number key: 8 in the batch's key array, and up to 32 in
 * the index table (12 bytes a slot, at a load factor between 1/4 and 1/2).
 */
export const KEY_INDEX_NUMBER_ROW_BYTES = 40;

/**
 * Row ordinals: a row's position across a sequence of batches. Key indexes map keys to
 * ordinals, which stay small integers (unboxed Map values, no GC churn).
 */
export class RowOrdinals {
  private readonly starts: number[] = [];
  private total = 0;

  /** Register the next batch's row count. */
  add(rows: number): void {
    this.starts.push(this.total);
    this.total += rows;
  }

  /** Ordinal of row 0 of `batch`. */
  start(batch: number): number {
    return this.starts[batch]!;
  }

  /** The batch holding `ordinal` (binary search) and the row inside it. */
  locate(ordinal: number): { batch: number; row: number } {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= ordinal) lo = mid;
      else hi = mid - 1;
    }
    return { batch: lo, row: ordinal - this.starts[lo]! };
  }
}

/** Estimated bytes of one batch as a memtable holds it (batch plus its share of the key index). */
export function estimateInsertBytes(batch: RecordBatch, keys: ArrayLike<Key> | undefined): number {
  let bytes = estimateBatchBytes(batch);
  if (keys instanceof Float64Array) {
    bytes += keys.length * KEY_INDEX_NUMBER_ROW_BYTES;
  } else if (keys) {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      bytes += typeof k === 'number' ? KEY_INDEX_NUMBER_ROW_BYTES : KEY_INDEX_ROW_BYTES + k.length * 2;
    }
  }
  return bytes;
}

/**
 * One batch's index work, done once before its put is admitted (so `maxPutBytes` can count it)
 * and handed to `MemTable.append`: its ordered index entries and its tokenized documents, per
 * declared index; `bytes`, the most the memtable's indexes grow by appending it — exact for
 * ordered indexes, an upper bound for text indexes (every distinct term of a document counted as
 * new, text-index.ts) and for vector indexes (every row counted as a vector, vectorEntryBytes).
 */
export interface PreparedIndexing {
  /** The indexing it was made for: a memtable of another (a schema changed meanwhile) makes its own. */
  indexing: MemTableIndexing;
  ordered: OrderedBatchEntries[];
  text: TextBatchDocs[];
  bytes: number;
}

/** The index work of `batch` (keys `keys`) for `indexing`'s indexes (see PreparedIndexing). */
export function prepareIndexing(indexing: MemTableIndexing, batch: RecordBatch, keys: ArrayLike<Key>): PreparedIndexing {
  const { storeSchema } = indexing;
  const ordered = indexing.indexes.map((ix) => orderedBatchEntries(ix, batch, keys, storeSchema));
  const text = (indexing.textIndexes ?? []).map((ix) => textBatchDocs(ix, batch, storeSchema));
  let bytes = 0;
  for (const o of ordered) bytes += o.bytes;
  for (const t of text) bytes += t.bytes;
  for (const v of indexing.vectorIndexes ?? []) bytes += batch.numRows * vectorEntryBytes(v);
  return { indexing, ordered, text, bytes };
}

function sameIndexing(a: MemTableIndexing, b: MemTableIndexing): boolean {
  return (
    a.indexes === b.indexes && a.textIndexes === b.textIndexes && a.vectorIndexes === b.vectorIndexes && a.storeSchema === b.storeSchema
  );
}

export type MemTableState = 'active' | 'frozen' | 'committed';

export class MemTable {
  readonly generation: number;
  readonly batches: RecordBatch[] = [];
  /** Encoded primary keys per batch (stores with a primary key only). */
  readonly batchKeys: ArrayLike<Key>[] = [];
  /** Newest visible row ordinal per key; covers exactly the visible prefix of batches. */
  readonly keyIndex: KeyIndex | undefined;
  readonly ordinals = new RowOrdinals();
  rows = 0;
  estimatedBytes = 0;
  /** Batches [0, visibleBatches) are visible to get/scan (durable, or accepted when not durable). */
  visibleBatches = 0;
  /** Batches [0, durableBatches) are in durable WAL entries. */
  durableBatches = 0;
  /** Position of the WAL entry holding this memtable's first batch (0: none yet). */
  firstPosition = 0;
  /** Position of the WAL entry holding this memtable's last batch (0: none yet). */
  lastPosition = 0;
  state: MemTableState = 'active';
  /** Monotonic time its flush committed (grace bookkeeping). */
  committedAtMs: number | undefined;
  flushAttempts = 0;
  /**
   * The table file of a flush attempt whose commit was issued but whose outcome is not known yet:
   * it must not be deleted until the manifest says whether it landed.
   */
  pendingTable: TableFileEntry | undefined;
  graceTimer: Timer | undefined;
  /**
   * Its ordered indexes (memtable-index.ts), one per declared index: rows are indexed as they are
   * appended, before they turn visible; their bytes count in `estimatedBytes`.
   */
  readonly indexes: MemIndex[];
  /** Its vector indexes (vector-index.ts), one per declared vector index, fed as `indexes` are. */
  readonly vectors: MemVectorIndex[];
  /** Its full-text indexes (text-index.ts), one per declared text index, kept as `indexes` are. */
  readonly textIndexes: TextMemIndex[];
  private readonly indexing: MemTableIndexing | undefined;

  constructor(generation: number, keyed: boolean, indexing?: MemTableIndexing) {
    this.generation = generation;
    this.keyIndex = keyed ? new KeyIndex() : undefined;
    const declared = (indexing?.indexes.length ?? 0) + (indexing?.vectorIndexes?.length ?? 0) + (indexing?.textIndexes?.length ?? 0);
    this.indexing = keyed && indexing && declared > 0 ? indexing : undefined;
    this.indexes = this.indexing ? this.indexing.indexes.map((ix) => new MemIndex(ix)) : [];
    this.vectors = this.indexing?.vectorIndexes?.map((ix) => new MemVectorIndex(ix)) ?? [];
    this.textIndexes = this.indexing?.textIndexes?.map((ix) => new TextMemIndex(ix)) ?? [];
  }

  /**
   * Append batches (with their keys and estimates) and index them; not yet visible. Returns the
   * new batch count. `prepared`: each batch's index work (`prepareIndexing` with this memtable's
   * indexing), done when the put was checked; made here when absent (replay).
   */
  append(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined, bytes: number[], prepared?: PreparedIndexing[]): number {
    for (let i = 0; i < batches.length; i++) {
      const b = batches[i]!;
      const base = this.rows;
      this.batches.push(b);
      this.ordinals.add(b.numRows);
      if (keys) this.batchKeys.push(keys[i]!);
      this.rows += b.numRows;
      this.estimatedBytes += bytes[i]!;
      if (!this.indexing || !keys) continue;
      const k = keys[i]!;
      const { storeSchema } = this.indexing;
      const given = prepared?.[i];
      const p = given && sameIndexing(given.indexing, this.indexing) ? given : prepareIndexing(this.indexing, b, k);
      for (let x = 0; x < this.indexes.length; x++) this.estimatedBytes += this.indexes[x]!.add(b, k, base, storeSchema, p.ordered[x]);
      for (const v of this.vectors) this.estimatedBytes += v.add(b, k, base, storeSchema);
      for (let x = 0; x < this.textIndexes.length; x++) this.estimatedBytes += this.textIndexes[x]!.add(b, k, base, storeSchema, p.text[x]);
    }
    return this.batches.length;
  }

  /** Rows [0, visibleRows) are visible: the ordinal a reader's capture stops at. */
  get visibleRows(): number {
    return this.visibleBatches >= this.batches.length ? this.rows : this.ordinals.start(this.visibleBatches);
  }

  /** Make batches [visibleBatches, upTo) visible: index their keys, newest last. */
  publish(upTo: number): void {
    const index = this.keyIndex;
    for (let b = this.visibleBatches; b < upTo; b++) {
      if (index) {
        const keys = this.batchKeys[b]!;
        const base = this.ordinals.start(b);
        for (let r = 0; r < keys.length; r++) index.set(keys[r]!, base + r);
      }
    }
    if (upTo > this.visibleBatches) this.visibleBatches = upTo;
  }

  /** Is row `row` of batch `batch` the newest visible version of its key in this memtable? */
  isNewest(batch: number, row: number): boolean {
    if (!this.keyIndex) return true;
    return this.keyIndex.get(this.batchKeys[batch]![row]!) === this.ordinals.start(batch) + row;
  }

  /** True once every batch is in a durable WAL entry (the flush precondition). */
  get fullyDurable(): boolean {
    return this.durableBatches >= this.batches.length;
  }
}
