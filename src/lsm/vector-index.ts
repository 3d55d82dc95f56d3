// The vector indexes of one tier (SPEC §17.3, docs/impl.md "Vector indexes"): a memtable's
// (`MemVectorIndex`: each row's vector appended as the row is, before it is visible) and a table
// file's (`FileVectorSection`: built from the file's blocks on first use). Both are
// `GraphedVectors`: the vectors in one store and an HNSW graph over a prefix of them, grown by the
// writer's background lane in slices (`buildFor`), never on the put path. A search walks the graph
// and scans the positions the graph does not cover yet exactly; below `BRUTE_FORCE_BELOW` vectors
// it scans all of them; a search that finds fewer than k eligible vectors is redone exactly, so it
// returns min(k, eligible) hits whatever the graph's state. Stale and deleted versions stay in the
// index: the caller's `eligible` decides (engine/nearest.ts). A later persisted section (a graph
// stored in the table file) is another way to fill a `GraphedVectors`.

import type { RecordBatch } from 'apache-arrow';
import { KeyIndex } from '../data/key-index.js';
import type { Key } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import { batchVectors, type ResolvedVectorIndex } from '../data/vector-spec.js';
import { nowMs } from '../util/schedule.js';
import { exactNearest, Hnsw, type VectorHit, VectorStore } from './hnsw.js';

/**
 * Below this many vectors a tier is scanned exactly instead of walking a graph, and no graph is
 * built. Measured (docs/benchmarks.md, "Vector search"): on 384-d clustered vectors an exact scan
 * of 20,000 costs ~70 ms and a graph search at ef 64 ~4 ms, the cost of scanning ~1,100 vectors;
 * 64-d: ~2,100. A graph also costs ~1,700 distance computations per vector to build.
 */
export const BRUTE_FORCE_BELOW = 2048;

/** Most graph insertions of one build slice (a virtual clock does not advance during one). */
const SLICE_MAX_INSERTS = 512;

/** Vectors and a graph over a prefix of them. */
export class GraphedVectors {
  readonly store: VectorStore;
  graph: Hnsw | undefined;

  constructor(readonly spec: ResolvedVectorIndex) {
    this.store = new VectorStore(spec.dim, spec.distance);
  }

  /** Vectors held. */
  get size(): number {
    return this.store.size;
  }

  /** Vectors the graph covers. */
  get built(): number {
    return this.graph?.size ?? 0;
  }

  /** Whether the background lane has graph work here: enough vectors, and some not in the graph. */
  get needsBuild(): boolean {
    return this.store.size >= BRUTE_FORCE_BELOW && this.built < this.store.size;
  }

  /** Insert vectors into the graph until `untilMs` (monotonic) or a slice's cap; true when some are left. */
  buildFor(untilMs: number): boolean {
    this.graph ??= new Hnsw(this.store, { m: this.spec.m, efConstruction: this.spec.efConstruction });
    const g = this.graph;
    for (let i = 0; i < SLICE_MAX_INSERTS && g.size < this.store.size; i++) {
      g.insertNext();
      if ((i & 7) === 7 && nowMs() >= untilMs) break;
    }
    return g.size < this.store.size;
  }

  /**
   * The `k` nearest of positions [0, n) that `eligible` admits, nearest first (internal
   * distances): the graph (beam `ef`, at least k) and an exact scan of [built, n); exact over
   * [0, n) when n is small or the graph path found fewer than k, so never fewer than
   * min(k, eligible positions).
   */
  nearest(q: Float32Array, k: number, ef: number, n: number, eligible: (pos: number) => boolean): VectorHit[] {
    if (n === 0 || k === 0) return [];
    const built = Math.min(this.built, n);
    if (built < BRUTE_FORCE_BELOW) return exactNearest(this.store, q, k, 0, n, eligible);
    const fromGraph = this.graph!.search(q, Math.max(ef, k), (p) => p < n && eligible(p));
    const hits = built < n ? mergeHits(fromGraph, exactNearest(this.store, q, k, built, n, eligible), k) : fromGraph.slice(0, k);
    return hits.length < k ? exactNearest(this.store, q, k, 0, n, eligible) : hits;
  }

  /** Bytes held: the vectors and the graph. */
  get bytes(): number {
    return this.store.bytes + (this.graph?.bytes ?? 0);
  }
}

/** Two ascending hit lists merged, the first `k`. */
export function mergeHits(a: VectorHit[], b: VectorHit[], k: number): VectorHit[] {
  const out: VectorHit[] = [];
  let i = 0;
  let j = 0;
  while (out.length < k && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && a[i]!.d <= b[j]!.d)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}

/** Estimated bytes one indexed vector adds to a memtable: its float32s, its graph node, its ordinal and key slots. */
export function vectorEntryBytes(spec: ResolvedVectorIndex): number {
  return spec.dim * 4 + Hnsw.bytesPerNode(spec.m) + 16;
}

/** A memtable's vector index: per position, the row ordinal and primary key it came from. */
export class MemVectorIndex extends GraphedVectors {
  readonly ordinals: number[] = [];
  readonly keys: Key[] = [];
  /** Estimated bytes (counted in the memtable's bytes as rows arrive). */
  estimatedBytes = 0;

  /** Index the rows of `batch` (keys `keys`, first ordinal `base`); returns the bytes added. Delete markers and rows without a vector are not indexed. */
  add(batch: RecordBatch, keys: ArrayLike<Key>, base: number, storeSchema: StoreSchema): number {
    const { values, at } = batchVectors(batch, this.spec.column, this.spec.dim);
    const tomb = storeSchema.hasTombstone ? batch.getChildAt(storeSchema.internal.fields.length - 1) : null;
    const per = vectorEntryBytes(this.spec);
    let added = 0;
    for (let r = 0; r < batch.numRows; r++) {
      if (tomb?.get(r) === true) continue;
      const off = at(r);
      if (off < 0) continue;
      this.store.push(values, off);
      this.ordinals.push(base + r);
      this.keys.push(keys[r]!);
      added += per;
    }
    this.estimatedBytes += added;
    return added;
  }
}

/** A table file's vector section: per position its key and where its row is (block, row); every key of the file, for shadowing. */
export class FileVectorSection extends GraphedVectors {
  readonly keys: Key[] = [];
  readonly blockOf: number[] = [];
  readonly rowOf: number[] = [];
  /** Every key of the file (delete markers too) → its row's position in `rowOf` order, or -1 without a vector. */
  readonly fileKeys = new KeyIndex();
  rows = 0;

  /** Add block `block` of the file (its batch and keys); `deleted(row)` says whether a row is a delete marker. */
  addBlock(batch: RecordBatch, keys: ArrayLike<Key>, block: number, deleted: (row: number) => boolean): void {
    const { values, at } = batchVectors(batch, this.spec.column, this.spec.dim);
    for (let r = 0; r < batch.numRows; r++) {
      this.rows++;
      const k = keys[r]!;
      const off = deleted(r) ? -1 : at(r);
      if (off < 0) {
        this.fileKeys.set(k, -1);
        continue;
      }
      this.fileKeys.set(k, this.store.push(values, off));
      this.keys.push(k);
      this.blockOf.push(block);
      this.rowOf.push(r);
    }
  }

  /** Bytes held: vectors, graph, and ~24 per row for the keys and row maps. */
  override get bytes(): number {
    return super.bytes + this.rows * 24 + this.keys.length * 16;
  }
}
