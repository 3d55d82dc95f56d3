// What a store's schema says besides its values' types, as an outside attacker would send it
// (docs/testing.md "Attacks on the sink's data plane, 2026-12-07"): names of any length, unit
// numbers Arrow does not define, names that differ from memwal's own or another store's column
// only in case. A name is written into every later manifest and data file of every store, so its
// length is bounded (MAX_NAME_BYTES); a unit Arrow does not define makes LanceDB panic, so it is
// refused with 400. Crafted bodies straight into `applyEncoded`, as the HTTP handler passes them.
// Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_NAME_BYTES } from './arrow-check.js';
import { type BodyColumn, craftRequest, nulls, rowsOf } from './bodies.test-util.js';
import { type ArrowField, type ArrowType, arrow } from './lancedb.js';
import { LanceSink, STORE_COLUMN } from './sink.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const sinkOf = (): LanceSink => {
  const d = mkdtempSync(join(tmpdir(), 'memwal-lance-strings-'));
  dirs.push(d);
  return new LanceSink({ uri: d, table: 't', logger: { warn: () => undefined } });
};
const utf8 = (name: string, values: (string | null)[]): BodyColumn => ({
  field: new arrow.Field(name, new arrow.Utf8(), true),
  data: arrow.vectorFromArray(values, new arrow.Utf8()).data[0]!,
});
const nullColumn = (f: ArrowField): BodyColumn => ({ field: f, data: nulls(f.type, 1) });

function apply(sink: LanceSink, store: string, columns: BodyColumn[], rows: number, position: number) {
  const req = craftRequest(columns, rows, position);
  return sink.applyEncoded(store, req.meta, req.body);
}
async function names(sink: LanceSink): Promise<string[]> {
  return (await (await sink.table())!.schema()).fields.map((f) => f.name);
}
async function lance(sink: LanceSink, store: string, column: string): Promise<string[]> {
  const t = (await sink.table())!;
  return rowsOf(await t.query().where(`${STORE_COLUMN} = '${store}'`).select([column]).toArrow(), [column]);
}

describe('column names are bounded in bytes (MAX_NAME_BYTES)', () => {
  it(`a name of ${MAX_NAME_BYTES} bytes is taken; one byte more, at the top or nested, is refused and changes nothing`, async () => {
    const sink = sinkOf();
    await apply(sink, 'victim', [utf8('name', ['a'])], 1, 1);
    const longest = 'é'.repeat(MAX_NAME_BYTES / 2); // 2 bytes each in UTF-8
    await apply(sink, 'attacker', [nullColumn(new arrow.Field(longest, new arrow.Bool(), true))], 1, 1);
    const version = await (await sink.table())!.version();
    const over = `${longest}x`;
    const nested = new arrow.Field('s', new arrow.Struct([new arrow.Field(over, new arrow.Int8(), true)]), true);
    for (const [column, position] of [
      [new arrow.Field(over, new arrow.Bool(), true), 2],
      [nested, 3],
    ] as const) {
      await expect(apply(sink, 'attacker', [nullColumn(column)], 1, position)).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: new RegExp(`names may be at most ${MAX_NAME_BYTES} bytes`),
      });
    }
    expect(await (await sink.table())!.version()).toBe(version);
    expect(await names(sink)).toEqual(['name', STORE_COLUMN, '_memwal_position', longest]);
    await sink.close();
  });

  it('60 columns of 100 kB names (a 6 MB body) are refused, so no later commit of another store carries them', async () => {
    const sink = sinkOf();
    await apply(sink, 'victim', [utf8('name', ['a'])], 1, 1);
    const columns = Array.from({ length: 60 }, (_, i) => nullColumn(new arrow.Field(`${i}${'x'.repeat(100_000)}`, new arrow.Bool(), true)));
    await expect(apply(sink, 'attacker', columns, 1, 1)).rejects.toMatchObject({ code: 'InvalidArgument' });
    await apply(sink, 'victim', [utf8('name', ['b'])], 1, 2);
    expect(await names(sink)).toEqual(['name', STORE_COLUMN, '_memwal_position']);
    await sink.close();
  }, 30_000);
});

describe('units Arrow does not define are refused (LanceDB panics on them)', () => {
  const cases: [string, () => ArrowType][] = [
    ['a date of unit 7', () => new arrow.Date_(7 as never)],
    ['a timestamp of unit 9', () => new arrow.Timestamp(9 as never, null)],
    ['a duration of unit 9', () => new arrow.Duration(9 as never)],
    ['a 32-bit time of unit 9', () => new arrow.Time(9 as never, 32 as never)],
  ];
  for (const [what, type] of cases) {
    it(`${what}: 400 naming the unit, the table unchanged, other stores unaffected`, async () => {
      const sink = sinkOf();
      await apply(sink, 'victim', [utf8('name', ['a'])], 1, 1);
      const version = await (await sink.table())!.version();
      await expect(apply(sink, 'attacker', [nullColumn(new arrow.Field('x', type(), true))], 1, 1)).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: /unit \d is not one Arrow defines/,
      });
      expect(await (await sink.table())!.version()).toBe(version);
      await apply(sink, 'victim', [utf8('name', ['b'])], 1, 2);
      expect(await lance(sink, 'victim', 'name')).toEqual(['["a"]', '["b"]']);
      expect(sink.stats()).toMatchObject({ failures: 0, refusals: 1 });
      await sink.close();
    });
  }

  it("Arrow's own units are all taken", async () => {
    const sink = sinkOf();
    const types: ArrowType[] = [
      new arrow.DateDay(),
      new arrow.DateMillisecond(),
      ...[0, 1, 2, 3].flatMap((u) => [new arrow.Timestamp(u as never, null), new arrow.Duration(u as never)]),
      new arrow.TimeSecond(),
      new arrow.TimeMillisecond(),
      new arrow.TimeMicrosecond(),
      new arrow.TimeNanosecond(),
    ];
    await apply(
      sink,
      'store',
      types.map((t, i) => nullColumn(new arrow.Field(`c${i}`, t, true))),
      1,
      1,
    );
    expect((await names(sink)).length).toBe(types.length + 2);
    await sink.close();
  });
});

describe('names differing only in case are other columns (held)', () => {
  it("columns _MEMWAL_STORE, _Memwal_Position and NAME of an attacker change neither a victim's rows nor its recovery", async () => {
    const sink = sinkOf();
    await apply(sink, 'victim', [utf8('name', ['a', 'b'])], 2, 1);
    await apply(sink, 'attacker', [utf8('_MEMWAL_STORE', ['victim'])], 1, 1);
    await apply(
      sink,
      'attacker',
      [
        {
          field: new arrow.Field('_Memwal_Position', new arrow.Int64(), true),
          data: arrow.vectorFromArray([99n], new arrow.Int64()).data[0]!,
        },
      ],
      1,
      2,
    );
    await apply(
      sink,
      'attacker',
      [{ field: new arrow.Field('NAME', new arrow.Int64(), true), data: arrow.vectorFromArray([5n], new arrow.Int64()).data[0]! }],
      1,
      3,
    );
    // A new sink on the same table: the victim's first apply runs recovery (deletes its rows above its position).
    const uri = dirs.at(-1)!;
    await sink.close();
    const again = new LanceSink({ uri, table: 't', logger: { warn: () => undefined } });
    await apply(again, 'victim', [utf8('name', ['c'])], 1, 2);
    expect(await lance(again, 'victim', 'name')).toEqual(['["a"]', '["b"]', '["c"]']);
    expect(await (await again.table())!.countRows(`${STORE_COLUMN} = 'attacker'`)).toBe(3);
    await again.close();
  });
});
