import { Int64, LargeUtf8, Uint64, Utf8, Vector, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { gather } from './select.js';

/** The values of `data` as plain JS values, through apache-arrow's own getters. */
const valuesOf = (data: ReturnType<typeof gather>): unknown[] => [...new Vector([data])];

describe('gather by row index', () => {
  const rowsOf = <T>(values: T[], idx: number[]) => idx.map((r) => (r < 0 ? null : values[r]));
  // Out of order, repeated, across sources, with a slice's offset, and -1 (a null row).
  const idx = Int32Array.from([5, 0, 3, 3, 1, -1, 4, 2]);

  it('64-bit integers (signed and unsigned, extremes) copy exactly, from sliced sources too', () => {
    const signed = [0n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 123456789012345n, -987654321n];
    const unsigned = [0n, 2n ** 64n - 1n, 2n ** 32n, 1n, 2n ** 63n, 42n];
    for (const [type, values] of [
      [new Int64(), signed],
      [new Uint64(), unsigned],
    ] as const) {
      const padded = vectorFromArray([7n, 8n, ...values], type).data[0]!.slice(2, values.length);
      for (const data of [vectorFromArray(values, type).data[0]!, padded]) {
        const out = gather(type, [{ data, idx: idx.filter((r) => r >= 0), start: 0, count: 7 }]);
        expect(valuesOf(out)).toEqual(
          rowsOf(
            values,
            [...idx].filter((r) => r >= 0),
          ),
        );
      }
    }
  });

  it('strings short and long (past the byte-loop threshold), empty, multi-byte, from two sources', () => {
    const a = ['', 'a', 'ü€😀', 'x'.repeat(64), 'y'.repeat(65), 'z'.repeat(300)];
    const b = ['b0', 'é'.repeat(40), '', 'q'.repeat(1000), 'short', 'k'];
    for (const type of [new Utf8(), new LargeUtf8()]) {
      const da = vectorFromArray(a, type).data[0]!;
      const db = vectorFromArray(b, type).data[0]!.slice(1, 5);
      const ia = Int32Array.from([5, 0, 3, 4, 2, 1]);
      const ib = Int32Array.from([2, 0, 3, 1]);
      const out = gather(type, [
        { data: da, idx: ia, start: 0, count: ia.length },
        { data: db, idx: ib, start: 0, count: ib.length },
      ]);
      expect(valuesOf(out)).toEqual([...rowsOf(a, [...ia]), ...rowsOf(b.slice(1, 5), [...ib])]);
    }
  });
});
