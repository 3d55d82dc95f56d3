// An outsider's attack on the keyed flush built from the WAL's rows (the I/O worker's flush: every
// row decoded, repeats and deletes included, ordered by one sort): a store on RemoteStorage over a
// MessageChannel (the I/O worker's protocol in one Node thread) against a model of what was
// acknowledged, and the same workload inline (a flush from the memtable's key index).

import { Field, Float64, Int32, Int64, Schema, Uint64, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { storeName } from '../engine/testkit.test-util.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { rng } from '../testing/rng.js';
import { EDGE_STRINGS, INT64_EDGE_KEYS, remoteOver } from './edge-keys.test-util.js';

const S53 = 2n ** 53n;
const S63 = 2n ** 63n;
const SIGNED_EDGES = INT64_EDGE_KEYS;
/** The same within the safe integers only: every key takes the number form (the radix sort's keys). */
const SAFE_EDGES = SIGNED_EDGES.filter((k) => k < S53 && k > -S53);
const UNSIGNED_EDGES: bigint[] = [
  0n,
  1n,
  S53 - 1n,
  S53,
  S53 + 1n,
  2n ** 64n - 1n,
  S63,
  S63 - 1n,
  2n ** 32n,
  ...Array.from({ length: 16 }, (_, b) => (BigInt(b * 16) << 56n) | 7n),
];

function keyOf(rnd: () => number, edges: readonly bigint[], signed: boolean): bigint {
  const pick = rnd();
  if (pick < 0.5) return edges[Math.floor(rnd() * edges.length)]!;
  if (pick < 0.8) return BigInt(Math.floor(rnd() * 200) - (signed ? 100 : 0));
  const hi = BigInt(Math.floor(rnd() * 2 ** 32));
  const lo = BigInt(Math.floor(rnd() * 2 ** 32));
  const v = (hi << 32n) | lo;
  if (edges === SAFE_EDGES) return BigInt.asIntN(53, v); // within ±2^52: the number form
  return signed ? BigInt.asIntN(64, v) : v;
}

type Model = Map<bigint, number>;

/**
 * Puts (repeats inside one put and across puts), deletes, flushes and a compaction at seeded
 * points; every call awaited, so each is acknowledged. Returns what the store must hold.
 */
async function workload(w: MemWal, rnd: () => number, edges: readonly bigint[], signed: boolean): Promise<Model> {
  const model: Model = new Map();
  let serial = 0;
  for (let step = 0; step < 60; step++) {
    const r = rnd();
    if (r < 0.65) {
      const n = 1 + Math.floor(rnd() * 40);
      const batch = [];
      for (let i = 0; i < n; i++) {
        const id = keyOf(rnd, edges, signed);
        const value = ++serial;
        batch.push({ id, value, name: `v${value}` });
        model.set(id, value);
      }
      await w.put(batch);
    } else if (r < 0.85) {
      const n = 1 + Math.floor(rnd() * 10);
      const keys = [];
      for (let i = 0; i < n; i++) {
        const id = keyOf(rnd, edges, signed);
        keys.push({ id });
        model.delete(id);
      }
      await w.delete(keys);
    } else if (r < 0.97) {
      await w.forceSealActive();
      await w.waitForFlushDrain();
    } else {
      await w.forceSealActive();
      await w.waitForFlushDrain();
      await w.compact();
    }
  }
  return model;
}

/** The store holds exactly the model: a get of every key ever touched, and a scan in key order. */
async function expectHolds(w: MemWal, model: Model, touched: Iterable<bigint>): Promise<void> {
  const keys = [...new Set(touched)];
  const got = await w.getMany(keys.map((id) => ({ id })));
  const wrong = keys.filter((k, i) => (got[i] ? (got[i] as { value: number }).value : undefined) !== model.get(k));
  expect(wrong.map(String)).toEqual([]);
  const scan = await w.scan();
  const ids = scan.getChild('id')!.toArray() as BigInt64Array;
  expect([...ids]).toEqual([...model.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
}

async function attack(
  storageOf: (inner: MemoryStorage) => StorageAdapter,
  key: Int64 | Uint64,
  edges: readonly bigint[],
  seed: number,
): Promise<void> {
  const signed = key instanceof Int64;
  const schema = new Schema([new Field('id', key, false), new Field('value', new Float64(), true), new Field('name', new Utf8(), true)]);
  const inner = new MemoryStorage();
  const name = storeName('keyed-flush');
  const options = { name, schema, primaryKey: ['id'], logger: { warn: () => undefined } };
  const w = await MemWal.open({ ...options, storage: storageOf(inner), maxMemtableRows: 97 });
  const rnd = rng(seed);
  const model = await workload(w, rnd, edges, signed);
  const touched = [...edges, ...Array.from({ length: 400 }, (_, i) => BigInt(i - 200)).filter((k) => signed || k >= 0n)];
  await expectHolds(w, model, touched);
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await w.compact();
  await expectHolds(w, model, touched);
  await w.close();
  const again = await MemWal.open({ ...options, storage: storageOf(inner) });
  await expectHolds(again, model, touched);
  await again.close();
}

describe('a keyed flush built from the WAL rows loses no acknowledged write and resurrects no overwritten or deleted one', () => {
  for (const seed of [1, 2, 3]) {
    it(`Int64 keys at the number form's edges (±2^53, ±2^63, high bytes only) with repeats and deletes, through the I/O worker (seed ${seed})`, async () => {
      await attack(remoteOver, new Int64(), SIGNED_EDGES, seed);
    });
    it(`Int64 keys within ±(2^53 − 1) only (the number form: beyond 2^32, high bytes only) with repeats and deletes, through the I/O worker (seed ${seed})`, async () => {
      await attack(remoteOver, new Int64(), SAFE_EDGES, seed + 50);
    });
    it(`Uint64 keys beyond 2^53 and 2^63 with repeats and deletes, through the I/O worker (seed ${seed})`, async () => {
      await attack(remoteOver, new Uint64(), UNSIGNED_EDGES, seed + 100);
    });
  }
  it('the same Int64 workload inline (a flush from the key index)', async () => {
    await attack((inner) => inner, new Int64(), SIGNED_EDGES, 1);
  });

  it('composite (Utf8, Int32) keys: empty and non-ASCII strings, NUL bytes, long shared prefixes, repeats and deletes, through the I/O worker, in UTF-8 byte order', async () => {
    const schema = new Schema([new Field('a', new Utf8(), false), new Field('b', new Int32(), false), new Field('v', new Float64(), true)]);
    const strings = EDGE_STRINGS;
    const numbers = [0, -1, 1, -(2 ** 31), 2 ** 31 - 1, 256, -256];
    const tuple = (rnd: () => number): [string, number] => [
      strings[Math.floor(rnd() * strings.length)]!,
      numbers[Math.floor(rnd() * numbers.length)]!,
    ];
    const id = (t: readonly [string, number]): string => JSON.stringify(t);
    const inner = new MemoryStorage();
    const options = { name: storeName('keyed-flush-composite'), schema, primaryKey: ['a', 'b'], logger: { warn: () => undefined } };
    const w = await MemWal.open({ ...options, storage: remoteOver(inner), maxMemtableRows: 53 });
    const rnd = rng(9);
    const model = new Map<string, number>();
    let serial = 0;
    for (let step = 0; step < 80; step++) {
      const r = rnd();
      if (r < 0.65) {
        const batch = Array.from({ length: 1 + Math.floor(rnd() * 30) }, () => {
          const [a, b] = tuple(rnd);
          model.set(id([a, b]), ++serial);
          return { a, b, v: serial };
        });
        await w.put(batch);
      } else if (r < 0.85) {
        const keys = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => {
          const [a, b] = tuple(rnd);
          model.delete(id([a, b]));
          return { a, b };
        });
        await w.delete(keys);
      } else {
        await w.forceSealActive();
        await w.waitForFlushDrain();
        if (r > 0.95) await w.compact();
      }
    }
    const all = strings.flatMap((a) => numbers.map((b) => [a, b] as const));
    const utf8 = (x: string): Buffer => Buffer.from(x, 'utf8');
    const order = (x: readonly [string, number], y: readonly [string, number]): number =>
      Buffer.compare(utf8(x[0]), utf8(y[0])) || x[1] - y[1];
    const holds = async (store: MemWal): Promise<void> => {
      const got = await store.getMany(all.map(([a, b]) => ({ a, b })));
      const wrong = all.filter((t, i) => (got[i] ? (got[i] as { v: number }).v : undefined) !== model.get(id(t)));
      expect(wrong).toEqual([]);
      const scan = await store.scan();
      const as = scan.getChild('a')!.toArray() as string[];
      const bs = scan.getChild('b')!.toArray() as Int32Array;
      const want = all.filter((t) => model.has(id(t))).sort(order);
      expect(Array.from(bs, (b, i) => [as[i], b])).toEqual(want.map((t) => [...t]));
    };
    await holds(w);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    await holds(w);
    await w.close();
    const again = await MemWal.open({ ...options, storage: remoteOver(inner) });
    await holds(again);
    await again.close();
  });

  it('a memtable of more than 65,536 rows (repeats, deletes, number keys out of order) flushes through the I/O worker to the newest row of each key', async () => {
    const schema = new Schema([
      new Field('id', new Int64(), false),
      new Field('value', new Float64(), true),
      new Field('name', new Utf8(), true),
    ]);
    const inner = new MemoryStorage();
    const options = { name: storeName('keyed-flush-big'), schema, primaryKey: ['id'], logger: { warn: () => undefined } };
    const w = await MemWal.open({
      ...options,
      storage: remoteOver(inner),
      maxMemtableRows: 1_000_000,
      maxMemtableBytes: 512 * 1024 * 1024,
    });
    const rnd = rng(77);
    const model = new Map<number, number>();
    let serial = 0;
    for (let b = 0; b < 8; b++) {
      const batch = Array.from({ length: 10_000 }, () => {
        const id = Math.floor(rnd() * 40_000) * 65_537 - 2 ** 30; // ids beyond 2^32 apart in their low words
        model.set(id, ++serial);
        return { id, value: serial, name: '' };
      });
      await w.put(batch);
      const gone = Array.from({ length: 500 }, () => Math.floor(rnd() * 40_000) * 65_537 - 2 ** 30);
      for (const id of gone) model.delete(id);
      await w.delete(gone.map((id) => ({ id })));
    }
    expect((await w.memtableStats()).rowCount).toBeGreaterThan(65_536);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const holds = async (store: MemWal): Promise<void> => {
      const scan = await store.scan();
      const ids = Array.from(scan.getChild('id')!.toArray() as BigInt64Array, Number);
      const values = Array.from(scan.getChild('value')!.toArray() as Float64Array);
      const want = [...model.keys()].sort((x, y) => x - y);
      expect(ids).toEqual(want);
      expect(values).toEqual(want.map((k) => model.get(k)));
    };
    await holds(w);
    await w.close();
    const again = await MemWal.open({ ...options, storage: remoteOver(inner) });
    await holds(again);
    await again.close();
  });
});

describe('a keyed flush of ids put in order (the sort skipped)', () => {
  it('repeats next to each other across puts and a delete closing a run: the last row of each run wins, through the I/O worker', async () => {
    const schema = new Schema([new Field('id', new Int64(), false), new Field('payload', new Utf8(), true)]);
    const inner = new MemoryStorage();
    const options = { name: storeName('in-order'), schema, primaryKey: ['id'], logger: { warn: () => undefined } };
    const w = await MemWal.open({ ...options, storage: remoteOver(inner) });
    await w.put([
      { id: 0, payload: 'a0' },
      { id: 1, payload: 'a1' },
      { id: 1, payload: 'b1' },
    ]);
    await w.put([
      { id: 1, payload: 'c1' },
      { id: 2, payload: 'a2' },
      { id: 2, payload: 'b2' },
    ]);
    await w.delete([{ id: 2 }]);
    await w.put([
      { id: 3, payload: 'a3' },
      { id: 4, payload: 'a4' },
    ]);
    await w.delete([{ id: 4 }]);
    await w.put([{ id: 4, payload: 'b4' }]);
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const rows = async (store: MemWal): Promise<string[]> => {
      const t = await store.scan();
      const ids = t.getChild('id')!.toArray() as BigInt64Array;
      const payloads = t.getChild('payload')!.toArray() as string[];
      return Array.from(ids, (id, i) => `${id}=${payloads[i]}`);
    };
    const want = ['0=a0', '1=c1', '3=a3', '4=b4'];
    expect(await rows(w)).toEqual(want);
    expect(await w.get({ id: 2 })).toBeUndefined();
    await w.close();
    const again = await MemWal.open({ ...options, storage: remoteOver(inner) });
    expect(await rows(again)).toEqual(want);
    await again.close();
  });
});

describe('torn and crashed WAL appends in the I/O worker, then a reopen', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`every acknowledged put is there whole, the one in flight whole or not at all, the overwritten key the newest (seed ${seed})`, async () => {
      const schema = new Schema([new Field('id', new Int64(), false), new Field('payload', new Utf8(), true)]);
      const far = new FaultInjectingStorage(new MemoryStorage(), { seed });
      const options = {
        name: storeName('torn-append'),
        schema,
        primaryKey: ['id'],
        logger: { warn: () => undefined },
        walRetry: { baseMs: 1, maxMs: 5, timeoutMs: 2_000 },
        maxMemtableRows: 40,
      };
      const rnd = rng(seed);
      const rowsOf = (i: number) => [
        ...Array.from({ length: 5 }, (_, k) => ({ id: BigInt(i * 5 + k), payload: `${i}` })),
        { id: -1n, payload: `${i}` },
      ];
      let next = 0;
      let acked = -1;
      for (let round = 0; round < 4; round++) {
        const w = await MemWal.open({ ...options, storage: remoteOver(far) });
        const stop = next + 5 + Math.floor(rnd() * 30);
        for (; next < stop; next++) {
          if (rnd() < 0.2) far.tearNext('walAppend'); // torn, reported failed: the writer cuts it back and retries
          await w.put(rowsOf(next));
          acked = next;
        }
        // A put in flight when the storage crashes: its append applied, not applied, or torn.
        const inFlight = w.put(rowsOf(next)).then(
          () => true,
          () => false,
        );
        for (let t = Math.floor(rnd() * 4); t > 0; t--) await new Promise((r) => setTimeout(r, 0));
        far.crash();
        if (await inFlight) acked = next;
        next++;
        await w.abort().catch(() => undefined);
        const again = await MemWal.open({ ...options, storage: remoteOver(far) });
        const t = await again.scan();
        const ids = Array.from(t.getChild('id')!.toArray() as BigInt64Array, Number);
        const payloads = t.getChild('payload')!.toArray() as string[];
        const puts = new Map<number, number>();
        let hot: number | undefined;
        ids.forEach((id, r) => {
          const put = Number(payloads[r]);
          if (id === -1) hot = put;
          else {
            expect(Math.floor(id / 5), `row ${id}`).toBe(put);
            puts.set(put, (puts.get(put) ?? 0) + 1);
          }
        });
        const present = [...puts.keys()].sort((x, y) => x - y);
        const last = present.at(-1) ?? -1;
        expect(last, `round ${round}: acknowledged up to ${acked}`).toBeGreaterThanOrEqual(acked);
        expect(last).toBeLessThanOrEqual(next - 1);
        expect(present, 'every put, no gap').toEqual(Array.from({ length: last + 1 }, (_, i) => i));
        expect(
          [...puts.values()].every((n) => n === 5),
          'no put half-applied',
        ).toBe(true);
        expect(hot).toBe(last);
        next = last + 1;
        acked = last;
        await again.close();
      }
    });
  }
});
