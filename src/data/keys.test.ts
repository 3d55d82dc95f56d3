import {
  Binary,
  Bool,
  DateDay,
  DateMillisecond,
  DurationNanosecond,
  Field,
  FixedSizeBinary,
  Int16,
  Int32,
  Int64,
  Int8,
  LargeUtf8,
  Schema,
  Table,
  tableFromIPC,
  tableToIPC,
  TimeMicrosecond,
  TimeSecond,
  TimestampNanosecond,
  Type,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
} from 'apache-arrow';
import type { DataType } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { MemoryStorage } from '../storage/memory.js';
import { encodeKey, keyFromHex, keyString, keyToHex, makeKeyEncoder } from './keys.js';
import { toBatches, tombstoneBatch } from './rows.js';
import { MemWal } from '../engine/memwal.js';
import { makeStoreSchema } from './schema.js';

/** Deterministic PRNG (mulberry32) so failures reproduce. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function keyed(fields: [string, DataType][], pk: string[]) {
  return makeStoreSchema(new Schema(fields.map(([n, t]) => new Field(n, t, false))), pk);
}

function cmp<T>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function utf8Cmp(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Sorting by encoded key gives the same order as sorting by `natural`. */
function expectOrderPreserved<R extends Record<string, unknown>>(
  rows: R[],
  storeSchema: ReturnType<typeof keyed>,
  natural: (a: R, b: R) => number,
): void {
  const keys = Array.from(makeKeyEncoder(storeSchema)(toBatches(rows, storeSchema)[0]!), (k) => keyString(k, storeSchema));
  const idx = rows.map((_, i) => i);
  const byKey = [...idx].sort((a, b) => cmp(keys[a]!, keys[b]!));
  const byValue = [...idx].sort((a, b) => natural(rows[a]!, rows[b]!));
  expect(byKey.map((i) => rows[i])).toEqual(byValue.map((i) => rows[i]));
  // biome-ignore lint/suspicious/noControlCharactersInRegex: keys are byte strings; the range is the point
  for (const k of keys) expect(/^[\x00-\xff]*$/.test(k)).toBe(true);
}

describe('key encoding preserves order', () => {
  it('for random Int64 values, negatives and extremes included', () => {
    const r = rng(1);
    const ids = [
      -9223372036854775808n,
      9223372036854775807n,
      0n,
      -1n,
      1n,
      -(2n ** 32n),
      2n ** 32n,
      2n ** 31n - 1n,
      -(2n ** 31n),
      ...Array.from({ length: 500 }, () => BigInt(Math.floor((r() - 0.5) * 2 ** 53)) * BigInt(Math.floor(r() * 1024))),
      ...Array.from({ length: 200 }, () => BigInt(Math.floor((r() - 0.5) * 2000))),
    ];
    const storeSchema = keyed([['id', new Int64()]], ['id']);
    expectOrderPreserved(
      ids.map((id) => ({ id })),
      storeSchema,
      (a, b) => cmp(a.id, b.id),
    );
  });

  it.each<[string, DataType, number, number]>([
    ['Int8', new Int8(), -128, 127],
    ['Int16', new Int16(), -32768, 32767],
    ['Int32', new Int32(), -(2 ** 31), 2 ** 31 - 1],
    ['Uint32', new Uint32(), 0, 2 ** 32 - 1],
    ['Date<Day>', new DateDay(), -1e5 * 86400000, 1e5 * 86400000],
    ['Time32<Second>', new TimeSecond(), -86400, 86400],
  ])('for random %s values with the extremes', (_name, type, min, max) => {
    const r = rng(2);
    const vals = [min, max, 0, ...Array.from({ length: 300 }, () => min + Math.floor(r() * (max - min)))];
    if (type instanceof DateDay) for (let i = 0; i < vals.length; i++) vals[i] = Math.floor(vals[i]! / 86400000) * 86400000;
    const storeSchema = keyed([['k', type]], ['k']);
    expectOrderPreserved(
      vals.map((k) => ({ k })),
      storeSchema,
      (a, b) => cmp(a.k, b.k),
    );
  });

  it('for Uint64 values above 2^63', () => {
    const vals = [0n, 1n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n, 12345678901234567890n];
    const storeSchema = keyed([['k', new Uint64()]], ['k']);
    expectOrderPreserved(
      vals.map((k) => ({ k })),
      storeSchema,
      (a, b) => cmp(a.k, b.k),
    );
  });

  it('for strings, prefixes and embedded NULs included', () => {
    const r = rng(3);
    const alphabet = ['\0', '\x01', 'a', 'b', 'z', 'é', '\uffff', '𝄞', '\x7f', '\xff'];
    const strs = ['', 'a', 'a\0', 'a\0\0', 'a\0b', 'ab', 'a\x01', 'b', '\0', '\0\0', '\0a'];
    for (let i = 0; i < 400; i++) {
      let s = '';
      const len = Math.floor(r() * 6);
      for (let j = 0; j < len; j++) s += alphabet[Math.floor(r() * alphabet.length)];
      strs.push(s);
    }
    for (const type of [new Utf8(), new LargeUtf8()]) {
      const storeSchema = keyed([['s', type]], ['s']);
      expectOrderPreserved(
        strs.map((s) => ({ s })),
        storeSchema,
        (a, b) => utf8Cmp(a.s, b.s),
      );
    }
    const storeSchema = keyed([['s', new Utf8()]], ['s']);
    const [a, a0, ab] = ['a', 'a\0', 'ab'].map((s) => encodeKey({ s }, storeSchema));
    expect(a! < a0! && a0! < ab!).toBe(true);
  });

  it('for composite (string, Int64, bool) keys', () => {
    const r = rng(4);
    const rows = Array.from({ length: 600 }, () => ({
      s: ['', 'a', 'a\0', 'ab', 'b'][Math.floor(r() * 5)]!,
      n: BigInt(Math.floor((r() - 0.5) * 20)),
      f: r() < 0.5,
    }));
    const storeSchema = keyed(
      [
        ['s', new Utf8()],
        ['n', new Int64()],
        ['f', new Bool()],
      ],
      ['s', 'n', 'f'],
    );
    expectOrderPreserved(rows, storeSchema, (a, b) => utf8Cmp(a.s, b.s) || cmp(a.n, b.n) || cmp(Number(a.f), Number(b.f)));
  });

  it('for binary values with zero bytes', () => {
    const vals = [[], [0], [0, 0], [0, 255], [0, 1], [1], [255], [255, 0], [1, 0, 0]].map((b) => new Uint8Array(b));
    const storeSchema = keyed([['b', new Binary()]], ['b']);
    expectOrderPreserved(
      vals.map((b) => ({ b })),
      storeSchema,
      (x, y) => Buffer.compare(x.b, y.b),
    );
  });
});

