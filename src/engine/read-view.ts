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

/** {@link ReadView.getNow}: the read needs a file's index or a block read (or waited for). */
export const NEEDS_IO = Symbol('needs I/O');

/**
 * Most keys in one `getMany` call: the answer crosses to the page as one structured-cloned
 * message, so a batch is bounded (10,000 rows of a few hundred bytes are a few MiB).
 */
export const MAX_GET_MANY_KEYS = 10_000;

/** Blocks one `getMany` reads at once from one table file (64 KiB each at most, as stored). */
const GET_MANY_BLOCKS_IN_FLIGHT = 4;

/** `keys` is an array of at most MAX_GET_MANY_KEYS keys, or `InvalidArgument`. */
function checkBatch(keys: unknown): void {
  if (!Array.isArray(keys)) throw new MemWalError('InvalidArgument', 'getMany: keys must be an array of primary keys');
  if (keys.length > MAX_GET_MANY_KEYS) {
    throw new MemWalError('InvalidArgument', `getMany: ${keys.length} keys, more than ${MAX_GET_MANY_KEYS} in one call; split the batch`);
  }
}

/** A consistent capture of the read view, newest first. */
export interface ViewCapture {
  memtables: { m: MemTable; visible: number }[];
  /** Level 0 newest first, then level 1 (older than every level-0 file) in key order. */
  tables: readonly TableFileEntry[];
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

  /** The last {@link tableOrder}, and what it was made of. */
  private order: { of: readonly TableFileEntry[]; active: number; frozen: number[]; tables: readonly TableFileEntry[] } | undefined;

  /** Capture memtables and table files in one synchronous step (no hole, no double). */
  capture(): ViewCapture {
    const active = this.tier.active;
    const memtables = [{ m: active, visible: active.visibleBatches }];
    for (let i = this.tier.frozen.length - 1; i >= 0; i--) {
      const f = this.tier.frozen[i]!;
      memtables.push({ m: f, visible: f.visibleBatches });
    }
    return { memtables, tables: this.tableOrder() };
  }

  /**
   * The live table files a read consults, newest first (level 0 by generation, then level 1 in
   * key order), without the level-0 files of generations still in memory. Made again only when
   * the manifest's list or the memtables' generations changed (a get does not sort).
   */
  private tableOrder(): readonly TableFileEntry[] {
    const all = this.tables();
    const active = this.tier.active.generation;
    const frozen = this.tier.frozen;
    const o = this.order;
    if (
      o &&
      o.of === all &&
      o.active === active &&
      o.frozen.length === frozen.length &&
      frozen.every((f, i) => o.frozen[i] === f.generation)
    ) {
      return o.tables;
    }
    const inMemory = new Set<number>([active]);
    for (const f of frozen) inMemory.add(f.generation);
    const live = all.filter((t) => !(levelOf(t) === 0 && inMemory.has(t.generation)));
    const level0 = live.filter((t) => levelOf(t) === 0).sort((a, b) => b.generation - a.generation);
    const level1 = live
      .filter((t) => levelOf(t) >= 1)
      .sort((a, b) => (this.keyEncoder ? byMinKey(a, b) : generationsOf(a).min - generationsOf(b).min));
    const tables = [...level0, ...level1];
    this.order = { of: all, active, frozen: frozen.map((f) => f.generation), tables };
    return tables;
  }

  /**
   * The block of `open` that may hold key `k` (encoded as `probe`): its Bloom filter and block index
   * admit it. -1 otherwise. Counts the read stats of that decision (a get's per-file figures).
   */
  private candidateBlock(open: OpenTable, k: Key, probe: string): number {
    const stats = this.cache.stats;
    if (open.bloom) {
      if (!open.bloom.mayContain(k)) {
        stats.bloomNegatives++;
        return -1;
      }
      stats.bloomPositives++;
    }
    stats.tableFilesConsulted++;
    const i = findBlock(open, probe);
    if (i < 0 && open.bloom) stats.bloomFalsePositives++;
    return i;
  }

  private isTombstone(batch: RecordBatch, row: number): boolean {
    return this.storeSchema.hasTombstone && batch.getChildAt(this.storeSchema.internal.fields.length - 1)!.get(row) === true;
  }

