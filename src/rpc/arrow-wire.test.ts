// Arrow over the worker boundary: IPC bytes that round-trip types and batches, and buffers that
// move (transfer) instead of being copied.

import { RecordBatch, Table, tableFromArrays, vectorFromArray, Utf8, Int32 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { decodeArrow, decodeData, decodeSchema, decodeTable, encodeArrow, encodeData, encodeSchema, transfersOf } from './arrow-wire.js';
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

  it('a zero-row batch and a schema survive the round trip', () => {
    const empty = new RecordBatch(schema, undefined as never);
    const back = decodeArrow(encodeArrow(empty)) as RecordBatch;
    expect(back.numRows).toBe(0);
    const s = decodeSchema(encodeSchema(schema));
    expect(s.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)).toEqual(['id:Int32:false', 'name:Utf8:true']);
  });

  it('dictionary-encoded columns keep their dictionary', () => {
    const t = tableFromArrays({ name: ['x', 'y', 'x'] });
    const back = decodeTable(encodeArrow(t));
    expect(String(back.schema.fields[0]!.type)).toBe(String(t.schema.fields[0]!.type));
    expect(back.getChild('name')!.toArray()).toEqual(['x', 'y', 'x']);
  });
});
