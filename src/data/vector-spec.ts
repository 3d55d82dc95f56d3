// Vector indexes (SPEC §17, §17.3): their declaration `{ column, kind: 'vector', distance, m?,
// efConstruction? }` checked against the schema once, before anything is claimed, the vectors of
// an Arrow batch's column, and the check of a query vector. Any runtime.

import { type Data, type Field, type RecordBatch, type Schema, Type } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';

/** How a vector index measures distance: `cosine` = 1 − cos, `l2` = Euclidean, `dot` = −(a·b). */
export type VectorDistanceName = 'cosine' | 'l2' | 'dot';

/**
 * A vector index (SPEC §17.3) on a `vector(dim)` column (Arrow `FixedSizeList<Float32>`): an HNSW
 * graph per memtable and per table file, searched by `nearest`. `m` (links per node, default 16,
 * 2–64) and `efConstruction` (the build's beam, default 100, at least `m`, at most 1,000) are
 * Lance MemWAL's defaults.
 */
export interface VectorIndexSpec<C extends string = string> {
  column: C;
  kind: 'vector';
  distance: VectorDistanceName;
  m?: number;
  efConstruction?: number;
}

/** One vector index, resolved against the schema. */
export interface ResolvedVectorIndex {
  name: string;
  column: string;
  dim: number;
  distance: VectorDistanceName;
  m: number;
  efConstruction: number;
}

/** Largest dimension a vector index takes (OpenAI's largest embeddings are 3,072). */
export const MAX_VECTOR_DIM = 16_384;

const invalid = (why: string): MemWalError => new MemWalError('InvalidArgument', why);

/** Is this entry of option `indexes` a vector index (`kind: 'vector'`)? Others are resolved by `resolveIndexes`. */
export function isVectorSpec(spec: unknown): boolean {
  return typeof spec === 'object' && spec !== null && (spec as { kind?: unknown }).kind === 'vector';
}

/** The dimension of `field` when it is a vector column (`FixedSizeList` of `Float32`), else undefined. */
export function vectorDim(field: Field): number | undefined {
  const t = field.type;
  if (t.typeId !== Type.FixedSizeList) return undefined;
  const item = (t as unknown as { children: Field[] }).children[0]!.type as { typeId: Type; precision?: number };
  if (item.typeId !== Type.Float || item.precision !== 1) return undefined; // Precision.SINGLE
  return (t as unknown as { listSize: number }).listSize;
}

/**
 * The vector indexes of option `indexes` (the entries with `kind: 'vector'`), checked against
 * `schema`: `InvalidArgument` naming the index and the problem (unknown field or column, a column
 * that is not a vector, a bad distance, m or efConstruction, a store without a primary key). Names
 * are checked by `resolveIndexes`, which leaves these entries to this function.
 */
export function resolveVectorIndexes(indexes: unknown, schema: Schema, primaryKey: readonly string[]): ResolvedVectorIndex[] {
  if (typeof indexes !== 'object' || indexes === null || Array.isArray(indexes)) return [];
  const out: ResolvedVectorIndex[] = [];
  for (const [name, spec] of Object.entries(indexes as Record<string, unknown>)) {
    if (!isVectorSpec(spec)) continue;
    const what = `option indexes: vector index "${name}"`;
    if (primaryKey.length === 0) throw invalid(`${what}: indexes need a primary key (a nearest row is the newest version of its key)`);
    const s = spec as Record<string, unknown>;
    for (const k of Object.keys(s)) {
      if (!['column', 'kind', 'distance', 'm', 'efConstruction'].includes(k)) throw invalid(`${what}: unknown field "${k}"`);
    }
    if (typeof s.column !== 'string') throw invalid(`${what}: column must be a column name`);
    const field = schema.fields.find((f) => f.name === s.column);
    if (!field) throw invalid(`${what}: no column "${s.column}" in the schema`);
    const dim = vectorDim(field);
    if (dim === undefined)
      throw invalid(`${what}: column "${s.column}" is ${field.type}, not a vector (FixedSizeList<Float32>: vector(dim))`);
    if (dim < 1 || dim > MAX_VECTOR_DIM) throw invalid(`${what}: dimension ${dim} outside 1..${MAX_VECTOR_DIM}`);
    const distance = s.distance;
    if (distance !== 'cosine' && distance !== 'l2' && distance !== 'dot')
      throw invalid(`${what}: distance must be 'cosine', 'l2' or 'dot'`);
    const m = s.m ?? 16;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 2 || m > 64) throw invalid(`${what}: m must be an integer in 2..64`);
    const efConstruction = s.efConstruction ?? 100;
    if (typeof efConstruction !== 'number' || !Number.isInteger(efConstruction) || efConstruction < m || efConstruction > 1000) {
      throw invalid(`${what}: efConstruction must be an integer in m..1000`);
    }
    out.push({ name, column: s.column, dim, distance, m, efConstruction });
  }
  return out;
}

/**
 * The vectors of column `column` of `batch`: `at(row)` is the offset of the row's vector in
 * `values`, or -1 when the row has none to index (a null vector, or one holding a NaN, an infinity
 * or a null item: no distance is defined for it).
 */
export function batchVectors(batch: RecordBatch, column: string, dim: number): { values: Float32Array; at(row: number): number } {
  const j = batch.schema.fields.findIndex((f) => f.name === column);
  if (j < 0) return { values: new Float32Array(0), at: () => -1 };
  const data: Data = batch.data.children[j]!;
  const child: Data = data.children[0]!;
  const values = child.values as Float32Array; // a fixed-width child's values start at its own first item
  const itemNulls = child.nullCount > 0;
  return {
    values,
    at: (row) => {
      if (!data.getValid(row)) return -1;
      const off = row * dim;
      for (let i = 0; i < dim; i++) {
        if (!Number.isFinite(values[off + i]!)) return -1;
        if (itemNulls && !child.getValid(off + i)) return -1;
      }
      return off;
    },
  };
}

/** A query vector checked against index `ix`: an array of numbers or a `Float32Array` of its dimension, every value finite. */
export function checkQueryVector(ix: ResolvedVectorIndex, v: unknown): ArrayLike<number> {
  const what = `nearest ${ix.name}`;
  if (!Array.isArray(v) && !(v instanceof Float32Array) && !(v instanceof Float64Array)) {
    throw invalid(`${what}: the vector must be an array of numbers or a Float32Array`);
  }
  if (v.length !== ix.dim) throw invalid(`${what}: the vector has ${v.length} values, the index's column has ${ix.dim}`);
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== 'number' || !Number.isFinite(x))
      throw invalid(`${what}: value ${i} of the vector is ${String(x)}, not a finite number`);
    if (Math.abs(x) > 3.4028234663852886e38) throw invalid(`${what}: value ${i} of the vector is beyond float32's range`);
  }
  return v as ArrayLike<number>;
}
