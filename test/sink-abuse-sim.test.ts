// The shared Lance sink's data side under generated abuse (docs/testing.md "The sink's abuse
// simulation"), in `npm test`: MEMWAL_SINK_SIM_SEEDS seeds (default 200) from MEMWAL_SINK_SIM_FROM
// (default 1). Each seed makes a sink (keyed or append-only, random limits), honest stores that
// create the table and later write values into every column others added, and strangers (many
// store ids) sending random schemas: every Arrow type the wire can carry, extreme type parameters
// (widths, list sizes, precisions, time zones, nesting), odd names, random field and schema
// metadata at every depth (Lance's own keys among them). Invariants after each step:
//  - a stranger's request is applied or refused InvalidArgument (never a server fault), and a
//    refusal names nothing of the table its request did not bring (columns, types, count);
//  - honest stores' applies succeed, and a Lance query of their rows equals what they sent;
//  - no metadata reaches the table at any depth, and its null row stays within maxRowBytes;
//  - maintenance keeps succeeding (no optimize failure, no failed apply);
//  - the process's memory stays bounded.
// A failing seed names itself: MEMWAL_SINK_SIM_FROM=<seed> MEMWAL_SINK_SIM_SEEDS=1 replays it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rowBytes } from '../src/lance/arrow-check.js';
import { type BodyColumn, craftRequest, nulls, randomData, rowsOf } from '../src/lance/bodies.test-util.js';
import { type ArrowField, type ArrowType, arrow } from '../src/lance/lancedb.js';
import { RESERVED, countFields } from '../src/lance/request.js';
import { LanceSink, STORE_COLUMN } from '../src/lance/sink.js';
import { int, rng } from '../src/testing/rng.js';

const SEEDS = Number(process.env.MEMWAL_SINK_SIM_SEEDS ?? 200);
const FROM = Number(process.env.MEMWAL_SINK_SIM_FROM ?? 1);
/** Seeds run at once (LanceDB works on its own threads; the checks are short). */
const PARALLEL = Number(process.env.MEMWAL_SINK_SIM_PARALLEL ?? 4);
/** Most a process may hold while the suite runs (the sink and its test together). */
const RSS_LIMIT = 1536 * 1024 * 1024;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[int(r, xs.length)]!;

// ------------------------------------------------------------------ generated schemas

const META_KEYS = [
  'lance-encoding:compression',
  'lance-encoding:compression-level',
  'lance-encoding:structural-encoding',
  'lance-encoding:blob',
  'lance-encoding:packed',
  'lance-encoding:dict-divisor',
  'lance-encoding:rle-threshold',
  'lance-encoding:bss',
  'lance-encoding:minichunk-size',
  'ARROW:extension:name',
  'ARROW:extension:metadata',
  'lance-schema:unenforced-primary-key',
  'x-app',
];
const META_VALUES = [
  'bogus',
  'true',
  'false',
  'zstd',
  'lz4',
  'fsst',
  'miniblock',
  'fullzip',
  '-1',
  '0',
  '99999999999',
  'lance.bfloat16',
  'arrow.uuid',
  '',
];

function metadata(r: () => number): Map<string, string> | undefined {
  if (r() < 0.55) return undefined;
  const m = new Map<string, string>();
  for (let i = 1 + int(r, 3); i > 0; i--) {
    m.set(r() < 0.9 ? pick(r, META_KEYS) : `k${int(r, 1e6)}`, r() < 0.9 ? pick(r, META_VALUES) : 'x'.repeat(int(r, 300)));
  }
  return m;
}

const ODD_NAMES = [
  'v_name',
  'v_score',
  'id',
  '_rowid',
  '_memwal_store',
  '_tombstone',
  'a.b',
  'x`y',
  "q'uote",
  'ünï',
  'spa ce',
  '',
  '🦀',
  'x'.repeat(300),
];
const name = (r: () => number): string => (r() < 0.3 ? pick(r, ODD_NAMES) : `c${int(r, 40)}`);

const ZONES = ['UTC', '+05:30', '+0530', 'Europe/Paris', '-00:00', 'bogus', '', 'Z', ':', 'x'.repeat(100)];
const WIDTHS = [1, 2, 16, 1000, 16_385, 65_536, 1 << 20];
const SIZES = [1, 2, 3, 128, 1024, 4097, 1 << 16, 8 << 20];
const PRECISIONS = [0, 1, 10, 38, 39, 76, 77, 255];

