// Plain rows built in the page (client-rows.ts): the worker receives the very columns it would
// have built from the rows, and whatever the page does not build crosses as the rows themselves.

import {
  Binary,
  Bool,
  Field,
  Float32,
  Float64,
  Int8,
  Int32,
  Int64,
  LargeUtf8,
  Schema,
  TimestampMillisecond,
  Type,
  Uint8,
  Uint64,
  Utf8,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { makeStoreSchema } from '../data/schema.js';
import { toBatches } from '../data/rows.js';
import { TYPE_ID } from '../data/row-columns.js';
import { decodeData } from './arrow-wire.js';
import { decodeColumns } from './columns-wire.js';
import type { WireColumns } from './protocol.js';
import { schemaToWire, transfersOf } from './client-wire.js';
import { rowPlan, rowsToWire } from './client-rows.js';

const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('u', new Uint64(), true),
  new Field('small', new Int8(), true),
  new Field('byte', new Uint8(), true),
  new Field('n', new Int32(), true),
  new Field('f', new Float32(), true),
  new Field('d', new Float64(), false),
  new Field('ok', new Bool(), true),
  new Field('name', new Utf8(), true),
  new Field('long', new LargeUtf8(), true),
  new Field('bytes', new Binary(), true),
]);
const store = makeStoreSchema(schema, ['id']);
const plan = rowPlan(schemaToWire(schema))!;

function rows(n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => ({
    id: i % 3 === 0 ? BigInt(i) - 2n ** 40n : i,
    ...(i % 4 === 1 ? {} : { u: i % 2 ? 2n ** 63n + BigInt(i) : i }),
    small: i % 5 === 2 ? null : (i % 256) - 128,
    byte: i % 7 === 3 ? undefined : i % 256,
    n: i % 2 ? -i * 1000 : 10n ** 9n,
    f: i / 3,
    d: i % 11 === 0 ? Number.NaN : i * 1.5e300,
    ok: i % 6 === 0 ? null : i % 3 === 1,
    name: i % 9 === 4 ? null : i % 2 ? `row-${i}` : `é€😀-${i}`,
    long: `x`.repeat(i % 40),
    bytes: i % 8 === 0 ? null : Uint8Array.from({ length: i % 5 }, (_, k) => k + i),
  }));
}

/** Every buffer of every column of `batch`, with its type, length and null count. */
function columns(data: Parameters<typeof toBatches>[0]): unknown[] {
  const [batch] = toBatches(data, store);
  return batch!.data.children.map((c) => ({
    type: String(c.type),
    typeId: c.type.typeId,
    length: c.length,
    nullCount: c.nullCount,
    valueOffsets: c.valueOffsets && [...c.valueOffsets],
    values: [...new Uint8Array(c.values.buffer, c.values.byteOffset, c.values.byteLength)],
    nullBitmap: c.nullCount > 0 ? [...c.nullBitmap!] : [],
  }));
}

