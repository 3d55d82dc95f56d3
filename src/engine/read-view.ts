// Reads (docs/impl.md §4): a consistent capture of memtables and table files, `get` that reads at most
// one block per table file its key range and Bloom filter admit, and `scan`/`scanBatches` as a
// k-way merge in key order (append-only: in insertion order) holding one block per source.
// Invariant: a view is captured in one synchronous step (no hole, no double) and pins its files.

import type { RecordBatch } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { BLOCK_MAX_ROWS } from '../format/table/format.js';
import { type MergeSource, mergeSorted } from '../lsm/merge.js';
import { indexEntries, type SortedRun, sortedNewest } from '../lsm/sorted.js';
import { compareKeys, encodeKey, type Key, type KeyEncoder, keyFromHex, keyString } from '../data/keys.js';
import type { MemTable } from '../lsm/memtable.js';
import type { MemtableSet } from './memtable-set.js';
import { projectBatch, rowObject } from '../data/rows.js';
import type { StoreSchema } from '../data/schema.js';
import { generationsOf, levelOf } from './table-file-io.js';
import { type Block, findBlock, type OpenTable, type TableCache } from '../lsm/table-cache.js';

/** A consistent capture of the read view, newest first. */
interface ViewCapture {
  memtables: { m: MemTable; visible: number }[];
  /** Level 0 newest first, then level 1 (older than every level-0 file) in key order. */
  tables: TableFileEntry[];
}

/** Reads of one MemTable-mode writer. */
export class ReadView {
  constructor(
    private readonly storeSchema: StoreSchema,
    private readonly keyEncoder: KeyEncoder | undefined,
    private readonly tier: MemtableSet,
    /** The committed table files (the manifest's list). */
    private readonly tables: () => readonly TableFileEntry[],
    private readonly cache: TableCache,
  ) {}

  /** Capture memtables and table files in one synchronous step (no hole, no double). */
  private capture(): ViewCapture {
    const active = this.tier.active;
    const memtables = [{ m: active, visible: active.visibleBatches }];
    const inMemory = new Set<number>([active.generation]);
    for (let i = this.tier.frozen.length - 1; i >= 0; i--) {
      const f = this.tier.frozen[i]!;
      memtables.push({ m: f, visible: f.visibleBatches });
      inMemory.add(f.generation);
    }
    const live = this.tables().filter((t) => !(levelOf(t) === 0 && inMemory.has(t.generation)));
    const level0 = live.filter((t) => levelOf(t) === 0).sort((a, b) => b.generation - a.generation);
    const level1 = live
      .filter((t) => levelOf(t) >= 1)
      .sort((a, b) => (this.keyEncoder ? byMinKey(a, b) : generationsOf(a).min - generationsOf(b).min));
    return { memtables, tables: [...level0, ...level1] };
  }

  private isTombstone(batch: RecordBatch, row: number): boolean {
    return this.storeSchema.hasTombstone && batch.getChildAt(this.storeSchema.internal.fields.length - 1)!.get(row) === true;
  }