function leaf(r: () => number): ArrowType {
  const unit = () => pick(r, [arrow.TimeUnit.SECOND, arrow.TimeUnit.MILLISECOND, arrow.TimeUnit.MICROSECOND, arrow.TimeUnit.NANOSECOND]);
  switch (int(r, 18)) {
    case 0:
      return new arrow.Bool();
    case 1:
      return new arrow.Int(r() < 0.5, pick(r, [8, 16, 32, 64] as const));
    case 2:
      return new arrow.Float(pick(r, [arrow.Precision.HALF, arrow.Precision.SINGLE, arrow.Precision.DOUBLE]));
    case 3:
      return new arrow.Utf8();
    case 4:
      return new arrow.LargeUtf8();
    case 5:
      return new arrow.Binary();
    case 6:
      return new arrow.LargeBinary();
    case 7:
      return r() < 0.5 ? new arrow.DateDay() : new arrow.DateMillisecond();
    case 8:
      return new arrow.Time(unit(), pick(r, [32, 64] as const));
    case 9:
      return new arrow.Timestamp(unit(), pick(r, ZONES) || null);
    case 10:
      return new arrow.Duration(unit());
    case 11: {
      const precision = pick(r, PRECISIONS);
      return new arrow.Decimal(pick(r, [-129, -5, 0, 2, precision, precision + 1]), precision, pick(r, [128, 256, 64]));
    }
    case 12:
      return new arrow.FixedSizeBinary(pick(r, WIDTHS));
    case 13:
      return new arrow.Null();
    case 14:
      return new arrow.IntervalDayTime();
    case 15:
      return new arrow.Map_(
        new arrow.Field(
          'entries',
          new arrow.Struct([new arrow.Field('key', new arrow.Utf8(), false), new arrow.Field('value', new arrow.Int32(), true)] as never),
          false,
        ),
      );
    default:
      return new arrow.Int(true, 32);
  }
}

/** A random type, nested at most `depth` more levels (sometimes past the sink's 16). */
function type(r: () => number, depth: number): ArrowType {
  if (depth <= 0 || r() < 0.55) return leaf(r);
  const child = () => new arrow.Field(r() < 0.8 ? 'item' : name(r), type(r, depth - 1), r() < 0.85, metadata(r));
  switch (int(r, 4)) {
    case 0:
      return new arrow.List(child());
    case 1:
      return new arrow.LargeList(child());
    case 2:
      return new arrow.FixedSizeList(pick(r, SIZES), child());
    default: {
      const n = r() < 0.05 ? 0 : 1 + int(r, 3);
      return new arrow.Struct(Array.from({ length: n }, () => new arrow.Field(name(r), type(r, depth - 1), r() < 0.85, metadata(r))));
    }
  }
}

