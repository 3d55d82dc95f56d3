// Test page for e2e/keyed-edges.spec.ts: keyed stores opened with openMemWal (its own worker, its
// I/O worker, OPFS) take puts and deletes of edge keys — Int64 at ±2^53 and ±2^63 and keys that
// differ only in their high bytes; composite keys of empty, non-ASCII, NUL-bearing and long
// shared-prefix strings — with repeats inside one put and across puts, flushes and compactions;
// the page keeps a model of what was acknowledged and reports every key the store gets wrong.

import { Field, Float64, Int32, Int64, Schema, Utf8 } from 'apache-arrow';
import { type MemWalClient, openMemWal } from '../../src/index.js';
import { EDGE_STRINGS, INT64_EDGE_KEYS } from '../../src/io-worker/edge-keys.test-util.js';
import { rng } from '../../src/testing/rng.js';

// Each key once: the model goes by a key's place here.
const INT64_KEYS = [...new Set([...INT64_EDGE_KEYS, ...Array.from({ length: 60 }, (_, i) => BigInt(i - 30))])];
const INT32S = [0, -1, 1, -(2 ** 31), 2 ** 31 - 1];

/** A keyed store of one case: its key values, how a key row is made, and its schema. */
interface Case {
  schema: Schema;
  primaryKey: string[];
  keys: Record<string, unknown>[];
}

const CASES: Record<'int64' | 'composite', Case> = {
  int64: {
    schema: new Schema([new Field('id', new Int64(), false), new Field('v', new Float64(), true)]),
    primaryKey: ['id'],
    keys: INT64_KEYS.map((id) => ({ id })),
  },
  composite: {
    schema: new Schema([new Field('a', new Utf8(), false), new Field('b', new Int32(), false), new Field('v', new Float64(), true)]),
    primaryKey: ['a', 'b'],
    keys: EDGE_STRINGS.flatMap((a) => INT32S.map((b) => ({ a, b }))),
  },
};

let db: MemWalClient | undefined;
let model = new Map<number, number>(); // key's index in its case's `keys` -> the value last acknowledged

/** Every key of `c` whose get differs from the model, and whether the scan lists exactly the model's keys. */
async function check(c: Case): Promise<string[]> {
  const wrong: string[] = [];
  const got = await db!.getMany(c.keys);
  c.keys.forEach((k, i) => {
    const v = (got[i] as { v: number } | undefined)?.v;
    if (v !== model.get(i))
      wrong.push(`get ${JSON.stringify(k, (_, x) => (typeof x === 'bigint' ? `${x}n` : x))}: ${v} against ${model.get(i)}`);
  });
  const scan = await db!.scan();
  if (scan.numRows !== model.size) wrong.push(`scan: ${scan.numRows} rows against ${model.size}`);
  return wrong;
}

const probe = {
  /** Open store `name` of `which`, run a seeded workload, check before and after a flush and compaction; resolves what was wrong and the model. */
  async run(which: keyof typeof CASES, name: string, seed: number): Promise<{ wrong: string[]; model: [number, number][] }> {
    const c = CASES[which];
    db = await openMemWal({ name, schema: c.schema, primaryKey: c.primaryKey, maxMemtableRows: 61 });
    model = new Map();
    const rnd = rng(seed);
    let serial = 0;
    for (let step = 0; step < 60; step++) {
      const r = rnd();
      if (r < 0.65) {
        const rows = Array.from({ length: 1 + Math.floor(rnd() * 30) }, () => {
          const i = Math.floor(rnd() * c.keys.length);
          model.set(i, ++serial);
          return { ...c.keys[i], v: serial };
        });
        await db.put(rows);
      } else if (r < 0.85) {
        const keys = Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => {
          const i = Math.floor(rnd() * c.keys.length);
          model.delete(i);
          return c.keys[i]!;
        });
        await db.delete(keys);
      } else {
        await db.forceSealActive();
        await db.waitForFlushDrain();
        if (r > 0.95) await db.compact();
      }
    }
    const wrong = await check(c);
    await db.forceSealActive();
    await db.waitForFlushDrain();
    await db.compact();
    wrong.push(...(await check(c)).map((w) => `after compaction: ${w}`));
    if ((await db.writeStats()).flushCount === 0) wrong.push('no flush ran');
    await db.close();
    return { wrong, model: [...model] };
  },
  /** Reopen store `name` of `which` and check it against `acked` (a run's model). */
  async reopen(which: keyof typeof CASES, name: string, acked: [number, number][]): Promise<string[]> {
    const c = CASES[which];
    model = new Map(acked);
    db = await openMemWal({ name, schema: c.schema, primaryKey: c.primaryKey });
    const wrong = await check(c);
    await db.close();
    return wrong;
  },
};

(window as unknown as { keyedEdges: typeof probe }).keyedEdges = probe;
