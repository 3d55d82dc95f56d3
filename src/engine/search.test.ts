// Full-text search (SPEC §17.2) against a brute-force BM25 over the same tokens: puts, overwrites,
// deletes, seals, compactions and reopens in random order; after each step random 1–3 term
// searches (exact and prefix, with and without `where`) on two text indexes are checked against
// a model that scores every live row from scratch. Plus: a document scores the same whichever
// tier holds it, a delete in a newer file hides an older file's document, and bad input is
// refused with InvalidArgument.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_TOKENS, MAX_QUERY_TERMS, type ResolvedTextIndex, tokenize } from '../data/tokenize.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { int, rng } from '../testing/rng.js';
import { MemWal } from './memwal.js';
import { bm25, type SearchOptions } from './search.js';

const SEEDS = Number(process.env.MEMWAL_SEARCH_SEEDS ?? 5);
const STEPS = 30;
const KEYS = 30;
const quiet = { warn: () => undefined };

const schema = new Schema([new Field('id', new Int32(), false), new Field('body', new Utf8(), true), new Field('cat', new Utf8(), true)]);
const indexes = {
  text: { column: 'body', kind: 'text' },
  textStop: { column: 'body', kind: 'text', locale: 'en', stopWords: ['The', 'of'] },
  byCat: { column: 'cat' },
} as const;

type Row = { id: number; body: string | null; cat: string | null };
const WORDS = ['The', 'of', 'apple', 'Apples', 'apply', 'banana', 'band', 'CHERRY', 'cherries', 'date', 'Ｄate', 'ﬁg', 'fig'];
const SEPARATORS = [' ', ', ', '. ', ' - ', '\n'];
const CATS = ['a', 'b', 'c'];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[int(r, xs.length)]!;
}

function randomRow(r: () => number, id: number): Row {
  const n = int(r, 9);
  let body = '';
  for (let i = 0; i < n; i++) body += (i > 0 ? pick(r, SEPARATORS) : '') + pick(r, WORDS);
  return { id, body: int(r, 10) === 0 ? null : body, cat: int(r, 5) === 0 ? null : pick(r, CATS) };
}

/** The model's answer: every live row tokenized now, scored by BM25 from scratch, in the engine's clause order. */
function modelSearch(model: Map<number, Row>, ix: ResolvedTextIndex, text: string, opts: SearchOptions): { id: number; score: number }[] {
  const prefix = opts.prefix ?? false;
  const terms = tokenize(ix, text, prefix);
  if (terms.length === 0) return [];
  const clauses = [...new Set(prefix ? terms.slice(0, -1) : terms)].map((t) => ({ term: t, prefix: false }));
  if (prefix) clauses.push({ term: terms[terms.length - 1]!, prefix: true });
  const docs = [...model.values()]
    .filter((row) => row.body !== null)
    .map((row) => ({ row, terms: tokenize(ix, row.body!) }))
    .filter((d) => d.terms.length > 0);
  const avg = docs.reduce((s, d) => s + d.terms.length, 0) / docs.length;
  const tf = (d: { terms: string[] }, c: { term: string; prefix: boolean }): number =>
    d.terms.filter((t) => (c.prefix ? t.startsWith(c.term) : t === c.term)).length;
  const df = clauses.map((c) => docs.filter((d) => tf(d, c) > 0).length);
  const hits: { id: number; score: number }[] = [];
  for (const d of docs) {
    if (opts.where && d.row.cat !== opts.where.equals) continue;
    const tfs = clauses.map((c) => tf(d, c));
    if (tfs.some((n) => n === 0)) continue;
    let score = 0;
    clauses.forEach((_, j) => {
      score += bm25(tfs[j]!, df[j]!, docs.length, d.terms.length, avg);
    });
    hits.push({ id: d.row.id, score });
  }
  hits.sort((a, b) => b.score - a.score || a.id - b.id);
  return hits.slice(0, opts.limit ?? 10);
}

const resolved: Record<string, ResolvedTextIndex> = {
  text: { name: 'text', column: 'body', locale: undefined, stopWords: new Set() },
  textStop: { name: 'textStop', column: 'body', locale: 'en', stopWords: new Set(['the', 'of']) },
};

