// CRC-32C throughput by buffer size and alignment, in CPU time (bench/results/HISTORY.md, "CRC-32C"):
// `npx tsx scripts/measure-crc32c.ts`. Prints MiB/s per size, aligned (byteOffset 0) and
// unaligned (byteOffset 1): the median of 7 rounds, each about 8 MiB of input per case. `--js`
// times the JavaScript path alone (what runs where WebAssembly cannot be compiled).

import * as crc from '../src/util/crc32c.js';

const MiB = 1024 * 1024;
const sizes = [64, 128, 256, 4096, 64 * 1024, MiB, 16 * MiB];
const buffer = new Uint8Array(16 * MiB + 64).map((_, i) => (i * 2654435761) >>> 24);
const js = process.argv.includes('--js');
const fn: (bytes: Uint8Array) => number = js && 'crc32cJs' in crc ? (crc.crc32cJs as typeof crc.crc32c) : crc.crc32c;
const path = js || !('crc32cPath' in crc) ? 'js' : (crc.crc32cPath as () => string)();
const runs = new Map<string, number[]>();
let sink = 0;
for (let round = 0; round < 7; round++) {
  for (const size of sizes) {
    for (const offset of [0, 1]) {
      const view = buffer.subarray(offset, offset + size);
      const reps = Math.max(1, Math.round((8 * MiB) / size));
      const before = process.cpuUsage();
      for (let r = 0; r < reps; r++) sink ^= fn(view);
      const used = process.cpuUsage(before);
      const seconds = (used.user + used.system) / 1e6;
      const key = `${size} ${offset}`;
      runs.set(key, [...(runs.get(key) ?? []), (size * reps) / MiB / seconds]);
    }
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`path ${path}  (sink ${sink >>> 0})`);
for (const size of sizes) {
  const cells = [0, 1].map((offset) => `${offset ? 'unaligned' : 'aligned'} ${median(runs.get(`${size} ${offset}`)!).toFixed(0)}`);
  console.log(`${String(size).padStart(9)} B: ${cells.join(', ')} MiB/s`);
}
