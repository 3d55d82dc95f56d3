// Nearest-neighbour reads (SPEC §17.3, docs/impl.md "Vector indexes"): `nearest(index, vector,
// { k, ef?, where? })` over every tier of one capture of the read view, and the background lane
// that grows the tiers' HNSW graphs. Each tier (memtables newest first, then table files in the
// capture's order) is searched with an `eligible` predicate inside the search (a prefilter, not a
// filter after top-k): a position counts only when its row is the newest version of its key in its
// tier below the captured visible prefix, no newer tier holds that key at all (a newer version or a
// delete marker), and, with `where`, its key is among the rows the ordered filter matches. Every
// tier returns min(k, eligible) hits (vector-index.ts), the union holds each live key once, and the
// k nearest of it are the answer. So an overwritten row's old vector never surfaces nor takes a
// slot, and a deleted row is never returned.
//
// `where`: the ordered query of the filter runs on the same capture and gives the matching rows
// (newest, live). When they are few — |matches|² ≤ ef · 2M · vectors, where an exact scan of the
// matches costs less than a filtered graph walk, which visits about ef / selectivity nodes of 2M
// links — their vectors are ranked exactly; otherwise each tier's graph search admits only matching
// keys. Neither path returns fewer than k rows when k rows match.

import type { RecordBatch } from 'apache-arrow';
import type { QueryFilter } from '../data/index-keys.js';
import { KeyIndex } from '../data/key-index.js';
import type { Key } from '../data/keys.js';
import { rowObject } from '../data/rows.js';
import type { StoreSchema } from '../data/schema.js';
import { batchVectors, checkQueryVector, type ResolvedVectorIndex } from '../data/vector-spec.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { exactNearest, prepareQuery, publicDistance, type VectorHit, VectorStore } from '../lsm/hnsw.js';
import type { MemTable } from '../lsm/memtable.js';
import type { TableCache } from '../lsm/table-cache.js';
import { FileVectorSection, type GraphedVectors } from '../lsm/vector-index.js';
import { MemWalError } from '../util/errors.js';
import { nowMs, yieldToEventLoop } from '../util/schedule.js';
import type { BackgroundLane, BackgroundLanes } from './lane.js';
import type { Lifecycle } from './lifecycle.js';
import type { MemtableSet } from './memtable-set.js';
import type { IndexQueries, IndexStats } from './query.js';
import type { ReadView, ViewCapture } from './read-view.js';

/** `nearest`'s `where`: an ordered index (or `'primary'`) and one of its filters (SPEC §17.1). */
export type NearestWhere = { index: string } & QueryFilter;

/** `nearest`'s options (SPEC §17.3). */
export interface NearestOptions {
  /** How many rows (1..10,000). */
  k: number;
  /** The graph search's beam: larger finds more of the true nearest, slower. Default max(k, 64); never below k. */
  ef?: number;
  /** Only rows this ordered-index filter matches; never fewer than k when k rows match. */
  where?: NearestWhere;
}

/** One row of a `nearest` answer: the row (as `get` returns it) and its distance to the query. */
export interface NearestHit<Row = Record<string, unknown>> {
  row: Row;
  distance: number;
}

/** Most rows one `nearest` returns. */
export const MAX_NEAREST_K = 10_000;
/** Largest `ef`. */
export const MAX_NEAREST_EF = 10_000;
/** The lane's build slice, ms: graph insertions between two turns of the event loop. */
const BUILD_SLICE_MS = 8;

const invalid = (why: string): MemWalError => new MemWalError('InvalidArgument', why);

/** One tier of a capture as a search sees it. */
interface Tier {
  index: GraphedVectors;
  /** Positions [0, n) may count. */
  n: number;
  /** Does this tier hold key `k` at all (any version, a delete marker too)? */
  has(k: Key): boolean;
  /** The key at a position, and whether that position is its key's newest version in this tier. */
  keyAt(pos: number): Key;
  newestHere(pos: number): boolean;
  /** The row at a position. */
  row(pos: number): Promise<Record<string, unknown>>;
}

/**
 * The newest version of `k` in memtable `m` below ordinal `visible` (the captured prefix), or
 * undefined. The key index covers the current visible prefix; a version made visible since the
 * capture sends the look-up back through the older batches.
 */
