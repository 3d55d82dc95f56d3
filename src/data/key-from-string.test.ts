// keyFromString (data/keys.ts): a key stored encoded (a table file's index section) comes back in
// the one form the key encoder gives the same value — the number form exactly for safe integers
// of a single integer-like key column — so `===` against memtable keys and the Bloom filter's
// hashing (which hashes the two forms differently) agree.

import { Field, Int8, Int32, Int64, Schema, Uint64, Utf8 } from 'apache-arrow';
import { expect, it } from 'vitest';
import { keyFromString, keyString, makeKeyEncoder } from './keys.js';
import { toBatches } from './rows.js';
import { makeStoreSchema } from './schema.js';

const S53 = 2n ** 53n;

it('gives back the key encoder form of every value, across types and the edges of the safe integers', () => {
  const cases: { type: Int8 | Int32 | Int64 | Uint64 | Utf8; values: unknown[] }[] = [
    { type: new Int8(), values: [-128, -1, 0, 1, 127] },
    { type: new Int32(), values: [-(2 ** 31), -5, 0, 7, 2 ** 31 - 1] },
    { type: new Int64(), values: [-(2n ** 63n), -S53, -S53 + 1n, -1n, 0n, 1n, S53 - 1n, S53, S53 + 1n, 2n ** 63n - 1n] },
    { type: new Uint64(), values: [0n, 1n, S53 - 1n, S53, 2n ** 64n - 1n] },
    { type: new Utf8(), values: ['', 'a', 'a\u0000b', 'zz'] },
  ];
  for (const c of cases) {
    const s = makeStoreSchema(new Schema([new Field('id', c.type, false)]), ['id']);
    const keys = makeKeyEncoder(s)(
      toBatches(
        c.values.map((id) => ({ id })),
        s,
      )[0]!,
    );
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      expect(keyFromString(keyString(k, s), s), `${c.type} ${String(c.values[i])}`).toBe(k);
    }
  }
  // Compound keys stay encoded.
  const compound = makeStoreSchema(new Schema([new Field('a', new Int32(), false), new Field('b', new Utf8(), false)]), ['a', 'b']);
  const k = makeKeyEncoder(compound)(toBatches([{ a: 3, b: 'x' }], compound)[0]!)[0]!;
  expect(keyFromString(keyString(k, compound), compound)).toBe(k);
});
