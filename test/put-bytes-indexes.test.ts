// `maxPutBytes` (README options; src/engine/options.ts): "the largest put accepted, in estimated
// bytes (as memtables count them); a larger one rejects InvalidArgument before anything is
// written … this bounds the memory a single call can take" — and a memtable counts its index
// bytes (SPEC §17 "Maintaining"). A text index makes a row's counted bytes many times its text:
// a document of 65,536 distinct terms (~345 KB) counts about 9.8 MB. So a put well under the
// limit (2 such documents, ~0.7 MB, against 4 MiB — the `memwal/cloudflare` default for a 128 MB
// isolate) is accepted and takes ~20 MB; 6 of them (2 MB) took 59 MB counted and 183 MB of heap,
// far past both the put limit and a 16 MiB unflushed budget, in one call. A multi-entry ordered
// index does the same: one row with a list of 100,000 short tags counts 0.99 MB without the index
// and 7.4 MB with it, accepted against a 4 MiB limit.

import { Field, Int32, List, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal, MemWalError, MemoryStorage, defineSchema, int32, utf8 } from '../src/index.js';

const schema = defineSchema({ id: int32(), body: utf8() });
const quiet = { warn: () => undefined };
const MAX_PUT = 4 * 1024 * 1024;

/** A document of 65,536 distinct terms (the most a document indexes). */
const doc = (k: number): string => Array.from({ length: 65_536 }, (_, i) => `${String.fromCharCode(97 + k)}${i.toString(36)}`).join(' ');

/** The put is refused with nothing written, or what it added counts no more than MAX_PUT. */
async function expectWithinPutLimit(w: MemWal, rows: object[]): Promise<void> {
  const outcome = await w.put(rows as never).then(
    () => 'accepted',
    (e: unknown) => e,
  );
  if (outcome === 'accepted') {
    const m = await w.memtableStats();
    expect(m.estimatedBytes + m.frozenBytes).toBeLessThanOrEqual(MAX_PUT);
  } else {
    expect(outcome).toBeInstanceOf(MemWalError);
    expect((outcome as MemWalError).code).toBe('InvalidArgument');
    expect((await w.memtableStats()).estimatedBytes).toBe(0); // nothing written
  }
}

describe('maxPutBytes counts the index bytes a put adds', () => {
  it('text index: a put whose counted bytes pass maxPutBytes is refused, or takes no more than maxPutBytes', async () => {
    const w = await MemWal.open({
      name: 'notes',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: quiet,
      maxPutBytes: MAX_PUT,
      indexes: { words: { column: 'body', kind: 'text' } },
    } as never);
    try {
      const rows = [
        { id: 1, body: doc(0) },
        { id: 2, body: doc(1) },
      ];
      expect(rows[0]!.body.length + rows[1]!.body.length).toBeLessThan(MAX_PUT / 4);
      await expectWithinPutLimit(w, rows);
    } finally {
      await w.close();
    }
  }, 60_000);

  it('a put whose index bytes fit is accepted, and what the memtable counts is what stats() meters', async () => {
    const w = await MemWal.open({
      name: 'notes',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: quiet,
      maxPutBytes: MAX_PUT,
      indexes: { words: { column: 'body', kind: 'text' } },
    } as never);
    try {
      const body = doc(2).slice(0, 20_000); // about 3,500 distinct terms: ~0.5 MB in the index
      await w.put([{ id: 1, body }]);
      const m = await w.memtableStats();
      expect(m.estimatedBytes).toBeGreaterThan(10 * body.length); // the index is counted
      expect(m.estimatedBytes).toBeLessThanOrEqual(MAX_PUT);
      expect((await w.stats()).unflushedBytes).toBe(m.estimatedBytes + m.frozenBytes);
      expect(await w.search('words', body.slice(0, body.indexOf(' ')))).toHaveLength(1);
    } finally {
      await w.close();
    }
  });

  it('multi-entry index: the same', async () => {
    const tagged = new Schema([
      new Field('id', new Int32(), false),
      new Field('tags', new List(new Field('item', new Utf8(), true)), true),
    ]);
    const w = await MemWal.open({
      name: 'tags',
      schema: tagged,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: quiet,
      maxPutBytes: MAX_PUT,
      indexes: { byTag: { column: 'tags', multiEntry: true } },
    } as never);
    try {
      await expectWithinPutLimit(w, [{ id: 1, tags: Array.from({ length: 100_000 }, (_, i) => `t${i}`) }]);
    } finally {
      await w.close();
    }
  });
});
