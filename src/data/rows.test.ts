import {
  Binary,
  Bool,
  DateDay,
  Dictionary,
  DurationMicrosecond,
  Field,
  FixedSizeBinary,
  Float32,
  Float64,
  Int16,
  Int32,
  Int64,
  Int8,
  FixedSizeList,
  LargeBinary,
  LargeUtf8,
  List,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimeMillisecond,
  TimestampMicrosecond,
  TimestampMillisecond,
  Uint32,
  Uint64,
  Utf8,
  tableFromIPC,
  tableToIPC,
  vectorFromArray,
} from 'apache-arrow';
import type { Data, Vector } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { TOMBSTONE_COLUMN, makeStoreSchema } from './schema.js';
import { compactIfSparse, concatRows, isTombstoneRow, projectBatch, rowObject, toBatches, tombstoneBatch } from './rows.js';
import { backingBytes, estimateBatchBytes } from './size.js';

const base = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);
const storeSchema = makeStoreSchema(base, ['id']);
const plain = makeStoreSchema(base, []);

function errorOf(fn: () => unknown): MemWalError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(MemWalError);
    return e as MemWalError;
  }
  throw new Error('expected a throw');
}

/** A batch built from vectors, fields declared nullable as apache-arrow's object constructor does. */
function batchOf(columns: Record<string, Vector | Data>): RecordBatch {
  const data: Record<string, Data> = {};
  for (const [k, v] of Object.entries(columns)) data[k] = 'data' in v && Array.isArray(v.data) ? v.data[0]! : (v as Data);
  return new RecordBatch(data);
}

function column(batch: RecordBatch, name: string): unknown[] {
  return [...batch.getChild(name)!];
}