function newestBelow(m: MemTable, k: Key, visible: number): number | undefined {
  const at = m.keyIndex!.get(k);
  if (at === undefined || at < visible) return at;
  const { batch } = m.ordinals.locate(visible);
  for (let b = Math.min(batch, m.batches.length - 1); b >= 0; b--) {
    const keys = m.batchKeys[b]!;
    const base = m.ordinals.start(b);
    for (let r = keys.length - 1; r >= 0; r--) if (base + r < visible && keys[r] === k) return base + r;
  }
  return undefined;
}

/** Vector reads of one MemTable-mode writer. */
export class VectorSearch {
  /** Table file name -> vector index name -> its section (a file's content never changes). */
  private readonly sections = new Map<string, Map<string, Promise<FileVectorSection>>>();
  /** Grows the graphs of memtables and loaded sections in the background. */
  readonly lane: BackgroundLane | undefined;

  constructor(
    private readonly storeSchema: StoreSchema,
    private readonly indexes: readonly ResolvedVectorIndex[],
    private readonly parts: {
      reads: ReadView;
      memtables: MemtableSet;
      tables: () => readonly TableFileEntry[];
      cache: TableCache;
      queries: IndexQueries;
      lanes: BackgroundLanes;
      life: Lifecycle;
    },
  ) {
    if (indexes.length > 0) {
      this.lane = parts.lanes.add('vector-build', () => this.buildPass(), { atClose: 'stop', mayRun: () => !parts.life.stopping });
    }
  }

  /** Rows arrived (or a section loaded): graphs may have work. */
  wake(): void {
    this.lane?.wake();
  }

  /** The graphs with build work: the live memtables' and the loaded sections'. */
  private pending(): GraphedVectors[] {
    const out: GraphedVectors[] = [];
    const { memtables } = this.parts;
    for (const m of [memtables.active, ...memtables.frozen]) {
      if (m.state === 'committed') continue;
      for (const v of m.vectors) if (v.needsBuild) out.push(v);
    }
    for (const byIndex of this.sections.values()) {
      for (const p of byIndex.values()) {
        const s = settled.get(p);
        if (s?.needsBuild) out.push(s);
      }
    }
    return out;
  }

  /** One pass of the lane: one slice of graph insertions, then a turn of the event loop. */
  private async buildPass(): Promise<'more' | 'idle' | 'stop'> {
    const { life } = this.parts;
    if (life.dead || life.stopping) return 'stop'; // a closing store builds nothing more
    const work = this.pending();
    if (work.length === 0) return 'idle';
    const until = nowMs() + BUILD_SLICE_MS;
    for (const g of work) {
      g.buildFor(until);
      if (nowMs() >= until) break;
    }
    await yieldToEventLoop();
    if (life.dead || life.stopping) return 'stop';
    return this.pending().length > 0 ? 'more' : 'idle';
  }

  private indexOf(name: unknown): ResolvedVectorIndex {
    const ix = this.indexes.find((i) => i.name === name);
    if (!ix) {
      const known = this.indexes.map((i) => `'${i.name}'`).join(', ') || 'none';
      throw invalid(`nearest: no vector index ${JSON.stringify(name)} (this store has ${known})`);
    }
    return ix;
  }

  /** The `k` rows nearest to `vector` on vector index `index` (see the module's header). */
  async nearest(index: string, vector: unknown, opts: NearestOptions): Promise<NearestHit[]> {
    const ix = this.indexOf(index);
    const q = prepareQuery(checkQueryVector(ix, vector), ix.distance);
    if (typeof opts !== 'object' || opts === null) throw invalid('nearest: options must be an object with k');
    for (const key of Object.keys(opts))
      if (key !== 'k' && key !== 'ef' && key !== 'where') throw invalid(`nearest: unknown option "${key}"`);
    const { k, where } = opts;
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_NEAREST_K) {
      throw invalid(`nearest: k must be an integer in 1..${MAX_NEAREST_K}, got ${String(k)}`);
    }
    if (opts.ef !== undefined && (typeof opts.ef !== 'number' || !Number.isInteger(opts.ef) || opts.ef < 1 || opts.ef > MAX_NEAREST_EF)) {
      throw invalid(`nearest: ef must be an integer in 1..${MAX_NEAREST_EF}, got ${String(opts.ef)}`);
    }
    const ef = Math.max(opts.ef ?? 64, k);
    let filter: QueryFilter | undefined;
    if (where !== undefined) {
      if (typeof where !== 'object' || where === null || typeof where.index !== 'string') {
        throw invalid('nearest: where must be { index, equals | range | prefix }');
      }
      const { index: _, ...rest } = where;
      filter = rest;
    }

