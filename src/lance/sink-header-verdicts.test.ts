// What a drain request's headers alone decide against its store's applied position is decided
// before its body is checked: a duplicate (every position applied) is answered, a skip, an older
// epoch or an older incarnation refused, without a look at the body. Before, every such request
// was checked in full first (0.25-2 s of the server's thread for a large keyed body), and a
// duplicate is answered 200, so the refusal cooldown never held a client that re-sent one large
// applied request over and over (docs/scale-out.md §5 "Trust model and budgets"). A body whose
// checksum is wrong shows the check did not run. Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { craftRequest } from './bodies.test-util.js';
import { arrow } from './lancedb.js';
import { LanceSink } from './sink.js';

const INC_A = `${'0'.repeat(12)}${'a'.repeat(20)}`;
const INC_B = `${'0'.repeat(12)}${'b'.repeat(20)}`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function sinkWithOneApplied(): Promise<LanceSink> {
  const uri = mkdtempSync(join(tmpdir(), 'memwal-lance-header-verdicts-'));
  dirs.push(uri);
  const sink = new LanceSink({ uri, table: 't', logger: { warn: () => undefined } });
  const first = row(1);
  await sink.applyEncoded('s', { ...first.meta, epoch: 3, incarnation: INC_B }, first.body);
  return sink;
}

/** One row of `v` at `position`. */
function row(position: number) {
  const data = arrow.makeData({ type: new arrow.Int32(), length: 1, nullCount: 0, data: Int32Array.of(position) });
  return craftRequest([{ field: new arrow.Field('v', new arrow.Int32(), true), data }], 1, position);
}

/** The same request with its checksum off by one: any check of the body refuses it. */
function corrupt(position: number) {
  const r = row(position);
  return { meta: { ...r.meta, crc32c: (r.meta.crc32c + 1) >>> 0 }, body: r.body };
}

describe('a request decided by its headers is not checked', () => {
  it('a duplicate is answered from the applied position, its body unread', async () => {
    const sink = await sinkWithOneApplied();
    const dup = corrupt(1);
    const before = sink.stats();
    await expect(sink.applyEncoded('s', { ...dup.meta, epoch: 3, incarnation: INC_B }, dup.body)).resolves.toMatchObject({
      appliedPosition: 1,
      rows: 0,
      duplicate: true,
    });
    expect(sink.stats()).toMatchObject({ duplicates: before.duplicates + 1, refusals: before.refusals });
    await sink.close();
  });

  it('a skip, an older epoch and an older incarnation are refused for what they are, their bodies unread', async () => {
    const sink = await sinkWithOneApplied();
    const skip = corrupt(5);
    await expect(sink.applyEncoded('s', { ...skip.meta, epoch: 3, incarnation: INC_B }, skip.body)).rejects.toThrow(/positions skip/);
    const next = corrupt(2);
    await expect(sink.applyEncoded('s', { ...next.meta, epoch: 2, incarnation: INC_B }, next.body)).rejects.toThrow(/epoch goes backwards/);
    await expect(sink.applyEncoded('s', { ...next.meta, epoch: 3, incarnation: INC_A }, next.body)).rejects.toThrow(/created again/);
    // The next position with a good checksum is checked and applied as before; with a bad one, refused.
    await expect(sink.applyEncoded('s', { ...next.meta, epoch: 3, incarnation: INC_B }, next.body)).rejects.toThrow(/checksum|crc/i);
    const good = row(2);
    await expect(sink.applyEncoded('s', { ...good.meta, epoch: 3, incarnation: INC_B }, good.body)).resolves.toMatchObject({
      appliedPosition: 2,
      rows: 1,
    });
    await sink.close();
  });
});

describe('a request refused in its turn before writing', () => {
  it('keeps its store’s state: the next request reads no position and scans no table for leftovers', async () => {
    const sink = await sinkWithOneApplied(); // table column v: Int32
    const table = (await sink.table())!;
    const countRows = table.countRows.bind(table);
    let scans = 0;
    table.countRows = (filter?: string) => {
      scans += 1;
      return countRows(filter);
    };
    const utf8 = new arrow.Utf8();
    const unfit = craftRequest(
      [
        {
          field: new arrow.Field('v', utf8, true),
          data: arrow.makeData({
            type: utf8,
            length: 1,
            nullCount: 1,
            nullBitmap: new Uint8Array(1),
            valueOffsets: new Int32Array(2),
            data: new Uint8Array(0),
          }),
        },
      ],
      1,
      2,
    );
    for (let i = 0; i < 3; i++) {
      await expect(sink.applyEncoded('s', { ...unfit.meta, epoch: 3, incarnation: INC_B }, unfit.body)).rejects.toThrow(/does not fit/);
    }
    const good = row(2);
    await expect(sink.applyEncoded('s', { ...good.meta, epoch: 3, incarnation: INC_B }, good.body)).resolves.toMatchObject({
      appliedPosition: 2,
      rows: 1,
    });
    expect(scans).toBe(0); // before: each refusal dropped the state, and the next request re-ran recovery (countRows)
    expect(await countRows("_memwal_store = 's'")).toBe(2);
    await sink.close();
  });
});