describe('toBatches from record batches', () => {
  it('decodes dictionary-encoded strings to the declared Utf8', () => {
    const names = vectorFromArray(['a', 'bb', null, 'a', 'ccc'], new Dictionary(new Utf8(), new Int32()));
    const b = batchOf({ id: vectorFromArray([1n, 2n, 3n, 4n, 5n], new Int64()), name: names });
    const [out] = toBatches(b, storeSchema);
    expect(out!.schema.fields[2]!.type.typeId).toBe(new Utf8().typeId);
    expect(out!.data.children[2]!.dictionary).toBeUndefined();
    expect(column(out!, 'name')).toEqual(['a', 'bb', null, 'a', 'ccc']);
  });

  it('decodes dictionary strings into a LargeUtf8 column', () => {
    const s = makeStoreSchema(new Schema([new Field('s', new LargeUtf8(), false)]), []);
    const b = batchOf({ s: vectorFromArray(['x', 'yy', 'x'], new Dictionary(new Utf8(), new Int32())) });
    expect(column(toBatches(b, s)[0]!, 's')).toEqual(['x', 'yy', 'x']);
  });

  it('accepts columns in any order and reorders them to the schema', () => {
    const b = batchOf({
      name: vectorFromArray(['x', 'y'], new Utf8()),
      value: vectorFromArray([1.5, 2.5], new Float64()),
      id: vectorFromArray([7n, 8n], new Int64()),
    });
    const [out] = toBatches(b, storeSchema);
    expect(out!.schema).toBe(storeSchema.internal);
    expect(out!.schema.fields.map((f) => f.name)).toEqual(['id', 'value', 'name', TOMBSTONE_COLUMN]);
    expect(rowObject(out!, 1)).toEqual({ id: 8n, value: 2.5, name: 'y' });
    expect(column(out!, TOMBSTONE_COLUMN)).toEqual([false, false]);
  });

  it('fills a missing nullable column with nulls', () => {
    const [out] = toBatches(batchOf({ id: vectorFromArray([1n, 2n, 3n], new Int64()) }), storeSchema);
    expect(column(out!, 'value')).toEqual([null, null, null]);
    expect(column(out!, 'name')).toEqual([null, null, null]);
    // and the batch encodes to IPC and back
    const back = tableFromIPC(tableToIPC(new Table([out!]))) as Table;
    expect(back.getChild('name')!.toArray()).toEqual([null, null, null]);
  });

  it.each<[string, () => RecordBatch, string]>([
    ['a missing non-nullable column', () => batchOf({ name: vectorFromArray(['x'], new Utf8()) }), '"id"'],
    ['an extra column', () => batchOf({ id: vectorFromArray([1n], new Int64()), extra: vectorFromArray([1], new Int32()) }), '"extra"'],
    ['a type mismatch', () => batchOf({ id: vectorFromArray([1], new Int32()) }), '"id" has type Int32, expected Int64'],
    ['a null in a non-nullable column', () => batchOf({ id: vectorFromArray([1n, null], new Int64()) }), '"id" is non-nullable'],
    [
      'the internal _tombstone column',
      () => batchOf({ id: vectorFromArray([1n], new Int64()), _tombstone: vectorFromArray([true], new Bool()) }),
      TOMBSTONE_COLUMN,
    ],
  ])('rejects %s with InvalidArgument naming the column', (_what, make, text) => {
    const e = errorOf(() => toBatches(make(), storeSchema));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain(text);
  });

  it('drops empty batches, and input without rows gives no batches (a no-op put)', () => {
    const empty = batchOf({ id: vectorFromArray([], new Int64()) });
    const one = batchOf({ id: vectorFromArray([1n], new Int64()) });
    expect(toBatches(new Table([empty, one, empty]), storeSchema)).toHaveLength(1);
    expect(toBatches(empty, storeSchema)).toEqual([]);
    expect(toBatches([], storeSchema)).toEqual([]);
  });

  it('copies a sparse slice into compact buffers so backing bytes drop to the estimate', () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => ({ id: i, value: i, name: `n${i}` }));
    const whole = toBatches(rows, plain)[0]!;
    const slice = whole.slice(1000, 1010);
    expect(backingBytes(slice)).toBe(backingBytes(whole));
    const [copied] = toBatches(slice, storeSchema);
    expect(backingBytes(copied!)).toBeLessThan(2 * estimateBatchBytes(copied!));
    expect(backingBytes(copied!)).toBeLessThan(backingBytes(whole) / 1000);
    expect(rowObject(copied!, 3)).toEqual({ id: 1003n, value: 1003, name: 'n1003' });
  });

  it('keeps a batch that uses its buffers as is (no copy)', () => {
    const whole = toBatches([{ id: 1 }, { id: 2 }], storeSchema)[0]!;
    expect(compactIfSparse(whole)).toBe(whole);
  });
});

