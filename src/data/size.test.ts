import { Bool, Field, Float64, Int32, Int64, List, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { makeStoreSchema } from './schema.js';
import { toBatches } from './rows.js';
import { backingBytes, estimateBatchBytes } from './size.js';

const storeSchema = makeStoreSchema(
  new Schema([new Field('id', new Int64(), false), new Field('value', new Float64(), true), new Field('name', new Utf8(), true)]),
  ['id'],
);

function bigBatch(n: number): RecordBatch {
  return toBatches(
    Array.from({ length: n }, (_, i) => ({ id: i, value: i / 2, name: `name-${i % 1000}` })),
    storeSchema,
  )[0]!;
}

describe('estimateBatchBytes', () => {
  it('counts a 10-row slice of a 100k-row batch at about 1/10,000 of the whole', () => {
    const whole = bigBatch(100_000);
    const slice = whole.slice(50_000, 50_010);
    const ratio = estimateBatchBytes(slice) / estimateBatchBytes(whole);
    expect(ratio).toBeGreaterThan(0.5e-4);
    expect(ratio).toBeLessThan(2e-4);
    // ...while the slice keeps every backing buffer of the whole alive.
    expect(backingBytes(slice)).toBe(backingBytes(whole));
  });

  it('counts exactly the bytes the views cover for fixed width, strings, bools and validity', () => {
    const whole = bigBatch(1000);
    // id 8 + value 8 + name offsets 4 per row (+4) + name bytes + tombstone bits
    const slice = whole.slice(10, 20); // names "name-10".."name-19": 7 bytes each
    expect(estimateBatchBytes(slice)).toBe(10 * 8 + 10 * 8 + (11 * 4 + 70) + 2);
  });

  it('adds validity bits only when a column has nulls', () => {
    const s = new Schema([new Field('x', new Int32(), true)]);
    const noNulls = new RecordBatch(
      s,
      makeData({
        type: new Struct(s.fields),
        length: 16,
        nullCount: 0,
        children: [makeData({ type: new Int32(), data: new Int32Array(16) })],
      }),
    );
    const withNulls = new RecordBatch({
      x: vectorFromArray([1, null, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], new Int32()).data[0]!,
    });
    expect(estimateBatchBytes(noNulls)).toBe(64);
    expect(estimateBatchBytes(withNulls)).toBe(64 + 2);
  });

  it('follows list offsets into the child values of a slice', () => {
    const lists = vectorFromArray(
      Array.from({ length: 100 }, (_, i) => [i, i + 1, i + 2]),
      new List(new Field('item', new Int32(), true)),
    );
    const batch = new RecordBatch({ l: lists.data[0]! });
    const slice = batch.slice(0, 10);
    // 11 offsets * 4 + 30 values * 4 (+ validity when the builder left one)
    expect(estimateBatchBytes(slice)).toBeGreaterThanOrEqual(44 + 120);
    expect(estimateBatchBytes(slice)).toBeLessThan(44 + 120 + 8);
    expect(estimateBatchBytes(slice)).toBeLessThan(estimateBatchBytes(batch) / 5);
  });

  it('counts bit-packed bools as ceil(length / 8)', () => {
    const b = new RecordBatch({
      b: vectorFromArray(
        Array.from({ length: 20 }, (_, i) => i % 2 === 0),
        new Bool(),
      ).data[0]!,
    });
    expect(estimateBatchBytes(b)).toBe(3);
  });
});
