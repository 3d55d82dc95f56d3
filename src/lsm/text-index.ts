// Full-text index segments (SPEC §17.2): an inverted index (term → postings of document ids and
// term frequencies, ids ascending), each document's length in terms and primary key. One segment
// per tier: a memtable's (`TextMemIndex`, kept as rows are appended, before they are visible) and
// a table file's (`TextFileSection`, built from its blocks; a persisted section can stand behind
// the same `TextSegment` interface). Segments hold every version their tier holds; which one is
// live (the newest across tiers, not deleted) is the reader's decision (engine/search.ts).

import type { RecordBatch } from 'apache-arrow';
import { KeyIndex } from '../data/key-index.js';
import type { Key } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import { type ResolvedTextIndex, tokenize } from '../data/tokenize.js';

/** Postings of one term: parallel arrays, document ids ascending. */
export interface Postings {
  docs: number[];
  tfs: number[];
}

/** Estimated bytes of one posting (two array slots). */
export const TEXT_POSTING_BYTES = 16;
/** Estimated bytes of a term's entry besides its characters: the Map slot, string header, postings object and arrays. */
export const TEXT_TERM_BYTES = 120;
/** Estimated bytes of one document: its key, length and locator slots. */
export const TEXT_DOC_BYTES = 32;

/** The inverted index of one tier, as a search reads it. */
export interface TextSegment {
  /** Primary key of each document, by id. */
  readonly docKeys: readonly Key[];
  /** Length in terms of each document, by id. */
  readonly docLengths: readonly number[];
  /** The postings of `term`, or undefined. */
  postings(term: string): Postings | undefined;
  /** Every term of the segment starting with `prefix`. */
  termsWithPrefix(prefix: string): string[];
  /** Estimated bytes held. */
  readonly bytes: number;
}

/** Terms in insertion order, and a sorted copy kept up to date on read (new tail sorted and merged in). */
class TermList {
  readonly terms: string[] = [];
  private sorted: string[] = [];

  /** Every term starting with `prefix`. */
  withPrefix(prefix: string): string[] {
    if (this.sorted.length !== this.terms.length) {
      const tail = this.terms.slice(this.sorted.length).sort();
      const old = this.sorted;
      const merged: string[] = [];
      let i = 0;
      let j = 0;
      while (i < old.length && j < tail.length) merged.push(old[i]! <= tail[j]! ? old[i++]! : tail[j++]!);
      while (i < old.length) merged.push(old[i++]!);
      while (j < tail.length) merged.push(tail[j++]!);
      this.sorted = merged;
    }
    const s = this.sorted;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (s[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < s.length && s[i]!.startsWith(prefix); i++) out.push(s[i]!);
    return out;
  }
}

/** An inverted index being built: documents added in id order. */
class InvertedIndex implements TextSegment {
  readonly docKeys: Key[] = [];
  readonly docLengths: number[] = [];
  bytes = 0;
  private readonly byTerm = new Map<string, Postings>();
  private readonly termList = new TermList();

  constructor(readonly spec: ResolvedTextIndex) {}

  postings(term: string): Postings | undefined {
    return this.byTerm.get(term);
  }

  termsWithPrefix(prefix: string): string[] {
    return this.termList.withPrefix(prefix);
  }

  /** Tokenize `text` and add it as the next document (key `key`); returns its id and the bytes added. */
  protected addDocument(text: string, key: Key): { doc: number; bytes: number } {
    return this.addTerms(termCounts(tokenize(this.spec, text)), key);
  }