describe('encodeKey', () => {
  const storeSchema = keyed(
    [
      ['i8', new Int8()],
      ['u32', new Uint32()],
      ['i64', new Int64()],
      ['u64', new Uint64()],
      ['b', new Bool()],
      ['s', new Utf8()],
      ['ls', new LargeUtf8()],
      ['bin', new Binary()],
      ['fsb', new FixedSizeBinary(2)],
      ['day', new DateDay()],
      ['dms', new DateMillisecond()],
      ['ts', new TimestampNanosecond()],
      ['t32', new TimeSecond()],
      ['t64', new TimeMicrosecond()],
      ['dur', new DurationNanosecond()],
      ['v', new Int32()],
    ],
    ['i8', 'u32', 'i64', 'u64', 'b', 's', 'ls', 'bin', 'fsb', 'day', 'dms', 'ts', 't32', 't64', 'dur'],
  );

  it('equals the key the batch encoder gives for the same row object', () => {
    const r = rng(5);
    const rows = Array.from({ length: 50 }, (_, i) => ({
      i8: Math.floor(r() * 256) - 128,
      u32: Math.floor(r() * 2 ** 32),
      i64: i % 2 ? BigInt(Math.floor((r() - 0.5) * 2 ** 53)) : Math.floor((r() - 0.5) * 2 ** 40),
      u64: BigInt(Math.floor(r() * 2 ** 53)) * 1000n,
      b: r() < 0.5,
      s: `s${i}\0é`,
      ls: 'x'.repeat(i),
      bin: new Uint8Array([i, 0, 255]),
      fsb: new Uint8Array([i, 0]),
      day: new Date(Date.UTC(2000, 0, 1 + i)),
      dms: Date.UTC(2000, 0, 1 + i),
      ts: i % 2 ? new Date(1_700_000_000_000 + i) : 1_700_000_000_000n * 1_000_000n + BigInt(i),
      t32: i * 60,
      t64: BigInt(i) * 1_000_000n,
      dur: -BigInt(i),
      v: i,
    }));
    const keys = makeKeyEncoder(storeSchema)(toBatches(rows, storeSchema)[0]!);
    rows.forEach((row, i) => {
      const { v: _v, ...key } = row;
      expect(encodeKey(key, storeSchema)).toBe(keys[i]);
    });
    // and a tombstone batch of the same keys encodes the same
    const t = tombstoneBatch(
      rows.map(({ v: _v, ...key }) => key),
      storeSchema,
    )!;
    expect(makeKeyEncoder(storeSchema)(t)).toEqual(keys);
  });

  it('matches the Int64 fast path for numbers and bigints', () => {
    const one = keyed([['id', new Int64()]], ['id']);
    const keys = makeKeyEncoder(one)(toBatches([{ id: -5 }, { id: 2n ** 40n }], one)[0]!);
    expect(encodeKey({ id: -5n }, one)).toBe(keys[0]);
    expect(encodeKey({ id: 2 ** 40 }, one)).toBe(keys[1]);
    expect(keyToHex(keyString(keys[0]!, one))).toBe('7ffffffffffffffb');
  });

  it('single integer keys are numbers when safe and encoded strings beyond 2^53, consistently', () => {
    const one = keyed([['id', new Int64()]], ['id']);
    const big = 2n ** 60n;
    const keys = makeKeyEncoder(one)(toBatches([{ id: 7 }, { id: big }, { id: -big }, { id: -(2 ** 53) + 1 }], one)[0]!);
    expect(typeof keys[0]).toBe('number');
    expect(typeof keys[1]).toBe('string');
    expect(typeof keys[2]).toBe('string');
    expect(keys[3]).toBe(-(2 ** 53) + 1);
    expect(encodeKey({ id: big }, one)).toBe(keys[1]);
    expect(encodeKey({ id: 7n }, one)).toBe(7);
    // keyString orders both forms together
    const order = [keys[2]!, keys[3]!, keys[0]!, keys[1]!].map((k) => keyString(k, one));
    expect([...order].sort()).toEqual(order);
    const u32 = keyed([['u', new Uint32()]], ['u']);
    expect(Array.from(makeKeyEncoder(u32)(toBatches([{ u: 4294967295 }], u32)[0]!))).toEqual([4294967295]);
  });

  it('writes the documented bytes for a composite (Utf8, Int32) key', () => {
    const s = keyed(
      [
        ['s', new Utf8()],
        ['n', new Int32()],
      ],
      ['s', 'n'],
    );
    expect(keyToHex(keyString(encodeKey({ s: 'a\0', n: -1 }, s), s))).toBe('6100ff0001' + '7fffffff');
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a missing key column', { id: 1 }, '"name" is missing'],
    ['a value of the wrong type', { id: '1', name: 'x' }, '"id": expected a bigint or a safe-integer number'],
    ['an unsafe number', { id: 2 ** 60, name: 'x' }, '"id"'],
    ['a non-key field', { id: 1, name: 'x', other: 2 }, '"other" is not a primary key column'],
  ])('rejects %s with InvalidArgument', (_what, key, text) => {
    const s = keyed(
      [
        ['id', new Int64()],
        ['name', new Utf8()],
        ['other', new Int32()],
      ],
      ['id', 'name'],
    );
    let err: unknown;
    try {
      encodeKey(key, s);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MemWalError);
    expect((err as MemWalError).code).toBe('InvalidArgument');
    expect((err as MemWalError).message).toContain(text);
  });

  it('rejects keys on a store without a primary key with NotSupported', () => {
    const s = makeStoreSchema(new Schema([new Field('id', new Int64(), false)]), []);
    expect(() => encodeKey({ id: 1 }, s)).toThrow(expect.objectContaining({ code: 'NotSupported' }));
  });
});

