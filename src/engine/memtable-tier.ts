// MemTable mode's tier (tier.ts): the memtables (memtable-set.ts), the flusher, the background lanes
// that flush and compact, the table files and the reads over all of them. Built once the store
// is claimed; every part gets the writer's context (context.ts) and the few parts it works with.

import type { RecordBatch, Table } from 'apache-arrow';
import type { Key } from '../data/keys.js';
import { compactIfSparse, tombstoneBatch } from '../data/rows.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { recordedVersions, type SchemaVersions } from '../format/schema-versions.js';
import { decodePayload } from '../format/wal/payload.js';
import { type PreparedIndexing, estimateInsertBytes } from '../lsm/memtable.js';
import { TableCache } from '../lsm/table-cache.js';
import type { CompactionResult, CompactionStats, MemTableStats, ReadStats, StatsSnapshot } from '../metrics/stats.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import { nowMs, yieldToEventLoop } from '../util/schedule.js';
import { Background } from './background.js';
import { Compactor } from './compaction.js';
import type { ClaimedContext } from './context.js';
import { Flusher } from './flusher.js';
import { IndexBuild } from './index-build.js';
import { settleWithin } from './limits.js';
import { MemtableSet } from './memtable-set.js';
import { ReadView } from './read-view.js';
import { type IndexStats, IndexQueries, type QueryOptions } from './query.js';
import { type SearchHit, type SearchOptions, TextSearch } from './search.js';
import type { QueryFilter } from '../data/index-keys.js';
import { type NearestHit, type NearestOptions, VectorSearch } from './nearest.js';
import type { ReadFootprint } from './watch.js';
import type { WalRecord } from './recovery.js';
import type { Tier } from './tier.js';
import type { PendingEntry, WalWriter } from './wal-writer.js';

/** A table-file read, under its time limit, failing with a MemWalError (storage's own errors mapped to codes). */
function readTableFile(read: Promise<Uint8Array>, limitMs: number, name: string): Promise<Uint8Array> {
  return settleWithin(read, limitMs, `read of table file ${name}`).catch((e: unknown) => {
    throw toMemWalError(e, `read of table file ${name}`);
  });
}

