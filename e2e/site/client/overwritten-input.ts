// Outside tester (issue 23): puts from the page through memwal's default worker and its
// I/O worker (OPFS), compared exactly after a flush and a reopen: sliced batches with offsets and
// nulls that the app overwrites as soon as each put resolves, plain rows whose Uint8Arrays and
// objects it overwrites, and a close right after a seal. Loaded by e2e/client-overwritten-input.spec.ts.

import { Binary, Bool, Field, Float64, Int32, RecordBatch, Schema, Table, Utf8, vectorFromArray } from 'apache-arrow';
import { destroyMemWal } from '../../../src/rpc/destroy.js';
import { openMemWal } from '../../../src/rpc/open-memwal.js';

const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('name', new Utf8(), true),
  new Field('x', new Float64(), true),
  new Field('b', new Bool(), true),
  new Field('bin', new Binary(), true),
]);

type Row = { id: number; name: string | null; x: number | null; b: boolean | null; bin: number[] | null };

function batch(n: number, from: number): RecordBatch {
  const ids = Array.from({ length: n }, (_, i) => from + i);
  const t = new Table({
    id: vectorFromArray(ids, new Int32()),
    name: vectorFromArray(
      ids.map((i) => (i % 3 === 0 ? null : `n${i}-${'é😀'.repeat(i % 4)}`)),
      new Utf8(),
    ),
    x: vectorFromArray(
      ids.map((i) => (i % 5 === 0 ? null : i === 7 ? -0 : i * 1.25)),
      new Float64(),
    ),
    b: vectorFromArray(
      ids.map((i) => (i % 7 === 0 ? null : i % 2 === 0)),
      new Bool(),
    ),
    bin: vectorFromArray(
      ids.map((i) => (i % 4 === 0 ? null : Uint8Array.from({ length: i % 6 }, (_, k) => (i + k) & 255))),
      new Binary(),
    ),
  });
  return new RecordBatch(schema, t.batches[0]!.data) as RecordBatch;
}

const plain = (t: Table): Row[] =>
  t.toArray().map((r) => {
    const o = r.toJSON() as Row & { bin: Uint8Array | null; x: number | null };
    return { ...o, x: Object.is(o.x, -0) ? ('-0' as unknown as number) : o.x, bin: o.bin == null ? null : [...o.bin] };
  });

/** Overwrite every buffer of `b` (values, validity, offsets), as an app reusing its memory would. */
function scribble(b: RecordBatch): void {
  for (const c of b.data.children) {
    if (c.values) new Uint8Array(c.values.buffer, c.values.byteOffset, c.values.byteLength).fill(0xee);
    if (c.nullBitmap) c.nullBitmap.fill(0);
    if (c.valueOffsets) (c.valueOffsets as Int32Array).fill(0);
  }
}

async function run(name: string, primaryKey: string[]): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  let db = await openMemWal({ name, schema, primaryKey });
  const expected: Row[] = [];
  const full = batch(20_000, 0);
  const inner = full.slice(1, 19_999);
  for (const [off, len] of [
    [2, 9_001],
    [9_003, 1],
    [9_004, 0],
    [9_004, 5_555],
    [14_559, 5_439],
  ] as const) {
    const sl = inner.slice(off, off + len) as RecordBatch;
    const before = plain(new Table([sl]));
    await db.put(sl);
    expected.push(...before);
    scribble(sl);
  }
  // Plain rows the page builds; the app overwrites their bytes and objects once the put resolved.
  const rows = Array.from({ length: 3_000 }, (_, i) => ({
    id: 100_000 + i,
    name: i % 3 === 0 ? null : `p${i}\u0000é`,
    x: i % 5 === 0 ? null : i === 7 ? -0 : i / 3,
    b: i % 7 === 0 ? null : i % 2 === 0,
    bin: i % 4 === 0 ? null : Uint8Array.from({ length: i % 9 }, (_, k) => (i * 7 + k) & 255),
  }));
  const rowsExpected: Row[] = rows.map((r) => ({
    ...r,
    x: Object.is(r.x, -0) ? ('-0' as unknown as number) : r.x,
    bin: r.bin == null ? null : [...r.bin],
  }));
  await db.put(rows);
  expected.push(...rowsExpected);
  for (const r of rows) {
    r.bin?.fill(0xee);
    r.name = 'changed';
    r.id = -1;
  }
  const sortRows = (a: Row[]) => [...a].sort((p, q) => p.id - q.id);
  const exp = sortRows(expected);
  const check = async (when: string): Promise<void> => {
    const got = sortRows(plain(await db.scan()));
    if (got.length !== exp.length) problems.push(`${when}: ${got.length} rows, expected ${exp.length}`);
    for (let i = 0, shown = 0; i < Math.min(got.length, exp.length) && shown < 5; i++) {
      if (JSON.stringify(got[i]) !== JSON.stringify(exp[i])) {
        problems.push(`${when}: row ${i}: ${JSON.stringify(got[i])} != ${JSON.stringify(exp[i])}`);
        shown++;
      }
    }
  };
  await check('memtable');
  await db.forceSealActive();
  await db.waitForFlushDrain();
  await check('flushed');
  await db.close();
  db = await openMemWal({ name, schema, primaryKey });
  await check('reopened');
  // A close right after a seal (the flush in the I/O worker under way), then a reopen.
  await db.put(batch(5_000, 200_000));
  exp.push(...plain(new Table([batch(5_000, 200_000)])));
  exp.sort((p, q) => p.id - q.id);
  void db.forceSealActive();
  await db.close();
  db = await openMemWal({ name, schema, primaryKey });
  await check('closed during a flush, reopened');
  await db.close();
  await destroyMemWal(name);
  return problems;
}

(window as unknown as { overwrittenInput: typeof run }).overwrittenInput = run;
