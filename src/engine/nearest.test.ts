// Vector search through MemWal (SPEC §17.3): a model-based run (puts, overwrites, deletes, seals,
// compactions, reopens) where every `nearest` equals the exact k nearest of the model's live rows
// (queries include the old vectors of overwritten and deleted rows, which an index that kept
// stale versions would return first); the same with HNSW graphs built over a 2,500-row table file
// and a memtable; `where` that never underfills; bad input.

import { describe, expect, it } from 'vitest';
import { defineSchema, int32, utf8, vector } from '../data/define-schema.js';
import { clusteredVectors } from '../lsm/clustered-vectors.test-util.js';
import { MemoryStorage } from '../storage/memory.js';
import { int, rng } from '../testing/rng.js';
import { MemWalError } from '../util/errors.js';
import { MemWal } from './memwal.js';

const DIM = 8;
const quiet = { warn: () => undefined };
const schema = defineSchema({ id: int32(), cat: utf8(), emb: vector(DIM).nullable() });
type Row = { id: number; cat: string; emb: number[] | null };

const CATS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];

function dist(a: ArrayLike<number>, b: ArrayLike<number>, kind: 'l2' | 'cosine' | 'dot'): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let sq = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.fround(a[i]!);
    const y = Math.fround(b[i]!);
    dot += x * y;
    na += x * x;
    nb += y * y;
    sq += (x - y) ** 2;
  }
  if (kind === 'l2') return Math.sqrt(sq);
  if (kind === 'dot') return -dot;
  return na === 0 || nb === 0 ? 1 : 1 - dot / Math.sqrt(na * nb);
}

/** The model's answer: the k nearest live rows with a vector (matching `keep`), by exact distance. */
function exact(model: Map<number, Row>, q: number[], k: number, kind: 'l2' | 'cosine' | 'dot', keep: (r: Row) => boolean = () => true) {
  return [...model.values()]
    .filter((r) => r.emb !== null && keep(r))
    .map((r) => ({ id: r.id, d: dist(q, r.emb!, kind) }))
    .sort((a, b) => a.d - b.d)
    .slice(0, k);
}

async function openStore(storage: MemoryStorage, name: string, distance: 'l2' | 'cosine' | 'dot' = 'l2', extra = {}) {
  return MemWal.open({
    name,
    schema,
    primaryKey: ['id'],
    storage,
    logger: quiet,
    indexes: { emb: { column: 'emb', kind: 'vector', distance, ...extra }, byCat: { column: 'cat' } },
  });
}

describe('nearest: never a stale or deleted row, in every tier (model-based)', () => {
  for (const distance of ['l2', 'cosine', 'dot'] as const) {
    it(`${distance}: puts, overwrites, deletes, seals, compactions, reopens`, async () => {
      for (let seed = 1; seed <= 3; seed++) {
        const r = rng(seed * 7919 + distance.length);
        const storage = new MemoryStorage();
        let w = await openStore(storage, `model-${distance}-${seed}`, distance);
        const model = new Map<number, Row>();
        const old: number[][] = []; // vectors of versions since overwritten or deleted
        const vec = (): number[] => Array.from({ length: DIM }, () => Math.fround(Math.round((r() * 2 - 1) * 1000) / 1000));
        try {
          for (let step = 0; step < 30; step++) {
            const op = int(r, 10);
            if (op < 5) {
              const rows: Row[] = Array.from({ length: 1 + int(r, 20) }, () => ({
                id: int(r, 60),
                cat: CATS[int(r, CATS.length)]!,
                emb: int(r, 12) === 0 ? null : vec(),
              }));
              for (const row of rows) {
                const prev = model.get(row.id);
                if (prev?.emb) old.push(prev.emb);
                model.set(row.id, row);
              }
              await w.put(rows);
            } else if (op < 7) {
              const ids = Array.from({ length: 1 + int(r, 6) }, () => int(r, 60));
              for (const id of ids) {
                const prev = model.get(id);
                if (prev?.emb) old.push(prev.emb);
                model.delete(id);
              }
              await w.delete(ids.map((id) => ({ id })));
            } else if (op === 7) {
              await w.forceSealActive();
              await w.waitForFlushDrain();
            } else if (op === 8) {
              await w.forceSealActive();
              await w.waitForFlushDrain();
              await w.compact();
            } else {
              await w.close();
              w = await openStore(storage, `model-${distance}-${seed}`, distance);
            }
            const queries = [vec(), ...old.slice(-3)];
            for (const q of queries) {
              const k = 1 + int(r, 8);
              const got = await w.nearest('emb', q, { k });
              const want = exact(model, q, k, distance);
              expect(got.map((h) => h.row.id)).toEqual(want.map((h) => h.id));
              got.forEach((h, i) => {
                expect(h.distance).toBeCloseTo(want[i]!.d, 5);
                expect(h.row).toEqual(model.get(h.row.id as number));
              });
              const cat = CATS[int(r, CATS.length)]!;
              const filtered = await w.nearest('emb', q, { k, where: { index: 'byCat', equals: cat } });
              expect(filtered.map((h) => h.row.id)).toEqual(exact(model, q, k, distance, (x) => x.cat === cat).map((h) => h.id));
            }
          }
        } finally {
          await w.close();
        }
      }
    }, 120_000);
  }
});

