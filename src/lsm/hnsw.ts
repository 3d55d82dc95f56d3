// Vectors and their nearest-neighbour search (SPEC §17.3, docs/impl.md "Vector indexes"): a
// growable store of float32 vectors, the three distances, an exact (brute-force) top-k and an HNSW
// graph (Malkov & Yashunin: layers drawn with mL = 1/ln M, M links per node on upper layers and 2M
// on layer 0, neighbours chosen by the paper's heuristic) that covers a prefix of the store and is
// grown on demand. Searches take an `eligible` predicate: ineligible nodes are walked through but
// never returned, and the layer-0 search goes on until it holds `ef` eligible nodes (hnswlib's
// filtered search), so a predicate that rejects most nodes widens the search instead of starving it.
// Pure; any runtime.

/** How a vector index measures distance: cosine = 1 − cos, l2 = Euclidean, dot = −dot product. */
export type VectorDistance = 'cosine' | 'l2' | 'dot';

/** One hit: a position in the store and its distance (internal form: l2 squared). */
export interface VectorHit {
  pos: number;
  d: number;
}

/** Float32 vectors of one dimension, appended; cosine stores them normalised (a zero vector stays zero: distance 1 to all). */
export class VectorStore {
  data: Float32Array;
  size = 0;

  constructor(
    readonly dim: number,
    readonly distance: VectorDistance,
    capacity = 64,
  ) {
    this.data = new Float32Array(Math.max(1, capacity) * dim);
  }

  /** Append `src[off .. off+dim)` (finite values: the caller checks); returns its position. */
  push(src: ArrayLike<number>, off: number): number {
    const dim = this.dim;
    if ((this.size + 1) * dim > this.data.length) {
      const grown = new Float32Array(Math.max(this.data.length * 2, (this.size + 1) * dim));
      grown.set(this.data.subarray(0, this.size * dim));
      this.data = grown;
    }
    const at = this.size * dim;
    const d = this.data;
    let norm = 0;
    for (let i = 0; i < dim; i++) {
      const v = src[off + i]!;
      d[at + i] = v;
      norm += v * v;
    }
    if (this.distance === 'cosine' && norm > 0) {
      const s = 1 / Math.sqrt(norm);
      for (let i = 0; i < dim; i++) d[at + i] = d[at + i]! * s;
    }
    return this.size++;
  }

  /** Bytes held (the whole allocation). */
  get bytes(): number {
    return this.data.byteLength;
  }
}

/**
 * A query vector as the store compares it: float32 (as stored), normalised for cosine. Checks
 * nothing: the caller has (length, finite).
 */
export function prepareQuery(q: ArrayLike<number>, distance: VectorDistance): Float32Array {
  const out = Float32Array.from(q as ArrayLike<number>);
  if (distance === 'cosine') {
    let norm = 0;
    for (let i = 0; i < out.length; i++) norm += out[i]! * out[i]!;
    if (norm > 0) {
      const s = 1 / Math.sqrt(norm);
      for (let i = 0; i < out.length; i++) out[i] = out[i]! * s;
    }
  }
  return out;
}

/** The internal distance between `q` and the vector at `pos` (l2: squared; ordering is the same). */
export function distanceAt(store: VectorStore, pos: number, q: Float32Array): number {
  const d = store.data;
  const dim = store.dim;
  const at = pos * dim;
  if (store.distance === 'l2') {
    let s0 = 0;
    let s1 = 0;
    let i = 0;
    for (; i + 1 < dim; i += 2) {
      const a = d[at + i]! - q[i]!;
      const b = d[at + i + 1]! - q[i + 1]!;
      s0 += a * a;
      s1 += b * b;
    }
    if (i < dim) {
      const a = d[at + i]! - q[i]!;
      s0 += a * a;
    }
    return s0 + s1;
  }
  let s0 = 0;
  let s1 = 0;
  let i = 0;
  for (; i + 1 < dim; i += 2) {
    s0 += d[at + i]! * q[i]!;
    s1 += d[at + i + 1]! * q[i + 1]!;
  }
  if (i < dim) s0 += d[at + i]! * q[i]!;
  return store.distance === 'cosine' ? 1 - (s0 + s1) : -(s0 + s1);
}