  /** Add the next document (key `key`) of term counts `doc`; returns its id and the bytes added. */
  protected addTerms(doc: TermCounts, key: Key): { doc: number; bytes: number } {
    const id = this.docKeys.length;
    let bytes = TEXT_DOC_BYTES;
    for (const [term, n] of doc.tf) {
      let p = this.byTerm.get(term);
      if (!p) {
        this.byTerm.set(term, (p = { docs: [], tfs: [] }));
        this.termList.terms.push(term);
        bytes += TEXT_TERM_BYTES + 2 * term.length;
      }
      p.docs.push(id);
      p.tfs.push(n);
      bytes += TEXT_POSTING_BYTES;
    }
    this.docKeys.push(key);
    this.docLengths.push(doc.length);
    this.bytes += bytes;
    return { doc: id, bytes };
  }
}

/** A document's terms: each distinct term with its count, and its length in terms. */
export interface TermCounts {
  tf: Map<string, number>;
  length: number;
}

function termCounts(terms: readonly string[]): TermCounts {
  const tf = new Map<string, number>();
  for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
  return { tf, length: terms.length };
}

/**
 * The documents one batch adds to a memtable's text index, tokenized once (before the put is
 * admitted, then handed to `TextMemIndex.add`): per row its term counts, or undefined (a delete
 * marker, no text); and `bytes`, the most the index can grow by adding them — every distinct term
 * of every document counted as new to the index (TEXT_DOC_BYTES + Σ over its distinct terms of
 * TEXT_POSTING_BYTES + TEXT_TERM_BYTES + 2 × its length). `TextMemIndex.add` counts a term's entry
 * only for a term the index does not hold yet, so what it adds is never more than `bytes`.
 */
export interface TextBatchDocs {
  docs: (TermCounts | undefined)[];
  bytes: number;
}

/** Tokenize the text index `spec`'s column of `batch` (see TextBatchDocs). */
export function textBatchDocs(spec: ResolvedTextIndex, batch: RecordBatch, storeSchema: StoreSchema): TextBatchDocs {
  const text = textColumn(batch, spec.column);
  const tomb = storeSchema.hasTombstone ? batch.getChildAt(storeSchema.internal.fields.length - 1) : null;
  const docs: (TermCounts | undefined)[] = new Array(batch.numRows);
  let bytes = 0;
  for (let r = 0; r < batch.numRows; r++) {
    const t = tomb?.get(r) === true ? undefined : text(r);
    if (t === undefined) continue;
    const d = termCounts(tokenize(spec, t));
    docs[r] = d;
    bytes += TEXT_DOC_BYTES;
    for (const term of d.tf.keys()) bytes += TEXT_POSTING_BYTES + TEXT_TERM_BYTES + 2 * term.length;
  }
  return { docs, bytes };
}

/** The text value of row `r` of column `column` of `batch`, or undefined (null, absent). */
function textColumn(batch: RecordBatch, column: string): (r: number) => string | undefined {
  const v = batch.getChild(column);
  return (r) => {
    const x = v?.get(r);
    return typeof x === 'string' ? x : undefined;
  };
}

/**
 * One text index of one memtable: a document per appended row with a non-null value (document ids
 * in append order; `ordinals` holds each one's row ordinal). Tombstones are not documents.
 */
export class TextMemIndex extends InvertedIndex {
  readonly ordinals: number[] = [];

  /**
   * Index the rows of `batch` (keys `keys`, first ordinal `base`); returns the bytes added.
   * `prepared`: the batch's documents, tokenized by `textBatchDocs` when the put was checked.
   */
  add(batch: RecordBatch, keys: ArrayLike<Key>, base: number, storeSchema: StoreSchema, prepared?: TextBatchDocs): number {
    const { docs } = prepared ?? textBatchDocs(this.spec, batch, storeSchema);
    let added = 0;
    for (let r = 0; r < batch.numRows; r++) {
      const d = docs[r];
      if (d === undefined) continue;
      added += this.addTerms(d, keys[r]!).bytes;
      this.ordinals.push(base + r);
    }
    return added;
  }
}

/**
 * One text index of one table file (one version per key): a document per row with a non-null
 * value, in file order, each with its block and row; and every key the file holds (a delete
 * marker, a row without text), so a search knows which older versions it hides.
 */
export class TextFileSection extends InvertedIndex {
  readonly blocks: number[] = [];
  readonly rows: number[] = [];
  /** Every key of the file → its document id, or -1 (a delete marker or no text). */
  readonly keys = new KeyIndex();

  /** Add block `block`'s rows (keys `keys`, in file order). */
  addBlock(block: number, batch: RecordBatch, keys: ArrayLike<Key>, deleted: (row: number) => boolean): void {
    const text = textColumn(batch, this.spec.column);
    for (let r = 0; r < batch.numRows; r++) {
      const k = keys[r]!;
      const t = deleted(r) ? undefined : text(r);
      if (t === undefined) {
        this.keys.set(k, -1);
        this.bytes += TEXT_DOC_BYTES;
        continue;
      }
      this.keys.set(k, this.addDocument(t, k).doc);
      this.blocks.push(block);
      this.rows.push(r);
    }
  }
}
