// watch (engine/watch.ts), in-process: the result at once, then after each durable commit group
// that touches what the read touched — not after writes elsewhere — at most once per group, never
// older than one delivered, and nothing after unsubscribe, abort or close.

import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { open, rejection, rows, tick, until } from './testkit.test-util.js';

type Row = { id: bigint; name: string } | undefined;
const names = (out: Row[]): (string | undefined)[] => out.map((r) => r?.name);

/** Every result a listener got, with its position. */
function recorder<T>(): { got: { value: T; position: number }[]; listener: (value: unknown, info: { position: number }) => void } {
  const got: { value: T; position: number }[] = [];
  return { got, listener: (value, info) => got.push({ value: value as T, position: info.position }) };
}

describe('watch, in-process', () => {
  it('delivers the current result at once, then a new one after a commit that writes a watched key', async () => {
    const w = await open();
    await w.put(rows(1, 3));
    const r = recorder<Row>();
    w.watch({ get: { id: 2 } }, r.listener);
    await until(() => r.got.length === 1);
    expect(r.got[0]!.value?.name).toBe('v2');
    const { position } = await w.put([{ id: 2, value: 0, name: 'two' }]);
    await until(() => r.got.length === 2);
    expect(r.got[1]!.value?.name).toBe('two');
    expect(r.got[1]!.position).toBeGreaterThanOrEqual(position);
    await w.delete([{ id: 2 }]);
    await until(() => r.got.length === 3);
    expect(r.got[2]!.value).toBeUndefined();
    await w.close();
  });

  it('a commit that writes only other keys wakes nothing; one that writes a watched key among others does', async () => {
    const w = await open();
    await w.put(rows(1, 10));
    const r = recorder<Row[]>();
    w.watch({ getMany: [{ id: 3 }, { id: 7 }] }, r.listener);
    await until(() => r.got.length === 1);
    await w.put(rows(100, 50));
    await w.put([{ id: 4, value: 1, name: 'x' }]);
    await w.delete([{ id: 5 }]);
    await w.sync();
    await tick(20);
    expect(r.got).toHaveLength(1);
    // One put whose first rows are unrelated and whose last row is watched.
    await w.put([...rows(200, 5), { id: 7, value: 1, name: 'seven' }]);
    await until(() => r.got.length === 2);
    expect(names(r.got[1]!.value)).toEqual(['v3', 'seven']);
    await w.close();
  });

  it('a scan watch is woken by every commit', async () => {
    const w = await open();
    const r = recorder<{ numRows: number }>();
    w.watch({ scan: { columns: ['id'] } }, r.listener);
    await until(() => r.got.length === 1);
    expect(r.got[0]!.value.numRows).toBe(0);
    await w.put(rows(1, 2));
    await until(() => r.got.at(-1)!.value.numRows === 2);
    await w.close();
  });

  it('puts of one commit group give one result, and commits landing during a run are taken into the next one', async () => {
    const storage = new FaultInjectingStorage();
    const w = await open(storage);
    const r = recorder<Row[]>();
    w.watch({ getMany: [{ id: 1 }, { id: 2 }, { id: 3 }] }, r.listener);
    await until(() => r.got.length === 1);
    const release = storage.hold('walAppend');
    const first = w.put([{ id: 9, value: 0, name: 'elsewhere' }]); // its entry is appending (held)
    await tick(5);
    // These three join the next entry: one commit group.
    const puts = [1, 2, 3].map((id) => w.put([{ id, value: id, name: `g${id}` }]));
    await tick(5);
    release();
    await Promise.all([first, ...puts]);
    await until(() => r.got.length >= 2);
    await tick(30);
    expect(r.got).toHaveLength(2);
    expect(names(r.got[1]!.value)).toEqual(['g1', 'g2', 'g3']);
    expect((await w.walStats()).nextPosition - 1).toBe(r.got[1]!.position);
    await w.close();
  });

  it('results never go back: each reflects a position at least that of the one before, the last the last write', async () => {
    const w = await open();
    await w.put(rows(0, 200));
    await w.forceSealActive();
    await w.waitForFlushDrain(); // key 150 is read from the table file
    const r = recorder<Row[]>();
    w.watch({ getMany: [{ id: 5 }, { id: 150 }] }, r.listener);
    await until(() => r.got.length === 1);
    // Twenty writers at once: commits land while runs are under way.
    await Promise.all(Array.from({ length: 20 }, (_, i) => w.put([{ id: 5, value: i, name: `n${i}` }])));
    const last = (await w.get({ id: 5 }))!.name as string;
    await until(() => r.got.at(-1)!.value[0]?.name === last);
    await tick(20);
    for (let i = 1; i < r.got.length; i++) expect(r.got[i]!.position).toBeGreaterThan(r.got[i - 1]!.position);
    expect(r.got.at(-1)!.value[0]?.name).toBe(last);
    expect(r.got.at(-1)!.value[1]?.name).toBe('v150');
    await w.close();
  });

  it('unsubscribe and an aborted signal stop it and forget it; close stops every watch', async () => {
    const w = await open();
    const a = recorder<Row>();
    const b = recorder<Row>();
    const c = recorder<Row>();
    const stopA = w.watch({ get: { id: 1 } }, a.listener);
    const controller = new AbortController();
    w.watch({ get: { id: 1 } }, b.listener, { signal: controller.signal });
    w.watch({ get: { id: 1 } }, c.listener);
    await until(() => a.got.length === 1 && b.got.length === 1 && c.got.length === 1);
    expect(w.watchCount).toBe(3);
    stopA();
    controller.abort();
    expect(w.watchCount).toBe(1);
    await w.put(rows(1, 1));
    await until(() => c.got.length === 2);
    await tick(10);
    expect(a.got).toHaveLength(1);
    expect(b.got).toHaveLength(1);
    await w.close();
    expect(w.watchCount).toBe(0);
    expect(() => w.watch({ get: { id: 1 } }, c.listener)).toThrow(/closed/);
    const aborted = new AbortController();
    aborted.abort();
    const w2 = await open();
    w2.watch({ get: { id: 1 } }, a.listener, { signal: aborted.signal });
    expect(w2.watchCount).toBe(0);
    await w2.close();
  });

  it('a spec naming no read throws InvalidArgument; a bad key reaches onError as final and stops the watch', async () => {
    const w = await open();
    expect(() => w.watch({} as never, () => undefined)).toThrow(/spec must name one read/);
    expect(() => w.watch({ get: { id: 1 }, scan: {} } as never, () => undefined)).toThrow(/spec must name one read/);
    const errors: [string, boolean][] = [];
    w.watch({ get: { nope: 1 } as never }, () => undefined, { onError: (e, final) => errors.push([e.code, final]) });
    await until(() => errors.length === 1);
    expect(errors[0]).toEqual(['InvalidArgument', true]);
    expect(w.watchCount).toBe(0);
    await w.close();
  });

  it('a listener that throws is logged and the watch goes on', async () => {
    const warnings: unknown[] = [];
    const w = await open(undefined, { logger: { warn: (...a: unknown[]) => warnings.push(a[0]) } });
    let calls = 0;
    w.watch({ get: { id: 1 } }, () => {
      calls++;
      throw new Error('app bug');
    });
    await until(() => calls === 1);
    await w.put(rows(1, 1));
    await until(() => calls === 2);
    expect(warnings).toContain('memwal: a watch listener threw');
    await w.close();
    expect((await rejection(w.get({ id: 1 }))).code).toBe('Closed');
  });
});

