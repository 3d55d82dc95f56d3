// Test page for e2e/lance-drain.spec.ts: a browser store (openMemWal: its own worker, OPFS)
// drains into the example Lance server over fetch while the page writes to it.

import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { type DrainHandle, type MemWalClient, drain, openMemWal } from '../../src/index.js';

/** The example Durable Object's schema (examples/cloudflare/api.ts), so both drain into one table. */
const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('note', new Utf8(), true),
]);

let db: MemWalClient | undefined;
let handle: DrainHandle | undefined;

/** A seeded generator (mulberry32), so a run can be repeated. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const probe = {
  /** Open the store (its own worker, default layout) and start draining it to `endpoint`. */
  async start(name: string, endpoint: string, token: string): Promise<void> {
    db = await openMemWal({ name, schema, primaryKey: ['id'], maxMemtableBytes: 256 * 1024 });
    handle = drain(db, { endpoint, token, batchBytes: 32 * 1024, retry: { baseMs: 20, maxMs: 500 } });
  },
  /** `ops` random puts (new ids and overwrites) and deletes over `keys` ids. */
  async write(seed: number, ops: number, keys: number): Promise<void> {
    const r = rng(seed);
    for (let i = 0; i < ops; i++) {
      if (r() < 0.2) {
        await db!.delete(Array.from({ length: 1 + Math.floor(r() * 5) }, () => ({ id: Math.floor(r() * keys) })));
      } else {
        const rows = Array.from({ length: 1 + Math.floor(r() * 40) }, () => ({
          id: Math.floor(r() * keys),
          value: r() < 0.1 ? null : Math.round(r() * 1e6) / 100,
          note: r() < 0.1 ? null : `tab-${Math.floor(r() * 1e6)}`,
        }));
        await db!.put(rows);
      }
    }
  },
  /** Sync, then wait until the server has applied everything: the drained position. */
  async drained(): Promise<number> {
    const { position } = await db!.sync();
    await handle!.waitForApplied(position);
    return position;
  },
  /** scan() rows in the model check's form: sorted JSON of [id, value, note]. */
  async scan(): Promise<string[]> {
    const t = await db!.scan();
    const cols = ['id', 'value', 'note'].map((c) => t.getChild(c)!);
    const out: string[] = [];
    for (let i = 0; i < t.numRows; i++) {
      out.push(
        JSON.stringify(
          cols.map((c) => {
            const v = c.get(i);
            return typeof v === 'bigint' ? v.toString() : (v ?? null);
          }),
        ),
      );
    }
    return out.sort();
  },
  stats: () => handle!.drainStats(),
  metrics: () => handle!.metrics(),
  async close(): Promise<void> {
    await handle?.stop();
    await db?.close();
  },
};

(window as unknown as { drainProbe: typeof probe }).drainProbe = probe;