async function untilGraphs(w: MemWal, vectors: number): Promise<void> {
  const end = Date.now() + 120_000;
  for (;;) {
    const s = (await w.indexStats()).emb!;
    if ((s.graphVectors ?? 0) >= vectors) return;
    if (Date.now() > end) throw new Error(`graphs hold ${s.graphVectors} vectors, not ${vectors}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

describe('nearest over HNSW graphs (a 2,500-row table file and a 2,500-row memtable)', () => {
  it('an overwritten row’s old vector in the file never surfaces nor takes a slot; a deleted row is never returned', async () => {
    const gen = clusteredVectors({ dim: DIM, clusters: 20, spread: 0.2, seed: 5 });
    const storage = new MemoryStorage();
    const w = await openStore(storage, 'graphs', 'l2', { m: 8, efConstruction: 40 });
    try {
      const model = new Map<number, Row>();
      const first: Row[] = Array.from({ length: 2500 }, (_, id) => ({ id, cat: CATS[id % 10]!, emb: [...gen()] }));
      for (const row of first) model.set(row.id, row);
      await w.put(first);
      await w.forceSealActive();
      await w.waitForFlushDrain();
      // Overwrite 0..199 far away, delete 200..399, and flush the deletes into a newer file.
      const moved: Row[] = first.slice(0, 200).map((row) => ({ ...row, emb: row.emb!.map((x) => x + 50) }));
      for (const row of moved) model.set(row.id, row);
      await w.put(moved);
      await w.delete(first.slice(200, 400).map((row) => ({ id: row.id })));
      for (const row of first.slice(200, 400)) model.delete(row.id);
      await w.forceSealActive();
      await w.waitForFlushDrain();
      // A memtable of 2,500 more rows, 100 of which overwrite rows of the file.
      const more: Row[] = Array.from({ length: 2500 }, (_, i) => ({ id: i < 100 ? 400 + i : 10_000 + i, cat: 'z', emb: [...gen()] }));
      for (const row of more) model.set(row.id, row);
      await w.put(more);
      await w.nearest('emb', first[0]!.emb!, { k: 1 }); // loads the files' sections
      await untilGraphs(w, 2500 + 2500); // the file of 200 overwrites and 200 deletes is below BRUTE_FORCE_BELOW: scanned
      let hit = 0;
      for (let i = 0; i < 400; i += 4) {
        const q = first[i]!.emb!; // the old vector of an overwritten (i < 200) or deleted row: distance 0 to its stale version
        const got = await w.nearest('emb', q, { k: 10 });
        expect(got).toHaveLength(10);
        for (const h of got) {
          const id = h.row.id as number;
          expect(model.has(id)).toBe(true);
          expect(h.row).toEqual(model.get(id));
          expect(h.distance).toBeCloseTo(dist(q, model.get(id)!.emb!, 'l2'), 5);
        }
        const want = new Set(exact(model, q, 10, 'l2').map((h) => h.id));
        hit += got.filter((h) => want.has(h.row.id as number)).length;
      }
      expect(hit / 1000).toBeGreaterThanOrEqual(0.95);
    } finally {
      await w.close();
    }
  }, 300_000);
});

describe('nearest with where: never fewer than k when k rows match', () => {
  it('a filter of 30% of the rows (searched per tier with the filter inside the search) and of 1% (ranked exactly)', async () => {
    const gen = clusteredVectors({ dim: DIM, clusters: 10, spread: 0.2, seed: 9 });
    const storage = new MemoryStorage();
    // m 2 and ef 10 make the per-tier path the cheaper one for 300 of 1,000 rows (300² > 10 · 2·2 · 1,000).
    const w = await openStore(storage, 'where', 'l2', { m: 2, efConstruction: 8 });
    try {
      const model = new Map<number, Row>();
      const rows: Row[] = Array.from({ length: 1000 }, (_, id) => ({
        id,
        cat: id % 10 < 3 ? 'hot' : id % 100 === 55 ? 'rare' : 'cold',
        emb: [...gen()],
      }));
      for (const row of rows) model.set(row.id, row);
      await w.put(rows.slice(0, 600));
      await w.forceSealActive();
      await w.waitForFlushDrain();
      await w.put(rows.slice(600));
      for (let i = 0; i < 40; i++) {
        const q = [...gen()];
        for (const cat of ['hot', 'rare'] as const) {
          const got = await w.nearest('emb', q, { k: 10, ef: 10, where: { index: 'byCat', equals: cat } });
          const want = exact(model, q, 10, 'l2', (r) => r.cat === cat);
          expect(got.map((h) => h.row.id)).toEqual(want.map((h) => h.id));
        }
      }
      // Fewer than k match: all of them.
      const few = await w.nearest('emb', [...gen()], { k: 50, where: { index: 'byCat', equals: 'rare' } });
      expect(few).toHaveLength(10);
      expect(await w.nearest('emb', [...gen()], { k: 5, where: { index: 'primary', range: { gte: 100, lt: 103 } } })).toHaveLength(3);
    } finally {
      await w.close();
    }
  }, 120_000);
});

describe('nearest: bad input is InvalidArgument, nothing read', () => {
  it('vectors, options and index declarations', async () => {
    const w = await openStore(new MemoryStorage(), 'bad');
    try {
      await w.put([{ id: 1, cat: 'a', emb: [1, 2, 3, 4, 5, 6, 7, 8] }]);
      const bad = async (p: Promise<unknown>, re: RegExp): Promise<void> => {
        const e = await p.then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(e).toBeInstanceOf(MemWalError);
        expect((e as MemWalError).code).toBe('InvalidArgument');
        expect((e as MemWalError).message).toMatch(re);
      };
      const ok = [0, 0, 0, 0, 0, 0, 0, 0];
      await bad(w.nearest('emb', [1, 2, 3], { k: 1 }), /3 values.*has 8/);
      await bad(w.nearest('emb', [...ok.slice(1), Number.NaN], { k: 1 }), /value 7 .* NaN/);
      await bad(w.nearest('emb', [...ok.slice(1), Number.POSITIVE_INFINITY], { k: 1 }), /Infinity/);
      await bad(w.nearest('emb', new Float32Array(9), { k: 1 }), /9 values/);
      await bad(w.nearest('emb', 'abc' as never, { k: 1 }), /array of numbers/);
      await bad(w.nearest('emb', [...ok.slice(1), '1'] as never, { k: 1 }), /not a finite number/);
      await bad(w.nearest('nope', ok, { k: 1 }), /no vector index "nope"/);
      await bad(w.nearest('byCat', ok, { k: 1 }), /no vector index "byCat"/);
      await bad(w.nearest('emb', ok, { k: 0 }), /k must be/);
      await bad(w.nearest('emb', ok, { k: 1.5 }), /k must be/);
      await bad(w.nearest('emb', ok, undefined as never), /options must be/);
      await bad(w.nearest('emb', ok, { k: 1, ef: 0 }), /ef must be/);
      await bad(w.nearest('emb', ok, { k: 1, limit: 3 } as never), /unknown option "limit"/);
      await bad(w.nearest('emb', ok, { k: 1, where: { index: 'nope', equals: 'a' } }), /no index "nope"/);
      await bad(w.nearest('emb', ok, { k: 1, where: { index: 'byCat', equals: 3 } }), /must be a string/);
      await bad(w.nearest('emb', ok, { k: 1, where: { equals: 'a' } as never }), /where must be/);
      // Puts of a vector of the wrong length or type are refused by the column itself.
      await bad(w.put([{ id: 2, cat: 'a', emb: [1, 2, 3] }]), /emb/);
      // Good input still answers.
      expect((await w.nearest('emb', new Float32Array(8).fill(1), { k: 3 })).map((h) => h.row.id)).toEqual([1]);
    } finally {
      await w.close();
    }
    const open = (spec: Record<string, unknown>, primaryKey: 'id'[] = ['id']) =>
      MemWal.open({ name: 'spec', schema, primaryKey, storage: new MemoryStorage(), logger: quiet, indexes: { v: spec } as never });
    await expect(open({ column: 'cat', kind: 'vector', distance: 'l2' })).rejects.toThrow(/not a vector/);
    await expect(open({ column: 'emb', kind: 'vector', distance: 'hamming' })).rejects.toThrow(/distance must be/);
    await expect(open({ column: 'emb', kind: 'vector', distance: 'l2', m: 1 })).rejects.toThrow(/m must be/);
    await expect(open({ column: 'emb', kind: 'vector', distance: 'l2', efConstruction: 4 })).rejects.toThrow(/efConstruction/);
    await expect(open({ column: 'emb', kind: 'vector', distance: 'l2', dims: 4 })).rejects.toThrow(/unknown field "dims"/);
    await expect(open({ column: 'nope', kind: 'vector', distance: 'l2' })).rejects.toThrow(/no column "nope"/);
    await expect(open({ column: 'emb', kind: 'vector', distance: 'l2' }, [])).rejects.toThrow(/primary key/);
    expect(() => vector(0)).toThrow(TypeError);
  });

  it('rows whose vector is null or holds a NaN are stored but not ranked', async () => {
    const w = await openStore(new MemoryStorage(), 'nan');
    try {
      await w.put([
        { id: 1, cat: 'a', emb: [0, 0, 0, 0, 0, 0, 0, Number.NaN] },
        { id: 2, cat: 'a', emb: null },
        { id: 3, cat: 'a', emb: new Float32Array(8) },
      ]);
      expect((await w.nearest('emb', new Float32Array(8), { k: 3 })).map((h) => h.row.id)).toEqual([3]);
      expect(await w.get({ id: 1 })).toBeDefined();
    } finally {
      await w.close();
    }
  });
});

describe('watch({ nearest })', () => {
  it('delivers the k nearest now and again after a commit brings a row nearer or deletes one', async () => {
    const w = await openStore(new MemoryStorage(), 'watch');
    try {
      await w.put([
        { id: 1, cat: 'a', emb: [1, 0, 0, 0, 0, 0, 0, 0] },
        { id: 2, cat: 'a', emb: [2, 0, 0, 0, 0, 0, 0, 0] },
      ]);
      const seen: number[][] = [];
      const stop = w.watch({ nearest: 'emb', vector: new Float32Array(8), k: 2 }, (hits) => seen.push(hits.map((h) => h.row.id as number)));
      const until = async (n: number): Promise<void> => {
        for (let i = 0; i < 500 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 5));
      };
      await until(1);
      expect(seen.at(-1)).toEqual([1, 2]);
      await w.put([{ id: 3, cat: 'a', emb: [0.5, 0, 0, 0, 0, 0, 0, 0] }]);
      await until(2);
      expect(seen.at(-1)).toEqual([3, 1]);
      await w.delete([{ id: 3 }]);
      await until(3);
      expect(seen.at(-1)).toEqual([1, 2]);
      stop();
    } finally {
      await w.close();
    }
  });
});
