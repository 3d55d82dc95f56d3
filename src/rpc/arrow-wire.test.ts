// Arrow over the worker boundary: IPC bytes that round-trip types and batches, and buffers that
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
  it('a table crosses a MessageChannel as IPC bytes and comes back with the same rows and types', async () => {
    const t = table();
    const w = encodeArrow(t);
    const received = await postAndReceive(w, transfersOf(w));
    const back = decodeTable(received);
    expect(back.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)).toEqual(
      t.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`),
    );
    expect(back.toArray().map((r) => r.toJSON())).toEqual(t.toArray().map((r) => r.toJSON()));
  });

  it('the IPC buffer is transferred, not copied: the sender side is detached afterwards', async () => {
    const w = encodeArrow(table());
    const buffer = w.ipc.buffer;
    const size = buffer.byteLength;
    expect(size).toBeGreaterThan(0);
    const received = await postAndReceive(w, transfersOf(w));
    expect(buffer.byteLength).toBe(0);
    expect(received.ipc.byteLength).toBe(size);
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
});
