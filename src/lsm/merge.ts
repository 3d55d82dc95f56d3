// The k-way merge of sorted sources (scan and compaction): newest source wins per key, tombstones
// hide older versions (and are dropped or kept, as asked), output in key order in bounded batches.
// Holds one run per source at a time. Pure; any runtime.

import type { RecordBatch, Schema } from 'apache-arrow';
import { compareKeys, type Key } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import { gatherBatch } from '../data/select.js';
import type { SortedRun } from './sorted.js';

/** One source of rows in key order, run by run (a memtable snapshot, a table file's blocks). */
export interface MergeSource {
  /** The next run, or undefined at the end. Runs follow each other in key order. */
  next(): Promise<SortedRun | undefined>;
}

/** A source that yields the given runs. */
export function runsSource(runs: readonly SortedRun[]): MergeSource {
  let i = 0;
  return { next: () => Promise.resolve(runs[i++]) };
}

interface Cursor {
  /** Lower is newer: the source's index in the list given to `mergeSorted`. */
  priority: number;
  source: MergeSource;
  run: SortedRun;
  pos: number;
}

/** What the merge emits: rows of `schema` in key order, `rows` per batch at most. */
export interface MergeOptions {
  schema: Schema;
  storeSchema: StoreSchema;
  /** Index of the `_tombstone` column. */
  tombstone: number;
  /** Drop delete markers (a scan, or a compaction into the bottom level); else keep them. */
  dropTombstones: boolean;
  /** Output batch size in rows. */
  rows: number;
}

/**
 * Merge `sources` (newest first) by key: for each key the row of the newest source that has it;
 * a delete marker wins like a row and is then dropped or kept per `dropTombstones`. Yields
 * batches of at most `rows` rows; consumes each source run by run.
 */
export async function* mergeSorted(sources: readonly MergeSource[], o: MergeOptions): AsyncGenerator<RecordBatch> {
  const heap: Cursor[] = [];
  const less = (a: Cursor, b: Cursor): boolean => {
    const c = compareKeys(a.run.keys[a.pos]!, b.run.keys[b.pos]!, o.storeSchema);
    return c < 0 || (c === 0 && a.priority < b.priority);
  };
  const push = (c: Cursor): void => {
    heap.push(c);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(heap[i]!, heap[p]!)) break;
      [heap[i], heap[p]] = [heap[p]!, heap[i]!];
      i = p;
    }
  };
  const siftDown = (): void => {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  const pop = (): Cursor => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      siftDown();
    }
    return top;
  };
  /** Put `c` back, on its next run if this one is used up; drop it at its end. */
  const resume = async (c: Cursor): Promise<void> => {
    while (c.pos >= c.run.keys.length) {
      const next = await c.source.next();
      if (!next) return;
      c.run = next;
      c.pos = 0;
    }
    push(c);
  };
  for (let priority = 0; priority < sources.length; priority++) {
    const source = sources[priority]!;
    const first = await source.next();
    if (first) await resume({ priority, source, run: first, pos: 0 });
  }

  let pieces: { batch: RecordBatch; idx: number[]; start: number; count: number }[] = [];
  let count = 0;
  const take = (batch: RecordBatch, row: number): void => {
    const last = pieces[pieces.length - 1];
    if (last && last.batch === batch) {
      last.idx.push(row);
      last.count++;
    } else pieces.push({ batch, idx: [row], start: 0, count: 1 });
    count++;
  };
  const isTombstone = (batch: RecordBatch, row: number): boolean => o.tombstone >= 0 && batch.getChildAt(o.tombstone)!.get(row) === true;
  const flush = (): RecordBatch | undefined => {
    if (count === 0) return undefined;
    const out = gatherBatch(o.schema, pieces, count);
    pieces = [];
    count = 0;
    return out;
  };

  while (heap.length > 0) {
    const top = pop();
    // Bulk: while the newest-first top stays below every other source's key, take its run.
    let end = top.pos + 1;
    if (heap.length === 0) end = top.run.keys.length;
    else {
      const bound = heap[0]!.run.keys[heap[0]!.pos]!;
      while (end < top.run.keys.length && compareKeys(top.run.keys[end]!, bound, o.storeSchema) < 0) end++;
    }
    for (let r = top.pos; r < end; r++) {
      if (!(o.dropTombstones && isTombstone(top.run.batch, r))) take(top.run.batch, r);
      if (count >= o.rows) yield flush()!;
    }
    top.pos = end;
    // Older versions of the last key taken are hidden: skip them in every other source (only the
    // first key taken can be equal to another source's current key).
    const lastKey: Key = top.run.keys[end - 1]!;
    while (heap.length > 0 && compareKeys(heap[0]!.run.keys[heap[0]!.pos]!, lastKey, o.storeSchema) === 0) {
      const older = pop();
      older.pos++;
      await resume(older);
    }
    await resume(top);
  }
  const rest = flush();
  if (rest) yield rest;
}
