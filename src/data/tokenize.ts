// Full-text indexes (SPEC §17.2): their declaration (`{ column, kind: 'text', locale?, stopWords? }`,
// resolved against the schema before anything is claimed) and the tokenizer both the index and
// the query use, so a term a document is indexed under is the term a query looks for. Any runtime
// with `Intl.Segmenter` (browsers, Node ≥ 16, Deno, workerd).
//
// The rule: the text's first MAX_DOCUMENT_CHARS characters, NFKC-normalized, then lower-cased
// with `toLocaleLowerCase(locale)` (NFKC first: it maps fullwidth and ligature forms to letters
// that lower-casing then folds), cut at `Intl.Segmenter(locale, { granularity: 'word' })`
// boundaries (segmented in pieces of about 256 characters, cut after whitespace or, in a longer
// run without any, with the piece's last segments segmented again with the next piece, so no
// word is cut in two: `wordSegments`); each word-like segment (`isWordLike`: letters, numbers, ideographs — not spaces or
// punctuation) of at most MAX_TERM_CHARS characters is a term (a longer one is skipped, as
// noise), a stop word (folded by the same rule) is dropped, and at most MAX_DOCUMENT_TOKENS terms
// are kept. A document's length is its number of terms.

import { type Schema, Type } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';

/** A full-text index on a string column (SPEC §17.2). */
export interface TextIndexSpec<C extends string = string> {
  column: C;
  kind: 'text';
  /** A BCP 47 locale for word boundaries and case folding (default: the runtime's). */
  locale?: string;
  /** Terms to leave out of documents and queries (folded as the text is). */
  stopWords?: readonly string[];
}

/** A text index, resolved against the schema. */
export interface ResolvedTextIndex {
  name: string;
  column: string;
  locale: string | undefined;
  stopWords: ReadonlySet<string>;
}

/** Characters of a document that are tokenized; the rest is not indexed. */
export const MAX_DOCUMENT_CHARS = 1 << 20;
/** Terms of a document that are indexed; later ones are not. */
export const MAX_DOCUMENT_TOKENS = 65_536;
/** A word-like segment longer than this (UTF-16 units, folded) is not a term. */
export const MAX_TERM_CHARS = 64;
/** Most characters in a search's text (`InvalidArgument` beyond). */
export const MAX_QUERY_CHARS = 4096;
/** Most terms in a search's text (`InvalidArgument` beyond): each is a pass over its postings. */
export const MAX_QUERY_TERMS = 32;
/** Most stop words an index declares. */
export const MAX_STOP_WORDS = 10_000;

const invalid = (why: string): MemWalError => new MemWalError('InvalidArgument', why);

/**
 * The text index `spec` named `name`, checked against `schema` (the caller has checked the name):
 * `InvalidArgument` for an unknown field, a column that is not a string column, a bad locale or a
 * bad stop-word list. Runs in options resolution.
 */
export function resolveTextIndex(name: string, spec: Record<string, unknown>, schema: Schema): ResolvedTextIndex {
  const what = `option indexes: text index "${name}"`;
  for (const k of Object.keys(spec)) {
    if (k !== 'column' && k !== 'kind' && k !== 'locale' && k !== 'stopWords') throw invalid(`${what}: unknown field "${k}"`);
  }
  const column = spec.column;
  if (typeof column !== 'string') throw invalid(`${what}: column must be a column name`);
  const field = schema.fields.find((f) => f.name === column);
  if (!field) throw invalid(`${what}: no column "${column}" in the schema`);
  if (field.type.typeId !== Type.Utf8 && field.type.typeId !== Type.LargeUtf8) {
    throw invalid(`${what}: column "${column}" is ${field.type}, a text index needs a Utf8 column`);
  }
  let locale: string | undefined;
  if (spec.locale !== undefined) {
    if (typeof spec.locale !== 'string') throw invalid(`${what}: locale must be a BCP 47 language tag`);
    try {
      locale = Intl.getCanonicalLocales(spec.locale)[0];
    } catch {
      throw invalid(`${what}: locale ${JSON.stringify(spec.locale)} is not a BCP 47 language tag`);
    }
  }
  const stop = spec.stopWords ?? [];
  if (!Array.isArray(stop) || stop.some((w) => typeof w !== 'string')) throw invalid(`${what}: stopWords must be an array of strings`);
  if (stop.length > MAX_STOP_WORDS) throw invalid(`${what}: ${stop.length} stop words, more than ${MAX_STOP_WORDS}`);
  const stopWords = new Set<string>();
  for (const w of stop as string[]) stopWords.add(fold(w.slice(0, MAX_QUERY_CHARS), locale));
  return { name, column, locale, stopWords };
}

function fold(text: string, locale: string | undefined): string {
  return text.normalize('NFKC').toLocaleLowerCase(locale);
}

const segmenters = new Map<string, Intl.Segmenter>();