    const { reads, cache, queries } = this.parts;
    // One capture; each memtable's visible prefix as a row ordinal, in the capture's step.
    const view = reads.capture();
    const prefixes = view.memtables.map(({ m, visible }) => (visible >= m.batches.length ? m.rows : m.ordinals.start(visible)));
    const names = view.tables.map((t) => t.name);
    cache.pin(names);
    try {
      // where: the matching rows of the same capture (the ordered query reads the memtables in this step).
      let allowed: KeyIndex | undefined;
      if (filter) {
        const matches: { batch: RecordBatch; row: number }[] = [];
        allowed = new KeyIndex();
        const keys = allowed;
        await queries.matching(where!.index, filter, view, (batch, row, key) => {
          keys.set(key, matches.length);
          matches.push({ batch, row });
        });
        const total = this.vectorsIn(view, ix);
        if (matches.length <= k || matches.length ** 2 <= ef * 2 * ix.m * total) return this.exactOver(ix, q, k, matches);
      }
      const tiers = await this.tiersOf(view, prefixes, ix);
      const hits: { tier: number; hit: VectorHit }[] = [];
      tiers.forEach((t, i) => {
        const shadowed = (key: Key): boolean => {
          for (let j = 0; j < i; j++) if (tiers[j]!.has(key)) return true;
          return false;
        };
        const eligible = (pos: number): boolean => {
          if (!t.newestHere(pos)) return false;
          const key = t.keyAt(pos);
          return (allowed === undefined || allowed.get(key) !== undefined) && !shadowed(key);
        };
        for (const hit of t.index.nearest(q, k, ef, t.n, eligible)) hits.push({ tier: i, hit });
      });
      hits.sort((a, b) => a.hit.d - b.hit.d || a.tier - b.tier || a.hit.pos - b.hit.pos);
      const out: NearestHit[] = [];
      for (const { tier, hit } of hits.slice(0, k)) {
        out.push({ row: await tiers[tier]!.row(hit.pos), distance: publicDistance(hit.d, ix.distance) });
      }
      return out;
    } finally {
      cache.unpin(names);
    }
  }

  /** Vectors indexed in the capture's tiers (loaded sections only: an estimate for the `where` plan). */
  private vectorsIn(view: ViewCapture, ix: ResolvedVectorIndex): number {
    const at = this.indexes.indexOf(ix);
    let n = 0;
    for (const { m } of view.memtables) n += m.vectors[at]?.size ?? 0;
    for (const t of view.tables) {
      const p = this.sections.get(t.name)?.get(ix.name);
      n += (p && settled.get(p)?.size) ?? 0;
    }
    return n;
  }

  /** The k nearest of `matches` (newest live rows), exactly. */
  private exactOver(ix: ResolvedVectorIndex, q: Float32Array, k: number, matches: { batch: RecordBatch; row: number }[]): NearestHit[] {
    const store = new VectorStore(ix.dim, ix.distance, matches.length);
    const rows: { batch: RecordBatch; row: number }[] = [];
    for (const m of matches) {
      const { values, at } = batchVectors(m.batch, ix.column, ix.dim);
      const off = at(m.row);
      if (off < 0) continue;
      store.push(values, off);
      rows.push(m);
    }
    return exactNearest(store, q, k, 0, store.size, () => true).map((h) => ({
      row: rowObject(rows[h.pos]!.batch, rows[h.pos]!.row),
      distance: publicDistance(h.d, ix.distance),
    }));
  }

  /** The tiers of `view` for index `ix`, newest first (table files' sections loaded). */
  private async tiersOf(view: ViewCapture, prefixes: number[], ix: ResolvedVectorIndex): Promise<Tier[]> {
    const at = this.indexes.indexOf(ix);
    const tiers: Tier[] = view.memtables.map(({ m }, i) => {
      const mv = m.vectors[at]!;
      const visible = prefixes[i]!;
      let n = mv.ordinals.length;
      while (n > 0 && mv.ordinals[n - 1]! >= visible) n--; // positions in ordinal order: those below the prefix
      return {
        index: mv,
        n,
        has: (k) => newestBelow(m, k, visible) !== undefined,
        keyAt: (pos) => mv.keys[pos]!,
        newestHere: (pos) => newestBelow(m, mv.keys[pos]!, visible) === mv.ordinals[pos],
        row: async (pos) => {
          const { batch, row } = m.ordinals.locate(mv.ordinals[pos]!);
          return rowObject(m.batches[batch]!, row);
        },
      };
    });
    for (const t of view.tables) {
      const s = await this.sectionOf(t, ix);
      const open = this.parts.cache.open(t);
      tiers.push({
        index: s,
        n: s.size,
        has: (k) => s.fileKeys.get(k) !== undefined,
        keyAt: (pos) => s.keys[pos]!,
        newestHere: () => true, // one row per key in a table file
        row: async (pos) => rowObject((await (await open).block(s.blockOf[pos]!)).batch, s.rowOf[pos]!),
      });
    }
    return tiers;
  }

  /** The vector section of table file `t` for `ix`, built from its blocks on first use (the graph then grows in the lane). */
  private sectionOf(t: TableFileEntry, ix: ResolvedVectorIndex): Promise<FileVectorSection> {
    let byIndex = this.sections.get(t.name);
    const hit = byIndex?.get(ix.name);
    if (hit) return hit;
    const build = async (): Promise<FileVectorSection> => {
      const open = await this.parts.cache.open(t);
      const section = new FileVectorSection(ix);
      const tomb = this.storeSchema.internal.fields.length - 1;
      for (let b = 0; b < open.blocks.length; b++) {
        const block = await open.block(b, false);
        const deleted = this.storeSchema.hasTombstone ? (r: number) => block.batch.getChildAt(tomb)!.get(r) === true : () => false;
        section.addBlock(block.batch, block.keys!, b, deleted);
      }
      return section;
    };
    const p = build();
    // Sections of files no longer in the manifest (compacted away) are dropped; a failed build is not kept.
    const live = new Set(this.parts.tables().map((f) => f.name));
    for (const name of this.sections.keys()) if (!live.has(name)) this.sections.delete(name);
    if (live.has(t.name)) {
      byIndex = this.sections.get(t.name) ?? new Map();
      byIndex.set(ix.name, p);
      this.sections.set(t.name, byIndex);
      p.then(
        (s) => {
          settled.set(p, s);
          this.wake();
        },
        () => this.sections.get(t.name)?.delete(ix.name),
      );
    }
    return p;
  }

  /** Per vector index: vectors and estimated bytes in memtables (active and frozen) and in the sections loaded so far. */
  stats(): Record<string, IndexStats> {
    const live = new Set(this.parts.tables().map((f) => f.name));
    const out: Record<string, IndexStats> = {};
    const { memtables } = this.parts;
    this.indexes.forEach((ix, i) => {
      let memtableEntries = 0;
      let memtableBytes = 0;
      let graphVectors = 0;
      for (const m of [memtables.active, ...memtables.frozen]) {
        const v = m.vectors[i];
        if (!v) continue;
        memtableEntries += v.size;
        memtableBytes += v.estimatedBytes;
        graphVectors += v.built;
      }
      let tableEntries = 0;
      let tableBytes = 0;
      for (const [name, byIndex] of this.sections) {
        const p = live.has(name) ? byIndex.get(ix.name) : undefined;
        const s = p && settled.get(p);
        if (!s) continue;
        tableEntries += s.size;
        tableBytes += s.bytes;
        graphVectors += s.built;
      }
      out[ix.name] = {
        entries: memtableEntries + tableEntries,
        bytes: memtableBytes + tableBytes,
        memtableEntries,
        memtableBytes,
        tableEntries,
        tableBytes,
        graphVectors,
      };
    });
    return out;
  }
}

/** Sections whose build finished, by their promise. */
const settled = new WeakMap<Promise<FileVectorSection>, FileVectorSection>();
