// Cold point reads in Node (docs/benchmarks.md, "coldnode"): `keys` keyed rows of the read case
// written to NodeFileStorage in a temporary directory and compacted into one table file, then,
// `reps` times, a fresh open (empty block cache) and `gets` random point reads of present keys,
// each timed. One untimed open and series first (JIT). Prints one JSON line. bench/run.mjs runs
// it (`coldnode`); alone: `node --import tsx bench/cold-node.ts --keys=200000 --gets=2000 --reps=5`.
// Node 20+.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MemWal } from '../src/index.js';
import { NodeFileStorage } from '../src/node.js';
import { BENCH_SCHEMA, ladderKey, ladderRows, readKeys, rowsToBatch } from './data.js';
import { spread } from './measure.js';

const { values } = parseArgs({ options: { keys: { type: 'string' }, gets: { type: 'string' }, reps: { type: 'string' } } });
const KEYS = Number(values.keys ?? 200_000);
const GETS = Number(values.gets ?? 2000);
const REPS = Number(values.reps ?? 5);

const root = mkdtempSync(join(tmpdir(), 'memwal-cold-'));
const storage = new NodeFileStorage(root);
const options = { name: 'cold', schema: BENCH_SCHEMA, primaryKey: ['id'], storage, logger: { warn: () => undefined } };

/** One fresh open and `GETS` timed gets (seed `seed`); the store is closed after. */
async function series(seed: number): Promise<{ openMs: number; gets: number; ms: number; blockReads: number } & ReturnType<typeof spread>> {
  const t0 = performance.now();
  const db = await MemWal.open(options);
  const openMs = performance.now() - t0;
  try {
    const keys = readKeys(KEYS, GETS, seed, true, ladderKey);
    const before = await db.readStats();
    const lat = new Float64Array(GETS);
    const t1 = performance.now();
    for (let i = 0; i < GETS; i++) {
      const t = performance.now();
      const row = await db.get({ id: keys[i]! });
      lat[i] = performance.now() - t;
      if (row === undefined) throw new Error(`cold node: key ${keys[i]} not found`);
    }
    const ms = performance.now() - t1;
    const after = await db.readStats();
    return { openMs, gets: GETS, ms, blockReads: after.blockReads - before.blockReads, ...spread(lat) };
  } finally {
    await db.close();
  }
}

try {
  const db = await MemWal.open(options);
  const chunks = ladderRows(0, KEYS);
  for (let i = 0; i < chunks.length; i += 10) await db.put(rowsToBatch(chunks.slice(i, i + 10)));
  await db.close();
  const compacting = await MemWal.open(options);
  await compacting.compact();
  const cs = await compacting.compactionStats();
  await compacting.close();
  await series(1); // untimed: JIT
  const reps = [];
  for (let r = 0; r < REPS; r++) reps.push(await series(100 + r));
  console.log(JSON.stringify({ keys: KEYS, gets: GETS, tableCount: cs.tableCount, tableBytes: cs.tableBytes, reps }));
} finally {
  rmSync(root, { recursive: true, force: true });
}