function segmenter(locale: string | undefined): Intl.Segmenter {
  const id = locale ?? '';
  let s = segmenters.get(id);
  if (!s) segmenters.set(id, (s = new Intl.Segmenter(locale, { granularity: 'word' })));
  return s;
}

/** Characters segmented at once: V8's segment iterator takes time quadratic in its input's length. */
const PIECE_CHARS = 256;

/**
 * Where the piece of `text` from `start` ends: after the last whitespace character within
 * PIECE_CHARS (a word never spans one), else at PIECE_CHARS (never mid-surrogate), mid-run: the
 * end × 2, plus 1 when mid-run.
 */
function pieceEnd(text: string, start: number): number {
  const end = Math.min(text.length, start + PIECE_CHARS);
  if (end === text.length) return end * 2;
  let ws = end - 1;
  while (ws > start && !/\s/.test(text[ws]!)) ws--;
  if (ws > start) return (ws + 1) * 2;
  const c = text.charCodeAt(end - 1);
  return (end - 1 > start && c >= 0xd800 && c < 0xdc00 ? end - 1 : end) * 2 + 1;
}

/**
 * Append to `out` the word-like segments of `text`'s piece at `at` and move `at` on: piece by
 * piece, the segments one segmentation of the whole text would give. A piece cut mid-run (no whitespace in reach) may end inside a word, so its
 * last two segments are not taken: the next piece starts where they start and segments them
 * again with what follows (two, so a boundary decided by the segment after it is decided with
 * that segment in view). A piece that is one segment is a word longer than PIECE_CHARS, far past
 * MAX_TERM_CHARS: it is skipped, and so is the next piece's first segment if it is word-like (its
 * rest; a word of PIECE_CHARS or more ending exactly at a cut, directly followed by another word,
 * loses that word — no dictionary segments words that long).
 */
function pieceWords(words: Intl.Segmenter, text: string, at: PieceCursor, out: string[]): void {
  const start = at.start;
  const piece = pieceEnd(text, start);
  const end = piece >>> 1;
  if ((piece & 1) === 0) {
    for (const s of words.segment(text.slice(start, end))) {
      if (s.isWordLike && !(at.skipFirst && s.index === 0)) out.push(s.segment);
    }
    at.skipFirst = false;
    at.start = end;
    return;
  }
  const list = [...words.segment(text.slice(start, end))];
  if (list.length === 1) {
    at.skipFirst = true; // a word of PIECE_CHARS or more: not a term, nor is its rest
    at.start = end;
    return;
  }
  const keep = list.length - (list.length >= 3 ? 2 : 1);
  for (let i = 0; i < keep; i++) {
    const s = list[i]!;
    if (s.isWordLike && !(at.skipFirst && i === 0)) out.push(s.segment);
  }
  at.skipFirst = false;
  at.start = start + list[keep]!.index;
}

/** Where `pieceWords` goes on from: the next piece's start, and whether its first segment is the rest of a long word. */
interface PieceCursor {
  start: number;
  skipFirst: boolean;
}

/**
 * The terms of `text` under `ix`'s rule (the file header), in order, repeats kept. `keepLast`: the
 * last term is kept even when it is a stop word (a prefix being typed).
 */
export function tokenize(ix: ResolvedTextIndex, text: string, keepLast = false): string[] {
  const folded = fold(text.length > MAX_DOCUMENT_CHARS ? text.slice(0, MAX_DOCUMENT_CHARS) : text, ix.locale);
  const out: string[] = [];
  let lastStop: string | undefined;
  const words = segmenter(ix.locale);
  const at: PieceCursor = { start: 0, skipFirst: false };
  const piece: string[] = [];
  all: while (at.start < folded.length) {
    piece.length = 0;
    pieceWords(words, folded, at, piece);
    for (const term of piece) {
      if (term.length > MAX_TERM_CHARS) {
        lastStop = undefined;
        continue;
      }
      if (ix.stopWords.has(term)) {
        lastStop = term;
        continue;
      }
      lastStop = undefined;
      out.push(term);
      if (out.length >= MAX_DOCUMENT_TOKENS) break all;
    }
  }
  if (keepLast && lastStop !== undefined) out.push(lastStop);
  return out;
}

/**
 * The terms of a search's text: `InvalidArgument` for a text that is not a string, longer than
 * MAX_QUERY_CHARS, or of more than MAX_QUERY_TERMS terms. `prefix`: the last term is kept even
 * when a stop word.
 */
export function queryTerms(ix: ResolvedTextIndex, text: unknown, prefix: boolean): string[] {
  if (typeof text !== 'string') throw invalid(`search ${ix.name}: the text must be a string`);
  if (text.length > MAX_QUERY_CHARS)
    throw invalid(`search ${ix.name}: the text has ${text.length} characters, more than ${MAX_QUERY_CHARS}`);
  const terms = tokenize(ix, text, prefix);
  if (terms.length > MAX_QUERY_TERMS) throw invalid(`search ${ix.name}: the text has ${terms.length} terms, more than ${MAX_QUERY_TERMS}`);
  return terms;
}