  /**
   * The newest version of the row with this primary key, or undefined (absent or deleted).
   * `NotSupported` without a primary key; `InvalidArgument` for a bad key.
   */
  async get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    return (await this.getMany([key]))[0];
  }

  /**
   * The newest version of each key's row (undefined: absent or deleted), in the order of `keys`,
   * all from one capture of the view. The keys are looked up in key order, so keys that share a
   * block read it once. `NotSupported` without a primary key; `InvalidArgument` for a bad key.
   */
  async getMany(keys: readonly Record<string, unknown>[]): Promise<(Record<string, unknown> | undefined)[]> {
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'get needs a primary key (this store is append-only)');
    const probes = keys.map((key) => {
      const k = encodeKey(key, this.storeSchema);
      return { k, probe: keyString(k, this.storeSchema) };
    });
    const order = probes.map((_, i) => i);
    if (order.length > 1) order.sort((a, b) => (probes[a]!.probe < probes[b]!.probe ? -1 : probes[a]!.probe > probes[b]!.probe ? 1 : 0));
    this.cache.stats.gets += keys.length;
    const view = this.capture();
    const names = view.tables.map((t) => t.name);
    this.cache.pin(names);
    try {
      const out = new Array<Record<string, unknown> | undefined>(keys.length);
      const last = new Map<string, { i: number; block: Block }>();
      for (const i of order) out[i] = await this.lookup(view, probes[i]!.k, probes[i]!.probe, last);
      return out;
    } finally {
      this.cache.unpin(names);
    }
  }

  /**
   * One key (`k`, encoded as `probe`) in a pinned capture: memtables newest first, then table
   * files. `last`: the block each table file last gave this call (keys in order reuse it).
   */
  private async lookup(
    view: ViewCapture,
    k: Key,
    probe: string,
    last: Map<string, { i: number; block: Block }>,
  ): Promise<Record<string, unknown> | undefined> {
    for (const { m, visible } of view.memtables) {
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b >= visible) continue;
      const batch = m.batches[b]!;
      return this.isTombstone(batch, row) ? undefined : rowObject(batch, row);
    }
    const stats = this.cache.stats;
    for (const t of view.tables) {
      const range = keyRange(t);
      if (range && (probe < range.min || probe > range.max)) continue;
      const open = await this.cache.open(t);
      if (open.bloom) {
        if (!open.bloom.mayContain(k)) {
          stats.bloomNegatives++;
          continue;
        }
        stats.bloomPositives++;
      }
      stats.tableFilesConsulted++;
      const i = findBlock(open, probe);
      let block: Block | undefined;
      if (i >= 0) {
        const held = last.get(t.name);
        block = held?.i === i ? held.block : await open.block(i);
        last.set(t.name, { i, block });
      }
      const row = block ? block.find(probe) : -1;
      if (row < 0) {
        if (open.bloom) stats.bloomFalsePositives++;
        continue;
      }
      return this.isTombstone(block!.batch, row) ? undefined : rowObject(block!.batch, row);
    }
    return undefined;
  }

  /**
   * Every live row, projected to `columns`, at most `limit`: keyed stores in key order (the
   * newest version of each key, deleted keys absent), append-only stores in insertion order.
   * `after` (keyed only): start past this key, skipping table files and blocks wholly before it.
   * Holds one block per table file and a sorted copy of each memtable's index.
   */
  async *scan(columns: string[] | undefined, limit: number, after?: Record<string, unknown>): AsyncGenerator<RecordBatch> {
    let from: Key | undefined;
    if (after !== undefined) {
      if (!this.keyEncoder) throw new MemWalError('NotSupported', 'scanBatches: after needs a primary key (this store is append-only)');
      from = encodeKey(after, this.storeSchema);
    }
    const view = this.capture();
    const names = view.tables.map((t) => t.name);
    this.cache.pin(names);
    let left = limit;
    try {
      const source = this.keyEncoder ? this.keyedRows(view, from) : this.appendOnlyRows(view);
      for await (const batch of source) {
        if (left <= 0) return;
        const b = batch.numRows > left ? batch.slice(0, left) : batch;
        left -= b.numRows;
        if (b.numRows > 0) yield projectBatch(b, columns, true);
      }
    } finally {
      this.cache.unpin(names);
    }
  }

  /** Keyed: memtables (sorted snapshots, taken now) and table files, merged newest first. */
  private keyedRows(view: ViewCapture, after: Key | undefined): AsyncGenerator<RecordBatch> {
    const sources: MergeSource[] = [];
    for (const { m, visible } of view.memtables) {
      if (visible === 0) continue;
      // The index covers exactly the visible prefix; a copy freezes it against later puts.
      const entries = indexEntries(m.keyIndex!);
      sources.push(lazyRun(() => sortedNewest(this.storeSchema.internal, this.storeSchema, m.batches, visible, entries)));
    }
    const probe = after === undefined ? undefined : keyString(after, this.storeSchema);
    const past = (t: TableFileEntry): boolean => probe === undefined || t.maxKey === undefined || keyFromHex(t.maxKey) > probe;
    const level0 = view.tables.filter((t) => levelOf(t) === 0 && past(t));
    const level1 = view.tables.filter((t) => levelOf(t) >= 1 && past(t));
    for (const t of level0) sources.push(this.fileSource([t], probe));
    if (level1.length > 0) sources.push(this.fileSource(level1, probe));
    return mergeSorted(after === undefined ? sources : sources.map((s) => startAfter(s, after, this.storeSchema)), {
      schema: this.storeSchema.internal,
      storeSchema: this.storeSchema,
      tombstone: this.storeSchema.internal.fields.length - 1,
      dropTombstones: true,
      rows: BLOCK_MAX_ROWS * 4,
    });
  }

  /** Append-only: table files oldest first, then memtables oldest first. */
  private async *appendOnlyRows(view: ViewCapture): AsyncGenerator<RecordBatch> {
    const files = [...view.tables].sort((a, b) => generationsOf(a).min - generationsOf(b).min);
    for (const t of files) {
      const open = await this.cache.open(t);
      for (let i = 0; i < open.blocks.length; i++) yield (await open.block(i)).batch;
    }
    for (const { m, visible } of [...view.memtables].reverse()) {
      for (let b = 0; b < visible; b++) yield m.batches[b]!;
    }
  }

  /**
   * The blocks of `files` (non-overlapping, in key order) as one merge source; with `probe`, the
   * first file starts at its first block that ends past it.
   */
  private fileSource(files: TableFileEntry[], probe?: string): MergeSource {
    let f = 0;
    let open: OpenTable | undefined;
    let i = 0;
    return {
      next: async (): Promise<SortedRun | undefined> => {
        for (;;) {
          if (!open) {
            if (f >= files.length) return undefined;
            open = await this.cache.open(files[f++]!);
            i = f === 1 && probe !== undefined ? firstBlockPast(open, probe) : 0;
          }
          if (i < open.blocks.length) {
            const b = await open.block(i++);
            return { batch: b.batch, keys: b.keys ?? [] };
          }
          open = undefined;
        }
      },
    };
  }
}

