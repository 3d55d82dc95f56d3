// Arrow input of many kinds put from the page (memwal's default worker), read back through scan
// and getMany from the memtable, a table file and after a reopen. Loaded by e2e/client-arrow.spec.ts.

import {
  Binary,
  Bool,
  DateMillisecond,
  Decimal,
  Dictionary,
  Field,
  FixedSizeList,
  Float32,
  Float64,
  Int8,
  Int32,
  Int64,
  LargeUtf8,
  List,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  TimestampNanosecond,
  TimestampSecond,
  Uint8,
  Uint64,
  Utf8,
  makeData,
  tableFromIPC,
  tableToIPC,
  vectorFromArray,
} from 'apache-arrow';
import { rowsToBatch } from '../../../src/data/plain-rows.js';
import { makeStoreSchema } from '../../../src/data/schema.js';
import { openMemWal } from '../../../src/rpc/open-memwal.js';

const pair = new Struct([new Field('a', new Int32(), true), new Field('b', new Utf8(), true)]);
const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('u', new Uint64(), true),
  new Field('dec', new Decimal(3, 20, 128), true),
  new Field('ts_s', new TimestampSecond(), true),
  new Field('ts_us', new TimestampMicrosecond('UTC'), true),
  new Field('ts_ns', new TimestampNanosecond(), true),
  new Field('d', new DateMillisecond(), true),
  new Field('s', new Utf8(), true),
  new Field('ls', new LargeUtf8(), true),
  new Field('bin', new Binary(), true),
  new Field('list', new List(new Field('item', pair, true)), true),
  new Field('fsl', new FixedSizeList(3, new Field('item', new Float64(), true)), true),
  new Field('ok', new Bool(), true),
]);

/** Rows `from`..`from + n - 1`: Int64 keys beyond 2^53, nulls every 7th row, non-ASCII and NUL in strings. */
function rows(from: number, n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const nul = i % 7 === 3;
    return {
      id: BigInt(i) * 2n ** 40n - 2n ** 62n + (i % 2 ? 2n ** 53n + 1n : 0n),
      u: nul ? null : 2n ** 64n - 1n - BigInt(i),
      dec: nul ? null : new Uint32Array([i * 1000 + 7, i, 0, i % 5 === 0 ? 0xffffffff : 0]),
      ts_s: nul ? null : -i,
      ts_us: nul ? null : 1_700_000_000_000 + i,
      ts_ns: nul ? null : i * 3,
      d: nul ? null : 86_400_000 * (i - 50),
      s: nul ? null : text(i),
      ls: nul ? null : 'x'.repeat(i % 50),
      bin: nul ? null : new Uint8Array([i & 255, 0, 255]),
      list: nul ? null : Array.from({ length: i % 4 }, (_, j) => (j === 1 ? null : { a: j === 2 ? null : i + j, b: `b${j}` })),
      fsl: nul ? null : [i, null, -i / 3],
      ok: nul ? null : i % 2 === 0,
    };
  });
}

const text = (i: number): string => `s\0${i}\u00e9\u{1F600}`;

/** A Decimal128 as a string of its unscaled value: from a row of a Table (Arrow's JSON of it) or of getMany (its four 32-bit words). */
function decimal(v: unknown): unknown {
  if (typeof v === 'string') return v.replaceAll('"', '');
  if (!ArrayBuffer.isView(v)) return v;
  const words = Array.from(v as Uint32Array);
  return String(
    BigInt.asIntN(
      128,
      words.reduceRight((acc, w) => (acc << 32n) | BigInt(w), 0n),
    ),
  );
}

/** Rows as sortable JSON strings (bigint, decimals and typed arrays spelled out one way). */
function canonical(values: unknown[]): string[] {
  const replacer = (k: string, v: unknown): unknown =>
    k === 'dec' ? decimal(v) : typeof v === 'bigint' ? `${v}n` : ArrayBuffer.isView(v) ? Array.from(v as Uint8Array) : v;
  return values.map((v) => JSON.stringify(v, replacer)).sort();
}

const tableRows = (t: Table): unknown[] => t.toArray().map((r) => r.toJSON());

/** The page's Arrow input: built here from rows, then put in each shape the attack list names. */
function inputs(): [string, Table | RecordBatch][] {
  const plain = makeStoreSchema(schema, []);
  const make = (from: number, n: number): Table =>
    new Table(schema, [new RecordBatch(schema, rowsToBatch(rows(from, n), plain, 'put').data)]);
  const empty = new RecordBatch(schema, undefined as never);
  const many = new Table([...make(100, 10).batches, empty, ...make(110, 10).batches, ...make(120, 1).batches]);
  // Every buffer a view at an odd place of a larger ArrayBuffer (as IPC decoded from a bigger read).
  const ipc = tableToIPC(make(400, 33), 'stream');
  const larger = new Uint8Array(ipc.length + 4096);
  larger.set(ipc, 1024);
  // A dictionary-encoded column for the Utf8 one.
  const dictType = new Dictionary(new Utf8(), new Int32());
  const dictSchema = new Schema(schema.fields.map((f) => (f.name === 's' ? new Field('s', dictType, true) : f)));
  const base = make(500, 20).batches[0]!;
  const dictColumn = vectorFromArray(
    Array.from({ length: 20 }, (_, k) => (k % 7 === 3 ? null : text(500 + k))),
    dictType,
  ).data[0]!;
  const children = dictSchema.fields.map((f, j) => (f.name === 's' ? dictColumn : base.data.children[j]!));
  const dict = new Table(dictSchema, [
    new RecordBatch(dictSchema, makeData({ type: new Struct(dictSchema.fields), length: 20, children })),
  ]);
  return [
    ['one batch', make(0, 100)],
    ['many batches and an empty one', many],
    ['a sliced table', make(200, 50).slice(7, 31)],
    ['a sliced record batch', make(300, 40).batches[0]!.slice(3, 20)],
    ['buffers inside a larger ArrayBuffer', tableFromIPC(larger.subarray(1024, 1024 + ipc.length))],
    ['a dictionary column', dict],
  ];
}

