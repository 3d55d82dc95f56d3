// A shared sink takes a store's values, never a schema's extras (docs/scale-out.md "Values, not
// extras"): field and schema metadata at any depth never reach the table (no store can change how
// Lance encodes, blobs or packs a column other stores write to), a type whose null row is wide
// is bounded by the operator's `maxRowBytes`, time zones and decimals are what LanceDB can keep,
// refusals speak of the request only, and a table whose compaction fails does not stop the
// other's. Crafted bodies straight into `applyEncoded`, as the HTTP handler passes them. Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type BodyColumn, craftRequest, nulls, randomData, rowsOf } from './bodies.test-util.js';
import { type ArrowField, type ArrowType, arrow, lancedb } from './lancedb.js';
import { LanceSink, type LanceSinkOptions, STORE_COLUMN } from './sink.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'memwal-lance-values-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const quiet = { warn: () => undefined };

const rng = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const field = (name: string, type: ArrowType, nullable = true, metadata?: Record<string, string>): ArrowField =>
  new arrow.Field(name, type, nullable, metadata ? new Map(Object.entries(metadata)) : undefined);
const id = (values: number[]): BodyColumn => ({
  field: field('id', new arrow.Int64(), false),
  data: arrow.vectorFromArray(values.map(BigInt), new arrow.Int64()).data[0]!,
});
const sinkOf = (opts: Partial<LanceSinkOptions> = {}) => new LanceSink({ uri: tempDir(), table: 't', logger: quiet, ...opts });

/** Applies `columns` (rows of `rows`) as `store` at position `position`. */
function apply(sink: LanceSink, store: string, columns: BodyColumn[], rows: number, position = 1, schemaMetadata?: Map<string, string>) {
  const req = craftRequest(columns, rows, position, { schemaMetadata });
  return sink.applyEncoded(store, req.meta, req.body).then(() => req.table);
}

/** What a Lance query returns for `store`'s rows, in `columns`. */
async function lance(sink: LanceSink, store: string, columns: string[]): Promise<string[]> {
  const t = (await sink.table())!;
  return rowsOf(await t.query().where(`${STORE_COLUMN} = '${store}'`).select(columns).toArrow(), columns);
}

/** Every metadata key of the table's schema and its fields, at every depth, as `path: key`. */
async function metadataKeys(sink: LanceSink): Promise<string[]> {
  const schema = await (await sink.table())!.schema();
  const out = [...schema.metadata.keys()].map((k) => `schema: ${k}`);
  const walk = (f: ArrowField, path: string): void => {
    for (const k of f.metadata.keys()) out.push(`${path}: ${k}`);
    for (const c of (f.type.children ?? []) as ArrowField[]) walk(c, `${path}.${c.name}`);
  };
  for (const f of schema.fields) walk(f, f.name);
  return out;
}

/** A store that creates the table, then an attacker adding `column` (one null row), then a victim writing values into it. */
async function poisonThenWrite(sink: LanceSink, column: ArrowField) {
  await apply(sink, 'first', [id([1])], 1);
  await apply(sink, 'attacker', [id([2]), { field: column, data: nulls(column.type, 1) }], 1);
  const bare = new arrow.Field(column.name, column.type, true);
  const sent = await apply(sink, 'victim', [id([3, 4]), { field: bare, data: randomData(column.type, 2, rng(7)) }], 2);
  return sent;
}

