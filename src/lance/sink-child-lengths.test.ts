// A nested column's children declare exactly the rows their parent gives them (a struct's fields
// its length, a fixed-size list's items its length × size), as apache-arrow writes them: a body declaring more
// was taken, LanceDB refused the structs (500, "Incorrect number of nulls for StructArray") and
// the value checks walked every declared slot (docs/testing.md, "Attacks on the sink's data
// plane, 2026-12-07"). Crafted bodies straight into `applyEncoded`. Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { craftRequest } from './bodies.test-util.js';
import { type ArrowData, type ArrowField, arrow } from './lancedb.js';
import { LanceSink } from './sink.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const sinkOf = (): LanceSink => {
  const d = mkdtempSync(join(tmpdir(), 'memwal-lance-children-'));
  dirs.push(d);
  return new LanceSink({ uri: d, table: 't', logger: { warn: () => undefined } });
};
const refused = { code: 'InvalidArgument', message: /has \d+ rows where its record batch or parent has \d+/ };

describe("a nested column's children declare exactly their parent's rows", () => {
  it('14 nested structs of 2^20 rows under one null row: refused 400 at once, changing nothing', async () => {
    const rows = 1 << 20;
    let field: ArrowField = new arrow.Field('b', new arrow.Bool(), true);
    let data: ArrowData = arrow.makeData({ type: new arrow.Bool(), length: rows, nullCount: 0, data: new Uint8Array(rows / 8) });
    for (let d = 0; d < 14; d++) {
      const type = new arrow.Struct([field]);
      data = arrow.makeData({ type, length: rows, nullCount: 0, children: [data] });
      field = new arrow.Field(`s${d}`, type, true);
    }
    const top = new arrow.Struct([field]);
    const column = arrow.makeData({ type: top, length: 1, nullCount: 1, nullBitmap: new Uint8Array(1), children: [data] });
    const req = craftRequest([{ field: new arrow.Field('x', top, true), data: column }], 1, 1);
    const sink = sinkOf();
    const started = performance.now();
    await expect(sink.applyEncoded('attacker', req.meta, req.body)).rejects.toMatchObject(refused);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await sink.table()).toBeUndefined();
    expect(sink.stats()).toMatchObject({ failures: 0, refusals: 1 });
    await sink.close();
  });

  it('a fixed-size list whose items run past its length × size is refused; one whose items end there is taken', async () => {
    const fsl = new arrow.FixedSizeList(2, new arrow.Field('item', new arrow.Int8(), true));
    const body = (items: number) =>
      craftRequest(
        [
          {
            field: new arrow.Field('v', fsl, true),
            data: arrow.makeData({
              type: fsl,
              length: 1,
              nullCount: 0,
              child: arrow.makeData({ type: new arrow.Int8(), length: items, nullCount: 0, data: new Int8Array(items) }),
            }),
          },
        ],
        1,
        1,
      );
    const sink = sinkOf();
    const long = body(1000);
    await expect(sink.applyEncoded('attacker', long.meta, long.body)).rejects.toMatchObject(refused);
    const exact = body(2);
    await expect(sink.applyEncoded('honest', exact.meta, exact.body)).resolves.toMatchObject({ appliedPosition: 1 });
    await sink.close();
  });
});
