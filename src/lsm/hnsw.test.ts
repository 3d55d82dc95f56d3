// HNSW and the tier search (SPEC §17.3): recall@10 against exact search on seeded clustered vectors
// (clustered-vectors.test-util.ts: 40 centres in [-1, 1]^48, spread 0.25, seed 11) for each
// distance; the tier search returns exactly min(k, eligible) hits whatever the predicate rejects;
// distances are the published ones.

import { describe, expect, it } from 'vitest';
import type { ResolvedVectorIndex } from '../data/vector-spec.js';
import { clusteredVectors } from './clustered-vectors.test-util.js';
import { exactNearest, Hnsw, prepareQuery, publicDistance, type VectorDistance, VectorStore } from './hnsw.js';
import { BRUTE_FORCE_BELOW, GraphedVectors } from './vector-index.js';

const DIM = 48;
const N = 3000;

function filled(distance: VectorDistance, seed = 11): { store: VectorStore; gen: () => Float32Array } {
  const gen = clusteredVectors({ dim: DIM, clusters: 40, spread: 0.25, seed });
  const store = new VectorStore(DIM, distance);
  for (let i = 0; i < N; i++) store.push(gen(), 0);
  return { store, gen };
}

describe('HNSW recall@10 against exact search (3,000 × 48-d clustered, M 16, efConstruction 100, ef 64)', () => {
  for (const distance of ['cosine', 'l2', 'dot'] as const) {
    it(`${distance}: recall@10 ≥ 0.95`, () => {
      const { store, gen } = filled(distance);
      const g = new Hnsw(store, { m: 16, efConstruction: 100 });
      for (let i = 0; i < N; i++) g.insertNext();
      let hit = 0;
      const queries = 100;
      for (let i = 0; i < queries; i++) {
        const q = prepareQuery(gen(), distance);
        const exact = new Set(exactNearest(store, q, 10, 0, N, () => true).map((h) => h.pos));
        const got = g.search(q, 64).slice(0, 10);
        expect(got).toHaveLength(10);
        hit += got.filter((h) => exact.has(h.pos)).length;
      }
      expect(hit / (queries * 10)).toBeGreaterThanOrEqual(0.95);
    }, 120_000);
  }
});

describe('the tier search (GraphedVectors.nearest)', () => {
  const spec: ResolvedVectorIndex = { name: 'v', column: 'v', dim: DIM, distance: 'l2', m: 8, efConstruction: 40 };

  it('never returns fewer than min(k, eligible) hits, with the graph built or partly built', () => {
    const gv = new GraphedVectors(spec);
    const gen = clusteredVectors({ dim: DIM, clusters: 40, spread: 0.25, seed: 3 });
    for (let i = 0; i < BRUTE_FORCE_BELOW + 600; i++) gv.store.push(gen(), 0);
    expect(gv.needsBuild).toBe(true);
    const check = (): void => {
      for (const every of [1, 7, 97, 1000, 5000]) {
        const eligible = (p: number): boolean => p % every === 0;
        const q = prepareQuery(gen(), 'l2');
        const want = exactNearest(gv.store, q, 10, 0, gv.size, eligible);
        const got = gv.nearest(q, 10, 10, gv.size, eligible);
        expect(got.length).toBe(want.length);
        for (const h of got) expect(eligible(h.pos)).toBe(true);
        if (every >= 97) expect(got).toEqual(want); // few eligible: exact
      }
    };
    while (gv.buildFor(Number.POSITIVE_INFINITY) && gv.built < BRUTE_FORCE_BELOW + 100);
    check(); // graph over a prefix, exact tail
    while (gv.buildFor(Number.POSITIVE_INFINITY));
    expect(gv.built).toBe(gv.size);
    check();
  }, 120_000);

  it('publishes cosine as 1 − cos, l2 as the Euclidean distance, dot as −dot', () => {
    const a = [3, 4];
    const q = [1, 0];
    const at = (distance: VectorDistance): number => {
      const s = new VectorStore(2, distance);
      s.push(a, 0);
      const [h] = exactNearest(s, prepareQuery(q, distance), 1, 0, 1, () => true);
      return publicDistance(h!.d, distance);
    };
    expect(at('cosine')).toBeCloseTo(1 - 3 / 5, 6);
    expect(at('l2')).toBeCloseTo(Math.hypot(2, 4), 6);
    expect(at('dot')).toBeCloseTo(-3, 6);
  });
});
