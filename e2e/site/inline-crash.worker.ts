// An engine worker on OPFS with no I/O worker (OpfsStorage on its own thread): `storm` puts batch
// after batch from put `from` on — put i writes ids 10i..10i+9 and overwrites id -1 with i — announcing each
// acknowledged put on a BroadcastChannel; `rows` reopens the store and answers every row.
// Dedicated module worker.

import { Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { MemWal } from '../../src/index.js';
import { OpfsStorage } from '../../src/storage/opfs.js';

const schema = new Schema([new Field('id', new Int64(), false), new Field('payload', new Utf8(), true)]);
const storage = new OpfsStorage();
const open = (name: string): Promise<MemWal> =>
  MemWal.open({ name, schema, primaryKey: ['id'], storage, maxMemtableBytes: 64 * 1024, logger: { warn: () => undefined } });

self.onmessage = async (ev: MessageEvent) => {
  const { cmd, name, from } = ev.data as { cmd: 'storm' | 'rows'; name: string; from: number };
  try {
    const db = await open(name);
    if (cmd === 'rows') {
      const t = await db.scan();
      const ids = t.getChild('id')!.toArray() as BigInt64Array;
      const payloads = t.getChild('payload')!.toArray() as string[];
      await db.close();
      self.postMessage({ rows: Array.from(ids, (id, i) => [String(id), payloads[i]!]) });
      return;
    }
    self.postMessage({ opened: true });
    const acks = new BroadcastChannel('inline-crash');
    const pad = 'x'.repeat(200);
    for (let i = from; ; i++) {
      const rows = Array.from({ length: 10 }, (_, k) => ({ id: BigInt(i * 10 + k), payload: `${i}:${pad}` }));
      rows.push({ id: -1n, payload: `${i}` });
      await db.put(rows);
      acks.postMessage({ acked: i });
    }
  } catch (e) {
    self.postMessage({ error: String(e) });
  }
};