describe('toBatches from plain rows', () => {
  it('accepts Int64 as a safe-integer number or a bigint, negatives and extremes included', () => {
    const ids = [0, -1, 1, 2 ** 32, -(2 ** 32) - 5, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
    const big = [9223372036854775807n, -9223372036854775808n, 123n];
    const [out] = toBatches([...ids.map((id) => ({ id })), ...big.map((id) => ({ id }))], plain);
    expect(column(out!, 'id')).toEqual([...ids.map((x) => BigInt(x)), ...big]);
  });

  it.each([[2 ** 53], [1.5], [NaN], [Infinity], ['7'], [true]])('rejects Int64 value %s naming the column and row', (bad) => {
    const e = errorOf(() => toBatches([{ id: 1 }, { id: bad }], storeSchema));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('row 1');
    expect(e.message).toContain('"id"');
  });

  it('rejects a bigint outside the Int64 range', () => {
    expect(errorOf(() => toBatches([{ id: 2n ** 63n }], storeSchema)).code).toBe('InvalidArgument');
  });

  it('rejects an unknown field, naming it', () => {
    const e = errorOf(() => toBatches([{ id: 1 }, { id: 2, nmae: 'typo' }], storeSchema));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('"nmae"');
  });

  it('makes a missing nullable field null and rejects a missing non-nullable one', () => {
    const [out] = toBatches(
      [
        { id: 1, name: 'x' },
        { id: 2, value: 3 },
      ],
      storeSchema,
    );
    expect(rowObject(out!, 0)).toEqual({ id: 1n, value: null, name: 'x' });
    expect(rowObject(out!, 1)).toEqual({ id: 2n, value: 3, name: null });
    const e = errorOf(() => toBatches([{ value: 1 }], storeSchema));
    expect(e.message).toContain('"id" is non-nullable');
  });

  it('rejects values of the wrong kind with the expected kind in the message', () => {
    expect(errorOf(() => toBatches([{ id: 1, name: 5 }], storeSchema)).message).toMatch(/"name": expected a string, got number 5/);
    expect(errorOf(() => toBatches([{ id: 1, value: '1' }], storeSchema)).message).toMatch(/"value": expected a number/);
    expect(errorOf(() => toBatches([null as never], storeSchema)).message).toMatch(/row 0 is not an object/);
  });

  it('round-trips rows of many types through toBatches -> rowObject', () => {
    const schema = new Schema([
      new Field('i8', new Int8(), true),
      new Field('i16', new Int16(), true),
      new Field('i32', new Int32(), true),
      new Field('u32', new Uint32(), true),
      new Field('u64', new Uint64(), true),
      new Field('f32', new Float32(), true),
      new Field('b', new Bool(), true),
      new Field('s', new Utf8(), true),
      new Field('ls', new LargeUtf8(), true),
      new Field('bin', new Binary(), true),
      new Field('fsb', new FixedSizeBinary(3), true),
      new Field('day', new DateDay(), true),
      new Field('ts', new TimestampMillisecond(), true),
      new Field('tus', new TimestampMicrosecond(), true),
      new Field('tm', new TimeMillisecond(), true),
      new Field('dur', new DurationMicrosecond(), true),
      new Field('list', new List(new Field('item', new Int32(), true)), true),
      new Field('st', new Struct([new Field('a', new Int32(), true), new Field('b', new Utf8(), true)]), true),
    ]);
    const s = makeStoreSchema(schema, []);
    const rows = [
      {
        i8: -128,
        i16: 32767,
        i32: -5,
        u32: 4294967295,
        u64: 18446744073709551615n,
        f32: 1.5,
        b: true,
        s: 'héllo ✓ 𝄞',
        ls: 'large',
        bin: new Uint8Array([0, 1, 255]),
        fsb: new Uint8Array([9, 8, 7]),
        day: Date.UTC(2024, 1, 29),
        ts: Date.UTC(2024, 0, 1, 12, 30),
        tus: 1_700_000_000_123,
        tm: 45_296_789,
        dur: 1_000_000n,
        list: [1, null, 3],
        st: { a: 1, b: 'x' },
      },
      {
        i8: null,
        i16: null,
        i32: null,
        u32: null,
        u64: null,
        f32: null,
        b: false,
        s: '',
        ls: null,
        bin: new Uint8Array(0),
        fsb: null,
        day: null,
        ts: new Date(0),
        tus: null,
        tm: null,
        dur: null,
        list: [],
        st: null,
      },
      {},
    ];
    const [out] = toBatches(rows, s);
    const expected = rows.map((r) => {
      const o: Record<string, unknown> = {};
      for (const f of schema.fields) o[f.name] = (r as Record<string, unknown>)[f.name] ?? null;
      return o;
    });
    expected[1]!.ts = 0;
    expected[0]!.u64 = 18446744073709551615n;
    for (let i = 0; i < rows.length; i++) expect(rowObject(out!, i)).toEqual(expected[i]);
  });

  it('produces batches that share the internal schema, so rows and batches encode in one IPC stream', () => {
    const a = toBatches([{ id: 1, name: 'a' }], storeSchema)[0]!;
    const b = toBatches(batchOf({ name: vectorFromArray(['b'], new Utf8()), id: vectorFromArray([2n], new Int64()) }), storeSchema)[0]!;
    expect(a.schema).toBe(storeSchema.internal);
    expect(b.schema).toBe(storeSchema.internal);
    const back = tableFromIPC(tableToIPC(new Table([a, b]), 'stream')) as Table;
    expect(back.numRows).toBe(2);
    expect(back.getChild('name')!.toArray()).toEqual(['a', 'b']);
  });

  it('prints the rows/s of toBatches for 100k {id, value, name} rows', () => {
    const n = 100_000;
    const rows = Array.from({ length: n }, (_, i) => ({ id: i, value: i * 0.5, name: `user-${i.toString(36)}-xyz` }));
    toBatches(rows.slice(0, 5000), storeSchema); // warm up
    let best = Infinity;
    for (let rep = 0; rep < 3; rep++) {
      const t0 = performance.now();
      toBatches(rows, storeSchema);
      best = Math.min(best, performance.now() - t0);
    }
    console.log(`toBatches: ${n} rows in ${best.toFixed(1)} ms = ${Math.round((n / best) * 1000).toLocaleString('en')} rows/s`);
    expect(best).toBeGreaterThan(0);
  });
});

describe('tombstoneBatch', () => {
  it('copies the keys, sets _tombstone and nulls the other columns', () => {
    const t = tombstoneBatch([{ id: 5 }, { id: 6n }], storeSchema)!;
    expect(t.schema).toBe(storeSchema.internal);
    expect(column(t, 'id')).toEqual([5n, 6n]);
    expect(column(t, TOMBSTONE_COLUMN)).toEqual([true, true]);
    expect(column(t, 'value')).toEqual([null, null]);
    expect(column(t, 'name')).toEqual([null, null]);
    expect(isTombstoneRow(t, 1)).toBe(true);
    const put = toBatches([{ id: 1, name: 'x' }], storeSchema)[0]!;
    expect(isTombstoneRow(put, 0)).toBe(false);
    // puts and deletes share the internal schema: one IPC stream holds both
    const back = tableFromIPC(tableToIPC(new Table([put, t]), 'stream')) as Table;
    expect(back.getChild(TOMBSTONE_COLUMN)!.toArray()).toEqual([false, true, true]);
  });

  it('gives non-nullable non-key columns their type default', () => {
    const s = makeStoreSchema(
      new Schema([
        new Field('k', new Utf8(), false),
        new Field('n', new Int32(), false),
        new Field('s', new Utf8(), false),
        new Field('b', new Bool(), false),
        new Field('ts', new TimestampMillisecond(), false),
      ]),
      ['k'],
    );
    const t = tombstoneBatch([{ k: 'x' }], s)!;
    expect(rowObject(t, 0)).toEqual({ k: 'x', n: 0, s: '', b: false, ts: 0 });
    const back = tableFromIPC(tableToIPC(new Table([t]))) as Table;
    expect(back.numRows).toBe(1);
  });

  it('accepts keys as a Table and merges its batches into one', () => {
    const keys = new Table([batchOf({ id: vectorFromArray([1n], new Int64()) }), batchOf({ id: vectorFromArray([2n, 3n], new Int64()) })]);
    expect(column(tombstoneBatch(keys, storeSchema)!, 'id')).toEqual([1n, 2n, 3n]);
  });

  it('rejects non-key columns, and deletes on a store without a primary key', () => {
    const e = errorOf(() => tombstoneBatch([{ id: 1, name: 'x' }], storeSchema));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('"name"');
    expect(errorOf(() => tombstoneBatch([{ id: 1 }], plain)).code).toBe('NotSupported');
    expect(tombstoneBatch([], storeSchema)).toBeUndefined();
  });
});

describe('concatRows', () => {
  const a = toBatches(
    [
      { id: 1, value: 1, name: 'one' },
      { id: 2, value: null, name: null },
      { id: 3, value: 3, name: 'three' },
    ],
    storeSchema,
  )[0]!;
  const b = toBatches(
    [
      { id: 4, value: 4, name: 'four' },
      { id: 5, value: 5, name: 'fünf' },
    ],
    storeSchema,
  )[0]!;

  it('selects rows from several batches, in order, into one compact batch', () => {
    const out = concatRows(
      [
        { batch: a, rows: [2, 1] },
        { batch: b, rows: 'all' },
        { batch: a, rows: [] },
      ],
      storeSchema.internal,
    );
    expect(out).toHaveLength(1);
    expect(out[0]!.schema).toBe(storeSchema.internal);
    expect(column(out[0]!, 'id')).toEqual([3n, 2n, 4n, 5n]);
    expect(column(out[0]!, 'value')).toEqual([3, null, 4, 5]);
    expect(column(out[0]!, 'name')).toEqual(['three', null, 'four', 'fünf']);
    expect(column(out[0]!, TOMBSTONE_COLUMN)).toEqual([false, false, false, false]);
    expect(backingBytes(out[0]!)).toBeLessThan(2 * estimateBatchBytes(out[0]!));
  });

  it('passes large whole batches through without copying', () => {
    const big = toBatches(
      Array.from({ length: 2000 }, (_, i) => ({ id: i })),
      storeSchema,
    )[0]!;
    const out = concatRows(
      [
        { batch: a, rows: [0] },
        { batch: big, rows: 'all' },
      ],
      storeSchema.internal,
    );
    expect(out).toHaveLength(2);
    expect(out[1]).toBe(big);
  });

  it('gathers nested, boolean and binary columns', () => {
    const schema = new Schema([
      new Field('l', new List(new Field('item', new Utf8(), true)), true),
      new Field('st', new Struct([new Field('x', new Int32(), true)]), true),
      new Field('b', new Bool(), true),
      new Field('bin', new Binary(), true),
      new Field('lbin', new LargeBinary(), true),
      new Field('fsl', new FixedSizeList(2, new Field('item', new Int16(), true)), true),
      new Field('ts', new TimestampMicrosecond(), true),
    ]);
    const s = makeStoreSchema(schema, []);
    const batch = toBatches(
      Array.from({ length: 20 }, (_, i) => ({
        l: i % 3 === 0 ? null : Array.from({ length: i % 4 }, (_, j) => `${i}.${j}`),
        st: i % 5 === 0 ? null : { x: i },
        b: i % 7 === 0 ? null : i % 2 === 0,
        bin: new Uint8Array([i, i + 1]),
        lbin: i % 4 === 0 ? null : new Uint8Array(i),
        fsl: i % 6 === 0 ? null : [i, -i],
        ts: i * 1000,
      })),
      s,
    )[0]!;
    const pick = [19, 0, 7, 3, 10, 11];
    const [out] = concatRows([{ batch: batch.slice(0, 20), rows: pick }], s.internal);
    for (const [k, r] of pick.entries()) expect(rowObject(out!, k)).toEqual(rowObject(batch, r));
  });
});

describe('projectBatch', () => {
  const batch = toBatches([{ id: 1, value: 2, name: 'x' }], storeSchema)[0]!;

  it('keeps the named columns and drops or keeps _tombstone', () => {
    const p = projectBatch(batch, ['name', 'id'], true);
    expect(p.schema.fields.map((f) => f.name)).toEqual(['name', 'id']);
    expect(rowObject(p, 0)).toEqual({ name: 'x', id: 1n });
    expect(projectBatch(batch, ['id'], false).schema.fields.map((f) => f.name)).toEqual(['id', TOMBSTONE_COLUMN]);
    expect(projectBatch(batch, undefined, true).schema.fields.map((f) => f.name)).toEqual(['id', 'value', 'name']);
    expect(projectBatch(batch, undefined, false)).toBe(batch);
  });

  it('shares one projected schema object between batches of one schema', () => {
    const other = toBatches([{ id: 2 }], storeSchema)[0]!;
    expect(projectBatch(batch, ['id'], true).schema).toBe(projectBatch(other, ['id'], true).schema);
  });

  it('rejects an unknown or repeated column', () => {
    expect(errorOf(() => projectBatch(batch, ['nope'], true)).message).toContain('"nope"');
    expect(errorOf(() => projectBatch(batch, ['id', 'id'], true)).code).toBe('InvalidArgument');
    expect(errorOf(() => projectBatch(batch, [TOMBSTONE_COLUMN], true)).code).toBe('InvalidArgument');
  });
});
