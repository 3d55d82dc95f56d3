// Arrow over the worker boundary: data buffers that round-trip types and batches, and buffers that
// move (transfer) instead of being copied.

import {
  Binary,
  Bool,
  DateDay,
  Decimal,
  Dictionary,
  DurationNanosecond,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float16,
  Float64,
  Int8,
  Int32,
  IntervalDayTime,
  LargeBinary,
  LargeUtf8,
  List,
  Map_,
  RecordBatch,
  Schema,
  SparseUnion,
  Struct,
  Table,
  TimeMicrosecond,
  TimestampNanosecond,
  Uint16,
  Uint64,
  Utf8,
  tableFromArrays,
  tableToIPC,
  vectorFromArray,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { describeSchemaDifference } from '../data/schema.js';
import { decodeArrow, decodeData, decodeTable, encodeArrow, encodeData, schemaFromWire, transfersOf } from './arrow-wire.js';
import { schemaToWire } from './client-wire.js';
import { schema } from './rpc.test-util.js';

const table = (): Table => new Table({ id: vectorFromArray([1, 2, 3], new Int32()), name: vectorFromArray(['a', null, 'c'], new Utf8()) });

function postAndReceive<T>(value: T, transfer: ArrayBuffer[]): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  return new Promise<T>((resolve) => {
    port2.onmessage = (ev) => {
      port1.close();
      port2.close();
      resolve(ev.data as T);
    };
    port1.postMessage(value, transfer);
  });
}

