// Ordered queries (SPEC §17.1, docs/impl.md "Indexes"): `query` and `count` over a secondary index
// or the primary key. One capture of the read view; the candidates of every tier in the filter's
// key range (memtables: their MemIndex entries below the captured visible prefix, taken in the
// capture's step; table files: their index section — read from the file when it carries one for
// the index as defined now (format 3), else built from the file's blocks — on first use, and
// cached), in (index key, primary key) order, forward or reversed; each candidate is checked
// against the newest version of its key across every tier (a delete marker or a version whose
// index keys no longer give this one drops it), so no query returns an overwritten or deleted
// version. A multi-entry row is returned once, at its first entry in the query's order.

import type { RecordBatch } from 'apache-arrow';
import {
  filterBounds,
  HIGH,
  indexKeysOfRow,
  indexValueEncoder,
  PRIMARY_INDEX,
  type QueryFilter,
  type ResolvedIndex,
} from '../data/index-keys.js';
import { encodeKey, type Key, keyFromString, keyString } from '../data/keys.js';
import { rowObject } from '../data/rows.js';
import type { StoreSchema } from '../data/schema.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { decodeOrderedSection, orderedSectionId } from '../format/table/ordered-section.js';
import { findSection } from '../format/table/sections.js';
import type { MemIndex } from '../lsm/memtable-index.js';
import { INDEX_ENTRY_BYTES } from '../lsm/memtable-index.js';
import type { TableCache } from '../lsm/table-cache.js';
import { MemWalError } from '../util/errors.js';
import type { MemtableSet } from './memtable-set.js';
import { NEEDS_IO, type ReadView, type ViewCapture } from './read-view.js';
import type { ColumnRange, ReadFootprint } from './watch.js';

/** `query`'s options (SPEC §17.1). */
export interface QueryOptions extends QueryFilter {
  /** Exact reverse order: index key descending, ties by primary key descending. */
  reverse?: boolean;
  /** At most this many rows. */
  limit?: number;
  /** The last row of the previous page: start past it. */
  after?: Record<string, unknown>;
  /** Project the rows to these columns. */
  columns?: string[];
}

/** Per-index figures: entries and estimated bytes, in memtables and in table files' sections. */
export interface IndexStats {
  entries: number;
  bytes: number;
  memtableEntries: number;
  memtableBytes: number;
  /** Entries and bytes of the table files' sections loaded so far (on a file's first query). */
  tableEntries: number;
  tableBytes: number;
  /** Vector indexes: vectors in HNSW graphs so far (built in the background; the rest are scanned exactly). */
  graphVectors?: number;
  /**
   * Ordered indexes: of the live table files whose section is loaded, how many were read from the
   * file's own section, how many built from its rows (no section for the index as defined now).
   * Text and vector indexes build every file's section from its rows (not yet persisted).
   */
  tableSectionsRead?: number;
  tableSectionsBuilt?: number;
  /**
   * Ordered indexes, the background build (engine/index-build.ts): live table files whose
   * manifest entry says they hold the index's section as defined now, and those that do not yet
   * (queries build those files' entries from their rows meanwhile). 0 pending: built.
   */
  filesBuilt?: number;
  filesPending?: number;
}

/** The sorted entries of one table file for one index (read from its section, or built from its blocks). */
interface Section {
  keys: string[];
  pks: string[];
  /** Entry `i`'s primary key in its {@link Key} form. */
  pkKey(i: number): Key;
  bytes: number;
  /** Read from the file's own section (else built from its rows). */
  read: boolean;
}

/** One candidate: an entry of some tier. */
interface Candidate {
  key: string;
  pk: string;
  k: Key;
}

const invalid = (why: string): MemWalError => new MemWalError('InvalidArgument', why);
const QUERY_KEYS = new Set(['equals', 'range', 'prefix', 'reverse', 'limit', 'after', 'columns']);

/** First index in sorted `keys` at or past `lo` (binary search over `at(i)`). */
function lowerBound(n: number, at: (i: number) => string, lo: string): number {
  let a = 0;
  let b = n;
  while (a < b) {
    const mid = (a + b) >> 1;
    if (at(mid) < lo) a = mid + 1;
    else b = mid;
  }
  return a;
}

function compareCandidates(a: Candidate, b: Candidate): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0;
}