describe('keyToHex / keyFromHex', () => {
  it('round-trip every byte value', () => {
    const key = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
    const hex = keyToHex(key);
    expect(hex).toHaveLength(512);
    expect(keyFromHex(hex)).toBe(key);
    expect(keyFromHex(hex.toUpperCase())).toBe(key);
  });

  it('rejects odd lengths and non-hex digits', () => {
    expect(() => keyFromHex('abc')).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    expect(() => keyFromHex('zz')).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
  });
});

describe('keys of decoded batches', () => {
  it('a batch decoded from Arrow IPC (buffers padded to 8 bytes) has exactly one key per row', () => {
    for (const type of [new Int8(), new Int16(), new Int32(), new Uint16(), new DateDay()]) {
      const storeSchema = keyed([['k', type]], ['k']);
      const rows = Array.from({ length: 5 }, (_, i) => ({ k: type instanceof DateDay ? new Date(i * 86_400_000) : i }));
      const decoded = (tableFromIPC(tableToIPC(new Table(storeSchema.internal, toBatches(rows, storeSchema)), 'stream')) as Table)
        .batches[0]!;
      expect((decoded.data.children[0]!.values as { length: number }).length).toBeGreaterThan(5); // the padding is there
      expect(makeKeyEncoder(storeSchema)(decoded)).toHaveLength(5);
    }
  });
});

