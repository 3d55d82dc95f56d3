// Full-text search (SPEC §17.2, docs/impl.md "Full-text search"): `search(index, text, opts)` over
// every tier's inverted index (lsm/text-index.ts: a memtable's kept as rows arrive, a table file's
// built from its blocks on first use and cached), ranked by BM25 with corpus statistics over the
// live documents of every tier — the newest version of each key, not deleted — so a document
// scores the same whichever tier holds it.
//
// One consistent capture: the table files' sections are built first (awaited), then the view is
// captured again and everything that decides liveness and scores runs in that capture's
// synchronous step (a memtable's key index covers exactly its visible prefix then). A document of
// tier i is live when it is its tier's newest version of its key (a table file holds one) and no
// newer tier (j < i) holds the key at all (a version or a delete marker). Only the winners' rows
// are read afterwards, from immutable batches and pinned files.

import type { RecordBatch } from 'apache-arrow';
import type { QueryFilter } from '../data/index-keys.js';
import { type Key, keyString } from '../data/keys.js';
import { rowObject } from '../data/rows.js';
import type { StoreSchema } from '../data/schema.js';
import { queryTerms, type ResolvedTextIndex } from '../data/tokenize.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import type { MemTable } from '../lsm/memtable.js';
import { type Postings, TextFileSection, type TextSegment } from '../lsm/text-index.js';
import type { TableCache } from '../lsm/table-cache.js';
import { MemWalError } from '../util/errors.js';
import type { MemtableSet } from './memtable-set.js';
import type { IndexQueries, IndexStats } from './query.js';
import { nowMs, yieldToEventLoop } from '../util/schedule.js';
import type { ReadView, ViewCapture } from './read-view.js';

/** BM25's term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25's length normalization. */
export const BM25_B = 0.75;
/** `search`'s default `limit`. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** Most hits one `search` returns (they cross to the page as one message). */
export const MAX_SEARCH_LIMIT = 10_000;

/** `search`'s options (SPEC §17.2). */
export interface SearchOptions {
  /** At most this many hits (default 10, at most 10,000). */
  limit?: number;
  /**
   * Only rows an ordered query would return: `{ index, equals? | range? | prefix? }` on a declared
   * ordered index (SPEC §17.1). Applied to every match before the limit (never fewer hits than
   * there are matching rows, up to `limit`).
   */
  where?: { index: string } & QueryFilter;
  /** Match the last term as a prefix (search as you type). Default false. */
  prefix?: boolean;
}

/** One hit: the row (as `get` returns it) and its BM25 score. */
export interface SearchHit<Row = Record<string, unknown>> {
  row: Row;
  score: number;
}

const invalid = (why: string): MemWalError => new MemWalError('InvalidArgument', why);
const SEARCH_KEYS = new Set(['limit', 'where', 'prefix']);
/** Longest stretch a section build runs without giving the event loop a turn (about one block's work past it). */
const SECTION_SLICE_MS = 20;

/** One tier of a capture as a search reads it. */
interface TierOf {
  seg: TextSegment;
  /** Does the tier hold any version of `k` (a row or a delete marker)? */
  has(k: Key): boolean;
  /** Is document `doc` its tier's newest version of its key (visible)? */
  own(doc: number): boolean;
}

/** A matching live document of a capture: its tier, id there, score; its encoded primary key once a tie needed it. */
interface Hit {
  tier: number;
  doc: number;
  score: number;
  pk: string | undefined;
}

/** One term of a query: exact, or (the last, with `prefix`) every term starting with it. */
interface Clause {
  term: string;
  prefix: boolean;
}

/** Corpus statistics of one capture of one index. */
interface Corpus {
  signature: string;
  /** Live documents. */
  docs: number;
  /** Their total length in terms. */
  terms: number;
  /** Live documents per clause ('=term' or '*prefix'). */
  df: Map<string, number>;
}

/** BM25 of one clause in one document (SPEC §17.2): Lucene's IDF times the saturated, length-normalized frequency. */
export function bm25(tf: number, df: number, docs: number, length: number, avgLength: number): number {
  return bm25Of(idfOf(df, docs), tf, length, avgLength);
}

/** Lucene's IDF of a clause held by `df` of `docs` documents. */
function idfOf(df: number, docs: number): number {
  return Math.log(1 + (docs - df + 0.5) / (df + 0.5));
}

/** BM25 of one clause of IDF `idf` in a document of `length` terms holding it `tf` times. */
function bm25Of(idf: number, tf: number, length: number, avgLength: number): number {
  return (idf * tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgLength));
}

