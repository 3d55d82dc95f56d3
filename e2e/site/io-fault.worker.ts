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
let burst: { stop: boolean; answered: number; wrong: string[]; errors: string[]; done: Promise<void> } | undefined;

const storage = new RemoteStorage('opfs', () => {
  io = new Worker(new URL('./io-fault-io.worker.ts', import.meta.url), { type: 'module' });
  return io as never;
});
/** The table reads this engine worker sent to its I/O worker (the rest ran on its own handles). */
let ioTableReads = 0;
const send = storage.send.bind(storage) as (op: string, ...args: unknown[]) => Promise<unknown>;
(storage as unknown as { send: typeof send }).send = (op, ...args) => {
  if (op === 'tableRead' || op === 'tableReadRange') ioTableReads++;
  return send(op, ...args);
};

const api = {
  async open(name: string, options: { steal?: boolean; maxMemtableRows?: number } = {}): Promise<void> {
    db = await MemWal.open({
      name,
      schema,
      primaryKey: ['id'],
      storage,
      ...options,
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
  /** The payloads of `ids` (null: not found). */
  async get(ids: number[]): Promise<(string | null)[]> {
    const out: (string | null)[] = [];
    for (const id of ids) out.push(((await db!.get({ id })) as { payload: string } | undefined)?.payload ?? null);
    return out;
  },
  async compact(): Promise<void> {
    await db!.compact();
  },
  /** The table files the manifest names. */
  async manifestTables(): Promise<string[]> {
    const manifest = (await (
      db as unknown as { handle: { manifestLoad(): Promise<{ tables: { name: string }[] }> } }
    ).handle.manifestLoad())!;
    return manifest.tables.map((t) => t.name).sort();
  },
  /** The files in store `name`'s `tables/` directory (null: the store's directory is gone). */
  async tableFiles(name: string): Promise<string[] | null> {
    try {
      const root = await navigator.storage.getDirectory();
      const tables = await (await (await root.getDirectoryHandle('memwal')).getDirectoryHandle(name)).getDirectoryHandle('tables');
      const names: string[] = [];
      for await (const n of (tables as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(n);
      return names.sort();
    } catch {
      return null;
    }
  },
  async destroy(name: string): Promise<string> {
    return MemWal.destroy(name, { storage }).then(
      () => 'destroyed',
      (e: MemWalError) => `${e.code}: ${e.message}`,
    );
  },
  /**
   * Starts gets of ids `0..n-1` in a loop, `parallel` at a time, until `stopGets`; each answer is
   * checked against `tag` (a payload `${tag}${id}`).
   */
  startGets(n: number, parallel: number, tag: string): void {
    burst = { stop: false, answered: 0, wrong: [], errors: [], done: Promise.resolve() };
    const b = burst;
    const loop = async (lane: number): Promise<void> => {
      for (let i = lane; !b.stop; i = (i + parallel) % n) {
        try {
          const got = ((await db!.get({ id: i })) as { payload: string } | undefined)?.payload;
          if (got !== `${tag}${i}`) b.wrong.push(`${i}=${got}`);
          b.answered++;
        } catch (e) {
          b.errors.push(`${(e as MemWalError).code}: ${(e as Error).message}`);
          return;
        }
      }
    };
    b.done = Promise.all(Array.from({ length: parallel }, (_, lane) => loop(lane))).then(() => undefined);
  },
  /** How many gets of the running burst answered so far. */
  answered: () => burst?.answered ?? 0,
  /** Stops the burst; resolves its answers, wrong answers and errors once every get settled. */
  async stopGets(): Promise<{ answered: number; wrong: string[]; errors: string[] }> {
    const b = burst!;
    b.stop = true;
    await b.done;
    return { answered: b.answered, wrong: b.wrong.slice(0, 10), errors: [...new Set(b.errors)] };
  },
  ioTableReads: () => ioTableReads,
  warnings: () => warnings,
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
