// The benchmark's data: seeded and random (IndexedDB compresses values, so nothing repetitive),
// identical in the page and the worker and for every engine. Browser (page or worker).

import { Field, Float64, Int64, RecordBatch, Schema, Struct, Utf8, makeData } from 'apache-arrow';
import { rng as prng } from '../src/testing/index.js';
import { fmix32 } from './app-data.js';

/** One row as every engine receives it: `{ id, value, name }`. */
export type BenchRow = {
  id: number;
  value: number;
  name: string;
};

/** The store schema of every memwal case; `id` is also the peers' primary key. */
export const BENCH_SCHEMA = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), false),
  new Field('name', new Utf8(), false),
]);

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** A random name of 8 to 16 alphanumeric characters. */
function randomName(rnd: () => number): string {
  const len = 8 + Math.floor(rnd() * 9);
  let s = '';
  for (let i = 0; i < len; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
  return s;
}

/** Rows `firstId .. firstId + count - 1`, the same for the same seed. */
function makeRows(count: number, seed = 1, firstId = 0): BenchRow[] {
  const rnd = prng(seed);
  const rows = new Array<BenchRow>(count);
  for (let i = 0; i < count; i++) rows[i] = { id: firstId + i, value: rnd() * 1e6, name: randomName(rnd) };
  return rows;
}

/** Rows per Arrow batch: 8 (id) + 8 (value) + 4 (offset) + ~12 (name) bytes ≈ 32 B a row, so ≈ 1 MiB. */
const ARROW_BATCH_ROWS = 32_768;

const STRUCT = new Struct(BENCH_SCHEMA.fields);
const ALPHABET_BYTES = new TextEncoder().encode(ALPHABET);

/**
 * The `value` and `name` columns of one ≈1 MiB batch (random), built straight into buffers.
 * Ids are added per put with {@link withIds}, so a small pool of payloads serves any volume.
 */
export interface BatchPayload {
  value: Float64Array;
  offsets: Int32Array;
  chars: Uint8Array;
  rows: number;
}

function makePayload(seed: number, rows = ARROW_BATCH_ROWS): BatchPayload {
  const rnd = prng(seed);
  const value = new Float64Array(rows);
  const offsets = new Int32Array(rows + 1);
  const chars = new Uint8Array(rows * 16);
  let at = 0;
  for (let i = 0; i < rows; i++) {
    value[i] = rnd() * 1e6;
    // Names as randomName makes them (8-16 alphanumerics), written as bytes directly.
    const len = 8 + Math.floor(rnd() * 9);
    for (let j = 0; j < len; j++) chars[at++] = ALPHABET_BYTES[Math.floor(rnd() * ALPHABET_BYTES.length)]!;
    offsets[i + 1] = at;
  }
  return { value, offsets, chars: chars.slice(0, at), rows };
}

/** A RecordBatch of `payload` with ids `firstId ..` (a fresh id column; value and name shared). */
export function withIds(payload: BatchPayload, firstId: number): RecordBatch {
  const n = payload.rows;
  const ids = new BigInt64Array(n);
  for (let i = 0; i < n; i++) ids[i] = BigInt(firstId + i);
  const children = [
    makeData({ type: new Int64(), length: n, nullCount: 0, data: ids }),
    makeData({ type: new Float64(), length: n, nullCount: 0, data: payload.value }),
    makeData({ type: new Utf8(), length: n, nullCount: 0, valueOffsets: payload.offsets, data: payload.chars }),
  ];
  return new RecordBatch(BENCH_SCHEMA, makeData({ type: STRUCT, length: n, nullCount: 0, children }));
}

/** Bytes of a batch's column buffers (what the caller hands over). */
export function batchBytes(b: RecordBatch): number {
  let bytes = 0;
  for (const c of b.data.children) {
    for (const buf of [c.values, c.valueOffsets, c.nullBitmap] as (ArrayBufferView | undefined)[]) bytes += buf?.byteLength ?? 0;
  }
  return bytes;
}

/** Distinct random ≈1 MiB payloads; ids are fresh per batch, so any volume can be built. */
const POOL_SIZE = 32;
let pool: BatchPayload[] | undefined;

/** This context's payload pool (seeds 1000..), built on first use. */
export function payloadPool(): BatchPayload[] {
  return (pool ??= Array.from({ length: POOL_SIZE }, (_, i) => makePayload(1000 + i)));
}

const batchCache = new Map<number, RecordBatch[]>();
const chunkCache = new Map<number, BenchRow[][]>();

/** `count` batches of ≈1 MiB with consecutive ids from 0 (cached per count). */
export function arrowBatches(count: number): RecordBatch[] {
  let out = batchCache.get(count);
  if (!out) {
    out = [];
    for (let k = 0; k < count; k++) out.push(withIds(payloadPool()[k % POOL_SIZE]!, k * ARROW_BATCH_ROWS));
    batchCache.set(count, out);
  }
  return out;
}

/** `rows` rows (seed 1) in chunks of 1,000, cached per size: the same data for every engine. */
export function rowChunks(rows: number): BenchRow[][] {
  let c = chunkCache.get(rows);
  if (!c) {
    const all = makeRows(rows, 1);
    c = [];
    for (let i = 0; i < all.length; i += 1000) c.push(all.slice(i, i + 1000));
    chunkCache.set(rows, c);
  }
  return c;
}

/** Drop the cached batches and rows (between cases, so later heap readings are not inflated). */
export function dropCachedData(): void {
  batchCache.clear();
  chunkCache.clear();
}

/** Random bytes (xorshift32), incompressible. */
export function randomBytes(n: number, seed = 7): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  const words = new Uint32Array(out.buffer, 0, n >>> 2);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The read case: `n` keys written in rounds of overwrites, then point reads.

/**
 * Keys of the read case are even (`2 * k` for `k < n`), so that odd ids inside the key range are
 * absent: a point read of one must be answered by the index or the Bloom filters, not by the
 * key range alone.
 */
export const readKey = (k: number): number => 2 * k;

/** A seeded permutation of `0 .. n - 1` (Fisher–Yates). */
function permutation(n: number, seed: number): Uint32Array {
  const rnd = prng(seed);
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}

let lastOrder: { n: number; round: number; order: Uint32Array } | undefined;

/**
 * Round `round` (0, 1, 2, …) of the read case's writes: every key once, in a random order of its
 * own (a uniform overwrite), with fresh values and names, in chunks of 1,000 rows (each chunk
 * seeded by its round and place). Only rows `from .. to - 1` of that order when given (the 4M-row
 * set is generated a slice at a time).
 */
export function readRound(n: number, round: number, from = 0, to = n): BenchRow[][] {
  if (lastOrder?.n !== n || lastOrder.round !== round) lastOrder = { n, round, order: permutation(n, 500 + round) };
  const order = lastOrder.order;
  const chunks: BenchRow[][] = [];
  for (let i = from; i < to; i += 1000) {
    const rnd = prng(1_000_003 * (round + 1) + i);
    const chunk: BenchRow[] = [];
    for (let r = i; r < Math.min(to, i + 1000); r++) chunk.push({ id: readKey(order[r]!), value: rnd() * 1e6, name: randomName(rnd) });
    chunks.push(chunk);
  }
  return chunks;
}

/**
 * `count` random keys of the read case (`present`: written ones; else odd ids between them);
 * `key` maps a row number to its key (the ladder's {@link ladderKey}, else {@link readKey}).
 */
export function readKeys(n: number, count: number, seed: number, present: boolean, key = readKey): number[] {
  const rnd = prng(seed);
  const keys = new Array<number>(count);
  for (let i = 0; i < count; i++) keys[i] = key(Math.floor(rnd() * n)) + (present ? 0 : 1);
  return keys;
}

/**
 * The key of row `k` of the read ladder (a store grown from 200k to 1M and 4M rows): even, as
 * {@link readKey}, but spread over the key space by fmix32, so each size's new rows land
 * everywhere among the old ones rather than after them.
 */
export const ladderKey = (k: number): number => 2 * fmix32(k);

/** Rows `from .. to - 1` of the read ladder, in chunks of 1,000 (each chunk seeded by its place). */
export function ladderRows(from: number, to: number): BenchRow[][] {
  const chunks: BenchRow[][] = [];
  for (let i = from; i < to; i += 1000) {
    const rnd = prng(7_000_003 + i);
    const chunk: BenchRow[] = [];
    for (let k = i; k < Math.min(to, i + 1000); k++) chunk.push({ id: ladderKey(k), value: rnd() * 1e6, name: randomName(rnd) });
    chunks.push(chunk);
  }
  return chunks;
}

/** The rows of `chunks` as one Arrow RecordBatch of BENCH_SCHEMA (to count their logical bytes). */
export function rowsToBatch(chunks: BenchRow[][]): RecordBatch {
  const n = chunks.reduce((a, c) => a + c.length, 0);
  const ids = new BigInt64Array(n);
  const values = new Float64Array(n);
  const offsets = new Int32Array(n + 1);
  let chars = new Uint8Array(n * 16);
  const enc = new TextEncoder();
  let i = 0;
  let at = 0;
  for (const c of chunks) {
    for (const r of c) {
      ids[i] = BigInt(r.id);
      values[i] = r.value;
      if (at + 3 * r.name.length > chars.length) {
        const grown = new Uint8Array(chars.length * 2 + 3 * r.name.length);
        grown.set(chars);
        chars = grown;
      }
      at += enc.encodeInto(r.name, chars.subarray(at)).written;
      offsets[++i] = at;
    }
  }
  const children = [
    makeData({ type: new Int64(), length: n, nullCount: 0, data: ids }),
    makeData({ type: new Float64(), length: n, nullCount: 0, data: values }),
    makeData({ type: new Utf8(), length: n, nullCount: 0, valueOffsets: offsets, data: chars.slice(0, at) }),
  ];
  return new RecordBatch(BENCH_SCHEMA, makeData({ type: STRUCT, length: n, nullCount: 0, children }));
}