describe('Watches: footprints with column ranges (how an index query declares its range)', () => {
  it('wakes a watch for a commit writing a value in its range, or one of the keys it returned; not otherwise', async () => {
    const { tableFromArrays } = await import('apache-arrow');
    const { Watches } = await import('./watch.js');
    const watches = new Watches(
      (b) => Array.from(b.getChild('id')!.toArray() as Float64Array),
      () => 0,
    );
    let runs = 0;
    const stop = watches.add(
      async () => {
        runs++;
        // Rows with score in [10, 20) and the row of key 1, which the "query" returned.
        return {
          value: runs,
          touched: { keys: [1], ranges: [{ column: 'score', contains: (v: unknown) => (v as number) >= 10 && (v as number) < 20 }] },
        };
      },
      { deliver: () => undefined, fail: () => undefined },
    );
    await until(() => runs === 1);
    const commit = (ids: number[], scores: number[]) => ({
      position: 1,
      batches: tableFromArrays({ id: Float64Array.from(ids), score: Float64Array.from(scores) }).batches,
    });
    watches.committed(commit([5, 6], [3, 25]));
    await tick(5);
    expect(runs).toBe(1);
    watches.committed(commit([5, 7], [3, 12])); // a row enters the range
    await until(() => runs === 2);
    watches.committed(commit([1], [99])); // a returned row leaves it
    await until(() => runs === 3);
    stop();
    expect(watches.size).toBe(0);
    watches.committed(commit([7], [12]));
    await tick(5);
    expect(runs).toBe(3);
  });
});