  /**
   * The newest version of the row with this primary key, or undefined (absent or deleted).
   * `NotSupported` without a primary key; `InvalidArgument` for a bad key.
   */
  async get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'get needs a primary key (this store is append-only)');
    const k = encodeKey(key, this.storeSchema);
    this.cache.stats.gets++;
    const now = this.getNow(k);
    if (now !== NEEDS_IO) return now;
    const view = this.capture();
    const hit = this.inMemtables(view, k);
    if (hit) return hit.row;
    const names = view.tables.map((t) => t.name);
    this.cache.pin(names);
    try {
      const loc = await this.inTables(view, k);
      return loc && !this.isTombstone(loc.batch, loc.row) ? rowObject(loc.batch, loc.row) : undefined;
    } finally {
      this.cache.unpin(names);
    }
  }

  /**
   * A point read answered in this synchronous step — from the memtables, or from table files
   * whose index is read and whose candidate block is cached (a hit costs no wait, no pin, no
   * capture) — or NEEDS_IO when a file it must consult is not open or its block not cached; the
   * read stats of the table files are counted only when it answers (the asynchronous path that
   * follows counts them itself).
   */
  private getNow(k: Key): Record<string, unknown> | undefined | typeof NEEDS_IO {
    const active = this.tier.active;
    const frozen = this.tier.frozen;
    for (let i = frozen.length; i >= 0; i--) {
      const m = i === frozen.length ? active : frozen[i]!;
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b >= m.visibleBatches) continue;
      const batch = m.batches[b]!;
      return this.isTombstone(batch, row) ? undefined : rowObject(batch, row);
    }
    const found = this.tablesNow(this.tableOrder(), k);
    if (found === NEEDS_IO) return NEEDS_IO;
    return found && !found.block.deleted(found.row) ? found.block.row(found.row) : undefined;
  }

  /**
   * Key `k` in `tables` (newest first) in this synchronous step: its block and row (a delete
   * marker included), undefined when no file holds it, or NEEDS_IO when a file it must consult is
   * not open or its block not cached. The read stats count only when it answers.
   */
  private tablesNow(tables: readonly TableFileEntry[], k: Key): { block: Block; row: number } | undefined | typeof NEEDS_IO {
    const probe = keyString(k, this.storeSchema);
    let negatives = 0;
    let positives = 0;
    let consulted = 0;
    let falsePositives = 0;
    let hits = 0;
    let found: { block: Block; row: number } | undefined;
    for (const t of tables) {
      const range = keyRange(t);
      if (range && (probe < range.min || probe > range.max)) continue;
      const open = this.cache.openNow(t);
      if (!open) return NEEDS_IO;
      if (open.bloom) {
        if (!open.bloom.mayContain(k)) {
          negatives++;
          continue;
        }
        positives++;
      }
      consulted++;
      const i = findBlock(open, probe);
      if (i < 0) {
        if (open.bloom) falsePositives++;
        continue;
      }
      const block = open.cached(i);
      if (!block) return NEEDS_IO;
      hits++;
      const row = block.find(probe);
      if (row < 0) {
        if (open.bloom) falsePositives++;
        continue;
      }
      found = { block, row };
      break;
    }
    const stats = this.cache.stats;
    stats.bloomNegatives += negatives;
    stats.bloomPositives += positives;
    stats.tableFilesConsulted += consulted;
    stats.bloomFalsePositives += falsePositives;
    stats.blockCacheHits += hits;
    return found;
  }

  /**
   * {@link newestIn} answered in this synchronous step (no pin needed), or NEEDS_IO when a table
   * file it must consult is not open or its block not cached (then call newestIn).
   */
  newestNow(view: ViewCapture, k: Key): { batch: RecordBatch; row: number } | undefined | typeof NEEDS_IO {
    for (const { m, visible } of view.memtables) {
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b < visible) return { batch: m.batches[b]!, row };
      return NEEDS_IO; // overwritten since the capture: newestIn looks for the captured version
    }
    const found = this.tablesNow(view.tables, k);
    if (found === NEEDS_IO || found === undefined) return found;
    return { batch: found.block.batch, row: found.row };
  }

  /**
   * The newest version of key `k` in the captured table files (newest first), as its batch and
   * row (a delete marker included), or undefined. Skips a file by its key range, then by its Bloom
   * filter and block index, and counts the read stats of each decision (a get's per-file figures).
   * The caller pins the files.
   */
  private async inTables(view: ViewCapture, k: Key): Promise<{ batch: RecordBatch; row: number } | undefined> {
    const probe = keyString(k, this.storeSchema);
    for (const t of view.tables) {
      const range = keyRange(t);
      if (range && (probe < range.min || probe > range.max)) continue;
      const open = await this.cache.open(t);
      const i = this.candidateBlock(open, k, probe);
      if (i < 0) continue;
      const block = await open.block(i);
      const row = block.find(probe);
      if (row < 0) {
        if (open.bloom) this.cache.stats.bloomFalsePositives++;
        continue;
      }
      return { batch: block.batch, row };
    }
    return undefined;
  }

  /**
   * The rows of many primary keys: `out[i]` is the newest version of `keys[i]`'s row, or undefined
   * (absent or deleted); duplicates are allowed. Every key is checked first (`InvalidArgument`
   * naming its index, nothing read), then one capture serves the whole batch (a consistent
   * snapshot), and the keys the memtables do not answer are looked up file by file in key order,
   * so each table block is read at most once per batch. Each key counts as one get in `readStats`.
   * `NotSupported` without a primary key.
   */
  async getMany(keys: readonly Record<string, unknown>[]): Promise<(Record<string, unknown> | undefined)[]> {
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'getMany needs a primary key (this store is append-only)');
    checkBatch(keys);
    const encoded = keys.map((key, i) => {
      try {
        return encodeKey(key, this.storeSchema);
      } catch (e) {
        throw e instanceof MemWalError ? new MemWalError(e.code, `getMany: keys[${i}]: ${e.message}`) : e;
      }
    });
    const stats = this.cache.stats;
    stats.gets += keys.length;
    const out: (Record<string, unknown> | undefined)[] = new Array(keys.length).fill(undefined);
    const view = this.capture();
    // The memtables, in this synchronous step; a key they miss waits for the table files.
    const misses = new Map<string, number[]>();
    encoded.forEach((k, i) => {
      const hit = this.inMemtables(view, k);
      if (hit) out[i] = hit.row;
      else {
        const probe = keyString(k, this.storeSchema);
        const at = misses.get(probe);
        if (at) at.push(i);
        else misses.set(probe, [i]);
      }
    });
    // Each file newest first: its keys (in key order) grouped by block, the blocks read a few at a
    // time, so the I/O of one overlaps the search of another.
    type Want = { probe: string; k: Key };
    let left: Want[] = [...misses.keys()].sort().map((probe) => ({ probe, k: encoded[misses.get(probe)![0]!]! }));
    const names = view.tables.map((t) => t.name);
    this.cache.pin(names);
    try {
      for (const t of view.tables) {
        if (left.length === 0) break;
        let open: OpenTable | undefined;
        const unresolved: Want[] = [];
        const byBlock = new Map<number, Want[]>();
        for (const want of left) {
          const { probe, k } = want;
          const range = keyRange(t);
          if (range && (probe < range.min || probe > range.max)) {
            unresolved.push(want);
            continue;
          }
          open ??= await this.cache.open(t);
          const i = this.candidateBlock(open, k, probe);
          if (i < 0) unresolved.push(want);
          else {
            const group = byBlock.get(i);
            if (group) group.push(want);
            else byBlock.set(i, [want]);
          }
        }
        const blocks = [...byBlock];
        const readBlocks = async (): Promise<void> => {
          for (let next = blocks.shift(); next; next = blocks.shift()) {
            const [i, wants] = next;
            const block = await open!.block(i);
            for (const want of wants) {
              const row = block.find(want.probe);
              if (row < 0) {
                if (open!.bloom) stats.bloomFalsePositives++;
                unresolved.push(want);
                continue;
              }
              const deleted = this.isTombstone(block.batch, row);
              for (const at of misses.get(want.probe)!) out[at] = deleted ? undefined : rowObject(block.batch, row); // each answer its own
            }
          }
        };
        // Every reader ends before the files are unpinned; then the first failure is the batch's.
        const readers = await Promise.allSettled(Array.from({ length: Math.min(GET_MANY_BLOCKS_IN_FLIGHT, blocks.length) }, readBlocks));
        for (const r of readers) if (r.status === 'rejected') throw r.reason;
        left = unresolved;
      }
      return out;
    } finally {
      this.cache.unpin(names);
    }
  }

  /**
   * The newest version of key `k` in `view` (a row or a delete marker), as its batch and row, or
   * undefined when no tier holds it. May run turns after the capture: a memtable's version put
   * since (past its captured visible prefix) is passed over for the one the capture saw. The
   * caller pins the view's files.
   */
  async newestIn(view: ViewCapture, k: Key): Promise<{ batch: RecordBatch; row: number } | undefined> {
    for (const { m, visible } of view.memtables) {
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b < visible) return { batch: m.batches[b]!, row };
      // Overwritten since the capture: its version then is the newest one below the prefix.
      for (let bb = Math.min(visible, m.batches.length) - 1; bb >= 0; bb--) {
        const keys = m.batchKeys[bb]!;
        for (let r = keys.length - 1; r >= 0; r--) if (keys[r] === k) return { batch: m.batches[bb]!, row: r };
      }
    }
    return this.inTables(view, k);
  }

  /** Is row `row` of `batch` a delete marker? */
  deleted(batch: RecordBatch, row: number): boolean {
    return this.isTombstone(batch, row);
  }

  /** Key `k` in the captured memtables (newest first): `{ row }` (undefined when deleted), or undefined when none holds it. */
  private inMemtables(view: ViewCapture, k: Key): { row: Record<string, unknown> | undefined } | undefined {
    for (const { m, visible } of view.memtables) {
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b >= visible) continue;
      const batch = m.batches[b]!;
      return { row: this.isTombstone(batch, row) ? undefined : rowObject(batch, row) };
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

/** Decoded key ranges of manifest entries (entries are immutable; a get checks every file's). */
const keyRanges = new WeakMap<TableFileEntry, { min: string; max: string }>();

/** The key range of a keyed table file (encoded), or undefined when the entry has none. */
function keyRange(t: TableFileEntry): { min: string; max: string } | undefined {
  if (t.minKey === undefined) return undefined;
  let r = keyRanges.get(t);
  if (!r) keyRanges.set(t, (r = { min: keyFromHex(t.minKey), max: keyFromHex(t.maxKey!) }));
  return r;
}