function randomSearch(r: () => number): { text: string; opts: SearchOptions } {
  const n = 1 + int(r, 3);
  const words = Array.from({ length: n }, () => pick(r, WORDS));
  const opts: SearchOptions = {};
  if (int(r, 3) === 0) {
    opts.prefix = true;
    const last = words[n - 1]!;
    words[n - 1] = last.slice(0, 1 + int(r, last.length));
  }
  if (int(r, 4) === 0) opts.where = { index: 'byCat', equals: pick(r, CATS) };
  if (int(r, 3) === 0) opts.limit = 1 + int(r, 4);
  else opts.limit = 100;
  return { text: words.join(pick(r, [' ', ', ', '  '])), opts };
}

async function check(w: MemWal, model: Map<number, Row>, r: () => number, where: string): Promise<void> {
  for (const index of ['text', 'textStop']) {
    for (let n = 0; n < 4; n++) {
      const { text, opts } = randomSearch(r);
      const got = (await w.search(index, text, opts)).map((h) => ({ id: h.row.id as number, score: h.score }));
      const want = modelSearch(model, resolved[index]!, text, opts);
      expect(got, `${where}: search(${index}, ${JSON.stringify(text)}, ${JSON.stringify(opts)})`).toEqual(want);
    }
  }
}

const open = (storage: MemoryStorage, name = 's'): Promise<MemWal> =>
  MemWal.open({
    name,
    schema,
    primaryKey: ['id'],
    storage,
    indexes,
    maxMemtableRows: 10,
    flushRetry: { baseMs: 1, maxMs: 5 },
    logger: quiet,
  } as never);

describe('full-text search against a brute-force BM25', () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    it(`seed ${seed}`, async () => {
      const r = rng(seed);
      const storage = new MemoryStorage();
      let w = await open(storage);
      const model = new Map<number, Row>();
      try {
        for (let step = 0; step < STEPS; step++) {
          const op = int(r, 10);
          if (op < 5) {
            const rows = Array.from({ length: 1 + int(r, 6) }, () => randomRow(r, int(r, KEYS)));
            await w.put(rows);
            for (const row of rows) model.set(row.id, row);
          } else if (op < 7) {
            const ids = Array.from({ length: 1 + int(r, 3) }, () => int(r, KEYS));
            await w.delete(ids.map((id) => ({ id })));
            for (const id of ids) model.delete(id);
          } else if (op === 7) {
            await w.forceSealActive();
            await w.waitForFlushDrain();
          } else if (op === 8) {
            await w.forceSealActive();
            await w.waitForFlushDrain();
            await w.compact();
          } else {
            await w.close();
            w = await open(storage);
          }
          await check(w, model, r, `seed ${seed} step ${step} (op ${op})`);
        }
        const stats = await w.indexStats();
        expect(Object.keys(stats).sort()).toEqual(['byCat', 'text', 'textStop']);
      } finally {
        await w.close();
      }
    });
  }
});