/** Full-text search of one MemTable-mode writer. */
export class TextSearch {
  /** Table file name -> index name -> its section (a file's content never changes). */
  private readonly sections = new Map<string, Map<string, TextFileSection>>();
  /** Per index: the statistics of the last capture searched (reused while nothing changed). */
  private readonly corpora = new Map<string, Corpus>();
  /** Section builds under way, by file name and index name (shared by concurrent searches). */
  private readonly building = new Map<string, Promise<TextFileSection>>();

  constructor(
    private readonly storeSchema: StoreSchema,
    private readonly textIndexes: readonly ResolvedTextIndex[],
    /** Its ordered queries: `where` is resolved by them (`whereTest`), as every read's is. */
    private readonly queries: IndexQueries,
    private readonly reads: ReadView,
    private readonly memtables: MemtableSet,
    private readonly tables: () => readonly TableFileEntry[],
    private readonly cache: TableCache,
  ) {}

  /** Does this store have a text index named `name`? */
  has(name: string): boolean {
    return this.textIndexes.some((ix) => ix.name === name);
  }

  private indexOf(name: unknown): { ix: ResolvedTextIndex; at: number } {
    const at = this.textIndexes.findIndex((ix) => ix.name === name);
    if (at < 0) {
      const known = this.textIndexes.map((i) => `'${i.name}'`).join(', ') || 'none';
      throw invalid(`search: no text index ${JSON.stringify(name)} (this store's text indexes: ${known})`);
    }
    return { ix: this.textIndexes[at]!, at };
  }

  /**
   * The rows of text index `index` matching every term of `text` (`prefix`: the last as a
   * prefix), best first by BM25 (ties by primary key), at most `limit`. `InvalidArgument` for an
   * unknown index, a bad option, or a text beyond the query limits (data/tokenize.ts).
   */
  async search(index: string, text: string, opts: SearchOptions = {}): Promise<SearchHit[]> {
    if (typeof opts !== 'object' || opts === null) throw invalid('search: options must be an object');
    for (const k of Object.keys(opts)) if (!SEARCH_KEYS.has(k)) throw invalid(`search: unknown option "${k}"`);
    const { limit = DEFAULT_SEARCH_LIMIT, prefix = false } = opts;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_SEARCH_LIMIT) {
      throw invalid(`search: limit must be an integer from 0 to ${MAX_SEARCH_LIMIT}, got ${String(limit)}`);
    }
    if (typeof prefix !== 'boolean') throw invalid('search: prefix must be a boolean');
    const { ix, at } = this.indexOf(index);
    const where = opts.where === undefined ? undefined : this.queries.whereTest(opts.where, 'search');
    const terms = queryTerms(ix, text, prefix);
    if (terms.length === 0 || limit === 0) return [];
    const clauses: Clause[] = [];
    const exact = new Set(prefix ? terms.slice(0, -1) : terms);
    for (const term of exact) clauses.push({ term, prefix: false });
    if (prefix) clauses.push({ term: terms[terms.length - 1]!, prefix: true });