describe('arrow-wire', () => {
  it('a table crosses a MessageChannel as its buffers and comes back with the same rows and types', async () => {
    const t = table();
    const w = encodeArrow(t);
    const received = await postAndReceive(w, transfersOf(w));
    const back = decodeTable(received);
    expect(back.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)).toEqual(
      t.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`),
    );
    expect(back.toArray().map((r) => r.toJSON())).toEqual(t.toArray().map((r) => r.toJSON()));
  });

  it('the buffers are transferred, not copied: the sender side is detached afterwards', async () => {
    const w = encodeArrow(table());
    const buffers = transfersOf(w);
    const sizes = buffers.map((b) => b.byteLength);
    expect(sizes.length).toBeGreaterThan(2);
    const received = await postAndReceive(w, buffers);
    expect(buffers.map((b) => b.byteLength)).toEqual(sizes.map(() => 0));
    expect(transfersOf(received).map((b) => b.byteLength)).toEqual(sizes);
  });

  it("encoding never detaches the caller's own Arrow buffers", async () => {
    const t = table();
    const w = encodeArrow(t);
    await postAndReceive(w, transfersOf(w));
    expect(t.getChild('name')!.get(2)).toBe('c');
  });

  it('a RecordBatch comes back as a RecordBatch, a Table as a Table, rows as rows', () => {
    const t = table();
    expect(decodeArrow(encodeArrow(t.batches[0]!))).toBeInstanceOf(RecordBatch);
    expect(decodeArrow(encodeArrow(t))).toBeInstanceOf(Table);
    const rows = [{ id: 1, name: 'x' }];
    expect(decodeData(encodeData(rows))).toBe(rows);
    expect(transfersOf(encodeData(rows))).toEqual([]);
  });

  it('a zero-row batch survives the round trip', () => {
    const empty = new RecordBatch(schema, undefined as never);
    const back = decodeArrow(encodeArrow(empty)) as RecordBatch;
    expect(back.numRows).toBe(0);
  });

  it('a schema crosses as plain data (no IPC code on the main thread) and comes back equal, every type and metadata kept', () => {
    const entries = new Field('entries', new Struct([new Field('key', new Utf8(), false), new Field('value', new Int32(), true)]), false);
    const all = new Schema(
      [
        new Field('i8', new Int8(), false),
        new Field('u16', new Uint16(), true),
        new Field('u64', new Uint64(), false),
        new Field('f16', new Float16(), true),
        new Field('f64', new Float64(), true),
        new Field('b', new Bool(), true),
        new Field('s', new Utf8(), false, new Map([['unit', 'cm']])),
        new Field('ls', new LargeUtf8(), true),
        new Field('bin', new Binary(), true),
        new Field('lbin', new LargeBinary(), true),
        new Field('fsb', new FixedSizeBinary(16), true),
        new Field('dec', new Decimal(2, 12, 128), true),
        new Field('day', new DateDay(), true),
        new Field('us', new TimeMicrosecond(), true),
        new Field('ts', new TimestampNanosecond('Europe/Paris'), true),
        new Field('iv', new IntervalDayTime(), true),
        new Field('dur', new DurationNanosecond(), true),
        new Field('list', new List(new Field('item', new Int32(), true)), true),
        new Field('fsl', new FixedSizeList(3, new Field('item', new Float64(), false)), true),
        new Field('st', new Struct([new Field('a', new Int32(), true), new Field('b', new Utf8(), true)]), true),
        new Field('map', new Map_(entries, true), true),
        new Field('un', new SparseUnion([0, 5], [new Field('x', new Int32(), true), new Field('y', new Utf8(), true)]), true),
        new Field('dict', new Dictionary(new Utf8(), new Int32(), 7, true), true),
      ],
      new Map([['app', 'todo']]),
    );
    const back = schemaFromWire(structuredClone(schemaToWire(all)));
    expect(describeSchemaDifference(all, back)).toBeUndefined();
    expect(back.fields.map(String)).toEqual(all.fields.map(String));
    expect(back.metadata.get('app')).toBe('todo');
    expect(back.fields[6]!.metadata.get('unit')).toBe('cm');
    // Arrow's own serialisation agrees byte for byte.
    expect(tableToIPC(new Table(back), 'stream')).toEqual(tableToIPC(new Table(all), 'stream'));
  });

  it('dictionary-encoded columns keep their dictionary', () => {
    const t = tableFromArrays({ name: ['x', 'y', 'x'] });
    const back = decodeTable(encodeArrow(t));
    expect(String(back.schema.fields[0]!.type)).toBe(String(t.schema.fields[0]!.type));
    expect(back.getChild('name')!.toArray()).toEqual(['x', 'y', 'x']);
  });

  it('every column type, nulls, several batches and a sliced table come back equal, byte for byte in Arrow IPC', async () => {
    const entries = new Field('entries', new Struct([new Field('key', new Utf8(), false), new Field('value', new Int32(), true)]), false);
    const columns = {
      i8: vectorFromArray([1, null, -3], new Int8()),
      u64: vectorFromArray([1n, 2n, null], new Uint64()),
      f16: vectorFromArray([0.5, null, 2], new Float16()),
      f64: vectorFromArray([1.5, 2.5, null], new Float64()),
      b: vectorFromArray([true, null, false], new Bool()),
      s: vectorFromArray(['a', null, 'ccc'], new Utf8()),
      ls: vectorFromArray(['x', 'yy', null], new LargeUtf8()),
      bin: vectorFromArray([new Uint8Array([1]), null, new Uint8Array([2, 3])], new Binary()),
      lbin: vectorFromArray([null, new Uint8Array([4]), new Uint8Array([])], new LargeBinary()),
      fsb: vectorFromArray([new Uint8Array([1, 2]), new Uint8Array([3, 4]), null], new FixedSizeBinary(2)),
      day: vectorFromArray([new Date(0), null, new Date(86_400_000)], new DateDay()),
      ts: vectorFromArray([1, 2, null], new TimestampNanosecond('Europe/Paris')),
      list: vectorFromArray([[1, 2], null, []], new List(new Field('item', new Int32(), true))),
      fsl: vectorFromArray([[1, 2, 3], [4, 5, 6], null], new FixedSizeList(3, new Field('item', new Float64(), false))),
      st: vectorFromArray(
        [{ a: 1, b: 'p' }, null, { a: null, b: 'q' }],
        new Struct([new Field('a', new Int32(), true), new Field('b', new Utf8(), true)]),
      ),
      map: vectorFromArray([new Map([['k', 1]]), null, new Map()], new Map_(entries, true)),
      dict: vectorFromArray(['x', 'y', 'x'], new Dictionary(new Utf8(), new Int32())),
    };
    const one = new Table(columns);
    const t = new Table([...one.batches, ...one.slice(1, 3).batches]);
    expect(t.batches.length).toBe(2);
    for (const original of [t, t.slice(1, 4), new Table(t.schema)]) {
      const w = encodeArrow(original);
      const back = decodeTable(await postAndReceive(w, transfersOf(w)));
      expect(back.numRows).toBe(original.numRows);
      expect(back.batches.map((b) => b.numRows)).toEqual(original.batches.map((b) => b.numRows));
      // Each decoded batch has a dictionary of its own (the IPC writer would add delta batches): compared by value.
      expect(back.getChild('dict')!.toArray()).toEqual(original.getChild('dict')!.toArray());
      const withoutDict = (x: Table): Table => x.select(Object.keys(columns).filter((c) => c !== 'dict'));
      expect(tableToIPC(withoutDict(back), 'stream')).toEqual(tableToIPC(withoutDict(original), 'stream'));
    }
  });
});
