// Times the CPU passes of a flush's table build and of CRC-32C in Node (bench/results/HISTORY.md,
// "Ingest"): `npx tsx scripts/measure-ingest-passes.ts`. Figures are medians of 5 runs.

import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { makeKeyEncoder } from '../src/data/keys.js';
import { toBatches } from '../src/data/rows.js';
import { makeStoreSchema } from '../src/data/schema.js';
import { buildFlushTable } from '../src/lsm/jobs.js';
import { crc32c, crc32cCombine } from '../src/util/crc32c.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function time(fn: () => unknown): number {
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    fn();
    runs.push(performance.now() - t);
  }
  return median(runs);
}
async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await fn();
    runs.push(performance.now() - t);
  }
  return median(runs);
}

const MiB = 1024 * 1024;
const bytes = new Uint8Array(16 * MiB).map((_, i) => (i * 2654435761) >>> 24);
const crcMs = time(() => crc32c(bytes));
console.log(`crc32c: ${(16 / (crcMs / 1000)).toFixed(0)} MiB/s (16 MiB in ${crcMs.toFixed(1)} ms)`);
let sink = 0;
const combineMs = time(() => {
  for (let i = 0; i < 10_000; i++) sink ^= crc32cCombine(i, sink, 65_536 + i);
});
console.log(`crc32cCombine: ${((combineMs * 1000) / 10_000).toFixed(2)} µs per call (64 KiB pieces)`);

const base = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);
for (const key of [[], ['id']]) {
  const storeSchema = makeStoreSchema(base, key);
  const batches = [];
  for (let b = 0; b < 200; b++) {
    const rows = Array.from({ length: 1000 }, (_, i) => ({
      id: b * 1000 + ((i * 7919) % 1000),
      value: i / 3,
      name: `name-${b}-${i}-abcdefghij`,
    }));
    batches.push(...toBatches(rows, storeSchema));
  }
  const keyEncoder = key.length > 0 ? makeKeyEncoder(storeSchema) : undefined;
  let size = 0;
  const ms = await timeAsync(async () => {
    size = (await buildFlushTable(storeSchema, keyEncoder, batches, 1)).bytes.length;
  });
  console.log(
    `flush build, ${key.length > 0 ? 'keyed' : 'append-only'}, 200k rows: ${ms.toFixed(0)} ms, ${(size / MiB).toFixed(1)} MiB file, ${(size / MiB / (ms / 1000)).toFixed(0)} MiB/s`,
  );
}