/** MemTable mode: memtables in front of table files in two levels, flushed and compacted in the background. */
export class MemtableTier implements Tier {
  readonly mode = 'memtable';
  private readonly memtables: MemtableSet;
  private readonly tableCache: TableCache;
  private readonly compactor: Compactor;
  private readonly flusher: Flusher;
  private readonly background: Background;
  private readonly indexBuild: IndexBuild;
  private readonly reads: ReadView;
  private readonly queries: IndexQueries;
  private readonly vectors: VectorSearch;
  private readonly searches: TextSearch;

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly parts: {
      wal: WalWriter;
      /** The store's schema versions (older data is read in the current one). */
      versions: SchemaVersions;
      /** A flush committed (the WAL behind it may be removed). */
      onFlushed(): void;
    },
  ) {
    const { handle, keyEncoder, log, options, schema } = ctx;
    const { wal, versions } = parts;
    const limit = options.flushRetry.stallMs;
    this.tableCache = new TableCache(
      schema,
      schema.internal,
      keyEncoder,
      {
        range: (name, offset, length) => readTableFile(handle.tableReadRange(name, offset, length), limit, name),
        whole: (name) => readTableFile(handle.tableRead(name), limit, name),
      },
      options.blockCacheBytes,
      versions,
    );
    const cache = this.tableCache;
    const m = log.manifest;
    // The jobs build each table file's index sections for the declared indexes (SPEC §17).
    const built = options.indexes.length > 0 ? { ...schema, indexes: options.indexes } : schema;
    const jobs = ctx.io.jobs({
      schema: built,
      keyEncoder,
      versions: recordedVersions(m),
      currentVersion: m.schemaVersion ?? 1,
      open: (t) => cache.open(t),
    });
    this.memtables = new MemtableSet(
      ctx,
      wal,
      { flush: () => this.background.flushLane.wake(), compaction: () => this.background.compactionLane.wake() },
      m,
    );
    this.compactor = new Compactor(ctx, { jobs, cache });
    this.flusher = new Flusher(ctx, {
      jobs,
      memtables: this.memtables,
      segmentsOf: (first, last) =>
        wal.segments
          .filter((s) => s.lastPosition >= first && s.firstPosition <= last)
          .map((s) => ({ name: s.name, firstPosition: s.firstPosition, lastPosition: s.lastPosition })),
      durablePosition: () => wal.durablePosition,
      onCommitted: parts.onFlushed,
    });
    this.indexBuild = new IndexBuild(ctx, { cache, compactor: this.compactor });
    this.background = new Background(ctx, {
      memtables: this.memtables,
      flusher: this.flusher,
      compactor: this.compactor,
      indexBuild: this.indexBuild,
    });
    this.reads = new ReadView(schema, keyEncoder, this.memtables, () => log.manifest.tables, cache);
    this.queries = new IndexQueries(schema, options.indexes, this.reads, this.memtables, () => log.manifest.tables, cache);
    this.vectors = new VectorSearch(schema, options.vectorIndexes, {
      reads: this.reads,
      memtables: this.memtables,
      tables: () => log.manifest.tables,
      cache,
      queries: this.queries,
      lanes: ctx.lanes,
      life: ctx.life,
    });
    this.searches = new TextSearch(schema, options.textIndexes, this.queries, this.reads, this.memtables, () => log.manifest.tables, cache);
  }

  // ------------------------------------------------------------------ the put path

  unflushedBytes(): number {
    return this.memtables.unflushedBytes();
  }

  /** Each batch's index work, done before a put is checked (MemtableSet.prepareIndexing). */
  prepareIndexing(batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined): PreparedIndexing[] | undefined {
    return this.memtables.prepareIndexing(batches, keys);
  }

  insert(
    batches: RecordBatch[],
    keys: ArrayLike<Key>[] | undefined,
    sizes: number[],
    bytes: number,
    rows: number,
    prepared?: PreparedIndexing[],
  ): PendingEntry {
    const e = this.memtables.insert(batches, keys, sizes, bytes, rows, prepared);
    this.vectors.wake(); // graph building follows the rows, in the background
    return e;
  }

  onBlocked(): void {
    this.memtables.onBlocked();
  }

  onDurable(e: PendingEntry): void {
    this.memtables.onDurable(e);
  }

  retentionCursor(m: Manifest): number {
    return m.consumerCursor === null ? m.replayCursor : Math.min(m.replayCursor, m.consumerCursor);
  }

  flushStage(): string {
    return this.flusher.stage;
  }

  compactionStalled(): boolean {
    return this.background.stalled;
  }

  // ------------------------------------------------------------------ open and close

  /** Replay the entries after the replay cursor into memtables through the normal freeze triggers. */
  async replay(entries: readonly WalRecord[], m: Manifest): Promise<void> {
    const { keyEncoder, life, options, schema, writeStats } = this.ctx;
    const { versions, wal } = this.parts;
    const memtables = this.memtables;
    const start = nowMs();
    for (const e of entries) {
      if (e.position <= m.replayCursor) continue;
      // Never hold more than the budget: wait for flushes as a put would.
      while (memtables.unflushedBytes() >= options.maxUnflushedMemtableBytes) {
        life.throwIfUnusable();
        if (!memtables.hasUncommittedFrozen()) memtables.freeze();
        await life.progress.wait();
      }
      life.throwIfUnusable();
      // A copy of just this payload (decoded at validation, or now): the batches own a compact
      // buffer, not a view of the segment; written in an older schema version, projected onto
      // the current one.
      const decoded = e.table ?? decodePayload(e, (s, epoch) => versions.versionOfEntry(s, epoch) !== undefined, true);
      e.table = undefined; // from now on the memtable holds it (and lets it go once flushed)
      const batches = versions.projectEntry(decoded, e.epoch, e.position).map((b) => compactIfSparse(b, schema.internal));
      const keys = keyEncoder ? batches.map((b) => keyEncoder(b)) : undefined;
      const bytes = batches.map((b, i) => estimateInsertBytes(b, keys?.[i]));
      const active = memtables.active;
      const end = active.append(batches, keys, bytes);
      active.durableBatches = end;
      active.publish(end);
      if (active.firstPosition === 0) active.firstPosition = e.position;
      active.lastPosition = e.position;
      wal.durableBatchCount += batches.length;
      writeStats.replayedEntries += 1;
      for (const b of batches) writeStats.replayedRows += b.numRows;
      if (memtables.freezeTriggered(active)) memtables.freeze();
      if (writeStats.replayedEntries % 64 === 0) await yieldToEventLoop();
    }
    writeStats.replayTimeMs = nowMs() - start;
  }

  freezeForClose(): void {
    this.memtables.freeze();
  }

  async flushForClose(): Promise<MemWalError | undefined> {
    const { life } = this.ctx;
    const lane = this.background.flushLane;
    const unflushed = (): boolean => !life.poisonError && !life.dead && this.memtables.hasUncommittedFrozen() && !this.flusher.closeError;
    if (unflushed()) {
      life.kick.notify();
      lane.wake();
      while (unflushed()) {
        await life.progress.wait();
        if (!lane.busy && unflushed()) lane.wake();
      }
    }
    return this.flusher.closeError;
  }

  hasUnflushed(): boolean {
    return this.memtables.hasUncommittedFrozen();
  }

  // ------------------------------------------------------------------ reads, flushes, stats

  tombstones(keys: Table | Record<string, unknown>[]): RecordBatch | undefined {
    if (!this.ctx.keyEncoder) throw new MemWalError('NotSupported', 'delete needs a primary key (this store is append-only)');
    return tombstoneBatch(keys, this.ctx.schema);
  }

  seal(): number | null {
    this.ctx.life.throwIfUnusable();
    return this.memtables.freeze();
  }

  async waitForFlushDrain(signal: AbortSignal | undefined): Promise<void> {
    const { life, options } = this.ctx;
    const target = this.memtables.active.generation - 1;
    for (;;) {
      if (life.poisonError) throw life.poisonError;
      if (this.memtables.committedGeneration >= target) return;
      if (life.closed || life.dead) throw new MemWalError('Closed', `store ${options.name} closed before its flushes drained`);
      if (signal?.aborted) throw new MemWalError('Aborted', 'waitForFlushDrain aborted');
      await life.progress.wait(signal);
    }
  }

  get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    return this.reads.get(key);
  }

  getMany(keys: readonly Record<string, unknown>[]): Promise<(Record<string, unknown> | undefined)[]> {
    return this.reads.getMany(keys);
  }

  scan(columns: string[] | undefined, limit: number, after?: Record<string, unknown>): AsyncGenerator<RecordBatch> {
    return this.reads.scan(columns, limit, after);
  }

  query(index: string, opts: QueryOptions | undefined): Promise<Record<string, unknown>[]> {
    return this.queries.query(index, opts);
  }

  count(index: string, filter: QueryFilter | undefined): Promise<number> {
    return this.queries.count(index, filter);
  }

  queryFootprint(index: string, filter: QueryFilter | undefined): ReadFootprint {
    return this.queries.watchFootprint(index, filter);
  }

  nearest(index: string, vector: unknown, opts: NearestOptions): Promise<NearestHit[]> {
    return this.vectors.nearest(index, vector, opts);
  }

  search(index: string, text: string, opts: SearchOptions | undefined): Promise<SearchHit[]> {
    return this.searches.search(index, text, opts);
  }

  indexStats(): Record<string, IndexStats> {
    const ordered = this.queries.stats();
    for (const [name, p] of this.indexBuild.progress(this.ctx.log.manifest)) {
      const s = ordered[name];
      if (s) Object.assign(s, p);
    }
    return { ...ordered, ...this.vectors.stats(), ...this.searches.stats() };
  }

  memtableStats(): MemTableStats {
    return this.memtables.snapshot();
  }

  compactionStats(): CompactionStats {
    return this.compactor.snapshot(this.ctx.log.manifest, this.background.pendingBytes());
  }

  readStats(): ReadStats {
    return { ...this.tableCache.stats };
  }

  compact(signal: AbortSignal | undefined): Promise<CompactionResult> {
    this.ctx.life.throwIfUnusable();
    return this.background.compact(signal);
  }

  statsMark(reads = true): number[] {
    const r = this.tableCache.stats;
    const m = this.memtables;
    const mark = [m.frozen.length, m.active.generation, m.active.batches.length, this.compactor.running ? 1 : 0];
    return reads ? [...mark, r.gets, r.blockReads] : mark;
  }

  statsParts(): Pick<StatsSnapshot, 'memtable' | 'compaction' | 'read'> {
    return { memtable: this.memtableStats(), compaction: this.compactionStats(), read: this.readStats() };
  }

  checkInvariants(): void {
    this.memtables.checkInvariants();
    this.tableCache.checkInvariants();
    // Across the parts: memtables are of the generations the manifest has not flushed yet.
    const m = this.ctx.log.manifest;
    const memtables = this.memtables;
    if (m.nextGeneration > memtables.active.generation) {
      throw new Error(`nextGeneration ${m.nextGeneration} above the active memtable's generation ${memtables.active.generation}`);
    }
    for (const f of memtables.frozen) {
      // A flush whose commit landed while in doubt is published at its next attempt.
      const landed = f.pendingTable !== undefined && m.tables.some((t) => t.name === f.pendingTable!.name);
      if (f.state === 'frozen' && f.generation < m.nextGeneration && !landed) {
        throw new Error(`memtable ${f.generation} is not flushed, but the manifest's nextGeneration is ${m.nextGeneration}`);
      }
    }
  }
}