/** What differs, stage by stage (empty when every row reads back as put). */
export async function arrowKinds(name: string): Promise<string[]> {
  const problems: string[] = [];
  let store = await openMemWal({ name, schema, primaryKey: ['id'] });
  const expected: unknown[] = [];
  const ids: bigint[] = [];
  for (const [what, data] of inputs()) {
    const t = data instanceof Table ? data : new Table([data]);
    try {
      const r = await store.put(data);
      if (r.rows !== t.numRows) problems.push(`put ${what}: ${r.rows} rows, sent ${t.numRows}`);
      expected.push(...tableRows(t));
      ids.push(...(t.getChild('id')!.toArray() as BigInt64Array));
    } catch (e) {
      problems.push(`put ${what}: ${String(e)}`);
    }
  }
  const want = canonical(expected);
  const check = async (stage: string): Promise<void> => {
    const scanned = canonical(tableRows(await store.scan()));
    if (JSON.stringify(scanned) !== JSON.stringify(want))
      problems.push(`${stage}: scan differs (${scanned.length} rows, ${want.length} put)`);
    try {
      const got = canonical(await store.getMany(ids.map((id) => ({ id }))));
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        const odd = got.filter((g) => !want.includes(g));
        problems.push(`${stage}: getMany differs (${odd.length} rows, e.g. ${odd[0]} where put ${want.find((w) => !got.includes(w))})`);
      }
    } catch (e) {
      problems.push(`${stage}: getMany: ${String(e)}`);
    }
  };
  await check('memtable');
  await store.forceSealActive();
  await store.waitForFlushDrain();
  await check('table file');
  await store.close();
  store = await openMemWal({ name, schema, primaryKey: ['id'] });
  await check('reopened');
  await store.close();
  return problems;
}

/** The column types the page builds from plain rows itself (rpc/client-rows.ts), nullable and not. */
const builtSchema = new Schema([
  new Field('id', new Int64(), false),
  new Field('u', new Uint64(), true),
  new Field('i8', new Int8(), true),
  new Field('u8', new Uint8(), false),
  new Field('f32', new Float32(), true),
  new Field('f64', new Float64(), false),
  new Field('ok', new Bool(), true),
  new Field('s', new Utf8(), true),
  new Field('ls', new LargeUtf8(), true),
  new Field('bin', new Binary(), true),
]);

function builtRows(from: number, n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const nul = i % 7 === 3;
    return {
      id: i % 2 ? BigInt(i) * 2n ** 40n - 2n ** 62n : i,
      ...(nul ? {} : { u: i % 3 ? 2n ** 64n - 1n - BigInt(i) : i }),
      i8: nul ? null : (i % 256) - 128,
      u8: i % 256,
      f32: nul ? undefined : i / 4,
      f64: i % 5 ? -i / 3 : Number.NaN,
      ok: nul ? null : i % 2 === 0,
      s: nul ? null : text(i),
      ls: 'y'.repeat(i % 30),
      bin: nul ? null : new Uint8Array([i & 255, 0, 255]),
    };
  });
}

/**
 * Plain rows of the types the page builds, put from the page, against the same rows put as the
 * Arrow batch the engine builds from them: both stores scan the same, from the memtable, a table
 * file and after a reopen; a bad row still rejects with the engine's message.
 */
export async function plainKinds(name: string): Promise<string[]> {
  const problems: string[] = [];
  const stored = makeStoreSchema(builtSchema, []);
  const names = [`${name}-rows`, `${name}-arrow`];
  const open = (n: string) => openMemWal({ name: n, schema: builtSchema, primaryKey: ['id'] });
  let [byRows, byArrow] = [await open(names[0]!), await open(names[1]!)];
  for (const [from, n] of [
    [0, 1000],
    [1000, 1],
    [2000, 37],
  ] as const) {
    await byRows.put(builtRows(from, n));
    await byArrow.put(new RecordBatch(builtSchema, rowsToBatch(builtRows(from, n), stored, 'put').data));
  }
  try {
    await byRows.put([{ id: 1, u8: 300, f64: 0 }]);
    problems.push('a Uint8 of 300 was accepted');
  } catch (e) {
    if (!String(e).includes('put: row 0: column "u8": expected an integer in [0, 255]')) problems.push(`bad row: ${String(e)}`);
  }
  const check = async (stage: string): Promise<void> => {
    const [a, b] = [canonical(tableRows(await byRows.scan())), canonical(tableRows(await byArrow.scan()))];
    if (a.length !== 1038 || JSON.stringify(a) !== JSON.stringify(b))
      problems.push(`${stage}: ${a.length} rows put as rows, ${b.length} as Arrow, or they differ`);
  };
  await check('memtable');
  for (const s of [byRows, byArrow]) {
    await s.forceSealActive();
    await s.waitForFlushDrain();
  }
  await check('table file');
  await byRows.close();
  await byArrow.close();
  [byRows, byArrow] = [await open(names[0]!), await open(names[1]!)];
  await check('reopened');
  await byRows.close();
  await byArrow.close();
  return problems;
}

(window as unknown as { arrowKinds: typeof arrowKinds }).arrowKinds = arrowKinds;
(window as unknown as { plainKinds: typeof plainKinds }).plainKinds = plainKinds;
