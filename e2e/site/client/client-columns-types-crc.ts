// Outside tester: puts built on the page (WireColumns, checked by the worker before
// anything is written), every type through the page's client, and CRC-32C with the worker's
// WebAssembly refused by CSP, attacked through the public API only (openMemWal, destroyMemWal).
// A buggy or hostile page hands `put` a hand-made columns message: every one must be refused
// InvalidArgument, quickly, with nothing written and the store whole. Loaded by
// e2e/client-columns-types-crc.spec.ts.

import {
  Binary,
  Bool,
  Data,
  DateDay,
  DateMillisecond,
  Field,
  FixedSizeBinary,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  LargeBinary,
  LargeUtf8,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  TimestampMillisecond,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
} from 'apache-arrow';
import type { MemWalClient } from '../../../src/rpc/client.js';
import { type OpenMemWalOptions, openMemWal } from '../../../src/rpc/open-memwal.js';
import { destroyMemWal } from '../../../src/rpc/destroy.js';

/** Outcome of `p` within `ms`: 'ok', the error's code, or 'hung'. */
async function within<T>(p: Promise<T>, ms: number): Promise<{ r: 'ok'; v: T } | { r: string; message?: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<{ r: string }>((res) => {
    timer = setTimeout(() => res({ r: 'hung' }), ms);
  });
  try {
    return await Promise.race([p.then((v) => ({ r: 'ok' as const, v })), hung]);
  } catch (e) {
    const err = e as { code?: string; name?: string; message?: string };
    return { r: err.code ?? err.name ?? 'error', message: err.message ?? String(e) };
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-made columns messages

const keyed = new Schema([
  new Field('id', new Int64(), false),
  new Field('v', new Float64(), true),
  new Field('s', new Utf8(), true),
  new Field('ok', new Bool(), true),
  new Field('ls', new LargeUtf8(), true),
  new Field('n', new Int32(), true),
]);

/** Every column nullable, no key: a put that names no column is all nulls. */
const loose = new Schema([new Field('a', new Int64(), true), new Field('s', new Utf8(), true), new Field('f', new Float64(), true)]);

interface Columns {
  kind: 'columns';
  length: number;
  names: string[];
  nullCounts: number[];
  buffers: (ArrayBufferView | undefined)[];
}

const enc = new TextEncoder();

/** A valid message of 3 rows of `keyed`, as the page's builders make it: ids 100..102. */
function good(): Columns {
  const s = enc.encode('abé€');
  const ls = enc.encode('xyz😀');
  return {
    kind: 'columns',
    length: 3,
    names: ['id', 'v', 's', 'ok', 'ls', 'n'],
    nullCounts: [0, 1, 0, 1, 0, 0],
    buffers: [
      undefined,
      new BigInt64Array([100n, 101n, 102n]),
      undefined,
      undefined,
      new Float64Array([0.5, 0, 2.5]),
      new Uint8Array([0b101]),
      new Int32Array([0, 2, 2, s.length]),
      s,
      undefined,
      undefined,
      new Uint8Array([0b011]),
      new Uint8Array([0b011]),
      new BigInt64Array([0n, 1n, 3n, BigInt(ls.length)]),
      ls,
      undefined,
      undefined,
      new Int32Array([7, -8, 9]),
      undefined,
    ],
  };
}

/** Column `name`'s three buffer slots in `w`. */
const slot = (w: Columns, name: string): number => 3 * w.names.indexOf(name);

/** Each hostile message: a name and a spoiler of a good one. */
const HOSTILE: [string, (w: Columns) => unknown][] = [
  ['no rows', (w) => ({ ...w, length: 0 })],
  ['a negative length', (w) => ({ ...w, length: -1 })],
  ['a fractional length', (w) => ({ ...w, length: 1.5 })],
  ['a NaN length', (w) => ({ ...w, length: Number.NaN })],
  ['a string length', (w) => ({ ...w, length: '3' })],
  ['a length of 2^53', (w) => ({ ...w, length: 2 ** 53 })],
  ['more rows than the buffers hold', (w) => ({ ...w, length: 4 })],
  ['names that are not an array', (w) => ({ ...w, names: 'id,v,s,ok,ls,n' })],
  ['null counts of another length', (w) => ({ ...w, nullCounts: w.nullCounts.slice(1) })],
  ['buffers of another length', (w) => ({ ...w, buffers: w.buffers.slice(0, -1) })],
  ['no buffers at all', (w) => ({ ...w, buffers: undefined })],
  ['an unknown column', (w) => ({ ...w, names: w.names.map((n) => (n === 'n' ? 'nope' : n)) })],
  ['the internal _tombstone column', (w) => ({ ...w, names: w.names.map((n) => (n === 'n' ? '_tombstone' : n)) })],
  [
    'a column named twice (one column left out)',
    (w) => ({
      ...w,
      names: w.names.map((n) => (n === 'v' ? 'n' : n)),
      buffers: w.buffers.map((b, i) => (i >= 3 && i < 6 ? w.buffers[15 + (i - 3)] : b)),
      nullCounts: w.nullCounts.map((c, i) => (i === 1 ? 0 : c)),
    }),
  ],
  ['a column named "__proto__"', (w) => ({ ...w, names: w.names.map((n) => (n === 'n' ? '__proto__' : n)) })],
  ['a name that is a bigint', (w) => ({ ...w, names: w.names.map((n) => (n === 'n' ? 5n : n)) })],
  [
    'a name that is an object holding itself',
    (w) => {
      const o: Record<string, unknown> = {};
      o.self = o;
      return { ...w, names: w.names.map((n) => (n === 'n' ? o : n)) };
    },
  ],
  ['Int64 values as a Float64Array', (w) => void (w.buffers[1] = new Float64Array([1, 2, 3]))],
  ['Int64 values as an Int32Array', (w) => void (w.buffers[1] = new Int32Array([1, 2, 3, 4, 5, 6]))],
  ['Int64 values as a BigUint64Array', (w) => void (w.buffers[1] = new BigUint64Array([1n, 2n, 3n]))],
  ['Int64 values as a DataView', (w) => void (w.buffers[1] = new DataView(new ArrayBuffer(24)))],
  ['Int32 values as a plain array', (w) => void (w.buffers[slot(w, 'n') + 1] = [1, 2, 3] as never)],
  ['Int32 values too short', (w) => void (w.buffers[slot(w, 'n') + 1] = new Int32Array(2))],
  ['Bool values empty', (w) => void (w.buffers[slot(w, 'ok') + 1] = new Uint8Array(0))],
  ['Bool values as an Int8Array', (w) => void (w.buffers[slot(w, 'ok') + 1] = new Int8Array([3]))],
  ['Float64 values missing', (w) => void (w.buffers[slot(w, 'v') + 1] = undefined)],
  ['Utf8 offsets past the value bytes', (w) => void (w.buffers[slot(w, 's')] = new Int32Array([0, 2, 2, 99]))],
  ['Utf8 offsets past 2^31', (w) => void (w.buffers[slot(w, 's')] = new Int32Array([0, 2, 2, -2147483648]))],
  ['Utf8 offsets that decrease', (w) => void (w.buffers[slot(w, 's')] = new Int32Array([0, 4, 2, 6]))],
  ['Utf8 offsets not starting at 0', (w) => void (w.buffers[slot(w, 's')] = new Int32Array([1, 2, 2, 6]))],
  ['Utf8 offsets starting below 0', (w) => void (w.buffers[slot(w, 's')] = new Int32Array([-1, 2, 2, 6]))],
  ['Utf8 offsets too short', (w) => void (w.buffers[slot(w, 's')] = new Int32Array([0, 2, 2]))],
  ['Utf8 offsets as a Uint32Array', (w) => void (w.buffers[slot(w, 's')] = new Uint32Array([0, 2, 2, 6]))],
  ['Utf8 offsets missing', (w) => void (w.buffers[slot(w, 's')] = undefined)],
  ['Utf8 values as an Int8Array', (w) => void (w.buffers[slot(w, 's') + 1] = new Int8Array(6))],
  ['LargeUtf8 offsets as an Int32Array', (w) => void (w.buffers[slot(w, 'ls')] = new Int32Array([0, 1, 3, 8]))],
  ['LargeUtf8 offsets past the value bytes', (w) => void (w.buffers[slot(w, 'ls')] = new BigInt64Array([0n, 1n, 3n, 2n ** 40n]))],
  ['LargeUtf8 offsets that wrap negative', (w) => void (w.buffers[slot(w, 'ls')] = new BigInt64Array([0n, 1n, -(2n ** 63n), 8n]))],
  ['offsets on a fixed-width column', (w) => void (w.buffers[slot(w, 'n')] = new Int32Array(4))],
  ['a null count of 0 over a bitmap with a null', (w) => void (w.nullCounts[1] = 0)],
  ['a null count of 2 over a bitmap with one null', (w) => void (w.nullCounts[1] = 2)],
  ['a null count without a bitmap', (w) => void (w.buffers[slot(w, 'v') + 2] = undefined)],
  ['a null count past the rows', (w) => void (w.nullCounts[5] = 4)],
  ['a negative null count', (w) => void (w.nullCounts[5] = -1)],
  ['a fractional null count', (w) => void (w.nullCounts[1] = 0.5)],
  ['a bitmap of no bytes with a null count', (w) => void (w.buffers[slot(w, 'v') + 2] = new Uint8Array(0))],
  ['a bitmap as an Int8Array', (w) => void (w.buffers[slot(w, 'v') + 2] = new Int8Array([0b101]))],
  ['a null in the non-nullable key column', (w) => ((w.nullCounts[0] = 1), void (w.buffers[2] = new Uint8Array([0b110])))],
  ['no columns, 3 rows', (w) => ({ ...w, names: [], nullCounts: [], buffers: [] })],
  // An Arrow batch (crossing as its buffers, as they are): a column with nulls but no bitmap.
  [
    'an Arrow batch whose column has nulls but no validity bitmap',
    () => {
      const children = keyed.fields.map((f) =>
        f.name === 'id'
          ? new Data(f.type, 0, 2, 0, [undefined, new BigInt64Array([200n, 201n])] as never)
          : f.name === 'v'
            ? new Data(f.type, 0, 2, 1, [undefined, new Float64Array([1, 2])] as never)
            : makeData({ type: f.type as never, length: 2, nullCount: 2, nullBitmap: new Uint8Array(1) }),
      );
      return new RecordBatch(
        keyed,
        new Data(new Struct(keyed.fields), 0, 2, 0, [undefined, undefined, undefined] as never, children) as never,
      );
    },
  ],
];

/**
 * Every HOSTILE message put on a fresh keyed store holding 2 rows: the outcome of each (expected
 * `InvalidArgument` within 10 s), then the rows the store holds (still 2, then 3 after a good
 * put), after a close and reopen too.
 */
async function hostile(name: string): Promise<{ outcomes: Record<string, string>; problems: string[] }> {
  await destroyMemWal(name).catch(() => undefined);
  const o: OpenMemWalOptions = { name, schema: keyed, primaryKey: ['id'] };
  let db = await openMemWal(o);
  const problems: string[] = [];
  await db.put([
    { id: 1, v: 1.5, s: 'one', ok: true, ls: 'L1', n: 1 },
    { id: 2, v: null, s: null, ok: null, ls: null, n: null },
  ]);
  const outcomes: Record<string, string> = {};
  for (const [what, spoil] of HOSTILE) {
    const w = good();
    const spoiled = spoil(w) ?? w;
    const r = await within(db.put(spoiled as never), 10_000);
    outcomes[what] = r.r === 'InvalidArgument' ? r.r : `${r.r}: ${(r as { message?: string }).message ?? ''}`;
  }
  const rows = async (when: string, want: number): Promise<void> => {
    const t = await db.scan();
    if (t.numRows !== want) problems.push(`${when}: ${t.numRows} rows, want ${want}`);
  };
  await rows('after the hostile puts', 2);
  const put = await within(db.put(good() as never), 10_000);
  if (put.r !== 'ok') problems.push(`the good message: ${put.r}`);
  const g = (await db.get({ id: 102n })) as Record<string, unknown> | undefined;
  const want = { id: 102n, v: 2.5, s: 'é€', ok: null, ls: '😀', n: 9 };
  if (JSON.stringify(g, big) !== JSON.stringify(want, big)) problems.push(`get 102: ${JSON.stringify(g, big)}`);
  await rows('after the good put', 5);
  await db.close();
  db = await openMemWal(o);
  await rows('reopened', 5);
  await db.close();
  await destroyMemWal(name);
  return { outcomes, problems };
}

const big = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? `${v}n` : v);

/**
 * A store whose columns are all nullable and unkeyed: a message naming no column, whose `length`
 * no buffer backs, 3 rows and 2^31 − 1 rows. Each outcome, within 20 s; then the rows the store
 * holds, and whether a store in another worker stayed usable meanwhile.
 */
async function noColumns(name: string): Promise<{ outcomes: string[]; rows: number; other: string }> {
  await destroyMemWal(name).catch(() => undefined);
  await destroyMemWal(`${name}-other`).catch(() => undefined);
  const db = await openMemWal({ name, schema: loose });
  const other = await openMemWal({ name: `${name}-other`, schema: loose });
  await db.put([{ a: 1, s: 'x', f: 0.5 }]);
  const outcomes: string[] = [];
  for (const length of [3, 2 ** 31 - 1, 2 ** 40]) {
    const r = await within(db.put({ kind: 'columns', length, names: [], nullCounts: [], buffers: [] } as never), 20_000);
    outcomes.push(`${length}: ${r.r}`);
  }
  const left = await within(db.scan(), 10_000);
  const rows = left.r === 'ok' ? (left as { v: { numRows: number } }).v.numRows : -1;
  const o = await within(other.put([{ a: 2 }]), 10_000);
  await within(db.close(), 10_000);
  await within(other.close(), 10_000);
  await destroyMemWal(name).catch(() => undefined);
  await destroyMemWal(`${name}-other`).catch(() => undefined);
  return { outcomes, rows, other: o.r };
}

/**
 * Schema evolution under page-built puts: a store opened with (id, v, old), reopened with `old`
 * dropped and `added` added: a message naming `old` is refused, one naming `added` lands, and
 * rows of both versions read back as the new schema says, after another reopen too.
 */
async function evolved(name: string): Promise<string[]> {
  await destroyMemWal(name).catch(() => undefined);
  const v1 = new Schema([new Field('id', new Int32(), false), new Field('v', new Utf8(), true), new Field('old', new Int32(), true)]);
  const v2 = new Schema([new Field('id', new Int32(), false), new Field('added', new Utf8(), true), new Field('v', new Utf8(), true)]);
  const problems: string[] = [];
  let db = await openMemWal({ name, schema: v1, primaryKey: ['id'] });
  await db.put([{ id: 1, v: 'one', old: 11 }]);
  await db.close();
  db = await openMemWal({ name, schema: v2, primaryKey: ['id'] });
  const oldCol = await within(
    db.put({
      kind: 'columns',
      length: 1,
      names: ['id', 'old'],
      nullCounts: [0, 0],
      buffers: [undefined, new Int32Array([2]), undefined, undefined, new Int32Array([22]), undefined],
    } as never),
    10_000,
  );
  if (oldCol.r !== 'InvalidArgument') problems.push(`a dropped column named: ${oldCol.r}`);
  await db.put([{ id: 3, added: 'neu', v: 'three' }]);
  const a = enc.encode('ä');
  const added = await within(
    db.put({
      kind: 'columns',
      length: 1,
      names: ['id', 'added', 'v'],
      nullCounts: [0, 0, 1],
      buffers: [
        undefined,
        new Int32Array([4]),
        undefined,
        new Int32Array([0, a.length]),
        a,
        undefined,
        new Int32Array([0, 0]),
        new Uint8Array(0),
        new Uint8Array([0]),
      ],
    } as never),
    10_000,
  );
  if (added.r !== 'ok') problems.push(`the added column named: ${added.r} ${(added as { message?: string }).message ?? ''}`);
  const want = JSON.stringify([
    { id: 1, added: null, v: 'one' },
    { id: 3, added: 'neu', v: 'three' },
    { id: 4, added: 'ä', v: null },
  ]);
  const read = async (when: string) => {
    const got = JSON.stringify((await db.scan()).toArray().map((r) => r.toJSON()));
    if (got !== want) problems.push(`${when}: ${got}`);
  };
  await read('open');
  await db.forceSealActive();
  await db.waitForFlushDrain();
  await db.close();
  db = await openMemWal({ name, schema: v2, primaryKey: ['id'] });
  await read('reopened');
  await db.close();
  await destroyMemWal(name);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Every type through the page's client

const everyPageType = new Schema([
  new Field('id', new Int64(), false),
  new Field('i8', new Int8(), true),
  new Field('i16', new Int16(), true),
  new Field('i32', new Int32(), true),
  new Field('u8', new Uint8(), true),
  new Field('u16', new Uint16(), true),
  new Field('u32', new Uint32(), true),
  new Field('u64', new Uint64(), true),
  new Field('f32', new Float32(), true),
  new Field('f64', new Float64(), true),
  new Field('ok', new Bool(), true),
  new Field('s', new Utf8(), true),
  new Field('ls', new LargeUtf8(), true),
  new Field('b', new Binary(), true),
  new Field('lb', new LargeBinary(), true),
]);

/** The same with types the page does not build (their rows cross as they are). */
const everyRowType = new Schema([
  ...everyPageType.fields,
  new Field('d', new DateDay(), true),
  new Field('dm', new DateMillisecond(), true),
  new Field('ts', new TimestampMillisecond(), true),
  new Field('fb', new FixedSizeBinary(4), true),
]);

const STRINGS = ['', 'a', 'é', '€', '😀', 'naïve café – 日本語 😀👍🏽', '\u0000nul\u0000', 'x'.repeat(70_000), `${'ü'.repeat(40_000)}end`];

/** Row `i` of the every-type stores: edge values, and a null in each nullable column now and then. */
function typedRow(i: number, withRowTypes: boolean): Record<string, unknown> {
  const pick = <T>(xs: T[]): T => xs[i % xs.length]!;
  const nul = (k: number) => (i + k) % 7 === 0;
  const row: Record<string, unknown> = {
    id: pick([-(2n ** 63n), 2n ** 63n - 1n, 0, -1, 2 ** 53 - 1, -(2 ** 53 - 1), 9_007_199_254_740_993n]) as unknown,
    i8: nul(1) ? null : pick([-128, 127, 0, -1]),
    i16: nul(2) ? null : pick([-32768, 32767, 5]),
    i32: nul(3) ? null : pick([-2147483648, 2147483647, 0]),
    u8: nul(4) ? null : pick([0, 255, 128]),
    u16: nul(5) ? null : pick([0, 65535]),
    u32: nul(6) ? null : pick([0, 4294967295, 2147483648]),
    u64: nul(0) ? null : pick([0n, 2n ** 64n - 1n, 2n ** 63n, 12345]),
    f32: nul(1) ? null : pick([0.5, -0, 3.4028234663852886e38, Number.POSITIVE_INFINITY, Number.NaN, 1.401298464324817e-45]),
    f64: nul(2) ? null : pick([Number.NaN, -0, 5e-324, Number.NEGATIVE_INFINITY, 1.7976931348623157e308, 0.1]),
    ok: nul(3) ? null : i % 2 === 0,
    s: nul(4) ? null : pick(STRINGS),
    ls: nul(5) ? null : pick([...STRINGS].reverse()),
    b: nul(6) ? null : pick([new Uint8Array(0), new Uint8Array([0]), Uint8Array.from({ length: 66_000 }, (_, k) => (k * 31 + i) & 0xff)]),
    lb: nul(0) ? null : pick([new Uint8Array([255, 0, 255]), new Uint8Array(0)]),
  };
  // Unique ids: the edge value and the row number.
  row.id = typeof row.id === 'bigint' ? (i < 7 ? row.id : BigInt(i) * 1_000_003n) : i < 7 ? row.id : i * 1_000_003;
  if (withRowTypes) {
    row.d = nul(1) ? null : pick([0, -86_400_000, 19_000 * 86_400_000, new Date(Date.UTC(1969, 11, 31))]);
    row.dm = nul(2) ? null : pick([0, -1, 1_700_000_000_123, new Date(8.64e15)]);
    row.ts = nul(3) ? null : pick([0, -1, 1_700_000_000_123, new Date(Date.UTC(2038, 0, 19, 3, 14, 8))]);
    row.fb = nul(4) ? null : pick([new Uint8Array([0, 0, 0, 0]), new Uint8Array([1, 2, 3, 255])]);
  }
  return row;
}

/** What a get gives back for `v` in a column of `type` (as docs say: bigint Int64, epoch ms dates). */
function expected(field: Field, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) v = v.getTime();
  switch (field.type.toString()) {
    case 'Int64':
    case 'Uint64':
      return BigInt(v as number);
    case 'Float32':
      return Math.fround(v as number);
    default:
      return v;
  }
}

/** `a` and `b` the same value (NaN equals NaN, -0 is not 0, bytes by content). */
function same(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, k) => x === b[k]);
  return Object.is(a, b);
}

