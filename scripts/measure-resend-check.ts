// Times a LanceSink's check of a re-sent drain request whose leading entries are applied against
// the check of a fresh request of its unapplied tail alone (docs/scale-out.md "Fairness"):
// `npx tsx scripts/measure-resend-check.ts`. A keyed body of 10 entries of 20,000 rows (id,
// text), 9 of them applied; medians of 7 runs, CPU time of the thread (process.cpuUsage) and wall.

import { POSITION_COLUMN } from '../src/drain/wire.js';
import { arrow } from '../src/lance/lancedb.js';
import { checkRequest } from '../src/lance/request.js';
import { crc32c } from '../src/util/crc32c.js';

const rules = { primaryKey: ['id'], schema: undefined, allowColumns: undefined, maxColumns: 100, maxRowBytes: 16 * 1024 };
function body(entries: number, perEntry: number, firstPos: number) {
  const schema = new arrow.Schema([
    new arrow.Field('id', new arrow.Int64(), false),
    new arrow.Field('text', new arrow.Utf8(), true),
    new arrow.Field('_tombstone', new arrow.Bool(), false),
    new arrow.Field(POSITION_COLUMN, new arrow.Int64(), false),
  ]);
  const batches = [];
  for (let e = 0; e < entries; e++) {
    const ids = BigInt64Array.from({ length: perEntry }, (_, i) => BigInt((e * perEntry + i) % 50000));
    const texts = arrow.vectorFromArray(
      Array.from({ length: perEntry }, (_, i) => `row ${e} ${i} some text`),
      new arrow.Utf8(),
    ).data[0]!;
    const bools = arrow.makeData({ type: new arrow.Bool(), length: perEntry, nullCount: 0, data: new Uint8Array(Math.ceil(perEntry / 8)) });
    const pos = arrow.makeData({
      type: new arrow.Int64(),
      length: perEntry,
      nullCount: 0,
      data: new BigInt64Array(perEntry).fill(BigInt(firstPos + e)),
    });
    const children = [arrow.makeData({ type: new arrow.Int64(), length: perEntry, nullCount: 0, data: ids }), texts, bools, pos];
    batches.push(
      new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: perEntry, nullCount: 0, children })),
    );
  }
  const b = arrow.tableToIPC(new arrow.Table(schema, batches), 'stream');
  return {
    meta: { firstPosition: firstPos, lastPosition: firstPos + entries - 1, epoch: 1, rows: entries * perEntry, crc32c: crc32c(b) },
    body: b,
  };
}
const entries = 10;
const full = body(entries, 20000, 1);
const tail = body(1, 20000, entries);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(f: () => Promise<unknown>): Promise<{ cpu: number; wall: number }> {
  const c = process.cpuUsage();
  const t = performance.now();
  await f();
  const used = process.cpuUsage(c);
  return { cpu: (used.user + used.system) / 1000, wall: performance.now() - t };
}
const runs = { resend: [] as { cpu: number; wall: number }[], tail: [] as { cpu: number; wall: number }[], crc: [] as number[] };
for (let k = 0; k < 7; k++) {
  runs.resend.push(await time(() => checkRequest(full.meta, full.body, rules, entries - 1)));
  runs.tail.push(await time(() => checkRequest(tail.meta, tail.body, rules)));
  runs.crc.push((await time(async () => crc32c(full.body))).cpu);
}
const cpu = (xs: { cpu: number }[]) => median(xs.map((x) => x.cpu));
const wall = (xs: { wall: number }[]) => median(xs.map((x) => x.wall));
console.log(
  `body ${(full.body.length / 2 ** 20).toFixed(1)} MiB, ${entries - 1} of ${entries} entries applied: re-send ${cpu(runs.resend).toFixed(1)} ms CPU (${wall(runs.resend).toFixed(1)} wall), ` +
    `fresh tail ${cpu(runs.tail).toFixed(1)} ms CPU (${wall(runs.tail).toFixed(1)} wall), ratio ${(cpu(runs.resend) / cpu(runs.tail)).toFixed(1)} (CPU); ` +
    `of it the whole body's CRC-32C ${median(runs.crc).toFixed(1)} ms`,
);
