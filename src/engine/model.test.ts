// Model-based randomized test of the store lifecycle: puts, overwrites, deletes, seals, compactions,
// reopens and crashes in random order, with `get`, `scan` and paged `scanBatches` checked against an in-memory model
// after every step (acknowledged operations only; a crash may keep or drop the unacknowledged).

import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { int, rng } from '../testing/rng.js';
import { MemWal } from './memwal.js';
import { schema } from './testkit.test-util.js';

const SEEDS = Number(process.env.MEMWAL_MODEL_SEEDS ?? 16);
const STEPS = 60;
const KEYS = 400;
const quiet = { warn: () => undefined };

type Model = Map<number, string>;

function options(storage: FaultInjectingStorage, name: string, keyed: boolean) {
  return {
    name,
    schema,
    primaryKey: keyed ? ['id'] : [],
    storage,
    maxMemtableRows: 150,
    flushRetry: { baseMs: 1, maxMs: 5 },
    logger: quiet,
  };
}

async function check(w: MemWal, model: Model | string[], keyed: boolean, r: () => number, where: string): Promise<void> {
  const t = await w.scan();
  if (keyed) {
    const m = model as Model;
    const ids = Array.from(t.getChild('id')!.toArray(), Number);
    const expected = [...m.keys()].sort((a, b) => a - b);
    expect(ids, `${where}: scan keys`).toEqual(expected);
    const names = t.getChild('name')!.toArray() as string[];
    for (let i = 0; i < ids.length; i++) expect(names[i], `${where}: scan of ${ids[i]}`).toBe(m.get(ids[i]!));
    // Paged with `after`: the pages, end to end, are the scan; a start at any key, present or not.
    const page = 1 + int(r, 90);
    const paged: number[] = [];
    for (let after: number | undefined; ; ) {
      let n = 0;
      for await (const b of w.scanBatches({ columns: ['id'], limit: page, ...(after === undefined ? {} : { after: { id: after } }) })) {
        for (const id of b.getChild('id')!.toArray()) paged.push(Number(id));
        n += b.numRows;
      }
      if (n < page) break;
      after = paged[paged.length - 1]!;
    }
    expect(paged, `${where}: scan paged by ${page} with after`).toEqual(expected);
    const from = int(r, KEYS + 20) - 10;
    const tail: number[] = [];
    for await (const b of w.scanBatches({ columns: ['id'], after: { id: from } }))
      tail.push(...Array.from(b.getChild('id')!.toArray(), Number));
    expect(tail, `${where}: scan after ${from}`).toEqual(expected.filter((id) => id > from));
    for (let k = 0; k < 20; k++) {
      const id = int(r, KEYS + 20);
      const got = await w.get({ id });
      expect(got?.name, `${where}: get ${id}`).toBe(m.get(id));
    }
  } else {
    expect(t.getChild('name')!.toArray() as string[], `${where}: scan`).toEqual(model as string[]);
  }
}

async function runSeed(seed: number): Promise<{ compactions: number; crashes: number }> {
  const r = rng(seed);
  const keyed = seed % 4 !== 3;
  const storage = new FaultInjectingStorage(new MemoryStorage(), { seed });
  const name = `model-${seed}`;
  let w = await MemWal.open(options(storage, name, keyed));
  const model: Model | string[] = keyed ? new Map() : [];
  let compactions = 0;
  let crashes = 0;
  for (let step = 0; step < STEPS; step++) {
    const x = r();
    const where = `seed ${seed} step ${step}`;
    if (x < 0.5) {
      const n = 1 + int(r, 60);
      const rows = Array.from({ length: n }, (_, i) => ({ id: keyed ? int(r, KEYS) : step * 100 + i, name: `s${step}-${i}` }));
      await w.put(rows);
      if (keyed) for (const row of rows) (model as Model).set(row.id, row.name);
      else for (const row of rows) (model as string[]).push(row.name);
    } else if (x < 0.62 && keyed) {
      const ids = Array.from({ length: 1 + int(r, 20) }, () => int(r, KEYS));
      await w.delete(ids.map((id) => ({ id })));
      for (const id of ids) (model as Model).delete(id);
    } else if (x < 0.72) {
      await w.forceSealActive();
    } else if (x < 0.8) {
      compactions += (await w.compact()).compactions;
    } else if (x < 0.9) {
      await w.close();
      w = await MemWal.open(options(storage, name, keyed));
    } else {
      // A crash with nothing in flight: every acknowledged operation must survive it.
      storage.crash();
      crashes++;
      await w.abort();
      await storage.settled();
      w = await MemWal.open(options(storage, name, keyed));
    }
    await check(w, model, keyed, r, where);
    w.checkInvariants(); // every part's (MemWal.checkInvariants)
  }
  compactions += (await w.compactionStats()).completedCount;
  await w.close();
  return { compactions, crashes };
}

describe('store lifecycle against a model', () => {
  it(`get and scan equal the model, and every part's invariants hold, after every step of ${SEEDS} random runs (puts, overwrites, deletes, seals, compactions, reopens, crashes)`, async () => {
    let compactions = 0;
    let crashes = 0;
    for (let seed = 0; seed < SEEDS; seed++) {
      const res = await runSeed(seed);
      compactions += res.compactions;
      crashes += res.crashes;
    }
    expect(compactions).toBeGreaterThan(SEEDS);
    expect(crashes).toBeGreaterThan(0);
  }, 300_000);
});