/** The internal distance between the vectors at positions `a` and `b`. */
export function distanceBetween(store: VectorStore, a: number, b: number): number {
  const d = store.data;
  const dim = store.dim;
  const x = a * dim;
  const y = b * dim;
  let s = 0;
  if (store.distance === 'l2') {
    for (let i = 0; i < dim; i++) {
      const t = d[x + i]! - d[y + i]!;
      s += t * t;
    }
    return s;
  }
  for (let i = 0; i < dim; i++) s += d[x + i]! * d[y + i]!;
  return store.distance === 'cosine' ? 1 - s : -s;
}

/** The distance a caller sees from the internal one (l2: its square root). */
export function publicDistance(d: number, distance: VectorDistance): number {
  return distance === 'l2' ? Math.sqrt(d) : d;
}

/** A binary heap of (position, distance) pairs: a min-heap, or a max-heap with `max`. */
class Heap {
  ids: Int32Array;
  ds: Float64Array;
  size = 0;

  constructor(
    private readonly max: boolean,
    capacity = 64,
  ) {
    this.ids = new Int32Array(capacity);
    this.ds = new Float64Array(capacity);
  }

  private above(a: number, b: number): boolean {
    return this.max ? this.ds[a]! > this.ds[b]! : this.ds[a]! < this.ds[b]!;
  }

  private swap(a: number, b: number): void {
    const i = this.ids[a]!;
    this.ids[a] = this.ids[b]!;
    this.ids[b] = i;
    const d = this.ds[a]!;
    this.ds[a] = this.ds[b]!;
    this.ds[b] = d;
  }

  push(id: number, d: number): void {
    if (this.size === this.ids.length) {
      const ids = new Int32Array(this.size * 2);
      ids.set(this.ids);
      this.ids = ids;
      const ds = new Float64Array(this.size * 2);
      ds.set(this.ds);
      this.ds = ds;
    }
    let i = this.size++;
    this.ids[i] = id;
    this.ds[i] = d;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.above(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  get topId(): number {
    return this.ids[0]!;
  }

  get topD(): number {
    return this.ds[0]!;
  }

  pop(): void {
    const n = --this.size;
    if (n === 0) return;
    this.ids[0] = this.ids[n]!;
    this.ds[0] = this.ds[n]!;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < n && this.above(l, best)) best = l;
      if (r < n && this.above(r, best)) best = r;
      if (best === i) return;
      this.swap(i, best);
      i = best;
    }
  }

  /** The pairs, nearest first (empties the heap). */
  drainAscending(): VectorHit[] {
    const out: VectorHit[] = new Array(this.size);
    if (this.max) {
      for (let i = this.size - 1; i >= 0; i--) {
        out[i] = { pos: this.topId, d: this.topD };
        this.pop();
      }
    } else {
      for (let i = 0; this.size > 0; i++) {
        out[i] = { pos: this.topId, d: this.topD };
        this.pop();
      }
    }
    return out;
  }
}

/** The `k` nearest of positions [from, to) of `store` that `eligible` admits, nearest first (exact). */
export function exactNearest(
  store: VectorStore,
  q: Float32Array,
  k: number,
  from: number,
  to: number,
  eligible: (pos: number) => boolean,
): VectorHit[] {
  const top = new Heap(true, Math.min(k, 1024) + 1);
  for (let p = from; p < to; p++) {
    if (!eligible(p)) continue;
    const d = distanceAt(store, p, q);
    if (top.size < k) top.push(p, d);
    else if (d < top.topD) {
      top.pop();
      top.push(p, d);
    }
  }
  return top.drainAscending();
}

/** HNSW build parameters (Lance MemWAL's defaults: M 16, efConstruction 100). */
export interface HnswParams {
  m: number;
  efConstruction: number;
}

const MAX_LEVEL = 16;

/**
 * An HNSW graph over positions [0, size) of a store. `insertNext` adds the next position;
 * `search` walks it. Levels are drawn from a seeded generator, so a build is deterministic.
 */
