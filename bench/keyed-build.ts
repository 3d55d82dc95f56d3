// CPU of a keyed flush's table build in Node (bench/results/HISTORY.md, "Keyed flush build: CPU per
// MiB"): `npx tsx bench/keyed-build.ts [--root DIR] [--mib N] [--reps N] [--case NAME]`. Builds
// the table of a memtable of ≈1 MiB batches shaped like the browser bench's keyed Arrow case
// (id Int64, value Float64, name Utf8, the tombstone column) — ids ascending as the bench puts
// them, random with repeats, mostly ascending — and one with a Utf8 key. Prints ms per MiB of
// batches: the whole build (median of `reps`; wall clock, and this process's CPU time, which
// counts the collector's threads too), then the phases timed on their own. `--root`
// runs another checkout's src (an A/B against an older commit); the SHA-256 of each table is
// printed so the two can be compared byte for byte.

import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Bool, Field, Float64, Int64, makeData, RecordBatch, Schema, Struct, Utf8 } from 'apache-arrow';

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
};
const root = arg('root', new URL('..', import.meta.url).pathname);
const MIB = Number(arg('mib', '32'));
const REPS = Number(arg('reps', '5'));
const only = arg('case', '');
const phases = arg('phases', 'yes') === 'yes';

const mod = async <T>(p: string): Promise<T> => (await import(pathToFileURL(`${root}/src/${p}`).href)) as T;
const { makeStoreSchema } = await mod<typeof import('../src/data/schema.js')>('data/schema.ts');
const { makeKeyEncoder } = await mod<typeof import('../src/data/keys.js')>('data/keys.ts');
const { buildFlushTable } = await mod<typeof import('../src/lsm/jobs.js')>('lsm/jobs.ts');
const { sortedOrder } = await mod<typeof import('../src/lsm/sorted.js')>('lsm/sorted.ts');
const { cutSelectionSteps, encodeTableSteps } = await mod<typeof import('../src/format/table/writer.js')>('format/table/writer.ts');
const { blockTargetBytes } = await mod<typeof import('../src/format/table/format.js')>('format/table/format.ts');
const { runSteps } = await mod<typeof import('../src/util/schedule.js')>('util/schedule.ts');
const { BloomFilter } = await mod<typeof import('../src/format/table/bloom.js')>('format/table/bloom.ts');
const { crc32c } = await mod<typeof import('../src/util/crc32c.js')>('util/crc32c.ts');

const ROWS = 32_768; // rows per batch, as bench/data.ts: ≈ 1 MiB
const ALPHABET = new TextEncoder().encode('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Names of 8..16 alphanumerics as offsets + bytes. */
function names(rnd: () => number, n: number): { offsets: Int32Array; chars: Uint8Array } {
  const offsets = new Int32Array(n + 1);
  const chars = new Uint8Array(n * 16);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const len = 8 + Math.floor(rnd() * 9);
    for (let j = 0; j < len; j++) chars[at++] = ALPHABET[Math.floor(rnd() * ALPHABET.length)]!;
    offsets[i + 1] = at;
  }
  return { offsets, chars: chars.slice(0, at) };
}

type KeyOf = (batch: number, row: number) => number;

/** `count` batches of the bench's shape (+ tombstones), ids from `keyOf`, or the name as the key. */
function batches(
  count: number,
  keyOf: KeyOf,
  stringKey: boolean,
): { storeSchema: ReturnType<typeof makeStoreSchema>; batches: RecordBatch[] } {
  const base = new Schema([
    new Field('id', new Int64(), false),
    new Field('value', new Float64(), false),
    new Field('name', new Utf8(), false),
  ]);
  const storeSchema = makeStoreSchema(base, [stringKey ? 'name' : 'id']);
  const struct = new Struct(storeSchema.internal.fields);
  const rnd = rng(42);
  const out: RecordBatch[] = [];
  for (let b = 0; b < count; b++) {
    const ids = new BigInt64Array(ROWS);
    const value = new Float64Array(ROWS);
    for (let i = 0; i < ROWS; i++) {
      ids[i] = BigInt(keyOf(b, i));
      value[i] = rnd() * 1e6;
    }
    const nm = names(rnd, ROWS);
    const tomb = new Uint8Array((ROWS + 7) >> 3);
    const children = [
      makeData({ type: new Int64(), length: ROWS, nullCount: 0, data: ids }),
      makeData({ type: new Float64(), length: ROWS, nullCount: 0, data: value }),
      makeData({ type: new Utf8(), length: ROWS, nullCount: 0, valueOffsets: nm.offsets, data: nm.chars }),
      makeData({ type: new Bool(), length: ROWS, nullCount: 0, data: tomb }),
    ];
    out.push(new RecordBatch(storeSchema.internal, makeData({ type: struct, length: ROWS, nullCount: 0, children })));
  }
  return { storeSchema, batches: out };
}

