// Plain rows into a vector column (`vector(dim)`, a FixedSizeList<Float32>): an array or a
// Float32Array of exactly `dim` numbers; any other length is InvalidArgument naming the row and the
// column (apache-arrow's builder would take it and shift the items of every later row).

import { describe, expect, it } from 'vitest';
import { MemWalError } from '../util/errors.js';
import { defineSchema, int32, vector } from './define-schema.js';
import { rowObject, toBatches } from './rows.js';
import { makeStoreSchema } from './schema.js';

const schema = makeStoreSchema(defineSchema({ id: int32(), v: vector(3) }), ['id']);

describe('plain rows into a vector(3) column', () => {
  it('takes arrays and Float32Arrays of 3 and reads them back as arrays', () => {
    const [b] = toBatches(
      [
        { id: 1, v: [1, 2, 3] },
        { id: 2, v: Float32Array.of(4, 5, 6) },
      ],
      schema,
    );
    expect(rowObject(b!, 0).v).toEqual([1, 2, 3]);
    expect(rowObject(b!, 1).v).toEqual([4, 5, 6]);
  });

  it('refuses a vector of another length, naming the row (a later row keeps its own items)', () => {
    for (const bad of [[1, 2], [1, 2, 3, 4], new Float32Array(2)]) {
      let e: unknown;
      try {
        toBatches(
          [
            { id: 1, v: [1, 2, 3] },
            { id: 2, v: bad },
            { id: 3, v: [7, 8, 9] },
          ],
          schema,
        );
      } catch (x) {
        e = x;
      }
      expect(e).toBeInstanceOf(MemWalError);
      expect((e as MemWalError).code).toBe('InvalidArgument');
      expect((e as MemWalError).message).toMatch(/row 1.*"v".*expected 3 items/);
    }
  });
});
