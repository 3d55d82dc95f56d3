// The newest row of each key (src/lance/request.ts `newestPerKey`) over single integer key
// columns, whose identities are numbers where exact (within ±2^53) and strings beyond: values
// that differ only past 2^53 stay different keys, equal ones one key, whatever the width and
// sign. Checked against a reference that keys by the value's string. Node only.

import { describe, expect, it } from 'vitest';
import { int, rng } from '../testing/rng.js';
import { craftRequest } from './bodies.test-util.js';
import { type ArrowData, type ArrowType, arrow } from './lancedb.js';
import { checkRequest } from './request.js';

const rules = { primaryKey: ['id'], schema: undefined, allowColumns: undefined, maxColumns: 100, maxRowBytes: 16 * 1024 };

/** Keys near 0, near ±2^53 and near the type's ends, so neighbours differ only in low bits of large values. */
function keys64(r: () => number, n: number, signed: boolean): bigint[] {
  const bases = signed
    ? [0n, 2n ** 53n, -(2n ** 53n), 2n ** 62n, -(2n ** 63n) + 8n, 2n ** 63n - 8n]
    : [0n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 8n];
  return Array.from({ length: n }, () => bases[int(r, bases.length)]! + BigInt(int(r, 6)));
}

function column(type: ArrowType, values: ArrayLike<number | bigint>): ArrowData {
  return arrow.makeData({ type, length: values.length, nullCount: 0, data: values } as never);
}

const cases: [string, ArrowType, (r: () => number, n: number) => ArrayLike<number | bigint>][] = [
  ['Int64', new arrow.Int64(), (r, n) => BigInt64Array.from(keys64(r, n, true))],
  ['Uint64', new arrow.Uint64(), (r, n) => BigUint64Array.from(keys64(r, n, false))],
  ['Timestamp', new arrow.TimestampNanosecond(), (r, n) => BigInt64Array.from(keys64(r, n, true))],
  [
    'Int32',
    new arrow.Int32(),
    (r, n) => Int32Array.from({ length: n }, () => [0, 2 ** 31 - 1, -(2 ** 31)][int(r, 3)]! + int(r, 4) * (r() < 0.5 ? 1 : -1)),
  ],
  ['Uint8', new arrow.Uint8(), (r, n) => Uint8Array.from({ length: n }, () => int(r, 256))],
];

describe('the newest row of each single integer key', () => {
  for (const [name, type, make] of cases) {
    it(`${name}: one row per distinct value, the last of each, values past 2^53 kept apart`, async () => {
      for (let seed = 1; seed <= 20; seed++) {
        const r = rng(seed);
        const n = 1 + int(r, 300);
        const values = make(r, n);
        const req = craftRequest([{ field: new arrow.Field('id', type, false), data: column(type, values) }], n, 1, { keyed: true });
        const checked = await checkRequest(req.meta, req.body, rules);
        const last = new Map<string, number>();
        for (let i = 0; i < n; i++) last.set(String(values[i]), i);
        const expected = [...last.values()].sort((a, b) => a - b).map((i) => String(values[i]));
        const got = [...checked.rows.getChild('id')!.toArray()].map(String);
        expect(got, `seed ${seed}`).toEqual(expected);
      }
    });
  }
});