const N = MIB;
const perm = (() => {
  const total = N * ROWS;
  const rnd = rng(7);
  const p = new Float64Array(total);
  for (let i = 0; i < total; i++) p[i] = i;
  for (let i = total - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
})();
const cases: Record<string, () => ReturnType<typeof batches>> = {
  // The browser bench: ids ascending across puts.
  ascending: () => batches(N, (b, i) => b * ROWS + i, false),
  // Random ids, about 1 in 8 a repeat of an earlier one (upserts).
  random: () => batches(N, (b, i) => perm[(b * ROWS + i) % Math.floor((N * ROWS * 7) / 8)]! * 3 + 1e9, false),
  // Mostly ascending: runs of 64 ascending ids, every 64th row an id from anywhere before.
  mostly: () => batches(N, (b, i) => (i % 64 === 63 ? Math.floor(perm[b * ROWS + i]! / 2) : b * ROWS + i), false),
  // The name as the key (Utf8, random).
  string: () => batches(N, (b, i) => b * ROWS + i, true),
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** `fn`'s result and its median time over REPS runs. */
function timed<T>(fn: () => T): [T, number] {
  const ms: number[] = [];
  let r!: T;
  for (let i = 0; i < REPS; i++) {
    const t = performance.now();
    r = fn();
    ms.push(performance.now() - t);
  }
  return [r, median(ms)];
}

for (const [name, make] of Object.entries(cases)) {
  if (only && only !== name) continue;
  const { storeSchema, batches: bs } = make();
  const enc = makeKeyEncoder(storeSchema);
  const builds: number[] = [];
  const cpus: number[] = [];
  let hash = '';
  for (let r = 0; r < REPS; r++) {
    const t = performance.now();
    const c = process.cpuUsage();
    const built = await buildFlushTable(storeSchema, enc, bs, 1);
    const used = process.cpuUsage(c);
    cpus.push((used.user + used.system) / 1000);
    builds.push(performance.now() - t);
    hash = createHash('sha256').update(built.bytes).digest('hex').slice(0, 16);
  }
  if (!phases) {
    console.log(
      `${name.padEnd(9)} build ${(median(builds) / MIB).toFixed(2)} ms/MiB (min ${(Math.min(...builds) / MIB).toFixed(2)}), CPU ${(median(cpus) / MIB).toFixed(2)} (min ${(Math.min(...cpus) / MIB).toFixed(2)}) sha ${hash}`,
    );
    continue;
  }
  // Phases, each on its own (medians of REPS runs).
  const [perBatch, keyMs] = timed(() => bs.map((b) => enc(b)));
  const keys: (number | string)[] | Float64Array = perBatch.every((k) => k instanceof Float64Array)
    ? Float64Array.from((perBatch as Float64Array[]).flatMap((k) => Array.from(k)))
    : perBatch.flatMap((k) => Array.from(k as ArrayLike<number | string>));
  // Before 2026-12-02 the sort also concatenated the batches (`flat`), and the cut gathered from that.
  const older = sortedOrder.length === 5;
  const sort = sortedOrder as unknown as (...a: unknown[]) => {
    rows?: RecordBatch[];
    flat?: RecordBatch;
    ordinals: Int32Array;
    keys: (number | string)[];
  };
  const [order, sortMs] = timed(() =>
    older ? sort(storeSchema.internal, storeSchema, bs, bs.length, { keys }) : sort(storeSchema, bs, bs.length, { keys }),
  );
  const cut = cutSelectionSteps as unknown as (s: Schema, rows: unknown, idx: Int32Array, t: number) => Generator<void, RecordBatch[]>;
  const [blocks, gatherMs] = timed(() =>
    runSteps(cut(storeSchema.internal, older ? order.flat : order.rows, order.ordinals, blockTargetBytes(true))),
  );
  const [built, encodeMs] = timed(() => runSteps(encodeTableSteps(storeSchema, storeSchema.internal, enc, blocks, 1, 1, order.keys)));
  const [, bloomMs] = timed(() => {
    // As the build inserts: by block (`addRange`), or one key at a time before it existed.
    const bloom = BloomFilter.forKeys(order.keys.length) as InstanceType<typeof BloomFilter> & {
      addRange?: (k: ArrayLike<number | string>, a: number, b: number) => void;
    };
    if (bloom.addRange) bloom.addRange(order.keys, 0, order.keys.length);
    else for (const k of order.keys) bloom.add(k);
  });
  const [, crcMs] = timed(() => crc32c(built.bytes));
  const f = (ms: number): string => (ms / MIB).toFixed(2);
  console.log(
    `${name.padEnd(9)} build ${f(median(builds))} ms/MiB (min ${f(Math.min(...builds))}) | keys ${f(keyMs)} sort+newest ${f(sortMs)} gather ${f(gatherMs)} encode(all) ${f(encodeMs)} [bloom ${f(bloomMs)} crc ${f(crcMs)}] | rows ${order.keys.length} file ${(built.bytes.length / 2 ** 20).toFixed(1)} MiB sha ${hash}`,
  );
}
