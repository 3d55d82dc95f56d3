// The table files a writer reads: their indexes (resident for every open file, outside the block
// budget), a block cache bounded by `blockCacheBytes` or by default sized from the open files up
// to a ceiling from the device's memory (blockCacheCeiling), read statistics, and pins that keep
// a file a reader still uses from being deleted. Format-1 files (the first release) are read whole and held sorted in memory,
// a few at a time. Invariant: cached block bytes never exceed the bound after an insert.

import { RecordBatch, type Schema, type Table, tableFromIPC, type Vector } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import type { BloomFilter } from '../format/table/bloom.js';
import { blockTargetBytes, TABLE_FORMAT_V1 } from '../format/table/format.js';
import { checkSection, decodeBlock, readTableIndex, type TableIndex } from '../format/table/reader.js';
import type { SectionInfo } from '../format/table/sections.js';
import { sortKeys } from './sorted.js';
import { cutBlocks } from '../format/table/writer.js';
import { crc32c } from '../util/crc32c.js';
import { KeyIndex } from '../data/key-index.js';
import { type Key, type KeyEncoder, keyString, makeRowKeyComparer, type RowKeyComparer } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import type { SchemaVersions } from '../format/schema-versions.js';
import { allRows, gather, gatherBatch, makeBatch } from '../data/select.js';
import { estimateBatchBytes } from '../data/size.js';
import { rowReader } from '../data/rows.js';
import type { Row } from '../data/plain-rows.js';
import type { ReadStats } from '../metrics/stats.js';
import { deviceMemoryGiB } from '../storage/device.js';

/**
 * A decoded block: its rows and (keyed stores) their keys, in key order. A point read searches the
 * key column ({@link Block.find}); the keys of every row are encoded only when a scan or a
 * compaction asks for them, then kept with the block.
 */
export class Block {
  private keys_: ArrayLike<Key> | undefined;
  private compare: ((row: number, probe: string) => number) | undefined;

  private row_: ((row: number) => Row) | undefined;
  private tombstones: Vector | undefined;

  constructor(
    readonly batch: RecordBatch,
    private readonly keyEncoder: KeyEncoder | undefined,
    private readonly rowKeyComparer: RowKeyComparer | undefined,
    /** The index of the delete-marker column (`StoreSchema.hasTombstone`: the last one), or -1. */
    private readonly tombstoneColumn = -1,
  ) {}

  /** Row `row` as a plain object (`rowObject`'s answer), its column vectors made once per block. */
  row(row: number): Row {
    return (this.row_ ??= rowReader(this.batch))(row);
  }

  /** Row `row` is a delete marker. */
  deleted(row: number): boolean {
    if (this.tombstoneColumn < 0) return false;
    return (this.tombstones ??= this.batch.getChildAt(this.tombstoneColumn)!).get(row) === true;
  }

  /** Every row's key (keyed stores; undefined for append-only ones), encoded on first use. */
  get keys(): ArrayLike<Key> | undefined {
    if (this.keys_ === undefined && this.keyEncoder) this.keys_ = this.keyEncoder(this.batch);
    return this.keys_;
  }