describe('full-text search across tiers', () => {
  const docs: Row[] = [
    { id: 1, body: 'red apple pie', cat: 'a' },
    { id: 2, body: 'green apple', cat: 'a' },
    { id: 3, body: 'apple apple banana split with cream', cat: 'b' },
    { id: 4, body: 'banana bread', cat: 'b' },
    { id: 5, body: 'the apple of my eye', cat: 'c' },
  ];

  it('scores a document the same whichever tier holds it (memtable, flushed, compacted, reopened)', async () => {
    const storage = new MemoryStorage();
    let w = await open(storage, 'tiers');
    try {
      await w.put(docs.slice(0, 3));
      await w.forceSealActive();
      await w.waitForFlushDrain();
      await w.put(docs.slice(3)); // 1-3 in a table file, 4-5 in the memtable
      const before = await w.search('text', 'apple', { limit: 10 });
      const model = new Map(docs.map((d) => [d.id, d]));
      expect(before.map((h) => ({ id: h.row.id, score: h.score }))).toEqual(modelSearch(model, resolved.text!, 'apple', {}));
      const scores = (hits: { row: Record<string, unknown>; score: number }[]): Record<number, number> =>
        Object.fromEntries(hits.map((h) => [h.row.id, h.score]));
      await w.forceSealActive();
      await w.waitForFlushDrain(); // two table files
      expect(scores(await w.search('text', 'apple'))).toEqual(scores(before));
      await w.compact(); // one
      expect(scores(await w.search('text', 'apple'))).toEqual(scores(before));
      expect((await w.indexStats()).text).toMatchObject({ tableEntries: 5 }); // its section, built by the search
      expect((await w.stats()).indexes).toContainEqual(expect.objectContaining({ name: 'text', kind: 'text', entries: 5 }));
      await w.close();
      w = await open(storage, 'tiers');
      expect(scores(await w.search('text', 'apple'))).toEqual(scores(before));
      // And back: document 1 rewritten unchanged into the memtable keeps its score.
      await w.put([docs[0]!]);
      expect(scores(await w.search('text', 'apple'))).toEqual(scores(before));
    } finally {
      await w.close();
    }
  });

  it('never returns an overwritten version or a deleted row, and counts neither in the statistics', async () => {
    const storage = new MemoryStorage();
    const w = await open(storage, 'stale');
    try {
      await w.put(docs);
      await w.forceSealActive();
      await w.waitForFlushDrain();
      await w.put([{ id: 2, body: 'green pear', cat: 'a' }]); // overwrite in the memtable
      await w.put([{ id: 2, body: 'green plum', cat: 'a' }]); // and again in the same memtable
      expect(await w.search('text', 'pear')).toEqual([]);
      expect((await w.search('text', 'green')).map((h) => h.row.body)).toEqual(['green plum']);
      await w.delete([{ id: 3 }]);
      await w.forceSealActive();
      await w.waitForFlushDrain(); // the delete marker in a newer file than document 3
      await w.put([{ id: 1, body: 'red cherry', cat: 'a' }]);
      const model = new Map<number, Row>(docs.map((d) => [d.id, d]));
      model.set(2, { id: 2, body: 'green plum', cat: 'a' });
      model.delete(3);
      model.set(1, { id: 1, body: 'red cherry', cat: 'a' });
      for (const q of ['apple', 'green', 'pear', 'plum', 'banana', 'red', 'cherry', 'green p']) {
        const got = (await w.search('text', q, { prefix: q.endsWith(' p') })).map((h) => ({ id: h.row.id, score: h.score }));
        expect(got, q).toEqual(modelSearch(model, resolved.text!, q, { prefix: q.endsWith(' p') }));
      }
      expect((await w.search('text', 'banana')).map((h) => h.row.id)).toEqual([4]);
      expect(await w.search('text', 'pear')).toEqual([]);
    } finally {
      await w.close();
    }
  });

  it('matches every term, the last as a prefix with prefix, and filters with where before the limit', async () => {
    const w = await open(new MemoryStorage(), 'terms');
    try {
      await w.put(docs);
      expect((await w.search('text', 'apple banana')).map((h) => h.row.id)).toEqual([3]);
      expect((await w.search('text', 'ban')).map((h) => h.row.id)).toEqual([]);
      expect((await w.search('text', 'ban', { prefix: true })).map((h) => h.row.id).sort()).toEqual([3, 4]);
      expect((await w.search('text', 'apple', { where: { index: 'byCat', equals: 'c' }, limit: 1 })).map((h) => h.row.id)).toEqual([5]);
      // Stop words leave queries and documents; with prefix the last term stays (it is being typed).
      expect((await w.search('textStop', 'the apple')).map((h) => h.row.id)).toEqual(
        (await w.search('textStop', 'apple')).map((h) => h.row.id),
      );
      expect(await w.search('textStop', 'the')).toEqual([]);
    } finally {
      await w.close();
    }
  });
});

