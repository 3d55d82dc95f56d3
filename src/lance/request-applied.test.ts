// A re-sent drain request whose leading entries are already applied (src/lance/request.ts
// `checkRequest` with the store's applied position): those record batches pass the checksum and
// structure checks and are then left out, their values and keys never looked at, so only the part
// still to apply costs a check. A batch holding any position above the applied one is checked in
// full. Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { POSITION_COLUMN } from '../drain/wire.js';
import { crc32c } from '../util/crc32c.js';
import { type ArrowData, arrow } from './lancedb.js';
import { checkRequest } from './request.js';
import { LanceSink } from './sink.js';

const rules = { primaryKey: ['id'], schema: undefined, allowColumns: undefined, maxColumns: 100, maxRowBytes: 16 * 1024 };
const schema = new arrow.Schema([
  new arrow.Field('id', new arrow.Int64(), false),
  new arrow.Field('text', new arrow.Utf8(), true),
  new arrow.Field('_tombstone', new arrow.Bool(), false),
  new arrow.Field(POSITION_COLUMN, new arrow.Int64(), false),
]);

/** A Utf8 column of `strings`, the one at `bad` (if any) given bytes that are not UTF-8. */
function texts(strings: string[], bad?: number): ArrowData {
  const bytes = strings.map((s, i) => (i === bad ? new Uint8Array([0xff, 0xfe]) : new TextEncoder().encode(s)));
  const offsets = new Int32Array(strings.length + 1);
  for (let i = 0; i < bytes.length; i++) offsets[i + 1] = offsets[i]! + bytes[i]!.length;
  const data = new Uint8Array(offsets[strings.length]!);
  for (let i = 0; i < bytes.length; i++) data.set(bytes[i]!, offsets[i]!);
  return arrow.makeData({ type: new arrow.Utf8(), length: strings.length, nullCount: 0, valueOffsets: offsets, data });
}

/** One record batch: rows `ids` at `positions` (one per row), the text of row `bad` not UTF-8. */
function batch(ids: number[], positions: number[], bad?: number) {
  const n = ids.length;
  const int64 = (v: number[]) =>
    arrow.makeData({ type: new arrow.Int64(), length: n, nullCount: 0, data: BigInt64Array.from(v.map((x) => BigInt(x))) });
  const children = [
    int64(ids),
    texts(
      ids.map((id) => `row ${id}`),
      bad,
    ),
    arrow.makeData({ type: new arrow.Bool(), length: n, nullCount: 0, data: new Uint8Array(Math.ceil(n / 8)) }),
    int64(positions),
  ];
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children }));
}

function request(batches: ReturnType<typeof batch>[], first: number, last: number) {
  const body = arrow.tableToIPC(new arrow.Table(schema, batches), 'stream');
  const rows = batches.reduce((n, b) => n + b.numRows, 0);
  return { meta: { firstPosition: first, lastPosition: last, epoch: 1, rows, crc32c: crc32c(body) }, body };
}

describe('a re-sent request, partly applied', () => {
  it('leaves out the entries at or below the applied position unchecked, and checks and keeps the rest', async () => {
    // Entry 1 holds a string that is not UTF-8: a fresh request is refused for it.
    const { meta, body } = request([batch([1, 2, 3], [1, 1, 1], 1), batch([2, 4], [2, 2]), batch([4, 5], [3, 3])], 1, 3);
    await expect(checkRequest(meta, body, rules)).rejects.toThrow(/not UTF-8/);
    // Applied up to 1: entry 1 is never looked at (before: refused, the whole body checked).
    const checked = await checkRequest(meta, body, rules, 1);
    expect([...checked.rows.getChild('id')!.toArray()].map(Number)).toEqual([2, 4, 5]);
    expect([...checked.rows.getChild('text')!.toArray()]).toEqual(['row 2', 'row 4', 'row 5']);
    expect([...checked.positions]).toEqual([2, 3, 3]);
    expect(checked.bodyRows).toBe(7);
  });

  it('checks in full a record batch holding a position above the applied one', async () => {
    const { meta, body } = request([batch([1, 2], [1, 2], 0), batch([3], [3])], 1, 3);
    await expect(checkRequest(meta, body, rules, 1)).rejects.toThrow(/not UTF-8/);
  });

  it('checks the tail still: a bad value after the applied entries is refused', async () => {
    const { meta, body } = request([batch([1], [1]), batch([2, 3], [2, 2], 1)], 1, 2);
    await expect(checkRequest(meta, body, rules, 1)).rejects.toThrow(/not UTF-8/);
  });

  it('a body whose checksum does not hold is refused, however much of it is applied', async () => {
    const { meta, body } = request([batch([1], [1]), batch([2], [2])], 1, 2);
    await expect(checkRequest({ ...meta, crc32c: (meta.crc32c + 1) >>> 0 }, body, rules, 1)).rejects.toThrow(/crc|checksum/i);
  });
});

describe('a LanceSink given a re-sent request, partly applied', () => {
  it('checks and writes only the entries beyond the store’s applied position', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memwal-lance-applied-'));
    const sink = new LanceSink({ uri: dir, table: 'events', primaryKey: ['id'], logger: { warn: () => undefined } });
    try {
      const first = request([batch([1, 2, 3], [1, 1, 1])], 1, 1);
      await sink.applyEncoded('s', first.meta, first.body);
      // The re-send's entry 1 differs from what was applied and holds a string that is not UTF-8:
      // it is never looked at (before: the request was refused, and the drain stopped on it).
      const again = request([batch([1, 2, 3], [1, 1, 1], 0), batch([2, 4], [2, 2]), batch([4, 5], [3, 3])], 1, 3);
      const result = await sink.applyEncoded('s', again.meta, again.body);
      expect(result).toMatchObject({ appliedPosition: 3, rows: 3, duplicate: false });
      const rows = await (await sink.table())!.query().select(['id', 'text']).toArray();
      const texts = Object.fromEntries(rows.map((r) => [Number(r.id), r.text]));
      expect(texts).toEqual({ 1: 'row 1', 2: 'row 2', 3: 'row 3', 4: 'row 4', 5: 'row 5' });
    } finally {
      await sink.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