/**
 * One tier's entries of a query: positions [lo, hi) of its sorted order (ascending by index key,
 * then primary key), read in place; `ok` says whether an entry counts (a memtable's: below the
 * captured visible prefix).
 */
interface Run {
  lo: number;
  hi: number;
  key(i: number): string;
  pk(i: number): string;
  k(i: number): Key;
  ok(i: number): boolean;
}

/** A run over a materialized, sorted array of candidates. */
function arrayRun(cs: Candidate[]): Run {
  return { lo: 0, hi: cs.length, key: (i) => cs[i]!.key, pk: (i) => cs[i]!.pk, k: (i) => cs[i]!.k, ok: () => true };
}

/** [lo, hi) of positions `0..n` whose keys `at(i)` lie in `bounds`. */
function slice(
  n: number,
  at: (i: number) => string,
  bounds: { lo: string | undefined; hi: string | undefined },
): { lo: number; hi: number } {
  const lo = bounds.lo === undefined ? 0 : lowerBound(n, at, bounds.lo);
  const hi = bounds.hi === undefined ? n : lowerBound(n, at, bounds.hi);
  return { lo, hi: Math.max(lo, hi) };
}

/**
 * The entries of `runs` merged in the query's order (reversed: descending), past `from` when
 * given, one at a time (undefined at the end), read lazily: a limited query reads only the runs'
 * heads.
 */
function mergeRuns(runs: Run[], reverse: boolean, from: { key: string; pk: string } | undefined): () => Candidate | undefined {
  const cmpAt = (r: Run, i: number, key: string, pk: string): number => {
    const k = r.key(i);
    if (k !== key) return k < key ? -1 : 1;
    const p = r.pk(i);
    return p < pk ? -1 : p > pk ? 1 : 0;
  };
  const at: number[] = runs.map((run) => {
    if (!from) return reverse ? run.hi - 1 : run.lo;
    // Forward: the first entry after `from`; reverse: the last before it.
    let lo = run.lo;
    let hi = run.hi;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const c = cmpAt(run, mid, from.key, from.pk);
      if (reverse ? c < 0 : c <= 0) lo = mid + 1;
      else hi = mid;
    }
    return reverse ? lo - 1 : lo;
  });
  const step = reverse ? -1 : 1;
  const valid = (r: number): boolean => {
    const run = runs[r]!;
    let i = at[r]!;
    while (i >= run.lo && i < run.hi && !run.ok(i)) i += step;
    at[r] = i;
    return i >= run.lo && i < run.hi;
  };
  return () => {
    let best = -1;
    for (let r = 0; r < runs.length; r++) {
      if (!valid(r)) continue;
      if (best < 0) best = r;
      else {
        const b = runs[best]!;
        const c = cmpAt(runs[r]!, at[r]!, b.key(at[best]!), b.pk(at[best]!));
        if (reverse ? c > 0 : c < 0) best = r;
      }
    }
    if (best < 0) return undefined;
    const run = runs[best]!;
    const i = at[best]!;
    at[best] = i + step;
    return { key: run.key(i), pk: run.pk(i), k: run.k(i) };
  };
}

/** Ordered queries of one MemTable-mode writer. */
export class IndexQueries {
  /** Table file name -> index name -> its section (a file's content never changes). */
  private readonly sections = new Map<string, Map<string, Section>>();
  private readonly primary: ResolvedIndex = { name: PRIMARY_INDEX, columns: [], kinds: [], multiEntry: false };

  constructor(
    private readonly storeSchema: StoreSchema,
    private readonly indexes: readonly ResolvedIndex[],
    private readonly reads: ReadView,
    private readonly memtables: MemtableSet,
    private readonly tables: () => readonly TableFileEntry[],
    private readonly cache: TableCache,
  ) {}

  private indexOf(name: unknown): ResolvedIndex {
    if (this.storeSchema.primaryKey.length === 0)
      throw new MemWalError('NotSupported', 'query needs a primary key (this store is append-only)');
    if (name === PRIMARY_INDEX) return this.primary;
    const ix = this.indexes.find((i) => i.name === name);
    if (!ix) {
      const known = [PRIMARY_INDEX, ...this.indexes.map((i) => i.name)].map((n) => `'${n}'`).join(', ');
      throw invalid(`query: no index ${JSON.stringify(name)} (this store has ${known})`);
    }
    return ix;
  }