describe('full-text search and visibility', () => {
  it('finds a row, and counts it in the statistics, only once it is visible (its WAL entry durable)', async () => {
    const storage = new FaultInjectingStorage();
    const w = await MemWal.open({ name: 'vis', schema, primaryKey: ['id'], storage, indexes, logger: quiet } as never);
    try {
      await w.put([
        { id: 1, body: 'apple pie', cat: 'a' },
        { id: 2, body: 'apple tart', cat: 'a' },
      ]);
      const before = await w.search('text', 'apple');
      const release = storage.hold('walAppend');
      const pending = w.put([
        { id: 3, body: 'apple crumble', cat: 'a' },
        { id: 1, body: 'plum pie', cat: 'a' },
      ]);
      for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 1));
      // Appended and indexed, not durable: the same hits with the same scores as before the put.
      expect(await w.search('text', 'apple')).toEqual(before);
      expect(await w.search('text', 'crumble')).toEqual([]);
      release();
      await pending;
      expect((await w.search('text', 'apple')).map((h) => h.row.id)).toEqual([2, 3]);
      expect((await w.search('text', 'plum')).map((h) => h.row.id)).toEqual([1]);
    } finally {
      await w.close();
    }
  });
});

describe('the tokenizer', () => {
  const ix = resolved.text!;
  it('folds case and compatibility forms and cuts at word boundaries', () => {
    expect(tokenize(ix, "Ｃａｎ't STOP the ﬁle-system, e.g. 3.14!")).toEqual(["can't", 'stop', 'the', 'file', 'system', 'e.g', '3.14']);
  });
  it('bounds a huge document: at most MAX_DOCUMENT_TOKENS terms, long runs skipped', () => {
    expect(tokenize(ix, 'word '.repeat(MAX_DOCUMENT_TOKENS + 10)).length).toBe(MAX_DOCUMENT_TOKENS);
    expect(tokenize(ix, `a ${'x'.repeat(1000)} b`)).toEqual(['a', 'b']);
  });
});

describe('bad input', () => {
  it('refuses bad searches with InvalidArgument', async () => {
    const w = await open(new MemoryStorage(), 'bad');
    try {
      await w.put(docs0());
      const bad = async (p: Promise<unknown>, message: RegExp): Promise<void> => {
        await expect(p).rejects.toMatchObject({ code: 'InvalidArgument', message: expect.stringMatching(message) });
      };
      await bad(w.search('nope', 'apple'), /no text index "nope"/);
      await bad(w.search('byCat', 'apple'), /no text index "byCat"/);
      await bad(w.search('text', 42 as never), /must be a string/);
      await bad(w.search('text', 'a '.repeat(MAX_QUERY_TERMS + 1)), /more than 32/);
      await bad(w.search('text', 'apple '.repeat(10_000)), /characters, more than/);
      await bad(w.search('text', 'apple', { limit: -1 }), /limit/);
      await bad(w.search('text', 'apple', { limit: 10_001 }), /limit/);
      await bad(w.search('text', 'apple', { nope: 1 } as never), /unknown option "nope"/);
      await bad(w.search('text', 'apple', { prefix: 'yes' } as never), /prefix must be a boolean/);
      await bad(w.search('text', 'apple', { where: { index: 'text', equals: 'a' } }), /not an ordered index/);
      await bad(w.search('text', 'apple', { where: { index: 'byCat', equals: 3 } }), /must be a string/);
      await bad(w.query('text'), /no index "text"/);
    } finally {
      await w.close();
    }
  });

  it('refuses bad text index declarations before claiming the store', async () => {
    const storage = new MemoryStorage();
    const declare = (spec: unknown): Promise<MemWal> =>
      MemWal.open({ name: 'decl', schema, primaryKey: ['id'], storage, indexes: { t: spec }, logger: quiet } as never);
    for (const [spec, message] of [
      [{ column: 'id', kind: 'text' }, /needs a Utf8 column/],
      [{ column: 'nope', kind: 'text' }, /no column "nope"/],
      [{ column: 'body', kind: 'text', locale: 'not a locale!' }, /not a BCP 47/],
      [{ column: 'body', kind: 'text', stopWords: 'the' }, /stopWords must be an array/],
      [{ column: 'body', kind: 'text', multiEntry: true }, /unknown field "multiEntry"/],
      [{ column: 'body', kind: 'fuzzy' }, /unknown kind "fuzzy"/],
    ] as const) {
      await expect(declare(spec), JSON.stringify(spec)).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: expect.stringMatching(message),
      });
    }
  });
});

function docs0(): Row[] {
  return [{ id: 1, body: 'apple', cat: 'a' }];
}