describe('watch of an index query or count (SPEC §15.1)', () => {
  const openIndexed = () => open(new MemoryStorage(), { indexes: { byValue: { column: 'value' } } });
  type QRow = { id: bigint; value: number; name: string };

  it('query: a write outside the range wakes nothing; a row written into it does; an overwrite moving a returned row out does', async () => {
    const w = await openIndexed();
    await w.put(rows(1, 10)); // values 1.5, 3, ..., 15
    const r = recorder<QRow[]>();
    w.watch({ query: 'byValue', range: { gte: 3, lt: 7 }, columns: ['name'] }, r.listener);
    await until(() => r.got.length === 1);
    expect(r.got[0]!.value.map((x) => x.name)).toEqual(['v2', 'v3', 'v4']);
    expect(Object.keys(r.got[0]!.value[0]!)).toEqual(['name']); // the keys it needs are not shown
    await w.put([{ id: 50, value: 100, name: 'far' }]); // outside the range, not a returned row
    await w.put([{ id: 9, value: 20, name: 'v9 moved' }]); // a row not returned, staying outside
    await w.sync();
    await tick(20);
    expect(r.got).toHaveLength(1);
    await w.put([{ id: 60, value: 5, name: 'in' }]); // into the range
    await until(() => r.got.length === 2);
    expect(r.got[1]!.value.map((x) => x.name)).toEqual(['v2', 'v3', 'in', 'v4']);
    await w.put([{ id: 3, value: 50, name: 'v3 out' }]); // a returned row moves out of the range
    await until(() => r.got.length === 3);
    expect(r.got[2]!.value.map((x) => x.name)).toEqual(['v2', 'in', 'v4']);
    await w.delete([{ id: 2 }]); // a returned row deleted
    await until(() => r.got.length === 4);
    expect(r.got[3]!.value.map((x) => x.name)).toEqual(['in', 'v4']);
    await w.close();
  });

  it('count: the same footprint; a write outside the range wakes nothing', async () => {
    const w = await openIndexed();
    await w.put(rows(1, 10));
    const r = recorder<number>();
    w.watch({ count: 'byValue', range: { lt: 5 } }, r.listener);
    await until(() => r.got.length === 1);
    expect(r.got[0]!.value).toBe(3); // 1.5, 3, 4.5
    await w.put([{ id: 70, value: 99, name: 'far' }]);
    await w.sync();
    await tick(20);
    expect(r.got).toHaveLength(1);
    await w.put([{ id: 71, value: 0, name: 'in' }]);
    await until(() => r.got.length === 2);
    expect(r.got[1]!.value).toBe(4);
    await w.put([{ id: 1, value: 40, name: 'out' }]); // a counted row moves out
    await until(() => r.got.length === 3);
    expect(r.got[2]!.value).toBe(3);
    await w.close();
  });

  it('an unknown index or a bad filter reaches onError as final and stops the watch', async () => {
    const w = await openIndexed();
    const errors: { code: string; final: boolean }[] = [];
    w.watch({ query: 'nope' }, () => undefined, { onError: (e, final) => errors.push({ code: e.code, final }) });
    w.watch({ count: 'byValue', equals: 'not a number' }, () => undefined, { onError: (e, final) => errors.push({ code: e.code, final }) });
    await until(() => errors.length === 2);
    expect(errors).toEqual([
      { code: 'InvalidArgument', final: true },
      { code: 'InvalidArgument', final: true },
    ]);
    await until(() => w.watchCount === 0);
    await w.close();
  });
});