  /**
   * What a watched `query(index, filter)` covers besides the rows it returned (engine/watch.ts):
   * the filter's range on the index's first column, so a row written into the range wakes the
   * watch. Exact for a one-column index (each element for a multi-entry one); for a compound index
   * a value whose first-column key could start a key in the range (a superset). `'primary'`:
   * every commit (`all`). Throws as `query` does for an unknown index or a bad filter.
   */
  watchFootprint(index: string, filter: QueryFilter | undefined): ReadFootprint {
    const ix = this.indexOf(index);
    if (ix === this.primary) return { all: true };
    const { lo, hi } = filterBounds(filter, this.encoder(ix));
    const first: ResolvedIndex = { name: ix.name, columns: [ix.columns[0]!], kinds: [ix.kinds[0]!], multiEntry: ix.multiEntry };
    const compound = ix.columns.length > 1;
    const keyIn = (k: string): boolean =>
      compound
        ? (hi === undefined || k < hi) && (lo === undefined || k + HIGH > lo)
        : (lo === undefined || k >= lo) && (hi === undefined || k < hi);
    const column = first.columns[0]!;
    const range: ColumnRange = {
      column,
      contains: (value) => {
        if (value === null || value === undefined) return false;
        const v = ix.multiEntry && typeof value === 'object' && Symbol.iterator in value ? [...(value as Iterable<unknown>)] : value;
        return indexKeysOfRow(first, { [column]: v }).some(keyIn);
      },
    };
    return { ranges: [range] };
  }

  /** The filter encoder of `ix`: the primary key's own encoding for `'primary'`. */
  private encoder(ix: ResolvedIndex): (v: unknown, partialLast: boolean, what: string) => string {
    if (ix !== this.primary) return indexValueEncoder(ix);
    const pk = this.storeSchema.primaryKey;
    return (v, partialLast, what) => {
      if (partialLast) throw invalid("query 'primary': prefix is not supported on the primary key (declare an index on the column)");
      const values = pk.length > 1 ? v : [v];
      if (!Array.isArray(values) || values.length !== pk.length) {
        throw invalid(
          `query 'primary': ${what} must give the whole key (${pk.length > 1 ? `an array of ${pk.length} values` : 'a value'})`,
        );
      }
      const key: Record<string, unknown> = {};
      pk.forEach((c, i) => {
        key[c] = values[i];
      });
      try {
        return keyString(encodeKey(key, this.storeSchema), this.storeSchema);
      } catch (e) {
        throw e instanceof MemWalError ? invalid(`query 'primary': ${what}: ${e.message}`) : e;
      }
    };
  }

  /** The index keys of a row (plain values) for `ix`. */
  private keysOf(ix: ResolvedIndex, row: Record<string, unknown>, pk: string): string[] {
    return ix === this.primary ? [pk] : indexKeysOfRow(ix, row);
  }

  /**
   * A `where` option — `{ index, equals | range | prefix }` on an ordered index or `'primary'`
   * (SPEC §17.1) — as a test of one row (its batch, row and encoded primary key): does one of
   * its keys in that index fall in the filter's range. `InvalidArgument` (naming `what`, the
   * caller) for a where that is not such an object or names no ordered index; as `query` for a
   * bad filter. The one resolution of a row-by-row `where` (`search`'s).
   */
  whereTest(where: unknown, what: string): (batch: RecordBatch, row: number, pk: string) => boolean {
    if (typeof where !== 'object' || where === null || Array.isArray(where)) {
      throw invalid(`${what}: where must be { index, equals | range | prefix }`);
    }
    const { index, ...filter } = where as { index?: unknown } & QueryFilter;
    for (const k of Object.keys(filter)) {
      if (k !== 'equals' && k !== 'range' && k !== 'prefix') throw invalid(`${what}: where has an unknown field "${k}"`);
    }
    if (index !== PRIMARY_INDEX && !this.indexes.some((i) => i.name === index)) {
      const known = [PRIMARY_INDEX, ...this.indexes.map((i) => i.name)].map((n) => `'${n}'`).join(', ');
      throw invalid(`${what}: where.index ${JSON.stringify(index)} is not an ordered index of this store (${known})`);
    }
    const ix = this.indexOf(index);
    const { lo, hi } = filterBounds(filter, this.encoder(ix));
    const inBounds = (k: string): boolean => (lo === undefined || k >= lo) && (hi === undefined || k < hi);
    if (ix === this.primary) return (_batch, _row, pk) => inBounds(pk);
    return (batch, row) => indexKeysOfRow(ix, rowObject(batch, row, ix.columns)).some(inBounds);
  }