/** Decoded key ranges of manifest entries (entries are immutable; a get checks every file's). */
const keyRanges = new WeakMap<TableFileEntry, { min: string; max: string }>();

/** The key range of a keyed table file (encoded), or undefined when the entry has none. */
function keyRange(t: TableFileEntry): { min: string; max: string } | undefined {
  if (t.minKey === undefined) return undefined;
  let r = keyRanges.get(t);
  if (!r) keyRanges.set(t, (r = { min: keyFromHex(t.minKey), max: keyFromHex(t.maxKey!) }));
  return r;
}

function byMinKey(a: TableFileEntry, b: TableFileEntry): number {
  const x = a.minKey ?? '';
  const y = b.minKey ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The first block of `t` whose last key is past `probe` (`blocks.length` when none is). */
function firstBlockPast(t: OpenTable, probe: string): number {
  let lo = 0;
  let hi = t.blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t.blocks[mid]!.last <= probe) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `source` without its keys up to and including `after`: runs wholly at or before it are
 * dropped, the first run past it is cut; every later run follows it in key order, untouched.
 */
function startAfter(source: MergeSource, after: Key, storeSchema: StoreSchema): MergeSource {
  let passed = false;
  return {
    next: async (): Promise<SortedRun | undefined> => {
      for (;;) {
        const run = await source.next();
        if (run === undefined || passed) return run;
        const { keys } = run;
        let lo = 0;
        let hi = keys.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (compareKeys(keys[mid]!, after, storeSchema) <= 0) lo = mid + 1;
          else hi = mid;
        }
        if (lo === keys.length) continue;
        passed = true;
        if (lo === 0) return run;
        return { batch: run.batch.slice(lo), keys: Array.prototype.slice.call(keys, lo) as Key[] };
      }
    },
  };
}

/** A one-run source whose run is built on first use (after the capture, outside its step). */
function lazyRun(build: () => SortedRun): MergeSource {
  let done = false;
  return {
    next: () => {
      if (done) return Promise.resolve(undefined);
      done = true;
      return Promise.resolve(build());
    },
  };
}
