// Outside tester: Arrow input whose buffers do not hold what its Data says (offsets past
// the values, decreasing offsets, values shorter than the rows, null counts the bitmap does not
// hold), put through the public API (MemWal on NodeFileStorage) — what a buggy page's put of an
// Arrow batch hands the worker too (the client sends an Arrow batch's buffers as they are). The
// put must be refused InvalidArgument with nothing written, or written so that the store stays
// whole: a flush, a close and a reopen succeed, and every earlier row reads back.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Binary,
  Bool,
  Data,
  Field,
  Float64,
  Int32,
  Int64,
  LargeUtf8,
  List,
  RecordBatch,
  Schema,
  Struct,
  Utf8,
  makeData,
} from 'apache-arrow';
import { afterAll, expect, it } from 'vitest';
import { MemWal } from '../src/index.js';
import { NodeFileStorage } from '../src/node.js';

const root = mkdtempSync(join(tmpdir(), 'memwal-malformed-arrow-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const quiet = { warn: () => {} };

const schema = new Schema([
  new Field('id', new Int32(), false),
  new Field('s', new Utf8(), true),
  new Field('b', new Binary(), true),
  new Field('v', new Float64(), true),
  new Field('ok', new Bool(), true),
  new Field('ls', new LargeUtf8(), true),
  new Field('n', new Int64(), true),
]);

const enc = new TextEncoder();

/** Buffers of a good 3-row batch (ids `base`..`base+2`), per column: [offsets, values, bitmap, nullCount]. */
function goodColumns(
  base: number,
): Record<'id' | 's' | 'b' | 'v' | 'ok' | 'ls' | 'n', [ArrayBufferView | undefined, ArrayBufferView, Uint8Array | undefined, number]> {
  const s = enc.encode('abé€');
  return {
    id: [undefined, new Int32Array([base, base + 1, base + 2]), undefined, 0],
    s: [new Int32Array([0, 2, 2, s.length]), s, undefined, 0],
    b: [new Int32Array([0, 1, 1, 3]), new Uint8Array([9, 8, 7]), new Uint8Array([0b101]), 1],
    v: [undefined, new Float64Array([0.5, 1.5, 2.5]), undefined, 0],
    ok: [undefined, new Uint8Array([0b011]), undefined, 0],
    ls: [new BigInt64Array([0n, 1n, 2n, 3n]), enc.encode('xyz'), undefined, 0],
    n: [undefined, new BigInt64Array([1n, -1n, 2n ** 62n]), undefined, 0],
  };
}

function batchOf(cols: ReturnType<typeof goodColumns>, length = 3): RecordBatch {
  const children = schema.fields.map((f) => {
    const [offsets, values, bitmap, nullCount] = cols[f.name as keyof typeof cols];
    return new Data(f.type, 0, length, nullCount, [offsets, values, bitmap] as never);
  });
  return new RecordBatch(
    schema,
    new Data(new Struct(schema.fields), 0, length, 0, [undefined, undefined, undefined] as never, children) as never,
  );
}

const CASES: [string, (c: ReturnType<typeof goodColumns>) => void][] = [
  ['Utf8 offsets past the values', (c) => void (c.s[0] = new Int32Array([0, 2, 2, 4000]))],
  ['Utf8 offsets decreasing', (c) => void (c.s[0] = new Int32Array([0, 5, 2, 7]))],
  ['Utf8 offsets starting past 0', (c) => void (c.s[0] = new Int32Array([3, 3, 5, 7]))],
  ['Utf8 offsets negative', (c) => void (c.s[0] = new Int32Array([0, -5, 2, 7]))],
  ['Binary offsets past the values', (c) => void (c.b[0] = new Int32Array([0, 1, 1, 1000]))],
  ['LargeUtf8 offsets past the values', (c) => void (c.ls[0] = new BigInt64Array([0n, 1n, 2n, 2n ** 40n]))],
  ['Float64 values shorter than the rows', (c) => void (c.v[1] = new Float64Array([0.5]))],
  ['Int64 values shorter than the rows', (c) => void (c.n[1] = new BigInt64Array(1))],
  ['Int32 key values shorter than the rows', (c) => void (c.id[1] = new Int32Array([10]))],
  ['Bool values empty', (c) => void (c.ok[1] = new Uint8Array(0))],
  ['a null count of 0 over a bitmap with a null', (c) => void (c.b[3] = 0)],
  ['a null count of 2 over a bitmap with one null', (c) => void (c.b[3] = 2)],
  ['a null count of 1 without a bitmap', (c) => void (c.v[3] = 1)],
  ['a bitmap of no bytes with a null count', (c) => ((c.b[2] = new Uint8Array(0)), void 0)],
  ['a null count of 1 without a bitmap, in a Utf8 column', (c) => void (c.s[3] = 1)],
  ['Float64 values missing', (c) => void (c.v[1] = undefined as never)],
  ['Utf8 values missing', (c) => void (c.s[1] = undefined as never)],
  ['Utf8 offsets missing', (c) => void (c.s[0] = undefined)],
  ['LargeUtf8 offsets missing', (c) => void (c.ls[0] = undefined)],
];

it('malformed Arrow batches: refused InvalidArgument or written, never a poisoned writer; the next put lands; the store whole after a WAL replay and after a flush and reopen', async () => {
  const storage = new NodeFileStorage(root);
  const outcomes: string[] = [];
  const problems: string[] = [];
  for (const [k, [what, spoil]] of CASES.entries()) {
    const o = { name: `bad-${k}`, schema, primaryKey: ['id'], storage, logger: quiet };
    let db = await MemWal.open(o);
    await db.put(batchOf(goodColumns(0)));
    const cols = goodColumns(10);
    spoil(cols);
    const r = await db.put(batchOf(cols)).then(
      () => 'accepted',
      (e: { code?: string; message?: string }) => `${e.code ?? 'thrown'}: ${e.message ?? String(e)}`.slice(0, 200),
    );
    outcomes.push(`${what}: ${r}`);
    const next = await db.put(batchOf(goodColumns(20))).then(
      () => 'ok',
      (e: { code?: string }) => e.code ?? String(e),
    );
    if (next !== 'ok' || db.writerState !== 'open') problems.push(`${what}: the next put ${next}, writer ${db.writerState}`);
    const after = async (when: string): Promise<void> => {
      try {
        const ids = [...(await db.scan()).getChild('id')!.toArray()];
        for (const id of [0, 1, 2, 20, 21, 22]) if (!ids.includes(id)) problems.push(`${what}, ${when}: row ${id} lost (${ids.join(',')})`);
        if (r !== 'accepted' && ids.length !== 6) problems.push(`${what}, ${when}: refused yet ${ids.length} rows`);
      } catch (e) {
        problems.push(`${what}, ${when}: scan ${String(e).slice(0, 160)}`);
      }
    };
    // Left in the WAL (abort), replayed by the next open; then flushed, closed and reopened.
    await db.abort();
    db = await MemWal.open(o);
    await after('replayed');
    await db.forceSealActive();
    await db.waitForFlushDrain();
    await db.close();
    db = await MemWal.open(o);
    await after('flushed and reopened');
    await db.close();
  }
  expect(problems).toEqual([]);
  expect(outcomes.filter((o) => !o.endsWith(': accepted') && !o.includes(': InvalidArgument: '))).toEqual([]);
  // What a writer cannot encode is refused before admission.
  expect(outcomes.filter((o) => /without a bitmap|values missing|offsets missing/.test(o) && !o.includes('InvalidArgument'))).toEqual([]);
  // Values too short for the rows read as 0 past their end (a key column so read overwrote the row
  // of key 0): refused too.
  expect(outcomes.filter((o) => /shorter than the rows|Bool values empty/.test(o) && !o.includes('InvalidArgument'))).toEqual([]);
});

it("columns of nulls as apache-arrow's makeData gives them (no value offsets, no list child values) are taken and read back null, after a WAL replay too", async () => {
  const s2 = new Schema([
    new Field('id', new Int32(), false),
    new Field('s', new Utf8(), true),
    new Field('v', new Float64(), true),
    new Field('l', new List(new Field('item', new Int32(), true)), true),
  ]);
  const o = { name: 'all-null-makedata', schema: s2, primaryKey: ['id'], storage: new NodeFileStorage(root), logger: quiet };
  let db = await MemWal.open(o);
  const bitmap = new Uint8Array(1);
  const children = [
    makeData({ type: new Int32(), length: 2, data: new Int32Array([1, 2]) }),
    makeData({ type: new Utf8(), length: 2, nullCount: 2, nullBitmap: bitmap }),
    makeData({ type: new Float64(), length: 2, nullCount: 2, nullBitmap: bitmap }),
    makeData({
      type: s2.fields[3]!.type as List<Int32>,
      length: 2,
      nullCount: 2,
      nullBitmap: bitmap,
      child: makeData({ type: new Int32(), length: 0 }),
    } as never),
  ];
  await db.put(new RecordBatch(s2, makeData({ type: new Struct(s2.fields), length: 2, nullCount: 0, children })));
  await db.abort();
  db = await MemWal.open(o);
  expect((await db.scan()).toArray().map((r) => r.toJSON())).toEqual([
    { id: 1, s: null, v: null, l: null },
    { id: 2, s: null, v: null, l: null },
  ]);
  await db.close();
});