describe('metadata never reaches the table', () => {
  for (const [key, value] of [
    ['lance-encoding:compression', 'bogus'],
    ['lance-encoding:structural-encoding', 'bogus'],
  ]) {
    it(`a column added with ${key}: ${value} takes other stores' values, and the table holds no metadata`, async () => {
      const sink = sinkOf();
      const sent = await poisonThenWrite(sink, field('c', new arrow.Int64(), true, { [key!]: value! }));
      expect(await lance(sink, 'victim', ['id', 'c'])).toEqual(rowsOf(sent, ['id', 'c']));
      expect(await metadataKeys(sink)).toEqual([]);
      await sink.close();
    });
  }

  it('a LargeBinary column added with lance-encoding:blob: true reads back as the bytes other stores wrote', async () => {
    const sink = sinkOf();
    const sent = await poisonThenWrite(sink, field('b', new arrow.LargeBinary(), true, { 'lance-encoding:blob': 'true' }));
    expect(await lance(sink, 'victim', ['id', 'b'])).toEqual(rowsOf(sent, ['id', 'b']));
    expect(await metadataKeys(sink)).toEqual([]);
    await sink.close();
  });

  it('metadata at every depth (5 levels of struct and list) and on the schema is stripped, on creation and on addition', async () => {
    const meta = (depth: number) => ({ 'lance-encoding:compression': 'bogus', [`x-depth-${depth}`]: 'v' });
    /** struct{ s: list<struct{ l: list<struct{ leaf: Int32 }>}> } with metadata on every field. */
    const deep = (name: string): ArrowField => {
      const leaf = field('leaf', new arrow.Int32(), true, meta(5));
      const inner = field('item', new arrow.Struct([leaf]), true, meta(4));
      const l = field('l', new arrow.List(inner), true, meta(3));
      const mid = field('item', new arrow.Struct([l]), true, meta(2));
      return field(name, new arrow.Struct([field('s', new arrow.List(mid), true, meta(1))]), true, meta(0));
    };
    const schemaMeta = new Map([
      ['lance-encoding:compression', 'bogus'],
      ['x-schema', 'v'],
    ]);
    const sink = sinkOf();
    const created = deep('created');
    await apply(sink, 'first', [id([1]), { field: created, data: randomData(created.type, 1, rng(1)) }], 1, 1, schemaMeta);
    expect(await metadataKeys(sink)).toEqual([]);
    const added = deep('added');
    await apply(sink, 'second', [id([2]), { field: added, data: nulls(added.type, 1) }], 1, 1, schemaMeta);
    expect(await metadataKeys(sink)).toEqual([]);
    const bare = (f: ArrowField): ArrowField => new arrow.Field(f.name, f.type, f.nullable);
    const sent = await apply(sink, 'third', [id([3]), { field: bare(added), data: randomData(added.type, 1, rng(2)) }], 1);
    expect(await lance(sink, 'third', ['id', 'added'])).toEqual(rowsOf(sent, ['id', 'added']));
    await sink.close();
  });

  it('a packed struct (lance-encoding:packed) added by one store leaves compaction working for all', async () => {
    // Packed, a struct of fixed-width fields takes writes, and then no compaction of the table works.
    const sink = sinkOf({ optimizeEvery: 1 });
    const packed = new arrow.Struct([field('a', new arrow.Int32()), field('b', new arrow.Int32())]);
    const sent = await poisonThenWrite(sink, field('p', packed, true, { 'lance-encoding:packed': 'true' }));
    for (let p = 2; p <= 4; p++) await apply(sink, 'first', [id([10 + p])], 1, p);
    expect(sink.stats()).toMatchObject({ optimizeFailures: 0, failures: 0 });
    expect(sink.stats().optimizations).toBeGreaterThanOrEqual(8);
    expect(await lance(sink, 'victim', ['id', 'p'])).toEqual(rowsOf(sent, ['id', 'p']));
    await sink.close();
  });
});

describe('types whose null row is wide are bounded (maxRowBytes)', () => {
  const refused = { code: 'InvalidArgument', message: /maxRowBytes/ };

  it('a FixedSizeBinary(1 MiB) or FixedSizeList(8M, Bool) column, even of one null row, is refused and changes nothing', async () => {
    const sink = sinkOf();
    await apply(sink, 'first', [id([1])], 1);
    const version = await (await sink.table())!.version();
    for (const type of [
      new arrow.FixedSizeBinary(1 << 20),
      new arrow.FixedSizeList(8 << 20, field('item', new arrow.Bool())),
      new arrow.List(field('item', new arrow.FixedSizeBinary(1 << 20))),
      new arrow.Struct([field('v', new arrow.FixedSizeList(1 << 12, field('item', new arrow.Int64())))]),
    ]) {
      const wide = field('w', type);
      await expect(apply(sink, 'attacker', [id([2]), { field: wide, data: nulls(type, 1) }], 1)).rejects.toMatchObject(refused);
    }
    expect(await (await sink.table())!.version()).toBe(version);
    expect(sink.stats().refusals).toBe(4);
    await sink.close();
  });

  it("columns each within the budget are refused once the table's row would outgrow it; an operator may raise it", async () => {
    const vec = (name: string) => field(name, new arrow.FixedSizeList(1024, field('item', new arrow.Float32())));
    const sink = sinkOf();
    await apply(sink, 'a', [id([1]), { field: vec('v1'), data: nulls(vec('v1').type, 1) }], 1);
    await apply(sink, 'b', [id([2]), { field: vec('v2'), data: nulls(vec('v2').type, 1) }], 1);
    await apply(sink, 'c', [id([3]), { field: vec('v3'), data: nulls(vec('v3').type, 1) }], 1);
    await expect(apply(sink, 'd', [id([4]), { field: vec('v4'), data: nulls(vec('v4').type, 1) }], 1)).rejects.toMatchObject(refused);
    await sink.close();
    const raised = new LanceSink({ uri: tempDir(), table: 't', maxRowBytes: 1 << 20, logger: quiet });
    const big = field('big', new arrow.FixedSizeBinary(100_000));
    await apply(raised, 'a', [id([1]), { field: big, data: randomData(big.type, 1, rng(3)) }], 1);
    await raised.close();
    expect(() => new LanceSink({ uri: tempDir(), table: 't', maxRowBytes: 10 })).toThrow(/maxRowBytes/);
  });

  it("an operator's schema wider than maxRowBytes is refused when the sink is made", async () => {
    const { Schema, Field, FixedSizeBinary } = await import('apache-arrow');
    const schema = new Schema([new Field('blob', new FixedSizeBinary(1 << 20), true)]);
    expect(() => new LanceSink({ uri: tempDir(), table: 't', schema })).toThrow(/maxRowBytes/);
    expect(() => new LanceSink({ uri: tempDir(), table: 't', schema, maxRowBytes: 2 << 20 })).not.toThrow();
  });
});

