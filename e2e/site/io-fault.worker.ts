// An engine worker whose store's I/O worker (io-fault-io.worker.ts) a test can make die or hang.
// Dedicated module worker.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import * as Comlink from 'comlink';
import { MemWal, type MemWalError } from '../../src/index.js';
import { RemoteStorage } from '../../src/io-worker/remote-storage.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('payload', new Utf8(), true)]);
let io: Worker | undefined;
let db: MemWal | undefined;
const warnings: string[] = [];

const storage = new RemoteStorage('opfs', () => {
  io = new Worker(new URL('./io-fault-io.worker.ts', import.meta.url), { type: 'module' });
  return io as never;
});

const api = {
  async open(name: string): Promise<void> {
    db = await MemWal.open({
      name,
      schema,
      primaryKey: ['id'],
      storage,
      walRetry: { baseMs: 10, maxMs: 50, timeoutMs: 1000 },
      logger: { warn: (m: string) => void warnings.push(m) },
    });
  },
  /** Puts rows `from..from+n` one put each; resolves the ids acknowledged and the first error. */
  async put(from: number, n: number): Promise<{ acked: number[]; error?: string }> {
    const acked: number[] = [];
    for (let i = from; i < from + n; i++) {
      try {
        await db!.put([{ id: i, payload: `row ${i}` }]);
        acked.push(i);
      } catch (e) {
        return { acked, error: `${(e as MemWalError).code}: ${(e as Error).message}` };
      }
    }
    return { acked };
  },
  /** One put of rows `from..from+n` with payload `${tag}${id}`. */
  async putBatch(from: number, n: number, tag: string): Promise<void> {
    await db!.put(Array.from({ length: n }, (_, i) => ({ id: from + i, payload: `${tag}${from + i}` })));
  },
  async del(ids: number[]): Promise<void> {
    await db!.delete(ids.map((id) => ({ id })));
  },
  /** Seal the active memtable and wait until every frozen one is flushed; resolves the flush count. */
  async flush(): Promise<number> {
    await db!.forceSealActive();
    await db!.waitForFlushDrain();
    return (await db!.writeStats()).flushCount;
  },
  /** Every row as `id=payload`, in scan order. */
  async rows(): Promise<string[]> {
    const t = await db!.scan();
    const ids = t.getChild('id')!.toArray() as Int32Array;
    const payloads = t.getChild('payload')!.toArray() as string[];
    return Array.from(ids, (id, i) => `${id}=${payloads[i]}`);
  },
  state: () => db!.writerState,
  async ids(): Promise<number[]> {
    return Array.from((await db!.scan()).getChild('id')!.toArray() as Int32Array);
  },
  /** Make the I/O worker throw (it dies) or spin for ever (it hangs). */
  io(what: 'throw' | 'hang'): void {
    io!.postMessage({ control: what });
  },
  async close(): Promise<string> {
    const started = Date.now();
    await db!.close().catch(() => undefined);
    return `${Date.now() - started}`;
  },
};

export type IoFaultWorkerApi = typeof api;
Comlink.expose(api);