/** Rows of `data` of `type`, or undefined when the client itself could not build it (too wide, or not buildable). */
function build(t: ArrowType, rows: number, r: () => number): ReturnType<typeof nulls> | undefined {
  if (rowBytes(t) * Math.max(rows, 1) > 4 << 20) return undefined;
  try {
    return r() < 0.6 ? nulls(t, rows) : randomData(t, rows, r);
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------ one seed

interface Honest {
  store: string;
  /** What each of its writes sent: position → rows and columns. */
  sent: Map<number, { table: ReturnType<typeof craftRequest>['table']; columns: string[] }>;
  next: number;
}

const bare = (f: ArrowField): ArrowField => new arrow.Field(f.name, bareType(f.type), f.nullable);
function bareType(t: ArrowType): ArrowType {
  const children: ArrowField[] | undefined = t.children;
  if (!children?.length) return t;
  return Object.assign(Object.create(Object.getPrototypeOf(t)), t, { children: children.map(bare) });
}

/** Whether `message` holds `word` not as part of a longer name (Utf8 is not in LargeUtf8). */
const mentions = (message: string, word: string): boolean =>
  message
    .split(word)
    .some((before, i, parts) => i < parts.length - 1 && !/[A-Za-z0-9_]$/.test(before) && !/^[A-Za-z0-9_]/.test(parts[i + 1]!));

/** Every type string (into `types`) and name (into `names`) of `f` and its nested fields. */
function typeNames(f: ArrowField, types: Set<string>, names: Set<string>): void {
  types.add(String(f.type));
  names.add(f.name);
  for (const c of (f.type.children ?? []) as ArrowField[]) typeNames(c, types, names);
}

async function runSeed(seed: number): Promise<string[]> {
  const r = rng(seed);
  const violations: string[] = [];
  const fail = (what: string) => violations.push(`seed ${seed}: ${what}`);
  const keyed = r() < 0.5;
  const maxRowBytes = pick(r, [16 * 1024, 4096, 64 * 1024]);
  const maxColumns = pick(r, [100, 30, 8]);
  const uri = mkdtempSync(join(tmpdir(), 'memwal-sink-sim-'));
  dirs.push(uri);
  const warnings: string[] = [];
  const sink = new LanceSink({
    uri,
    table: 't',
    ...(keyed ? { primaryKey: ['id'] } : {}),
    maxRowBytes,
    maxColumns,
    optimizeEvery: 1 + int(r, 2),
    logger: { warn: (m: string) => warnings.push(m) },
  });
  let nextId = 0;
  const idColumn = (rows: number): BodyColumn => ({
    field: new arrow.Field('id', new arrow.Int64(), false),
    data: arrow.vectorFromArray(
      Array.from({ length: rows }, () => BigInt(nextId++)),
      new arrow.Int64(),
    ).data[0]!,
  });

  /** An honest store's write of `columns` (besides id); must succeed. */
  const honestWrite = async (h: Honest, extra: ArrowField[]): Promise<void> => {
    const rows = 1 + int(r, 3);
    const columns: BodyColumn[] = [
      idColumn(rows),
      { field: new arrow.Field('v_name', new arrow.Utf8(), true), data: randomData(new arrow.Utf8(), rows, r) },
      { field: new arrow.Field('v_score', new arrow.Float64(), true), data: randomData(new arrow.Float64(), rows, r) },
      ...extra.map((field) => ({ field, data: randomData(field.type, rows, r) })),
    ];
    const position = h.next++;
    const req = craftRequest(columns, rows, position, { keyed });
    try {
      await sink.applyEncoded(h.store, req.meta, req.body);
      h.sent.set(position, { table: req.table, columns: columns.map((c) => c.field.name) });
    } catch (e) {
      fail(
        `honest store ${h.store} (columns ${columns.map((c) => `${c.field.name}: ${c.field.type}`).join(', ')}) was refused: ${(e as Error).message}`,
      );
    }
  };

  const honest: Honest[] = [0, 1].map((k) => ({ store: `honest-${seed}-${k}`, sent: new Map(), next: 1 }));
  await honestWrite(honest[0]!, []);

  // Strangers: 1-3 store ids, 1-2 requests each.
  for (let s = 1 + int(r, 3); s > 0; s--) {
    const store = `stranger-${seed}-${s}`;
    for (let q = r() < 0.25 ? 2 : 1, position = 1; q > 0; q--) {
      const rows = 1 + int(r, 2);
      const columns: BodyColumn[] = [];
      if (!keyed || r() < 0.95) columns.push(idColumn(rows));
      for (let c = 1 + int(r, 3); c > 0; c--) {
        const f = new arrow.Field(name(r), type(r, r() < 0.05 ? 20 : 3), r() < 0.9, metadata(r));
        const data = build(f.type, rows, r);
        if (data) columns.push({ field: f, data });
      }
      const table = await sink.table();
      const before = table ? await table.schema() : undefined;
      let req: ReturnType<typeof craftRequest>;
      try {
        req = craftRequest(columns, rows, position, { keyed, schemaMetadata: metadata(r) });
      } catch {
        continue; // a body the client's own Arrow cannot encode
      }
      try {
        await sink.applyEncoded(store, req.meta, req.body);
        position += 1;
      } catch (e) {
        const err = e as { code?: string; message: string };
        const shape = columns.map((c) => `${JSON.stringify(c.field.name)}: ${c.field.type}`).join(', ');
        if (err.code !== 'InvalidArgument') {
          fail(`a stranger's request (${shape}) failed ${err.code} instead of a refusal: ${err.message.slice(0, 300)}`);
          continue;
        }
        // The refusal speaks of the request only.
        const own = new Set<string>();
        const ownTypes = new Set<string>();
        for (const c of columns) typeNames(c.field, ownTypes, own);
        for (const f of before?.fields ?? []) {
          if (f.name === STORE_COLUMN || f.name.startsWith('_memwal') || f.name === '_tombstone') continue;
          if (!own.has(f.name) && f.name.length > 2 && err.message.includes(f.name))
            fail(`a refusal names the table's column ${f.name}: ${err.message}`);
          if (own.has(f.name) && !ownTypes.has(String(f.type)) && mentions(err.message, String(f.type))) {
            fail(`a refusal names the table's type of ${f.name} (${f.type}): ${err.message}`);
          }
        }
        // Nor the table's column count (nested fields counted), alone or with the request's added
        // (maxColumns + 2: the body's limit, with the drain's own two columns).
        const fields = (fs: ArrowField[]) => fs.filter((f) => !RESERVED.has(f.name)).reduce((n, f) => n + countFields(f), 0);
        const mine = fields(columns.map((c) => c.field));
        const theirs = fields(before?.fields ?? []);
        for (const m of err.message.matchAll(/(\d+) columns/g)) {
          const n = Number(m[1]);
          if (theirs > 0 && n >= theirs && n <= theirs + mine && n !== mine && n !== maxColumns && n !== maxColumns + 2) {
            fail(`a refusal tells the table's column count (${theirs}): ${err.message}`);
          }
        }
      }
    }
  }

  // The second honest store writes into every column the strangers added.
  const table = await sink.table();
  const schema = table ? await table.schema() : undefined;
  const theirs = (schema?.fields ?? []).filter(
    (f) => !['id', 'v_name', 'v_score', STORE_COLUMN, '_memwal_position', '_tombstone'].includes(f.name),
  );
  await honestWrite(honest[1]!, theirs.map(bare));

  // The table: no metadata at any depth; a null row within maxRowBytes.
  if (schema) {
    const keys: string[] = [...schema.metadata.keys()];
    const walk = (f: ArrowField): void => {
      for (const k of f.metadata.keys()) keys.push(`${f.name}: ${k}`);
      for (const c of (f.type.children ?? []) as ArrowField[]) walk(c);
    };
    for (const f of schema.fields) walk(f);
    if (keys.length > 0) fail(`the table holds metadata: ${keys.join(', ')}`);
    const width = schema.fields.reduce((n, f) => n + rowBytes(f.type), 0);
    if (width > maxRowBytes) fail(`a null row of the table takes ${width} bytes, beyond maxRowBytes ${maxRowBytes}`);
  }

  // Honest stores' rows in Lance equal what they sent, write by write.
  const lance = await sink.table();
  for (const h of honest) {
    for (const [position, { table: sent, columns }] of h.sent) {
      try {
        const got = await lance!
          .query()
          .where(`${STORE_COLUMN} = '${h.store}' AND _memwal_position = ${position}`)
          .select(columns)
          .toArrow();
        const want = rowsOf(sent, columns);
        const have = rowsOf(got, columns);
        if (JSON.stringify(have) !== JSON.stringify(want)) {
          fail(
            `${h.store}'s write at ${position} reads back from Lance as ${have.join(' ').slice(0, 300)}, sent ${want.join(' ').slice(0, 300)}`,
          );
        }
      } catch (e) {
        fail(`${h.store}'s rows cannot be read from Lance: ${(e as Error).message.slice(0, 300)}`);
      }
    }
  }

  const stats = sink.stats();
  if (stats.optimizeFailures > 0 || stats.failures > 0) {
    fail(
      `maintenance or an apply failed (${stats.optimizeFailures} optimize failures, ${stats.failures} failures): ${warnings.join(' | ').slice(0, 400)}`,
    );
  }
  const rss = process.memoryUsage().rss;
  if (rss > RSS_LIMIT) fail(`the process holds ${Math.round(rss / 2 ** 20)} MiB`);
  await sink.close();
  rmSync(uri, { recursive: true, force: true });
  return violations;
}

describe('the shared sink under generated abuse', () => {
  it(`seeds ${FROM}..${FROM + SEEDS - 1}: strangers' schemas never touch honest stores' rows, maintenance or memory`, {
    timeout: 0,
  }, async () => {
    const violations: string[] = [];
    const started = performance.now();
    let next = FROM;
    const worker = async () => {
      while (next < FROM + SEEDS && violations.length === 0) {
        const seed = next++;
        violations.push(...(await runSeed(seed)));
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    if (process.env.MEMWAL_SINK_SIM_VERBOSE) console.log(`sink abuse sim: ${SEEDS} seeds in ${Math.round(performance.now() - started)} ms`);
    expect(violations).toEqual([]);
  });
});