/** Row `r` of column `name` as a key value: timestamps as their stored bigint (a scan reads them as milliseconds). */
function cell(t: Table, name: string, r: number): unknown {
  const col = t.getChild(name)!;
  if (col.type.typeId !== Type.Timestamp) return col.get(r);
  for (const d of col.data) {
    if (r < d.length) return (d.values as BigInt64Array)[d.offset + r];
    r -= d.length;
  }
  throw new Error('row out of range');
}

describe('edge key values through the public API', () => {
  const two53 = 2n ** 53n;
  const cases: { what: string; fields: Field[]; pk: string[]; keys: Record<string, unknown>[] }[] = [
    {
      what: 'Int64',
      fields: [new Field('k', new Int64(), false)],
      pk: ['k'],
      keys: [
        -(2n ** 63n),
        2n ** 63n - 1n,
        -two53 - 1n,
        -two53,
        -two53 + 1n,
        two53 - 1n,
        two53,
        two53 + 1n,
        -(2n ** 32n),
        2 ** 32,
        -1,
        -0,
        1,
      ].map((k) => ({ k })),
    },
    {
      what: 'Uint64',
      fields: [new Field('k', new Uint64(), false)],
      pk: ['k'],
      keys: [0n, 1n, 2n ** 32n, two53 - 1n, two53, two53 + 1n, 2n ** 63n, 2n ** 64n - 1n].map((k) => ({ k })),
    },
    {
      what: 'Int32',
      fields: [new Field('k', new Int32(), false)],
      pk: ['k'],
      keys: [-(2 ** 31), 2 ** 31 - 1, -1, -0, 1].map((k) => ({ k })),
    },
    {
      what: 'Date<Day>',
      fields: [new Field('k', new DateDay(), false)],
      pk: ['k'],
      keys: [-8.64e15, 8.64e15, -86400000, -0, 86400000].map((k) => ({ k: new Date(k) })),
    },
    {
      what: 'Date<Millisecond>',
      fields: [new Field('k', new DateMillisecond(), false)],
      pk: ['k'],
      keys: [-(2 ** 53) + 1, 2 ** 53 - 1, -8.64e15, 8.64e15, -1, -0, 1].map((k) => ({ k })),
    },
    {
      what: 'Timestamp<Nanosecond>',
      fields: [new Field('k', new TimestampNanosecond(), false)],
      pk: ['k'],
      keys: [-(2n ** 63n), 2n ** 63n - 1n, -two53, two53, -two53 + 1n, two53 - 1n, -1n, 0n].map((k) => ({ k })),
    },
    {
      what: 'composite (Int64, Utf8)',
      fields: [new Field('k', new Int64(), false), new Field('s', new Utf8(), false)],
      pk: ['k', 's'],
      keys: [-(2n ** 63n), -two53, two53, 2n ** 63n - 1n, -0].flatMap((k) => ['', 'é', 'a\0b'].map((s) => ({ k, s }))),
    },
  ];

  for (const c of cases) {
    it(`get finds every row scan shows for edge ${c.what} keys, in the memtable and in table files`, async () => {
      const schema = new Schema([...c.fields, new Field('v', new Int32(), false)]);
      const w = await MemWal.open({ name: `edge-${c.what.replace(/\W/g, '')}`, schema, primaryKey: c.pk, storage: new MemoryStorage() });
      await w.put(c.keys.map((k, v) => ({ ...k, v })));
      const check = async (where: string) => {
        for (const [v, k] of c.keys.entries()) expect({ where, key: k, row: (await w.get(k))?.v }).toEqual({ where, key: k, row: v });
        const t = await w.scan();
        expect(t.numRows).toBe(c.keys.length);
        for (let r = 0; r < t.numRows; r++) {
          const key = Object.fromEntries(c.pk.map((name) => [name, cell(t, name, r)]));
          expect({ where, key, found: (await w.get(key)) !== undefined }).toEqual({ where, key, found: true });
        }
      };
      await check('memtable');
      await w.forceSealActive();
      await w.waitForFlushDrain();
      await check('table file');
      await w.close();
    });
  }
});