    // The sections of the captured files first; then a capture whose files all have one.
    for (;;) {
      const view = this.reads.capture();
      const missing = view.tables.filter((t) => !this.sections.get(t.name)?.has(ix.name));
      if (missing.length === 0) return this.searchView(view, ix, at, clauses, limit, where);
      const names = missing.map((t) => t.name);
      this.cache.pin(names);
      try {
        for (const t of missing) await this.sectionOf(t, ix);
      } finally {
        this.cache.unpin(names);
      }
    }
  }

  /** The search in `view`, whose files all have sections: scored in this step, rows read after. */
  private async searchView(
    view: ViewCapture,
    ix: ResolvedTextIndex,
    at: number,
    clauses: Clause[],
    limit: number,
    where: ((batch: RecordBatch, row: number, pk: string) => boolean) | undefined,
  ): Promise<SearchHit[]> {
    const names = view.tables.map((t) => t.name);
    this.cache.pin(names);
    try {
      const tiers: TierOf[] = [];
      for (const { m } of view.memtables) tiers.push(memtableTier(m, at));
      for (const t of view.tables) {
        const s = this.sections.get(t.name)!.get(ix.name)!;
        tiers.push({ seg: s, has: (k) => s.keys.get(k) !== undefined, own: () => true });
      }
      const live = liveness(tiers);
      const corpus = this.corpusOf(ix, view, tiers, live);
      // Per clause and tier: the live documents holding it, with their frequency.
      const matches = clauses.map((c) => tiers.map((tier, i) => clauseMatches(tier.seg, c, (d) => live(i, d))));
      const df = clauses.map((c, j) => {
        const id = (c.prefix ? '*' : '=') + c.term;
        let n = corpus.df.get(id);
        if (n === undefined) {
          n = 0;
          for (const m of matches[j]!) n += m.size;
          corpus.df.set(id, n);
        }
        return n;
      });
      const avg = corpus.terms / corpus.docs;
      const idf = df.map((n) => idfOf(n, corpus.docs));
      let hits: Hit[] = [];
      tiers.forEach((tier, i) => {
        const maps = matches.map((m) => m[i]!);
        const smallest = maps.reduce((a, b) => (b.size < a.size ? b : a));
        for (const doc of smallest.keys()) {
          let score = 0;
          for (let j = 0; j < maps.length; j++) {
            const tf = maps[j]!.get(doc);
            if (tf === undefined) {
              score = Number.NaN;
              break;
            }
            score += bm25Of(idf[j]!, tf, tier.seg.docLengths[doc]!, avg);
          }
          if (!Number.isNaN(score)) hits.push({ tier: i, doc, score, pk: undefined });
        }
      });
      // Without `where` only the best `limit` (and their ties) are ordered; primary keys are encoded for ties only.
      if (!where && hits.length > limit) {
        const scores = Float64Array.from(hits, (h) => h.score).sort();
        const threshold = scores[scores.length - limit]!;
        hits = hits.filter((h) => h.score >= threshold);
      }
      const keyOf = (h: Hit): Key => tiers[h.tier]!.seg.docKeys[h.doc]!;
      const pkOf = (h: Hit): string => (h.pk ??= keyString(keyOf(h), this.storeSchema));
      hits.sort((a, b) => {
        if (a.score !== b.score) return b.score - a.score;
        const ka = keyOf(a);
        const kb = keyOf(b);
        if (typeof ka === 'number' && typeof kb === 'number') return ka - kb; // number keys sort as numbers (lsm/sorted.ts)
        const pa = pkOf(a);
        const pb = pkOf(b);
        return pa < pb ? -1 : pa > pb ? 1 : 0;
      });
      // The rows, best first, until `limit` pass `where`.
      const out: SearchHit[] = [];
      for (const h of hits) {
        if (out.length >= limit) break;
        const { batch, row } = await this.rowOf(view, h.tier, h.doc, ix);
        if (where && !where(batch, row, pkOf(h))) continue;
        out.push({ row: rowObject(batch, row), score: h.score });
      }
      return out;
    } finally {
      this.cache.unpin(names);
    }
  }

  /** The batch and row of document `doc` of tier `tier` of `view`. */
  private async rowOf(view: ViewCapture, tier: number, doc: number, ix: ResolvedTextIndex): Promise<{ batch: RecordBatch; row: number }> {
    const nm = view.memtables.length;
    if (tier < nm) {
      const { m } = view.memtables[tier]!;
      const seg = m.textIndexes[this.textIndexes.indexOf(ix)]!;
      const { batch, row } = m.ordinals.locate(seg.ordinals[doc]!);
      return { batch: m.batches[batch]!, row };
    }
    const t = view.tables[tier - nm]!;
    const s = this.sections.get(t.name)!.get(ix.name)!;
    const open = await this.cache.open(t);
    const block = await open.block(s.blocks[doc]!);
    return { batch: block.batch, row: s.rows[doc]! };
  }

  /** The corpus statistics of `view`: reused while its files and memtables' visible prefixes are the same. */
  private corpusOf(ix: ResolvedTextIndex, view: ViewCapture, tiers: TierOf[], live: (i: number, d: number) => boolean): Corpus {
    const signature = [...view.memtables.map(({ m, visible }) => `${m.generation}:${visible}`), ...view.tables.map((t) => t.name)].join(
      '|',
    );
    const cached = this.corpora.get(ix.name);
    if (cached?.signature === signature) return cached;
    let docs = 0;
    let terms = 0;
    tiers.forEach((tier, i) => {
      const lengths = tier.seg.docLengths;
      for (let d = 0; d < lengths.length; d++) {
        if (lengths[d] === 0 || !live(i, d)) continue;
        docs++;
        terms += lengths[d]!;
      }
    });
    const corpus: Corpus = { signature, docs, terms, df: new Map() };
    this.corpora.set(ix.name, corpus);
    return corpus;
  }

  /** The section of table file `t` for `ix`, built from its blocks on first use. */
  private sectionOf(t: TableFileEntry, ix: ResolvedTextIndex): Promise<TextFileSection> {
    const hit = this.sections.get(t.name)?.get(ix.name);
    if (hit) return Promise.resolve(hit);
    // One build per (file, index): concurrent searches share it; a failed one is forgotten, and
    // its half-built section was never stored, so the next search builds it again.
    const id = `${t.name}\u0000${ix.name}`;
    let build = this.building.get(id);
    if (!build) {
      build = this.buildSection(t, ix).finally(() => this.building.delete(id));
      this.building.set(id, build);
    }
    return build;
  }

  /**
   * Build file `t`'s section of `ix` from its blocks, a block at a time, giving the event loop a
   * turn whenever SECTION_SLICE_MS have passed since the last (a cached block is read without
   * one), so puts, gets and stats are served while a large file is indexed. Stored only whole.
   */
  private async buildSection(t: TableFileEntry, ix: ResolvedTextIndex): Promise<TextFileSection> {
    const open = await this.cache.open(t);
    const section = new TextFileSection(ix);
    let slice = nowMs();
    for (let b = 0; b < open.blocks.length; b++) {
      const block = await open.block(b, false);
      const batch = block.batch;
      section.addBlock(b, batch, block.keys!, (r) => this.reads.deleted(batch, r));
      if (nowMs() - slice >= SECTION_SLICE_MS) {
        await yieldToEventLoop();
        slice = nowMs();
      }
    }
    // Sections of files no longer in the manifest (compacted away) are dropped.
    const live = new Set(this.tables().map((f) => f.name));
    for (const name of this.sections.keys()) if (!live.has(name)) this.sections.delete(name);
    if (live.has(t.name)) {
      const byIndex = this.sections.get(t.name) ?? new Map<string, TextFileSection>();
      byIndex.set(ix.name, section);
      this.sections.set(t.name, byIndex);
    }
    return section;
  }

  /** Per text index: documents and estimated bytes in memtables (active and frozen) and in the table-file sections built so far. */
  stats(): Record<string, IndexStats> {
    const live = new Set(this.tables().map((f) => f.name));
    const out: Record<string, IndexStats> = {};
    this.textIndexes.forEach((ix, i) => {
      let memtableEntries = 0;
      let memtableBytes = 0;
      for (const m of [this.memtables.active, ...this.memtables.frozen]) {
        const seg = m.textIndexes[i];
        if (!seg) continue;
        memtableEntries += seg.docKeys.length;
        memtableBytes += seg.bytes;
      }
      let tableEntries = 0;
      let tableBytes = 0;
      for (const [name, byIndex] of this.sections) {
        const s = live.has(name) ? byIndex.get(ix.name) : undefined;
        if (!s) continue;
        tableEntries += s.docKeys.length;
        tableBytes += s.bytes;
      }
      out[ix.name] = {
        entries: memtableEntries + tableEntries,
        bytes: memtableBytes + tableBytes,
        memtableEntries,
        memtableBytes,
        tableEntries,
        tableBytes,
      };
    });
    return out;
  }
}

