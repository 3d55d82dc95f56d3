// Full-text search over a table file (docs/impl.md §13.1): a file's inverted index is not stored in
// the file; the first `search` that reads the file builds it from the file's blocks. That build
// runs in one synchronous stretch of the engine's thread: over a file of 30,000 short notes it
// held the event loop for about 1.5 s (2 busy cores), and every put, get and stats call from the
// app waited behind it — the time grows with the file, and compaction makes files larger. The
// engine must keep answering while it builds (as HNSW graphs are built in the background lane):
// no stretch without a turn of the event loop may last longer than 250 ms.

import { describe, expect, it } from 'vitest';
import { MemWal, MemoryStorage, defineSchema, int32, utf8 } from '../src/index.js';

const schema = defineSchema({ id: int32(), body: utf8() });
const indexes = { words: { column: 'body', kind: 'text' } };
const quiet = { warn: () => undefined };
const DOCS = 30_000;

describe('the first search over a large table file', () => {
  it('leaves the event loop turning while it builds the file’s text index', async () => {
    const storage = new MemoryStorage();
    const open = () => MemWal.open({ name: 'notes', schema, primaryKey: ['id'], storage, logger: quiet, indexes } as never);
    let w = await open();
    for (let i = 0; i < DOCS; i += 3000) {
      await w.put(
        Array.from({ length: 3000 }, (_, j) => ({ id: i + j, body: `note n${i + j} tag${(i + j) % 97} some common words to search` })),
      );
    }
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.close();
    w = await open(); // the file's text index is built on the first search that reads it
    try {
      let maxGap = 0;
      let last = performance.now();
      const ticker = setInterval(() => {
        const now = performance.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
      }, 1);
      const put = w.put([{ id: DOCS, body: 'written during the first search' }]);
      const hits = await w.search('words', 'tag5', { limit: 10_000 });
      await put;
      clearInterval(ticker);
      expect(hits).toHaveLength(Math.ceil((DOCS - 5) / 97));
      expect(maxGap).toBeLessThan(250);
    } finally {
      await w.close();
    }
  }, 120_000);
});
