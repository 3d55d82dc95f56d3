// Reads (SPEC §4.4): a consistent capture of memtables and table files, `get` newest tier first,
// `scan`/`scanBatches` with newest-wins and tombstones, and the decoded-table cache.
// Invariant: a view is captured in one synchronous step, so it never sees a hole or a double.

import { RecordBatch, Table, tableFromIPC } from 'apache-arrow';
import { MemWalError, toMemWalError } from '../errors.js';
import type { TableFileEntry } from '../manifest/manifest.js';
import type { ResolvedOptions } from '../options.js';
import type { StoreHandle } from '../storage/adapter.js';
import { crc32c } from '../wal/crc32c.js';
import { KeyIndex } from './keyindex.js';
import { encodeKey, type Key, type KeyEncoder, keyFromHex, keyString } from './keys.js';
import { settleWithin } from './limits.js';
import { type MemTable, RowOrdinals } from './memtable.js';
import type { MemtableTier } from './memtables.js';
import { concatRows, projectBatch, rowObject } from './rows.js';
import type { StoreSchema } from './schema.js';

/** Decoded table files kept for get() (count, newest used first). */
const TABLE_CACHE_FILES = 4;

/** A decoded table file, cached for get(). */
interface LoadedTable {
  entry: TableFileEntry;
  batches: RecordBatch[];
  keyIndex: KeyIndex | undefined;
  ordinals: RowOrdinals;
}

/** A consistent capture of the read view: newest first. */
interface ViewCapture {
  memtables: { m: MemTable; visible: number }[];
  tables: TableFileEntry[];
}

/** Reads of one MemTable-mode writer. */
export class ReadView {
  private readonly tableCache = new Map<string, Promise<LoadedTable>>();

  constructor(
    private readonly o: ResolvedOptions,
    private readonly ss: StoreSchema,
    private readonly keyEncoder: KeyEncoder | undefined,
    private readonly handle: StoreHandle,
    private readonly tier: MemtableTier,
    /** The committed table files (the manifest's list). */
    private readonly tables: () => readonly TableFileEntry[],
  ) {}

  /** Capture memtables and table files in one synchronous step (no hole, no double). */
  private captureView(): ViewCapture {
    const active = this.tier.active;
    const memtables = [{ m: active, visible: active.visibleBatches }];
    const inMemory = new Set<number>([active.generation]);
    for (let i = this.tier.frozen.length - 1; i >= 0; i--) {
      const f = this.tier.frozen[i]!;
      memtables.push({ m: f, visible: f.visibleBatches });
      inMemory.add(f.generation);
    }
    const tables = this.tables()
      .filter((t) => !inMemory.has(t.generation))
      .sort((a, b) => b.generation - a.generation);
    return { memtables, tables };
  }

  private tombstoneIndex(): number {
    return this.ss.hasTombstone ? this.ss.internal.fields.length - 1 : -1;
  }

  private isTombstone(batch: RecordBatch, row: number): boolean {
    const t = this.tombstoneIndex();
    return t >= 0 && batch.getChildAt(t)!.get(row) === true;
  }