describe('types LanceDB cannot keep are refused, not panicked on', () => {
  it('a time zone with ":" is refused with InvalidArgument; names and offsets without ":" are kept', async () => {
    const sink = sinkOf();
    for (const zone of ['+05:30', '-00:00', '05:30', 'UTC:']) {
      const ts = field('ts', new arrow.Timestamp(arrow.TimeUnit.MILLISECOND, zone));
      await expect(apply(sink, `s${zone.length}x`, [id([1]), { field: ts, data: nulls(ts.type, 1) }], 1)).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: /time zone/,
      });
    }
    for (const [i, zone] of ['+0530', 'Europe/Paris', 'UTC'].entries()) {
      const ts = field(`ts${i}`, new arrow.Timestamp(arrow.TimeUnit.MILLISECOND, zone));
      const sent = await apply(sink, `ok${i}`, [id([i]), { field: ts, data: randomData(ts.type, 1, rng(i)) }], 1);
      expect(await lance(sink, `ok${i}`, ['id', `ts${i}`])).toEqual(rowsOf(sent, ['id', `ts${i}`]));
    }
    await sink.close();
  });

  it('a fixed-size list of strings, binaries, structs, lists or fixed-size lists is refused with InvalidArgument (LanceDB panics on its values)', async () => {
    const item = (t: ArrowType) => field('item', t);
    const sink = sinkOf();
    await apply(sink, 'first', [id([1])], 1);
    for (const t of [
      new arrow.Utf8(),
      new arrow.LargeBinary(),
      new arrow.Struct([field('a', new arrow.Int32())]),
      new arrow.List(item(new arrow.Int8())),
      new arrow.FixedSizeList(2, item(new arrow.Int8())),
    ]) {
      const f = field('f', new arrow.FixedSizeList(2, item(t)));
      // Only nulls: the column would be added, and the next store writing values into it would fail for ever.
      await expect(apply(sink, 'attacker', [id([2]), { field: f, data: nulls(f.type, 1) }], 1)).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: /fixed-width/,
      });
    }
    const ok = field('v', new arrow.FixedSizeList(3, item(new arrow.Float16())));
    const sent = await apply(sink, 'vectors', [id([3]), { field: ok, data: randomData(ok.type, 1, rng(4)) }], 1);
    expect(await lance(sink, 'vectors', ['id', 'v'])).toEqual(rowsOf(sent, ['id', 'v']));
    await sink.close();
  });

  it('a decimal beyond Arrow’s precision or scale is refused with InvalidArgument', async () => {
    const sink = sinkOf();
    for (const [precision, scale, bits] of [
      [1000, 0, 128],
      [39, 0, 128],
      [77, 0, 256],
      [0, 0, 128],
      [5, 6, 128],
    ] as const) {
      const d = field('d', new arrow.Decimal(scale, precision, bits));
      await expect(apply(sink, 'd', [id([1]), { field: d, data: nulls(d.type, 1) }], 1)).rejects.toMatchObject({
        code: 'InvalidArgument',
        message: /decimal/,
      });
    }
    const ok = field('d', new arrow.Decimal(2, 38, 128));
    await apply(sink, 'd', [id([1]), { field: ok, data: nulls(ok.type, 1) }], 1);
    await sink.close();
  });
});