export class Hnsw {
  size = 0;
  private entry = -1;
  private maxLevel = -1;
  private levels = new Uint8Array(64);
  /** Layer 0: per node [count, link × 2M]. */
  private links0 = new Int32Array(64 * 1);
  /** Upper layers: per node with level ≥ 1, per level l ≥ 1, [count, link × M] at (l − 1)·(M + 1). */
  private readonly upper: (Int32Array | undefined)[] = [];
  private readonly m0: number;
  private readonly stride0: number;
  private readonly mL: number;
  private seed = 0x9e3779b9;
  private visited = new Uint32Array(64);
  private epoch = 0;

  constructor(
    private readonly store: VectorStore,
    readonly params: HnswParams,
  ) {
    this.m0 = 2 * params.m;
    this.stride0 = this.m0 + 1;
    this.links0 = new Int32Array(64 * this.stride0);
    this.mL = 1 / Math.log(Math.max(2, params.m));
  }

  /** Estimated bytes per node (layer-0 links, level byte, visited mark; upper layers average M/(M−1)·(M+1) ints). */
  static bytesPerNode(m: number): number {
    return (2 * m + 1) * 4 + 1 + 4 + Math.ceil(((m + 1) * 4) / Math.max(1, m - 1));
  }

  /** Bytes held by the graph (allocations). */
  get bytes(): number {
    let b = this.levels.byteLength + this.links0.byteLength + this.visited.byteLength;
    for (const u of this.upper) if (u) b += u.byteLength;
    return b;
  }

  private random(): number {
    // xorshift32
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return (this.seed + 1) / 4294967297;
  }

  private grow(n: number): void {
    if (n <= this.levels.length) return;
    const cap = Math.max(n, this.levels.length * 2);
    const levels = new Uint8Array(cap);
    levels.set(this.levels);
    this.levels = levels;
    const links0 = new Int32Array(cap * this.stride0);
    links0.set(this.links0);
    this.links0 = links0;
    this.visited = new Uint32Array(cap);
    this.epoch = 0;
  }

  private nextEpoch(): number {
    if (++this.epoch === 0xffffffff) {
      this.visited.fill(0);
      this.epoch = 1;
    }
    return this.epoch;
  }

  /** The links of `node` on `level`: the array and the offset of its count. */
  private linksOf(node: number, level: number): [Int32Array, number] {
    if (level === 0) return [this.links0, node * this.stride0];
    return [this.upper[node]!, (level - 1) * (this.params.m + 1)];
  }

  private dist(a: number, b: number): number {
    return distanceBetween(this.store, a, b);
  }

  /** Greedy descent on `level` from `cur` towards `q`. */
  private greedy(q: Float32Array, cur: number, curD: number, level: number): [number, number] {
    for (let changed = true; changed; ) {
      changed = false;
      const [arr, off] = this.linksOf(cur, level);
      const n = arr[off]!;
      for (let i = 1; i <= n; i++) {
        const nb = arr[off + i]!;
        const d = distanceAt(this.store, nb, q);
        if (d < curD) {
          curD = d;
          cur = nb;
          changed = true;
        }
      }
    }
    return [cur, curD];
  }

  /**
   * The layer search: from `ep`, the `ef` nearest nodes `eligible` admits (all when undefined),
   * nearest first. The search stops when the nearest unexplored node is farther than the
   * farthest of `ef` eligible results held; with fewer held it goes on through the graph.
   */
  private searchLayer(q: Float32Array, ep: number, ef: number, level: number, eligible?: (pos: number) => boolean): VectorHit[] {
    const mark = this.nextEpoch();
    const visited = this.visited;
    const candidates = new Heap(false);
    const results = new Heap(true, ef + 1);
    const epD = distanceAt(this.store, ep, q);
    visited[ep] = mark;
    candidates.push(ep, epD);
    if (!eligible || eligible(ep)) results.push(ep, epD);
    while (candidates.size > 0) {
      const c = candidates.topId;
      const cd = candidates.topD;
      if (results.size >= ef && cd > results.topD) break;
      candidates.pop();
      const [arr, off] = this.linksOf(c, level);
      const n = arr[off]!;
      for (let i = 1; i <= n; i++) {
        const nb = arr[off + i]!;
        if (visited[nb] === mark) continue;
        visited[nb] = mark;
        const d = distanceAt(this.store, nb, q);
        if (results.size < ef || d < results.topD) {
          candidates.push(nb, d);
          if (!eligible || eligible(nb)) {
            results.push(nb, d);
            if (results.size > ef) results.pop();
          }
        }
      }
    }
    return results.drainAscending();
  }