/** Memtable `m`'s tier for text index number `at`: its key index covers exactly its visible prefix (in the capture's step). */
function memtableTier(m: MemTable, at: number): TierOf {
  const seg = m.textIndexes[at]!;
  const keyIndex = m.keyIndex!;
  return {
    seg,
    has: (k) => keyIndex.get(k) !== undefined,
    own: (doc) => keyIndex.get(seg.docKeys[doc]!) === seg.ordinals[doc],
  };
}

/** Is document `d` of tier `i` live: its tier's newest version, and no newer tier holds its key? Memoized per capture. */
function liveness(tiers: TierOf[]): (i: number, d: number) => boolean {
  const memo = tiers.map((t) => new Int8Array(t.seg.docKeys.length));
  return (i, d) => {
    const m = memo[i]!;
    if (m[d] !== 0) return m[d] === 1;
    const tier = tiers[i]!;
    let ok = tier.own(d);
    if (ok) {
      const k = tier.seg.docKeys[d]!;
      for (let j = 0; j < i; j++) {
        if (tiers[j]!.has(k)) {
          ok = false;
          break;
        }
      }
    }
    m[d] = ok ? 1 : 2;
    return ok;
  };
}

/** The live documents of `seg` holding clause `c`, with its frequency (a prefix: summed over the terms it starts). */
function clauseMatches(seg: TextSegment, c: Clause, live: (d: number) => boolean): Map<number, number> {
  const out = new Map<number, number>();
  const add = (p: Postings | undefined): void => {
    if (!p) return;
    for (let x = 0; x < p.docs.length; x++) {
      const d = p.docs[x]!;
      if (live(d)) out.set(d, (out.get(d) ?? 0) + p.tfs[x]!);
    }
  };
  if (!c.prefix) add(seg.postings(c.term));
  else for (const term of seg.termsWithPrefix(c.term)) add(seg.postings(term));
  return out;
}
