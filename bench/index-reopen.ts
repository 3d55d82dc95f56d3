// First query after a reopen (docs/benchmarks.md, "Index sections"): `rows` rows of the
// field-notes shape (id, title, quantity, tags[2 of 200], updatedAt) with two ordered indexes put
// into NodeFileStorage in a temporary directory, flushed and compacted; then `reps` times a fresh
// open, the 20 newest by `updatedAt` (the first query: it loads each table file's section), a
// `count` by tag (the second index's first query) and the 20 newest again (warm), each timed.
// Alone: `node --import tsx bench/index-reopen.ts --rows=200000 --reps=3`. The same script on a
// build before table format 3 measures the sections built from the files' rows. `KEEP=1` keeps
// the store's directory and prints it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Field, Float64, Int32, List, Schema, Utf8 } from 'apache-arrow';
import { MemWal } from '../src/index.js';
import { NodeFileStorage } from '../src/node.js';

const { values } = parseArgs({ options: { rows: { type: 'string' }, reps: { type: 'string' } } });
const N = Number(values.rows ?? 200_000);
const REPS = Number(values.reps ?? 3);
const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('title', new Utf8(), true),
  new Field('quantity', new Float64(), true),
  new Field('tags', new List(new Field('item', new Utf8(), true)), true),
  new Field('updatedAt', new Float64(), true),
]);
const indexes = { byUpdated: { column: 'updatedAt' }, byTag: { column: 'tags', multiEntry: true } };
const root = mkdtempSync(join(tmpdir(), 'memwal-index-reopen-'));
const opts = { name: 'b', schema, primaryKey: ['id'], storage: new NodeFileStorage(root), indexes, logger: { warn: () => undefined } };
try {
  let w = await MemWal.open(opts as never);
  for (let at = 0; at < N; at += 5000) {
    await w.put(
      Array.from({ length: Math.min(5000, N - at) }, (_, i) => {
        const id = at + i;
        return {
          id,
          title: `note ${id}`,
          quantity: id % 97,
          tags: [`t${id % 200}`, `t${(id * 7) % 200}`],
          updatedAt: (id * 7919) % 1_000_003,
        };
      }),
    );
  }
  await w.close();
  w = await MemWal.open(opts as never);
  await w.compact();
  await w.close();
  for (let rep = 0; rep < REPS; rep++) {
    const t0 = performance.now();
    w = await MemWal.open(opts as never);
    const t1 = performance.now();
    await w.query('byUpdated', { reverse: true, limit: 20 });
    const t2 = performance.now();
    const tagged = await w.count('byTag', { equals: 't7' });
    const t3 = performance.now();
    await w.query('byUpdated', { reverse: true, limit: 20 });
    const t4 = performance.now();
    const s = (await w.indexStats()).byUpdated as { tableSectionsRead?: number; tableSectionsBuilt?: number } | undefined;
    console.log(
      JSON.stringify({
        rows: N,
        openMs: +(t1 - t0).toFixed(1),
        firstQueryMs: +(t2 - t1).toFixed(1),
        firstCountMs: +(t3 - t2).toFixed(1),
        tagged,
        warmQueryMs: +(t4 - t3).toFixed(2),
        sectionsRead: s?.tableSectionsRead,
        sectionsBuilt: s?.tableSectionsBuilt,
      }),
    );
    await w.close();
  }
} finally {
  if (!process.env.KEEP) rmSync(root, { recursive: true, force: true });
  else console.log(root);
}