  /** The paper's heuristic: from `cands` (nearest first), keep a node unless a kept one is nearer to it than the base is. */
  private select(cands: VectorHit[], m: number): number[] {
    const kept: number[] = [];
    for (const c of cands) {
      if (kept.length >= m) break;
      let good = true;
      for (const r of kept) {
        if (this.dist(c.pos, r) < c.d) {
          good = false;
          break;
        }
      }
      if (good) kept.push(c.pos);
    }
    return kept;
  }

  private setLinks(node: number, level: number, ids: number[]): void {
    const [arr, off] = this.linksOf(node, level);
    arr[off] = ids.length;
    for (let i = 0; i < ids.length; i++) arr[off + 1 + i] = ids[i]!;
  }

  /** Link `from` → `to` on `level`, pruning `from`'s links by the heuristic when full. */
  private link(from: number, to: number, level: number): void {
    const max = level === 0 ? this.m0 : this.params.m;
    const [arr, off] = this.linksOf(from, level);
    const n = arr[off]!;
    if (n < max) {
      arr[off + 1 + n] = to;
      arr[off] = n + 1;
      return;
    }
    const cands: VectorHit[] = [{ pos: to, d: this.dist(from, to) }];
    for (let i = 1; i <= n; i++) {
      const p = arr[off + i]!;
      cands.push({ pos: p, d: this.dist(from, p) });
    }
    cands.sort((a, b) => a.d - b.d);
    this.setLinks(from, level, this.select(cands, max));
  }

  /** Insert the next position of the store (`size`) into the graph. */
  insertNext(): void {
    const node = this.size;
    if (node >= this.store.size) throw new Error(`hnsw: no vector at position ${node}`);
    this.grow(node + 1);
    const level = Math.min(MAX_LEVEL, Math.floor(-Math.log(this.random()) * this.mL));
    this.levels[node] = level;
    this.links0[node * this.stride0] = 0;
    if (level > 0) this.upper[node] = new Int32Array(level * (this.params.m + 1));
    this.size++;
    if (this.entry < 0) {
      this.entry = node;
      this.maxLevel = level;
      return;
    }
    const s = this.store;
    const q = s.data.subarray(node * s.dim, (node + 1) * s.dim);
    let cur = this.entry;
    let curD = distanceAt(s, cur, q);
    for (let l = this.maxLevel; l > level; l--) [cur, curD] = this.greedy(q, cur, curD, l);
    for (let l = Math.min(level, this.maxLevel); l >= 0; l--) {
      const found = this.searchLayer(q, cur, this.params.efConstruction, l);
      const chosen = this.select(
        found.filter((h) => h.pos !== node),
        this.params.m,
      );
      this.setLinks(node, l, chosen);
      for (const nb of chosen) this.link(nb, node, l);
      if (found.length > 0) cur = found[0]!.pos;
    }
    if (level > this.maxLevel) {
      this.maxLevel = level;
      this.entry = node;
    }
  }

  /** The `ef` nearest graph nodes `eligible` admits (at most), nearest first. */
  search(q: Float32Array, ef: number, eligible?: (pos: number) => boolean): VectorHit[] {
    if (this.entry < 0) return [];
    let cur = this.entry;
    let curD = distanceAt(this.store, cur, q);
    for (let l = this.maxLevel; l > 0; l--) [cur, curD] = this.greedy(q, cur, curD, l);
    return this.searchLayer(q, cur, ef, 0, eligible);
  }
}