const show = (v: unknown): string =>
  v instanceof Uint8Array
    ? `bytes(${v.length})`
    : typeof v === 'string'
      ? JSON.stringify(v.slice(0, 20))
      : typeof v === 'bigint'
        ? `${v}n`
        : String(v);

/** Problems of `db` (get of each row and a scan) against `rows`. */
async function checkTyped(db: MemWalClient, schema: Schema, rows: Record<string, unknown>[], when: string): Promise<string[]> {
  const problems: string[] = [];
  const got = await db.getMany(rows.map((r) => ({ id: r.id })));
  rows.forEach((r, i) => {
    const g = got[i] as Record<string, unknown> | undefined;
    if (!g) {
      problems.push(`${when}: get ${show(r.id)} missing`);
      return;
    }
    for (const f of schema.fields) {
      const want = expected(f, r[f.name]);
      if (!same(g[f.name], want)) problems.push(`${when}: row ${i} ${f.name} ${show(g[f.name])} want ${show(want)}`);
    }
  });
  const t = await db.scan();
  if (t.numRows !== rows.length) problems.push(`${when}: scan ${t.numRows} rows, want ${rows.length}`);
  return problems.slice(0, 20);
}

/**
 * Rows of every type put through the page (as plain rows, so built on the page where the types
 * allow, and as rows crossing as they are where they do not), read back by get and scan: open,
 * flushed, reopened.
 */
