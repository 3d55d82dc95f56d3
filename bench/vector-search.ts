// Vector search in Node (docs/benchmarks.md, "Vector search"): `n` seeded clustered 384-d float32
// vectors (src/lsm/clustered-vectors.test-util.ts: 100 centres uniform in [-1, 1]^384, noise of
// standard deviation 0.2 per coordinate, seed 1) put in batches of 500 into one in-process store
// (memory storage; one memtable holds them all), then: the put rate (what the writer accepts; graphs
// are built after, in the background lane), the time until the lane's HNSW graph (M 16,
// efConstruction 100) covers every vector, and for `queries` query vectors drawn from the same
// distribution, k = 10: queries/s, p50/p99 and recall@10 against exact search, for nearest at ef
// 64 and 128 and for the exact scan (the same store scanned without a graph). Prints one JSON line.
// `node --import tsx bench/vector-search.ts --n=20000 --queries=200`. PGlite + pgvector: the
// installed @electric-sql/pglite (0.5.17) ships no vector extension, so it is not compared.

import { parseArgs } from 'node:util';
import { defineSchema, int32, MemWal, MemoryStorage, vector } from '../src/index.js';
import { exactNearest, prepareQuery, VectorStore } from '../src/lsm/hnsw.js';
import { clusteredVectors } from '../src/lsm/clustered-vectors.test-util.js';

const { values } = parseArgs({ options: { n: { type: 'string' }, queries: { type: 'string' }, dim: { type: 'string' } } });
const N = Number(values.n ?? 20_000);
const Q = Number(values.queries ?? 200);
const DIM = Number(values.dim ?? 384);

const gen = clusteredVectors({ dim: DIM, clusters: 100, spread: 0.2, seed: 1 });
const schema = defineSchema({ id: int32(), emb: vector(DIM) });
const db = await MemWal.open({
  name: 'vectors',
  schema,
  primaryKey: ['id'],
  storage: new MemoryStorage(),
  logger: { warn: () => undefined },
  maxMemtableBytes: 1024 * 1024 * 1024,
  maxUnflushedMemtableBytes: 2048 * 1024 * 1024,
  durableWrite: false,
  indexes: { emb: { column: 'emb', kind: 'vector', distance: 'cosine' } },
});
const all: Float32Array[] = [];
const t0 = performance.now();
for (let i = 0; i < N; i += 500) {
  const rows = [];
  for (let j = i; j < Math.min(N, i + 500); j++) {
    const v = gen();
    all.push(v);
    rows.push({ id: j, emb: v });
  }
  await db.put(rows);
}
const putMs = performance.now() - t0;
for (;;) {
  const s = (await db.indexStats()).emb!;
  if ((s.graphVectors ?? 0) >= N) break;
  await new Promise((r) => setTimeout(r, 50));
}
const buildMs = performance.now() - t0 - putMs;
const stats = (await db.indexStats()).emb!;

// The exact answers, from a plain store of the same vectors.
const store = new VectorStore(DIM, 'cosine', N);
for (const v of all) store.push(v, 0);
const queries = Array.from({ length: Q }, () => gen());
const truth: Set<number>[] = [];
const exactTimes: number[] = [];
for (const q of queries) {
  const a = performance.now();
  truth.push(new Set(exactNearest(store, prepareQuery(q, 'cosine'), 10, 0, N, () => true).map((h) => h.pos)));
  exactTimes.push(performance.now() - a);
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const summary = (times: number[]) => ({
  qps: Math.round(times.length / (times.reduce((s, t) => s + t, 0) / 1000)),
  p50Ms: +pct(times, 50).toFixed(2),
  p99Ms: +pct(times, 99).toFixed(2),
});
const runs: Record<string, unknown> = { exact: { ...summary(exactTimes), recall: 1 } };
for (const ef of [64, 128]) {
  const times: number[] = [];
  let hit = 0;
  for (let i = 0; i < Q; i++) {
    const a = performance.now();
    const got = await db.nearest('emb', queries[i]!, { k: 10, ef });
    times.push(performance.now() - a);
    hit += got.filter((h) => truth[i]!.has(h.row.id as number)).length;
  }
  runs[`ef${ef}`] = { ...summary(times), recall: +(hit / (Q * 10)).toFixed(4) };
}
await db.close();
console.log(
  JSON.stringify({
    n: N,
    dim: DIM,
    queries: Q,
    putRowsPerS: Math.round(N / (putMs / 1000)),
    graphBuildS: +(buildMs / 1000).toFixed(1),
    graphRowsPerS: Math.round(N / (buildMs / 1000)),
    indexBytesPerVector: Math.round(stats.memtableBytes / N),
    ...runs,
  }),
);