  /**
   * The newest version of the row with this primary key, or undefined (absent or deleted).
   * `NotSupported` without a primary key or in WAL-only mode; `InvalidArgument` for a bad key.
   */
  async get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    if (!this.keyEncoder) throw new MemWalError('NotSupported', 'get needs a primary key (this store is append-only)');
    const k = encodeKey(key, this.ss);
    let encoded: string | undefined;
    const view = this.captureView();
    for (const { m, visible } of view.memtables) {
      const loc = m.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = m.ordinals.locate(loc);
      if (b >= visible) continue;
      const batch = m.batches[b]!;
      return this.isTombstone(batch, row) ? undefined : rowObject(batch, row);
    }
    for (const t of view.tables) {
      if (t.minKey !== undefined) {
        const ks = (encoded ??= keyString(k, this.ss));
        if (ks < keyFromHex(t.minKey) || ks > keyFromHex(t.maxKey!)) continue;
      }
      const lt = await this.loadTable(t);
      const loc = lt.keyIndex!.get(k);
      if (loc === undefined) continue;
      const { batch: b, row } = lt.ordinals.locate(loc);
      const batch = lt.batches[b]!;
      return this.isTombstone(batch, row) ? undefined : rowObject(batch, row);
    }
    return undefined;
  }

  /** Read, verify and decode a table file (cached for a few files). */
  loadTable(t: TableFileEntry): Promise<LoadedTable> {
    const cached = this.tableCache.get(t.name);
    if (cached) {
      this.tableCache.delete(t.name);
      this.tableCache.set(t.name, cached);
      return cached;
    }
    const p = (async (): Promise<LoadedTable> => {
      let bytes: Uint8Array;
      try {
        bytes = await settleWithin(this.handle.tableRead(t.name), this.o.flushRetry.stallMs, `read of table file ${t.name}`);
      } catch (e) {
        throw toMemWalError(e, `read of table file ${t.name}`);
      }
      if (bytes.length !== t.bytes || crc32c(bytes).toString(16).padStart(8, '0') !== t.checksum) {
        throw new MemWalError('Corruption', `table file ${t.name}: length or checksum differs from the manifest`);
      }
      const table = tableFromIPC(bytes) as Table;
      const batches = table.batches.map((b) => new RecordBatch(this.ss.internal, b.data));
      let keyIndex: KeyIndex | undefined;
      const ordinals = new RowOrdinals();
      for (const b of batches) ordinals.add(b.numRows);
      if (this.keyEncoder) {
        keyIndex = new KeyIndex();
        for (let bi = 0; bi < batches.length; bi++) {
          const keys = this.keyEncoder(batches[bi]!);
          const base = ordinals.start(bi);
          for (let r = 0; r < keys.length; r++) keyIndex.set(keys[r]!, base + r);
        }
      }
      return { entry: t, batches, keyIndex, ordinals };
    })();
    p.catch(() => this.tableCache.delete(t.name));
    this.tableCache.set(t.name, p);
    while (this.tableCache.size > TABLE_CACHE_FILES) this.tableCache.delete(this.tableCache.keys().next().value!);
    return p;
  }

  /**
   * Every live row across all tiers (newest version per key; deleted keys absent), oldest tier
   * first. `columns` projects. `NotSupported` in WAL-only mode.
   */
  async scan(opts: { columns?: string[] } = {}): Promise<Table> {
    const batches: RecordBatch[] = [];
    for await (const b of this.scanSources(opts.columns, Infinity, true)) batches.push(b);
    const schema = projectBatch(new RecordBatch(this.ss.internal, undefined as never), opts.columns, true).schema;
    return batches.length > 0 ? new Table(batches) : new Table(schema);
  }

  /**
   * The same rows as `scan`, one record batch at a time, holding one table file in memory at a
   * time (plus the set of keys already seen). With a primary key, batches come newest tier
   * first. `limit` caps the total rows yielded.
   */
  scanBatches(opts: { columns?: string[]; limit?: number } = {}): AsyncIterable<RecordBatch> {
    const limit = opts.limit ?? Infinity;
    if (!(limit >= 0)) throw new MemWalError('InvalidArgument', 'scanBatches: limit must be >= 0');
    return this.scanSources(opts.columns, limit, false);
  }

  async *scanSources(columns: string[] | undefined, limit: number, oldestFirst: boolean): AsyncGenerator<RecordBatch> {
    const view = this.captureView();
    let left = limit;
    const emit = (batch: RecordBatch, rows: number[] | 'all'): RecordBatch[] => {
      if (left <= 0) return [];
      let sel = rows;
      const n = sel === 'all' ? batch.numRows : sel.length;
      if (n === 0) return [];
      if (n > left) sel = (sel === 'all' ? [...Array(batch.numRows).keys()] : sel).slice(0, left);
      left -= sel === 'all' ? batch.numRows : sel.length;
      return concatRows([{ batch, rows: sel }], this.ss.internal).map((b) => projectBatch(b, columns, true));
    };
    if (!this.keyEncoder) {
      // Append-only: every visible row, oldest first.
      const sources: RecordBatch[][] = [];
      for (const t of [...view.tables].reverse()) sources.push((await this.loadTable(t)).batches);
      for (const { m, visible } of [...view.memtables].reverse()) sources.push(m.batches.slice(0, visible));
      for (const src of sources) for (const b of src) for (const out of emit(b, 'all')) yield out;
      return;
    }
    // Keyed: newest first; a key seen in a newer tier hides older versions; tombstones hide.
    const seen = new Set<Key>();
    const tomb = this.tombstoneIndex();
    const pending: { batch: RecordBatch; rows: number[] }[] = [];
    const select = (batch: RecordBatch, keys: ArrayLike<Key>, newest: (r: number) => boolean): number[] => {
      const t = batch.getChildAt(tomb)!;
      const rows: number[] = [];
      for (let r = keys.length - 1; r >= 0; r--) {
        const k = keys[r]!;
        if (!newest(r) || seen.has(k)) continue;
        seen.add(k);
        if (t.get(r) !== true) rows.push(r);
      }
      return rows.reverse();
    };
    for (const { m, visible } of view.memtables) {
      for (let b = visible - 1; b >= 0; b--) {
        const rows = select(m.batches[b]!, m.batchKeys[b]!, (r) => m.isNewest(b, r));
        if (oldestFirst) pending.push({ batch: m.batches[b]!, rows });
        else for (const out of emit(m.batches[b]!, rows)) yield out;
      }
    }
    for (const t of view.tables) {
      const lt = await this.loadTable(t);
      for (let b = lt.batches.length - 1; b >= 0; b--) {
        const batch = lt.batches[b]!;
        const rows = select(batch, this.keyEncoder(batch), () => true);
        if (oldestFirst) pending.push({ batch, rows });
        else for (const out of emit(batch, rows)) yield out;
      }
    }
    for (let i = pending.length - 1; i >= 0; i--) for (const out of emit(pending[i]!.batch, pending[i]!.rows)) yield out;
  }
}