  /**
   * The row whose key is `probe` (encoded, {@link keyString} form), or -1: a binary search that
   * encodes about log2(rows) keys, straight from the key columns. Keyed stores only.
   */
  find(probe: string): number {
    const compare = (this.compare ??= this.rowKeyComparer!(this.batch));
    let lo = 0;
    let hi = this.batch.numRows - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = compare(mid, probe);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/** What a reader knows of one live table file without reading its blocks. */
export interface OpenTable {
  readonly entry: TableFileEntry;
  /** Per block: rows and first/last key (encoded; empty without a key). */
  readonly blocks: readonly { rows: number; first: string; last: string }[];
  readonly bloom: BloomFilter | undefined;
  /**
   * Block `i` (from the cache, or one ranged read). `fill` false: a bulk reader (compaction) that
   * neither fills the cache nor counts in the read stats.
   */
  block(i: number, fill?: boolean): Promise<Block>;
  /**
   * Block `i` if the cache holds it (made the most recently used; the caller counts the hit in
   * `stats.blockCacheHits`), else undefined: no I/O, no wait.
   */
  cached(i: number): Block | undefined;
  /** Its index sections (format 3; none before). */
  readonly sections: readonly SectionInfo[];
  /** The bytes of section `s` (one ranged read, checked against its CRC; not cached here). */
  section(s: SectionInfo): Promise<Uint8Array>;
}

/** How the cache reaches storage (already time-limited by the caller). */
export interface TableReads {
  range(name: string, offset: number, length: number): Promise<Uint8Array>;
  whole(name: string): Promise<Uint8Array>;
}

/** Format-1 files held whole (count). */
const V1_FILES = 4;

/** The default block budget's floor: what the cache may hold however little has been opened. */
export const BLOCK_CACHE_MIN_BYTES = 8 * 1024 * 1024;
/**
 * The default block budget's ceiling where the device's memory is unknown (Node, Firefox, Safari,
 * an edge isolate): as much as the default unflushed-memtable budget, so that a tab's two big
 * consumers stay within what a browser tab or a Node process holds comfortably.
 */
export const BLOCK_CACHE_MAX_BYTES = 64 * 1024 * 1024;
/** The share of the device's memory (`navigator.deviceMemory`) the default block budget may grow to. */
export const BLOCK_CACHE_DEVICE_SHARE = 1 / 8;
/** The default block budget's ceiling on any device: 1 GiB. */
export const BLOCK_CACHE_DEVICE_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * The ceiling of the default block budget on a device with `gib` GiB of memory (the
 * browser's `navigator.deviceMemory`, which Chromium rounds down to a power of two and caps at 8;
 * undefined where it is not exposed): an eighth of that memory, at least BLOCK_CACHE_MAX_BYTES
 * (64 MiB) and at most BLOCK_CACHE_DEVICE_MAX_BYTES (1 GiB) — 1 GiB on a device Chromium reports
 * as 8 GiB, 512 MiB on a 4 GiB one, 64 MiB on 0.5 GiB or where the memory is not known. The
 * storage quota is not an input of its own: the budget never exceeds the bytes of the table
 * files opened (plus a quarter), which the quota already bounds.
 */
export function blockCacheCeiling(gib: number | undefined): number {
  if (gib === undefined || !Number.isFinite(gib) || gib <= 0) return BLOCK_CACHE_MAX_BYTES;
  const share = Math.floor(gib * 1024 * 1024 * 1024 * BLOCK_CACHE_DEVICE_SHARE);
  return Math.min(BLOCK_CACHE_DEVICE_MAX_BYTES, Math.max(BLOCK_CACHE_MAX_BYTES, share));
}

/**
 * The default block budget for `openBytes` bytes of open table files: those bytes plus a quarter
 * (a cached block also counts 8 bytes a row for its keys), at least BLOCK_CACHE_MIN_BYTES, at
 * most `ceiling` ({@link blockCacheCeiling} of the device).
 */
export function defaultBlockCacheBytes(openBytes: number, ceiling = BLOCK_CACHE_MAX_BYTES): number {
  return Math.min(ceiling, Math.max(BLOCK_CACHE_MIN_BYTES, Math.ceil(openBytes * 1.25)));
}

export function zeroReadStats(): ReadStats {
  return {
    gets: 0,
    tableFilesConsulted: 0,
    bloomNegatives: 0,
    bloomPositives: 0,
    bloomFalsePositives: 0,
    blockReads: 0,
    blockCacheHits: 0,
    blockCacheBytes: 0,
    blockCacheLimitBytes: 0,
    indexBytes: 0,
  };
}

/** Indexes, blocks and pins of the live table files of one writer. */
export class TableCache {
  private readonly open_ = new Map<string, Promise<OpenTable>>();
  /** The format-2 files of `open_` whose index is read: a point read's synchronous path ({@link openNow}). */
  private readonly ready = new Map<string, OpenTable>();
  private readonly v1 = new Map<string, Promise<OpenTable>>();
  private readonly blocks = new Map<string, { block: Block; bytes: number }>();
  private readonly pins = new Map<string, number>();
  private readonly unpinned = new Map<string, (() => void)[]>();
  readonly stats: ReadStats = zeroReadStats();
  private readonly rowKeyComparer: RowKeyComparer | undefined;
  /** File bytes and index bytes of each open format-2 file (what the default budget is sized from). */
  private readonly sized = new Map<string, { bytes: number; index: number }>();
  private openBytes = 0;

  constructor(
    private readonly storeSchema: StoreSchema,
    private readonly schema: Schema,
    private readonly keyEncoder: KeyEncoder | undefined,
    private readonly reads: TableReads,
    /** The block budget; undefined: sized from the open files ({@link defaultBlockCacheBytes}). */
    private readonly cacheBytes: number | undefined,
    /** Schema versions of files written before the current one (absent: one version). */
    private readonly versions?: SchemaVersions,
    /** The default budget's ceiling ({@link blockCacheCeiling}; by default this device's). */
    private readonly ceiling = blockCacheCeiling(deviceMemoryGiB()),
  ) {
    this.rowKeyComparer = keyEncoder ? makeRowKeyComparer(storeSchema) : undefined;
    this.stats.blockCacheLimitBytes = this.limit();
  }

  /** The block budget now. */
  private limit(): number {
    return this.cacheBytes ?? defaultBlockCacheBytes(this.openBytes, this.ceiling);
  }

  /** Evict least recently used blocks until the cache is within its budget. */
  private evict(): void {
    const limit = this.limit();
    this.stats.blockCacheLimitBytes = limit;
    while (this.stats.blockCacheBytes > limit) {
      const [oldest, v] = this.blocks.entries().next().value!;
      this.blocks.delete(oldest);
      this.stats.blockCacheBytes -= v.bytes;
    }
  }

  /** The open table for `entry` (its index read once, then resident). */
  open(entry: TableFileEntry): Promise<OpenTable> {
    const v1 = (entry.format ?? TABLE_FORMAT_V1) === TABLE_FORMAT_V1;
    const map = v1 ? this.v1 : this.open_;
    let p = map.get(entry.name);
    if (p) {
      map.delete(entry.name);
      map.set(entry.name, p);
      return p;
    }
    p = v1 ? this.openV1(entry) : this.openV2(entry);
    p.catch(() => map.get(entry.name) === p && map.delete(entry.name));
    map.set(entry.name, p);
    if (v1) while (this.v1.size > V1_FILES) this.v1.delete(this.v1.keys().next().value!);
    return p;
  }

  /** The open table for `entry` if its index is already read (no I/O, no wait), else undefined. */
  openNow(entry: TableFileEntry): OpenTable | undefined {
    return this.ready.get(entry.name);
  }

  /** Drop what is cached of a file that left the manifest. */
  forget(name: string): void {
    this.open_.delete(name);
    this.ready.delete(name);
    this.v1.delete(name);
    this.unsize(name);
    for (const k of [...this.blocks.keys()]) {
      if (k.startsWith(`${name}#`)) {
        this.stats.blockCacheBytes -= this.blocks.get(k)!.bytes;
        this.blocks.delete(k);
      }
    }
    this.evict();
  }

  private unsize(name: string): void {
    const s = this.sized.get(name);
    if (!s) return;
    this.sized.delete(name);
    this.openBytes -= s.bytes;
    this.stats.indexBytes -= s.index;
  }

  /** The cache's invariants (docs/impl.md §4), checked (cheap; for tests). Throws an Error naming the broken one. */
  checkInvariants(): void {
    let bytes = 0;
    for (const { bytes: b } of this.blocks.values()) bytes += b;
    if (bytes !== this.stats.blockCacheBytes)
      throw new Error(`block cache holds ${bytes} bytes, its stats say ${this.stats.blockCacheBytes}`);
    if (bytes > this.limit()) throw new Error(`block cache holds ${bytes} bytes, above its bound ${this.limit()}`);
    let open = 0;
    for (const s of this.sized.values()) open += s.bytes;
    if (open !== this.openBytes) throw new Error(`open table files hold ${open} bytes, the cache counts ${this.openBytes}`);
    for (const [name, n] of this.pins) if (!(n > 0)) throw new Error(`table file ${name} pinned ${n} times`);
  }

  /** A reader uses these files until `unpin`: they are not deleted meanwhile. */
  pin(names: readonly string[]): void {
    for (const n of names) this.pins.set(n, (this.pins.get(n) ?? 0) + 1);
  }

  unpin(names: readonly string[]): void {
    for (const n of names) {
      const left = (this.pins.get(n) ?? 1) - 1;
      if (left > 0) {
        this.pins.set(n, left);
        continue;
      }
      this.pins.delete(n);
      const waiters = this.unpinned.get(n) ?? [];
      this.unpinned.delete(n);
      for (const w of waiters) w();
    }
  }

  /** Resolves once no reader pins `name`. */
  whenUnused(name: string): Promise<void> {
    if (!this.pins.has(name)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.unpinned.get(name) ?? [];
      list.push(resolve);
      this.unpinned.set(name, list);
    });
  }

  private async openV2(entry: TableFileEntry): Promise<OpenTable> {
    const written = this.versions ? this.versions.internalOf(entry.schemaVersion) : this.schema;
    const index = await readTableIndex(entry.name, entry.bytes, (o, l) => this.reads.range(entry.name, o, l), written, entry.checksum);
    if (this.open_.has(entry.name) && !this.sized.has(entry.name)) {
      this.sized.set(entry.name, { bytes: entry.bytes, index: index.footerBytes });
      this.openBytes += entry.bytes;
      this.stats.indexBytes += index.footerBytes;
      this.stats.blockCacheLimitBytes = this.limit();
    }
    const keys = index.blocks.map((_, i) => `${entry.name}#${i}`);
    const open: OpenTable = {
      entry,
      blocks: index.blocks,
      bloom: index.bloom,
      block: (i, fill = true) => this.blockV2(entry, index, i, fill),
      cached: (i) => this.cachedBlock(keys[i]!),
      sections: index.sections,
      section: async (sec) =>
        checkSection(entry.name, index, sec, await this.reads.range(entry.name, index.sectionAreaStart + sec.offset, sec.length)),
    };
    if (this.open_.has(entry.name)) this.ready.set(entry.name, open);
    return open;
  }

  /** A cached block by its key, made the most recently used (not counted: the caller counts). */
  private cachedBlock(key: string): Block | undefined {
    const hit = this.blocks.get(key);
    if (!hit) return undefined;
    this.blocks.delete(key);
    this.blocks.set(key, hit);
    return hit.block;
  }

  private async blockV2(entry: TableFileEntry, index: TableIndex, i: number, fill: boolean): Promise<Block> {
    const key = `${entry.name}#${i}`;
    const hit = this.blocks.get(key);
    if (hit) {
      if (fill) {
        this.stats.blockCacheHits++;
        this.blocks.delete(key);
        this.blocks.set(key, hit);
      }
      return hit.block;
    }
    if (fill) this.stats.blockReads++;
    const info = index.blocks[i]!;
    const bytes = await this.reads.range(entry.name, info.offset, info.length);
    const batch = this.inSchema(decodeBlock(entry.name, index, i, bytes), entry);
    const block = this.block(batch);
    // The keys a scan may encode later count from the start (8 bytes a row), as if present.
    const size = estimateBatchBytes(batch) + (this.keyEncoder ? batch.numRows * 8 : 0);
    if (fill && size <= this.limit()) {
      this.blocks.set(key, { block, bytes: size });
      this.stats.blockCacheBytes += size;
      this.evict();
    }
    return block;
  }

  /** A format-1 file: read whole, verified, decoded and (keyed) sorted into blocks in memory. */
  private async openV1(entry: TableFileEntry): Promise<OpenTable> {
    const bytes = await this.reads.whole(entry.name);
    if (bytes.length !== entry.bytes || crc32c(bytes).toString(16).padStart(8, '0') !== entry.checksum) {
      throw new MemWalError('Corruption', `table file ${entry.name}: length or checksum differs from the manifest`);
    }
    const batches = (tableFromIPC(bytes) as Table).batches.map((b) => this.inSchema(b, entry));
    let blocks: RecordBatch[];
    if (this.keyEncoder) {
      // One row per key already (flushes dedupe); sort by key.
      const index = new KeyIndex();
      let base = 0;
      for (const b of batches) {
        const keys = this.keyEncoder(b);
        for (let r = 0; r < keys.length; r++) index.set(keys[r]!, base + r);
        base += b.numRows;
      }
      const keys: Key[] = [];
      for (const [k] of index) keys.push(k);
      const sorted = sortKeys(keys, this.storeSchema);
      const ordinals = Int32Array.from(sorted, (k) => index.get(k)!);
      const flat = batches.length === 1 ? batches[0]! : gatherBatch(this.schema, batches.map(allRows), base);
      const children = this.schema.fields.map((f, j) =>
        gather(f.type, [{ data: flat.data.children[j]!, idx: ordinals, start: 0, count: ordinals.length }]),
      );
      blocks = cutBlocks(this.schema, [makeBatch(this.schema, children, ordinals.length)], blockTargetBytes(true));
    } else {
      blocks = batches;
    }
    const decoded = blocks.map((batch) => this.block(batch));
    const bounds = decoded.map((b) => ({
      rows: b.batch.numRows,
      first: b.keys && b.keys.length > 0 ? keyString(b.keys[0]!, this.storeSchema) : '',
      last: b.keys && b.keys.length > 0 ? keyString(b.keys[b.keys.length - 1]!, this.storeSchema) : '',
    }));
    return {
      entry,
      blocks: bounds,
      bloom: undefined,
      block: (i) => Promise.resolve(decoded[i]!),
      cached: (i) => decoded[i],
      sections: [],
      section: () => Promise.reject(new MemWalError('NotSupported', `table file ${entry.name}: format 1 has no index sections`)),
    };
  }

  private block(batch: RecordBatch): Block {
    return new Block(
      batch,
      this.keyEncoder,
      this.rowKeyComparer,
      this.storeSchema.hasTombstone ? this.storeSchema.internal.fields.length - 1 : -1,
    );
  }

  /**
   * A decoded batch of `entry` in the store's current internal schema object: re-wrapped, or
   * (written in an older schema version) projected: added columns null, dropped ones gone.
   */
  private inSchema(b: RecordBatch, entry: TableFileEntry): RecordBatch {
    if (b.schema === this.schema) return b;
    if (this.versions) return this.versions.project(b, entry.schemaVersion);
    return new RecordBatch(this.schema, b.data);
  }
}

/**
 * The block of `t` that may hold key `k` (encoded as `probe`): the first whose last key is not
 * below the probe, if its first key is not above it. -1 when no block can hold it.
 */
export function findBlock(t: OpenTable, probe: string): number {
  let lo = 0;
  let hi = t.blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t.blocks[mid]!.last < probe) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= t.blocks.length || t.blocks[lo]!.first > probe) return -1;
  return lo;
}