async function everyType(name: string, withRowTypes: boolean): Promise<string[]> {
  await destroyMemWal(name).catch(() => undefined);
  const schema = withRowTypes ? everyRowType : everyPageType;
  const o: OpenMemWalOptions = { name, schema, primaryKey: ['id'], maxMemtableBytes: 256 * 1024 };
  let db = await openMemWal(o);
  const rows = Array.from({ length: 60 }, (_, i) => typedRow(i, withRowTypes));
  for (let at = 0; at < rows.length; at += 9) await db.put(rows.slice(at, at + 9));
  const problems = await checkTyped(db, schema, rows, 'open');
  await db.forceSealActive();
  await db.waitForFlushDrain();
  problems.push(...(await checkTyped(db, schema, rows, 'flushed')));
  // Overwrite half of them (strings and binary changed), delete some; a model of what is left.
  const model = new Map(rows.map((r) => [String(r.id), r]));
  const over = rows
    .filter((_, i) => i % 2 === 1)
    .map((r, k): Record<string, unknown> => ({ ...r, s: STRINGS[(k + 3) % STRINGS.length], b: null, ls: null }));
  await db.put(over);
  for (const r of over) model.set(String(r.id), r);
  const dead = rows.filter((_, i) => i % 5 === 0).map((r) => ({ id: r.id }));
  await db.delete(dead as never);
  for (const d of dead) model.delete(String(d.id));
  await db.close();
  db = await openMemWal(o);
  problems.push(...(await checkTyped(db, schema, [...model.values()], 'reopened')));
  const gone = await db.getMany(dead as never);
  if (gone.some((g) => g !== undefined)) problems.push('a deleted row reads back');
  await db.close();
  await destroyMemWal(name);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// CRC-32C with the worker's WebAssembly refused (the spec sets the CSP)

const blobSchema = new Schema([new Field('id', new Int32(), false), new Field('b', new Binary(), true)]);
const SIZES = [0, 1, 127, 128, 65_536 - 400, 65_536 - 1, 65_536, 65_537, 131_072 - 300, 131_072, 131_072 + 1, 200_003, (1 << 20) + 5];

function blob(id: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = (id * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

let open: MemWalClient | undefined;

/**
 * Open store `name` (keyed, small memtables), check every row of `model` (id -> blob size),
 * write rows of every size from id `first` (some flushed into table files, the rest only in the
 * WAL) and abort, so the next open replays them. Returns the problems and the model grown.
 */
async function crcRound(
  name: string,
  model: [number, number][],
  first: number,
): Promise<{ problems: string[]; model: [number, number][] }> {
  const problems: string[] = [];
  const o: OpenMemWalOptions = { name, schema: blobSchema, primaryKey: ['id'], maxMemtableBytes: 512 * 1024 };
  const db = await openMemWal(o);
  open = db;
  const m = new Map(model);
  const check = async (when: string) => {
    const got = await db.getMany([...m.keys()].map((id) => ({ id })));
    [...m].forEach(([id, size], i) => {
      const g = got[i] as { b: Uint8Array } | undefined;
      if (!g || !same(g.b, blob(id, size))) problems.push(`${when}: ${id} ${g ? `bytes(${g.b?.length})` : 'missing'}`);
    });
  };
  await check('reopened');
  let id = first;
  for (const half of [0, 1]) {
    for (const size of SIZES) {
      await db.put([{ id, b: blob(id, size) }]);
      m.set(id++, size);
    }
    if (half === 0) {
      await db.forceSealActive();
      await db.waitForFlushDrain();
    }
  }
  await check('written');
  await db.abort();
  open = undefined;
  return { problems: problems.slice(0, 10), model: [...m] };
}

async function crcFinish(name: string): Promise<void> {
  await open?.abort();
  await destroyMemWal(name).catch(() => undefined);
}

(window as unknown as { columnsTypesCrc: Record<string, unknown> }).columnsTypesCrc = {
  hostile,
  noColumns,
  evolved,
  everyType,
  crcRound,
  crcFinish,
};