describe('a refusal speaks of its request only', () => {
  it('probing a column name answers the same whether another store has it (of another type) or not', async () => {
    const probe = [id([9]), { field: field('salary', new arrow.Int8(), false), data: randomData(new arrow.Int8(), 1, rng(1)) }];
    const plainSink = sinkOf();
    await apply(plainSink, 'first', [id([1])], 1);
    const without = await apply(plainSink, 'probe', probe, 1).catch((e: Error) => e.message);
    const withSalary = sinkOf();
    await apply(
      withSalary,
      'first',
      [id([1]), { field: field('salary', new arrow.Utf8()), data: randomData(new arrow.Utf8(), 1, rng(2)) }],
      1,
    );
    const withIt = await apply(withSalary, 'probe', probe, 1).catch((e: Error) => e.message);
    expect(withIt).toEqual(without);
    expect(withIt).not.toMatch(/Utf8|Lance table/);
    await Promise.all([plainSink.close(), withSalary.close()]);
  });

  it('the column-count refusal does not tell how many columns the table has', async () => {
    const messages: string[] = [];
    for (const others of [1, 3]) {
      const sink = sinkOf({ maxColumns: 4 });
      for (let i = 0; i < others; i++) {
        await apply(sink, `s${i}`, [id([i]), { field: field(`c${i}`, new arrow.Int32()), data: nulls(new arrow.Int32(), 1) }], 1);
      }
      const three = [0, 1, 2].map((k) => ({ field: field(`new${k}`, new arrow.Int32()), data: nulls(new arrow.Int32(), 1) }));
      messages.push(
        await apply(sink, 'late', [id([9]), ...three], 1).then(
          () => 'applied',
          (e: Error) => e.message,
        ),
      );
      await sink.close();
    }
    expect(messages[0]).toEqual(messages[1]);
    expect(messages[0]).toMatch(/maxColumns 4/);
  });
});

describe('one table’s failing compaction stays its own', () => {
  it('a data table that cannot be compacted: the failure is logged and counted, retried with backoff, and the positions table is compacted all the same', async () => {
    const uri = tempDir();
    // A data table an older sink left with a packed struct holding values: Lance cannot rewrite it.
    const db = await lancedb.connect(uri);
    const packed = new arrow.Struct([field('a', new arrow.Int32()), field('b', new arrow.Int32())]);
    const schema = new arrow.Schema([
      field('id', new arrow.Int64(), false),
      field('p', packed, true, { 'lance-encoding:packed': 'true' }),
      field(STORE_COLUMN, new arrow.Utf8(), false),
      field('_memwal_position', new arrow.Int64(), false),
    ]);
    const seedRows = arrow.makeData({
      type: new arrow.Struct(schema.fields),
      length: 1,
      nullCount: 0,
      children: [
        arrow.vectorFromArray([0n], new arrow.Int64()).data[0]!,
        randomData(packed, 1, rng(5)),
        arrow.vectorFromArray(['old'], new arrow.Utf8()).data[0]!,
        arrow.vectorFromArray([1n], new arrow.Int64()).data[0]!,
      ],
    });
    (await db.createTable('t', new arrow.Table(schema, [new arrow.RecordBatch(schema, seedRows)]))).close();
    db.close();
    const warnings: string[] = [];
    const sink = new LanceSink({ uri, table: 't', optimizeEvery: 1, logger: { warn: (m: string) => warnings.push(m) } });
    const dataFailures: number[] = [];
    for (let p = 1; p <= 12; p++) {
      const before = sink.stats().optimizeFailures;
      await apply(sink, 'writer', [id([p])], 1, p);
      if (sink.stats().optimizeFailures > before) dataFailures.push(p);
    }
    const positions = await (await lancedb.connect(uri)).openTable('t_memwal_positions');
    const stats = await positions.stats();
    // Compacted 12 times (after each apply): one fragment, not 12.
    expect(stats.fragmentStats.numFragments).toBe(1);
    expect(sink.stats().optimizations).toBe(12);
    // Tried after applies 1, 3 (1 + 2), 7 (3 + 4): each failure doubles the wait.
    expect(dataFailures).toEqual([1, 3, 7]);
    expect(warnings.filter((w) => /optimize of Lance table t failed/.test(w))).toHaveLength(3);
    expect(await lance(sink, 'writer', ['id'])).toHaveLength(12);
    positions.close();
    await sink.close();
  });
});
