// Full-text search (SPEC §17.2: "Tokenised by `Intl.Segmenter` word boundaries"): a word that a
// document holds once must be found whatever its position in the document. The tokenizer
// (src/data/tokenize.ts) segments a document in pieces of 256 characters cut after whitespace; in
// a run of more than 256 characters without whitespace (punctuation-separated values, a URL list,
// and every Chinese or Japanese text, which puts no spaces between words) it cuts mid-run, so the
// word that straddles the cut is indexed as two fragments: the word is never found, and a search
// for a fragment finds a word the document does not hold.

import { describe, expect, it } from 'vitest';
import { MAX_TERM_CHARS, tokenize } from '../src/data/tokenize.js';
import { MemWal, MemoryStorage, defineSchema, int32, utf8 } from '../src/index.js';

const schema = defineSchema({ id: int32(), body: utf8() });
const quiet = { warn: () => undefined };

async function open(): Promise<MemWal> {
  return MemWal.open({
    name: 'notes',
    schema,
    primaryKey: ['id'],
    storage: new MemoryStorage(),
    logger: quiet,
    indexes: { words: { column: 'body', kind: 'text' } },
  } as never);
}

describe('search finds a word wherever it sits in a document without whitespace', () => {
  it('a comma-separated run: the word across character 256 is found, its fragments are not terms', async () => {
    const w = await open();
    try {
      // 253 commas then "hello,world": "hello" spans characters 253..257.
      await w.put([{ id: 1, body: `${','.repeat(253)}hello,world` }]);
      expect((await w.search('words', 'world')).map((h) => h.row.id)).toEqual([1]);
      expect((await w.search('words', 'hello')).map((h) => h.row.id)).toEqual([1]);
      expect(await w.search('words', 'hel')).toEqual([]);
      expect(await w.search('words', 'lo')).toEqual([]);
    } finally {
      await w.close();
    }
  });

  it('a Chinese text: every word at every position is found', async () => {
    const w = await open();
    try {
      // 255 characters of filler words, then 北京 ("Beijing") at characters 255..256.
      const filler = `${'我们'.repeat(127)}去`;
      const body = `${filler}北京。`;
      expect(filler.length).toBe(255);
      await w.put([{ id: 1, body }]);
      const segments = [...new Intl.Segmenter('zh', { granularity: 'word' }).segment('去北京。')].filter((s) => s.isWordLike);
      expect(segments.map((s) => s.segment)).toContain('北京'); // the runtime's segmenter knows the word
      expect((await w.search('words', '北京')).map((h) => h.row.id)).toEqual([1]);
    } finally {
      await w.close();
    }
  });

  it('tokenize equals one segmentation of the whole text, for runs without whitespace of any length', () => {
    const ix = { name: 'words', column: 'body', locale: undefined, stopWords: new Set<string>() };
    const whole = new Intl.Segmenter(undefined, { granularity: 'word' });
    const oracle = (t: string): string[] =>
      [...whole.segment(t.normalize('NFKC').toLocaleLowerCase())]
        .filter((s) => s.isWordLike && s.segment.length <= MAX_TERM_CHARS)
        .map((s) => s.segment);
    const parts = [
      '我们',
      '去',
      '北京',
      '。',
      ',',
      'Hello',
      'world',
      '東京都',
      'に',
      '行きます',
      'ー',
      '1234',
      '的',
      '中华人民共和国',
      '-',
      '.',
      'x1',
    ];
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n);
    };
    for (let n = 0; n < 300; n++) {
      let t = '';
      const len = 200 + rnd(1500);
      while (t.length < len) t += parts[rnd(parts.length)];
      expect(tokenize(ix, t)).toEqual(oracle(t));
    }
  });
});