  /** Rows of `index` matching `opts` in index order (ties by primary key), as plain objects. */
  async query(index: string, opts: QueryOptions = {}): Promise<Record<string, unknown>[]> {
    if (typeof opts !== 'object' || opts === null) throw invalid('query: options must be an object');
    for (const k of Object.keys(opts)) if (!QUERY_KEYS.has(k)) throw invalid(`query: unknown option "${k}"`);
    const { limit, reverse = false, columns } = opts;
    if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0)) {
      throw invalid(`query: limit must be an integer >= 0, got ${String(limit)}`);
    }
    if (typeof reverse !== 'boolean') throw invalid('query: reverse must be a boolean');
    if (columns !== undefined) {
      if (!Array.isArray(columns)) throw invalid('query: columns must be an array of column names');
      for (const c of columns) {
        if (typeof c !== 'string' || !this.storeSchema.base.fields.some((f) => f.name === c))
          throw invalid(`query: unknown column ${JSON.stringify(c)}`);
      }
    }
    const out: Record<string, unknown>[] = [];
    await this.run(index, opts, reverse, limit ?? Number.POSITIVE_INFINITY, (batch, row) => {
      out.push(rowObject(batch, row, columns));
    });
    return out;
  }

  /** How many rows `query(index, filter)` would return. */
  async count(index: string, filter: QueryFilter = {}): Promise<number> {
    if (typeof filter !== 'object' || filter === null) throw invalid('count: the filter must be an object');
    for (const k of Object.keys(filter)) {
      if (k !== 'equals' && k !== 'range' && k !== 'prefix') throw invalid(`count: unknown filter field "${k}"`);
    }
    let n = 0;
    await this.run(index, filter, false, Number.POSITIVE_INFINITY, () => {
      n++;
    });
    return n;
  }

  /**
   * The rows `filter` matches on `index` as seen by `view`, another read's capture (`nearest`'s
   * `where`): each the newest live version of its key, once, with its key. Throws as `count` does.
   */
  async matching(
    index: string,
    filter: QueryFilter,
    view: ViewCapture,
    emit: (batch: RecordBatch, row: number, k: Key) => void,
  ): Promise<void> {
    if (typeof filter !== 'object' || filter === null) throw invalid('where: the filter must be an object');
    for (const k of Object.keys(filter)) {
      if (k !== 'equals' && k !== 'range' && k !== 'prefix') throw invalid(`where: unknown filter field "${k}"`);
    }
    await this.run(index, filter, false, Number.POSITIVE_INFINITY, emit, view);
  }

  private async run(
    index: string,
    opts: QueryOptions,
    reverse: boolean,
    limit: number,
    emit: (batch: RecordBatch, row: number, k: Key) => void,
    given?: ViewCapture,
  ): Promise<void> {
    const ix = this.indexOf(index);
    const bounds = filterBounds(opts, this.encoder(ix));
    const inBounds = (k: string): boolean => (bounds.lo === undefined || k >= bounds.lo) && (bounds.hi === undefined || k < bounds.hi);
    // Where `after` stands: its entry (its first in this query's order) and its primary key.
    let from: { key: string; pk: string } | undefined;
    if (opts.after !== undefined) {
      const a = opts.after;
      if (typeof a !== 'object' || a === null || Array.isArray(a))
        throw invalid('query: after must be a row (the last row of the previous page)');
      const key: Record<string, unknown> = {};
      for (const c of this.storeSchema.primaryKey) key[c] = a[c];
      let pk: string;
      try {
        pk = keyString(encodeKey(key, this.storeSchema), this.storeSchema);
      } catch (e) {
        throw e instanceof MemWalError ? invalid(`query: after: ${e.message}`) : e;
      }
      for (const c of ix.columns) if (!(c in a)) throw invalid(`query: after lacks the indexed column "${c}" (give the whole row)`);
      const keys = this.keysOf(ix, a, pk).filter(inBounds);
      if (keys.length === 0) throw invalid('query: after is not a row this query returns (its indexed values are outside the filter)');
      from = { key: reverse ? keys[keys.length - 1]! : keys[0]!, pk };
    }
    if (limit === 0) return;

    const view = given ?? this.reads.capture();
    // The memtables' candidates, in the capture's step (entries below each captured visible prefix).
    // One run per tier, each in (index key, primary key) order, read in place.
    const runs: Run[] = [];
    for (const { m } of view.memtables) {
      const visibleRows = m.visibleRows;
      if (ix === this.primary) {
        const candidates: Candidate[] = [];
        const keys = m.batchKeys;
        for (let b = 0; b < m.visibleBatches && b < keys.length; b++) {
          const bk = keys[b]!;
          for (let r = 0; r < bk.length; r++) {
            const k = bk[r]!;
            const pk = keyString(k, this.storeSchema);
            if (inBounds(pk)) candidates.push({ key: pk, pk, k });
          }
        }
        candidates.sort(compareCandidates);
        runs.push(arrayRun(candidates));
        continue;
      }
      const mi: MemIndex = m.indexes[this.indexes.indexOf(ix)]!;
      const order = mi.sorted();
      const { keys, pks, pkKeys, ordinals } = mi;
      runs.push({
        ...slice(order.length, (i) => keys[order[i]!]!, bounds),
        key: (i) => keys[order[i]!]!,
        pk: (i) => pks[order[i]!]!,
        k: (i) => pkKeys[order[i]!]!,
        ok: (i) => ordinals[order[i]!]! < visibleRows,
      });
    }
    const names = view.tables.map((t) => t.name);
    this.cache.pin(names);
    try {
      for (const t of view.tables) {
        const s = await this.sectionOf(t, ix);
        runs.push({
          ...slice(s.keys.length, (i) => s.keys[i]!, bounds),
          key: (i) => s.keys[i]!,
          pk: (i) => s.pks[i]!,
          k: (i) => s.pkKey(i),
          ok: () => true,
        });
      }
      const candidates = mergeRuns(runs, reverse, from);
      // Each candidate against the newest version of its key (asked once per key): in the same
      // step when its tiers are in memory (newestNow), else through a wait (newestIn).
      type Newest = { batch: RecordBatch; row: number; keys: string[] } | null;
      const newest = new Map<string, Newest | Promise<Newest>>();
      const entryOf = (c: Candidate, loc: { batch: RecordBatch; row: number } | undefined): Newest => {
        if (!loc || this.reads.deleted(loc.batch, loc.row)) return null;
        const row = ix === this.primary ? {} : rowObject(loc.batch, loc.row, ix.columns);
        const keys = this.keysOf(ix, row, c.pk).filter(inBounds);
        return { ...loc, keys };
      };
      const resolve = (c: Candidate): Newest | Promise<Newest> => {
        let p = newest.get(c.pk);
        if (p === undefined) {
          const now = this.reads.newestNow(view, c.k);
          p = now === NEEDS_IO ? this.reads.newestIn(view, c.k).then((loc) => entryOf(c, loc)) : entryOf(c, now);
          newest.set(c.pk, p);
        }
        return p;
      };
      let emitted = 0;
      let prev: Candidate | undefined;
      for (let c = candidates(); c !== undefined && emitted < limit; c = candidates()) {
        if (prev && prev.key === c.key && prev.pk === c.pk) continue; // one entry, in two tiers or two versions
        prev = c;
        const r = resolve(c);
        const v = r instanceof Promise ? await r : r;
        if (!v) continue; // deleted
        // The newest version must have this very entry, and (multi-entry) as its first in this order.
        const first = reverse ? v.keys[v.keys.length - 1] : v.keys[0];
        // Not its first: an older version's entry (stale), or a later entry of a multi-entry row
        // returned at its first.
        if (first !== c.key) continue;
        emit(v.batch, v.row, c.k);
        emitted++;
      }
    } finally {
      this.cache.unpin(names);
    }
  }

  /**
   * The section of table file `t` for `ix` on first use: the file's own when it carries one for
   * `ix` as defined now (same kind, name, columns, encodings), else built from its blocks.
   */
  private async sectionOf(t: TableFileEntry, ix: ResolvedIndex): Promise<Section> {
    let byIndex = this.sections.get(t.name);
    const hit = byIndex?.get(ix.name);
    if (hit) return hit;
    const open = await this.cache.open(t);
    const own = ix === this.primary ? undefined : findSection(open.sections, orderedSectionId(ix));
    const section = own
      ? this.readSection(t, ix, await open.section(own))
      : await this.buildSection(open.blocks.length, (b) => open.block(b, false), ix);
    // Sections of files no longer in the manifest (compacted away) are dropped.
    const live = new Set(this.tables().map((f) => f.name));
    for (const name of this.sections.keys()) if (!live.has(name)) this.sections.delete(name);
    if (live.has(t.name)) {
      byIndex = this.sections.get(t.name) ?? new Map();
      byIndex.set(ix.name, section);
      this.sections.set(t.name, byIndex);
    }
    return section;
  }

  /** A section as the file carries it (ordered-section.ts), its keys decoded on demand. */
  private readSection(t: TableFileEntry, ix: ResolvedIndex, bytes: Uint8Array): Section {
    const { keys, pks } = decodeOrderedSection(bytes, t.name, ix.name, t.rows);
    let bytesIn = 0;
    for (let i = 0; i < keys.length; i++) bytesIn += INDEX_ENTRY_BYTES + 2 * (keys[i]!.length + pks[i]!.length);
    const schema = this.storeSchema;
    return { keys, pks, pkKey: (i) => keyFromString(pks[i]!, schema), bytes: bytesIn, read: true };
  }

  /** A section built from a file's rows (a file without one for `ix`: older format, or built for another definition). */
  private async buildSection(
    blocks: number,
    block: (b: number) => Promise<{ batch: RecordBatch; keys: ArrayLike<Key> | undefined }>,
    ix: ResolvedIndex,
  ): Promise<Section> {
    const entries: { key: string; pk: string; k: Key }[] = [];
    for (let b = 0; b < blocks; b++) {
      const one = await block(b);
      const keys = one.keys!;
      const batch = one.batch;
      for (let r = 0; r < batch.numRows; r++) {
        if (this.reads.deleted(batch, r)) continue;
        const k = keys[r]!;
        const pk = keyString(k, this.storeSchema);
        const row = ix === this.primary ? {} : rowObject(batch, r, ix.columns);
        for (const key of this.keysOf(ix, row, pk)) entries.push({ key, pk, k });
      }
    }
    entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0));
    let bytes = 0;
    for (const e of entries) bytes += INDEX_ENTRY_BYTES + 2 * (e.key.length + e.pk.length);
    const pkKeys = entries.map((e) => e.k);
    return { keys: entries.map((e) => e.key), pks: entries.map((e) => e.pk), pkKey: (i) => pkKeys[i]!, bytes, read: false };
  }

  /** Per declared index: entries and estimated bytes in memtables (active and frozen) and in the table-file sections built so far. */
  stats(): Record<string, IndexStats> {
    const live = new Set(this.tables().map((f) => f.name));
    const out: Record<string, IndexStats> = {};
    this.indexes.forEach((ix, i) => {
      let memtableEntries = 0;
      let memtableBytes = 0;
      for (const m of [this.memtables.active, ...this.memtables.frozen]) {
        const mi = m.indexes[i];
        if (!mi) continue;
        memtableEntries += mi.keys.length;
        memtableBytes += mi.bytes;
      }
      let tableEntries = 0;
      let tableBytes = 0;
      let tableSectionsRead = 0;
      let tableSectionsBuilt = 0;
      for (const [name, byIndex] of this.sections) {
        const s = live.has(name) ? byIndex.get(ix.name) : undefined;
        if (!s) continue;
        tableEntries += s.keys.length;
        tableBytes += s.bytes;
        if (s.read) tableSectionsRead++;
        else tableSectionsBuilt++;
      }
      out[ix.name] = {
        entries: memtableEntries + tableEntries,
        bytes: memtableBytes + tableBytes,
        memtableEntries,
        memtableBytes,
        tableEntries,
        tableBytes,
        tableSectionsRead,
        tableSectionsBuilt,
      };
    });
    return out;
  }
}
