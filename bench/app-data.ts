// The app-shaped data of the page cases (reads from the page, put latency from the page, open to
// first get): rows of 6 columns keyed by a string, as an offline-first app's records are. Row `k`
// is the same wherever and whenever it is built (seeded by `k`), so any engine can be loaded with
// any range of rows in any order, and a random key among the first `n` rows is always present.
// Browser (page or worker).

import { Bool, Field, Float64, Int32, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray } from 'apache-arrow';
import { rng } from '../src/testing/index.js';

/** One app row: a string key and five columns (two strings, a float, an integer, a flag). */
export type AppRow = {
  id: string;
  title: string;
  owner: string;
  score: number;
  count: number;
  done: boolean;
};

export const APP_SCHEMA = new Schema([
  new Field('id', new Utf8(), false),
  new Field('title', new Utf8(), false),
  new Field('owner', new Utf8(), false),
  new Field('score', new Float64(), false),
  new Field('count', new Int32(), false),
  new Field('done', new Bool(), false),
]);

/** The SQL table of the peers (SQLite and PGlite), the same columns. */
export const APP_COLUMNS = ['id', 'title', 'owner', 'score', 'count', 'done'] as const;

/**
 * MurmurHash3's 32-bit finalizer: a bijection on 32-bit integers that spreads consecutive
 * inputs over the whole range, so rows `0 .. n-1` have keys spread over the key space whatever
 * `n` is (a store grown from 200k to 1M rows gets new keys everywhere, not at one end).
 */
export function fmix32(k: number): number {
  let x = k >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** The key of row `k`: `u` and 7 base-36 digits, unique (fmix32 is a bijection). */
export const appKey = (k: number): string => `u${fmix32(k).toString(36).padStart(7, '0')}`;

const WORDS =
  'apple river stone cloud maple orbit quartz ember delta lotus cedar prism harbor meadow falcon copper willow summit lantern violet'.split(
    ' ',
  );

/** Row `k` (seeded by `k`). */
export function appRow(k: number): AppRow {
  const r = rng(k + 1);
  const words = 3 + Math.floor(r() * 4);
  let title = '';
  for (let i = 0; i < words; i++) title += `${i ? ' ' : ''}${WORDS[Math.floor(r() * WORDS.length)]}`;
  return {
    id: appKey(k),
    title,
    owner: `user${Math.floor(r() * 50_000)}@example.org`,
    score: r() * 1000,
    count: Math.floor(r() * 1_000_000),
    done: r() < 0.5,
  };
}

/** Rows `from .. to - 1`. */
export function appRows(from: number, to: number): AppRow[] {
  const out = new Array<AppRow>(to - from);
  for (let k = from; k < to; k++) out[k - from] = appRow(k);
  return out;
}

/** `count` random keys among rows `0 .. n - 1` (seeded). */
export function appKeys(n: number, count: number, seed: number): string[] {
  const r = rng(seed);
  return Array.from({ length: count }, () => appKey(Math.floor(r() * n)));
}

const STRUCT = new Struct(APP_SCHEMA.fields);

/** `rows` as one RecordBatch of APP_SCHEMA (how the page hands memwal many rows at once). */
export function appBatch(rows: AppRow[]): RecordBatch {
  const col = <K extends keyof AppRow>(k: K): AppRow[K][] => rows.map((r) => r[k]);
  const children = [
    vectorFromArray(col('id'), new Utf8()).data[0]!,
    vectorFromArray(col('title'), new Utf8()).data[0]!,
    vectorFromArray(col('owner'), new Utf8()).data[0]!,
    makeData({ type: new Float64(), length: rows.length, nullCount: 0, data: Float64Array.from(col('score')) }),
    makeData({ type: new Int32(), length: rows.length, nullCount: 0, data: Int32Array.from(col('count')) }),
    vectorFromArray(col('done'), new Bool()).data[0]!,
  ];
  return new RecordBatch(APP_SCHEMA, makeData({ type: STRUCT, length: rows.length, nullCount: 0, children }));
}
