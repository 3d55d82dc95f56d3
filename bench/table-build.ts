// CPU of a flush's table build from WAL payloads in Node, as the OPFS table writer thread runs it
// (bench/results/HISTORY.md, "Table file build: passes per byte"): `npx tsx bench/table-build.ts
// [--root DIR] [--reps N] [--case NAME]`. Cases: append-only and keyed, each with 200 batches of
// 1000 rows, ids permuted within a batch (scripts/measure-ingest-passes.ts's shape), and with 32
// ≈1 MiB batches of 32768 rows (the browser bench's Arrow case, bench/data.ts: ids ascending;
// keyed also permuted). Prints CPU ms per MiB of table file (median of
// `reps`, this process's CPU time) and the table's SHA-256 (`--root` runs another checkout's src;
// `--against DIR` a second one interleaved with it: an A/B whose tables must match byte for byte).

import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
};
const root = arg('root', new URL('..', import.meta.url).pathname);
const REPS = Number(arg('reps', '7'));
const only = arg('case', '');
// apache-arrow as `root`'s src resolves it (one copy of its classes).
const arrowPath = createRequire(`${root}/src/`).resolve('apache-arrow').replace(/\.js$/, '.mjs');
const { Field, Float64, Int64, makeData, RecordBatch, Schema, Struct, Table, tableToIPC, Utf8 } = (await import(
  pathToFileURL(arrowPath).href
)) as typeof import('apache-arrow');
type RecordBatch = import('apache-arrow').RecordBatch;
type Schema = import('apache-arrow').Schema;
/** A checkout's builder: its src and the apache-arrow its src resolves. */
async function builderOf(dir: string) {
  const mod = async <T>(p: string): Promise<T> => (await import(pathToFileURL(`${dir}/src/${p}`).href)) as T;
  const arrow = (await import(
    pathToFileURL(createRequire(`${dir}/src/`).resolve('apache-arrow').replace(/\.js$/, '.mjs')).href
  )) as typeof import('apache-arrow');
  const { makeStoreSchema, encodeSchema } = await mod<typeof import('../src/data/schema.js')>('data/schema.ts');
  const { buildFlushFromWal } = await mod<typeof import('../src/lsm/jobs.js')>('lsm/jobs.ts');
  const { SchemaVersions } = await mod<typeof import('../src/format/schema-versions.js')>('format/schema-versions.ts');
  return (key: string[]) => {
    const schema = new arrow.Schema([
      new arrow.Field('id', new arrow.Int64(), false),
      new arrow.Field('value', new arrow.Float64(), false),
      new arrow.Field('name', new arrow.Utf8(), false),
    ]);
    const storeSchema = makeStoreSchema(schema, key);
    const versions = new SchemaVersions(storeSchema, 1, [{ version: 1, schema: encodeSchema(schema) }]);
    return (entries: { position: number; epoch: number; payload: Uint8Array }[]) => buildFlushFromWal(storeSchema, versions, entries, 1);
  };
}
const { makeStoreSchema } = (await import(pathToFileURL(`${root}/src/data/schema.ts`).href)) as typeof import('../src/data/schema.js');
const builders = [await builderOf(root)];
// `--against DIR`: another checkout's builder, run interleaved with `root`'s on the same payloads
// (rep by rep, the order swapped every rep), so a load that drifts weighs on both alike.
const against = arg('against', '');
if (against) builders.push(await builderOf(against));

const MiB = 1024 * 1024;
const ALPHABET = new TextEncoder().encode('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
const base = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), false),
  new Field('name', new Utf8(), false),
]);

/** `count` batches of `rows` rows in `schema` (the internal one: a tombstone column when keyed). */
function batches(schema: Schema, count: number, rows: number, ascending: boolean): RecordBatch[] {
  let s = 7;
  const out: RecordBatch[] = [];
  for (let b = 0; b < count; b++) {
    const ids = new BigInt64Array(rows);
    const value = new Float64Array(rows);
    const offsets = new Int32Array(rows + 1);
    const chars = new Uint8Array(rows * 16);
    let at = 0;
    for (let i = 0; i < rows; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      ids[i] = BigInt(b * rows + (ascending ? i : (i * 7919) % rows));
      value[i] = s / 7;
      const len = 8 + (s % 9);
      for (let j = 0; j < len; j++) chars[at++] = ALPHABET[(s >>> (j % 24)) % ALPHABET.length]!;
      offsets[i + 1] = at;
    }
    const kids = [
      makeData({ type: new Int64(), length: rows, nullCount: 0, data: ids }),
      makeData({ type: new Float64(), length: rows, nullCount: 0, data: value }),
      makeData({ type: new Utf8(), length: rows, nullCount: 0, valueOffsets: offsets, data: chars.slice(0, at) }),
    ];
    for (const f of schema.fields.slice(3))
      kids.push(makeData({ type: f.type, length: rows, nullCount: 0, data: new Uint8Array((rows + 7) >> 3) }) as never);
    out.push(new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows, nullCount: 0, children: kids })));
  }
  return out;
}

const cases = [
  { name: 'append-1000', key: [] as string[], count: 200, rows: 1000, ascending: false },
  { name: 'append-1mib', key: [], count: 32, rows: 32_768, ascending: true },
  { name: 'keyed-1000', key: ['id'], count: 200, rows: 1000, ascending: false },
  { name: 'keyed-1mib-asc', key: ['id'], count: 32, rows: 32_768, ascending: true },
  { name: 'keyed-1mib-perm', key: ['id'], count: 32, rows: 32_768, ascending: false },
];
const profile = arg('profile', '');
const session = profile ? new (await import('node:inspector/promises')).Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const c of cases) {
  if (only && !c.name.startsWith(only)) continue;
  const storeSchema = makeStoreSchema(base, c.key);
  const entries = batches(storeSchema.internal, c.count, c.rows, c.ascending).map((b, i) => ({
    position: i + 1,
    epoch: 1,
    payload: tableToIPC(new Table(storeSchema.internal, [b]), 'stream'),
  }));
  const builds = builders.map((b) => b(c.key));
  const cpu: number[][] = builds.map(() => []);
  if (session) await session.post('Profiler.start');
  let size = 0;
  const shas = new Set<string>();
  for (let r = 0; r < REPS; r++) {
    for (let k = 0; k < builds.length; k++) {
      const which = r % 2 === 0 ? k : builds.length - 1 - k;
      const t = process.cpuUsage();
      const built = await builds[which]!(entries);
      const u = process.cpuUsage(t);
      cpu[which]!.push((u.user + u.system) / 1000);
      size = built.bytes.length;
      shas.add(createHash('sha256').update(built.bytes).digest('hex').slice(0, 16));
    }
  }
  if (session) {
    const { profile: p } = await session.post('Profiler.stop');
    (await import('node:fs')).writeFileSync(`${profile}-${c.name}.cpuprofile`, JSON.stringify(p));
  }
  const mib = size / MiB;
  const fig = (xs: number[]): string =>
    `${(median(xs) / mib).toFixed(2)} (${(Math.min(...xs) / mib).toFixed(2)}-${(Math.max(...xs) / mib).toFixed(2)})`;
  console.log(
    `${c.name.padEnd(16)} ${mib.toFixed(1)} MiB  cpu ms/MiB median (range): ${cpu.map(fig).join('  vs against ')}  sha ${[...shas].join(' ')}${shas.size > 1 ? ' DIFFER' : ''}`,
  );
}
