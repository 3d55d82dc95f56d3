// toBase64 writes what `btoa` of the bytes as a binary string gives, for every length and byte.

import { describe, expect, it } from 'vitest';
import { fromBase64, toBase64 } from './bytes.js';

/** The reference: the bytes as a binary string, through `btoa` (what toBase64 did before). */
function reference(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000) as unknown as number[]);
  return btoa(bin);
}

describe('toBase64', () => {
  it('is btoa of the bytes, for lengths 0..300 and large ones, every byte value', () => {
    let s = 11;
    const rnd = (): number => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s >>> 24;
    };
    for (const n of [...Array.from({ length: 301 }, (_, i) => i), 65_535, 65_536, 65_537, 1_000_001]) {
      const bytes = Uint8Array.from({ length: n }, rnd);
      const got = toBase64(bytes);
      expect(got).toBe(reference(bytes));
      expect(fromBase64(got)).toEqual(bytes);
    }
    const all = Uint8Array.from({ length: 256 * 3 }, (_, i) => (i * 85 + (i >> 8)) & 255);
    expect(toBase64(all)).toBe(reference(all));
    expect(toBase64(all.subarray(5, 100))).toBe(reference(all.subarray(5, 100)));
  });
});