describe('rowsToWire', () => {
  it('TYPE_ID holds apache-arrow Type ids', () => {
    expect(TYPE_ID).toEqual({
      Int: Type.Int,
      Float: Type.Float,
      Binary: Type.Binary,
      Utf8: Type.Utf8,
      Bool: Type.Bool,
      LargeBinary: Type.LargeBinary,
      LargeUtf8: Type.LargeUtf8,
    });
  });

  it('the worker gets byte for byte the columns it builds from the rows (types, nulls, offsets, bigint Int64)', () => {
    const input = rows(1000);
    const wire = rowsToWire(input, plan);
    expect(wire).toBeDefined();
    const decoded = decodeColumns(wire!, schema);
    expect(columns(decoded)).toEqual(columns(input));
    const [batch] = toBatches(decoded, store);
    expect(batch!.getChild('id')!.get(0)).toBe(-(2n ** 40n));
    expect(batch!.getChild('name')!.type.typeId).toBe(Type.Utf8); // plain strings, not a dictionary
  });

  it("each buffer is the wire's own, so all of them transfer (nothing of the caller's or shared)", () => {
    const wire = rowsToWire(rows(100), plan)!;
    const views = wire.buffers.filter((b) => b !== undefined && b.byteLength > 0);
    expect(new Set(transfersOf(wire))).toEqual(new Set(views.map((b) => b!.buffer)));
  });

  it('rows it does not build cross as they are: bad values, unknown keys, non-plain objects, none', () => {
    const good = (): Record<string, unknown> => ({ id: 1, d: 0.5 });
    expect(rowsToWire([good()], plan)).toBeDefined();
    expect(rowsToWire([], plan)).toBeUndefined();
    for (const bad of [
      { id: '1', d: 0.5 }, // a string where Int64 wants a number or bigint
      { id: 2 ** 53, d: 0.5 }, // not a safe integer
      { id: 1 }, // non-nullable d missing
      { id: 1, d: 0.5, small: 128 }, // out of Int8's range
      { id: 1, d: 0.5, byte: -1 },
      { id: 1, d: 0.5, ok: 1 },
      { id: 1, d: 0.5, name: 5 },
      { id: 1, d: 0.5, bytes: 'x' },
      { id: 1, d: 0.5, nope: 1 }, // a column the store does not have
    ]) {
      expect(
        rowsToWire([good(), bad], plan),
        JSON.stringify(bad, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
      ).toBeUndefined();
    }
    class Row {
      id = 1;
      d = 0.5;
    }
    expect(rowsToWire([new Row()], plan)).toBeUndefined();
    expect(rowsToWire([[1, 0.5]], plan)).toBeUndefined();
    expect(rowsToWire([null], plan)).toBeUndefined();
    const throwing = Object.defineProperty({ d: 0.5 }, 'id', {
      enumerable: true,
      get: () => {
        throw new Error('getter');
      },
    });
    expect(rowsToWire([throwing], plan)).toBeUndefined();
    expect(rowsToWire([Object.assign(Object.create(null) as object, good())], plan)).toBeDefined();
  });

  it('no plan for a schema with a column type it does not build (the rows cross as they are)', () => {
    expect(rowPlan(schemaToWire(new Schema([new Field('t', new TimestampMillisecond(), false)])))).toBeUndefined();
  });
});

describe('decodeColumns (the worker reading a put the page built)', () => {
  /** A wire of the bench's three columns (id Int64, value Float64 nullable, name Utf8) with `n` rows. */
  const small = new Schema([new Field('id', new Int64(), false), new Field('v', new Float64(), true), new Field('s', new Utf8(), true)]);
  const smallPlan = rowPlan(schemaToWire(small))!;
  const wire = () =>
    rowsToWire(
      [
        { id: 1, v: null, s: 'ab' },
        { id: 2, v: 0.5, s: null },
        { id: 3, v: 1.5, s: 'cde' },
      ],
      smallPlan,
    )!;

  it('takes the columns by name, in any order, as views of the buffers sent', () => {
    const w = wire();
    const swapped = {
      ...w,
      names: [w.names[2]!, w.names[1]!, w.names[0]!],
      buffers: [...w.buffers.slice(6), ...w.buffers.slice(3, 6), ...w.buffers.slice(0, 3)],
    };
    swapped.nullCounts = [w.nullCounts[2]!, w.nullCounts[1]!, w.nullCounts[0]!];
    const batch = decodeColumns(swapped, small);
    expect(batch.schema.fields.map((f) => f.name)).toEqual(['s', 'v', 'id']);
    expect(batch.getChild('s')!.data[0]!.values).toBe(w.buffers[7]);
    const [conformed] = toBatches(batch, makeStoreSchema(small, ['id']));
    expect(conformed!.toArray().map((r) => r.toJSON())).toEqual([
      { id: 1n, v: null, s: 'ab', _tombstone: false },
      { id: 2n, v: 0.5, s: null, _tombstone: false },
      { id: 3n, v: 1.5, s: 'cde', _tombstone: false },
    ]);
  });

  it('refuses InvalidArgument, before anything is read, what the builders would not send', () => {
    const cases: [string, (w: WireColumns) => void][] = [
      ['no rows', (w) => (w.length = 0)],
      ['more rows than buffers hold', (w) => (w.length = 4)],
      ['an unknown column', (w) => (w.names = ['id', 'v', 'nope'])],
      ['a column missing its buffers', (w) => (w.buffers = w.buffers.slice(0, 6))],
      ['a null count the bitmap does not hold', (w) => (w.nullCounts[1] = 2)],
      ['a bitmap with a null count of 0', (w) => (w.nullCounts[1] = 0)],
      ['nulls without a bitmap', (w) => (w.buffers[5] = undefined)],
      ['a null count past the rows', (w) => (w.nullCounts[2] = 4)],
      ['values of another array type', (w) => (w.buffers[1] = new Float64Array(3))],
      ['offsets past the value bytes', (w) => ((w.buffers[6] as Int32Array)[3] = 99)],
      ['offsets that decrease', (w) => ((w.buffers[6] as Int32Array)[1] = 4)],
      ['offsets that do not start at 0', (w) => ((w.buffers[6] as Int32Array)[0] = 1)],
      ['offsets of another array type', (w) => (w.buffers[6] = new BigInt64Array(4))],
      ['offsets on a fixed-width column', (w) => (w.buffers[0] = new Int32Array(4))],
      // A length no buffer backs: the engine would fill every row of every column with nulls.
      ['no column named', (w) => ((w.names = []), (w.nullCounts = []), (w.buffers = []), (w.length = 2 ** 31 - 1))],
      [
        'a nullable column left out',
        (w) => ((w.names = w.names.slice(0, 2)), (w.nullCounts = w.nullCounts.slice(0, 2)), (w.buffers = w.buffers.slice(0, 6))),
      ],
      [
        'a column named twice',
        (w) => ((w.names = ['id', 'v', 'v']), (w.buffers = [...w.buffers.slice(0, 6), ...w.buffers.slice(3, 6)]), (w.nullCounts[2] = 1)),
      ],
      ['a name that is a bigint', (w) => (w.names[2] = 5n as never)],
      ['a name that is an object holding itself', (w) => (w.names[2] = ((o: Record<string, unknown>) => ((o.self = o), o))({}) as never)],
    ];
    for (const [what, spoil] of cases) {
      const w = wire();
      spoil(w);
      expect(() => decodeColumns(w, small), what).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    }
    expect(
      () => decodeColumns(wire(), new Schema([new Field('id', new TimestampMillisecond(), false)])),
      'a type not built on the page',
    ).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    expect(() => decodeData(wire()), 'columns for anything but a put').toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
  });
});
