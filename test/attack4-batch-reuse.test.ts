// attack4 (issue 23, outside tester): in-process (`MemWal.put`, memwal/worker, Node), a
// RecordBatch put is kept as views onto the app's own buffers (a batch that uses at least half of
// them is not copied). An app that reuses its batch's memory once the put resolved changes the
// acknowledged rows: reads before the flush see the new bytes, a flush built from the memtable
// writes them to the table file for good, while a crash before the flush would have recovered the
// originals from the WAL. What a put stored must not depend on what the app does afterwards, or
// on when the flush ran. Not fixed (fails): a copy on put costs ingest speed (issue 23); the
// alternative is a documented contract that the batch must not be modified after put.

import { Field, Int32, RecordBatch, Schema, Table, Utf8, vectorFromArray } from 'apache-arrow';
import { expect, it } from 'vitest';
import { MemWal, MemoryStorage } from '../src/index.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('name', new Utf8(), true)]);
const quiet = { warn: () => undefined };

function batch(n: number): RecordBatch {
  const ids = Array.from({ length: n }, (_, i) => i);
  const t = new Table({
    id: vectorFromArray(ids, new Int32()),
    name: vectorFromArray(
      ids.map((i) => `n${i}`),
      new Utf8(),
    ),
  });
  return new RecordBatch(schema, t.batches[0]!.data) as RecordBatch;
}

/** Overwrite every buffer of `b`, as an app reusing its memory would. */
function reuse(b: RecordBatch): void {
  for (const c of b.data.children) {
    if (c.values) new Uint8Array(c.values.buffer, c.values.byteOffset, c.values.byteLength).fill(0x41);
  }
}

for (const primaryKey of [[], ['id']])
  it(`a RecordBatch the app reuses once its put resolved: the rows read back as put, before and after a flush and a reopen (${primaryKey.length ? 'keyed' : 'append-only'})`, async () => {
    const storage = new MemoryStorage();
    const opts = { name: 'reuse', schema, primaryKey, storage, logger: quiet };
    const db = await MemWal.open(opts);
    const b = batch(64);
    await db.put(b);
    reuse(b);
    const names = async (w: MemWal) => [...(await w.scan()).getChild('name')!.toArray()].sort();
    const put = Array.from({ length: 64 }, (_, i) => `n${i}`).sort();
    expect.soft(await names(db), 'before the flush').toEqual(put);
    await db.forceSealActive();
    await db.waitForFlushDrain();
    expect.soft(await names(db), 'flushed').toEqual(put);
    await db.close();
    const again = await MemWal.open(opts);
    expect.soft(await names(again), 'reopened').toEqual(put);
    await again.close();
  });
