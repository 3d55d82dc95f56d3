// The store lifecycle: point reads that touch one block per table file, compaction that keeps
// space bounded under overwrites, drops deletes at the bottom, merges append-only files in order,
// never pulls files out from under a reader, fails visibly without deadlock, and backs flushes off.

import { RecordBatch, Table, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import type { StorageAdapter } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { L0_STOP_TRIGGER } from './compaction.js';
import { MemWal } from './memwal.js';
import { idsOf, open, rejection, rows, schema, storeName, tick, until } from './testkit.test-util.js';

const quiet = { warn: () => undefined };

/** Bytes of the newest version of every live row, as one Arrow IPC file (the space baseline). */
async function liveBytes(w: MemWal): Promise<number> {
  const t = await w.scan();
  return tableToIPC(
    new Table(
      t.schema,
      t.batches.map((b) => new RecordBatch(t.schema, b.data)),
    ),
    'file',
  ).length;
}

/** An adapter whose table writes of compaction outputs (names starting with "c") fail while `failing.on`. */
function failingCompactions(inner: StorageAdapter, failing: { on: boolean }): StorageAdapter {
  return {
    layout: inner.layout,
    destroyStore: (n) => inner.destroyStore(n),
    async openStore(n, o) {
      const h = await inner.openStore(n, o);
      return new Proxy(h, {
        get(t, p) {
          if (p === 'tableWrite') {
            return (name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>) =>
              failing.on && name.startsWith('c')
                ? Promise.reject(new Error('injected: compaction output write failed'))
                : t.tableWrite(name, chunks);
          }
          const v = Reflect.get(t, p);
          return typeof v === 'function' ? v.bind(t) : v;
        },
      });
    },
  };
}

/** A keyed store whose compaction outputs fail while `failing.on`, with fast flush retries. */
function openFailingCompactions(
  failing: { on: boolean },
  extra: { maxMemtableRows: number; maxUnflushedMemtableBytes?: number },
): Promise<MemWal> {
  return MemWal.open({
    name: storeName(),
    schema,
    primaryKey: ['id'],
    storage: failingCompactions(new MemoryStorage(), failing),
    flushRetry: { baseMs: 1, maxMs: 20 },
    logger: quiet,
    ...extra,
  });
}

describe('point reads', () => {
  it('a get reads at most one block per table file its key range and Bloom filter admit', async () => {
    const w = await open(new MemoryStorage(), { maxMemtableRows: 2_000 });
    const even = (from: number, n: number, tag: string) =>
      rows(from, n, tag).map((r) => ({ ...r, id: 2 * r.id, name: `${tag}${2 * r.id}` }));
    for (let round = 0; round < 3; round++) for (let i = 0; i < 6_000; i += 500) await w.put(even(i, 500, `r${round}-`));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await until(async () => !(await w.compactionStats()).running, 10_000, 'compaction to pause');
    const before = await w.readStats();
    for (let i = 0; i < 300; i++) {
      const id = 2 * ((i * 7919) % 6_000);
      expect(await w.get({ id })).toMatchObject({ name: `r2-${id}` });
      expect(await w.get({ id: id + 1 })).toBeUndefined(); // absent, inside every file's key range: the filters say no
    }
    const after = await w.readStats();
    const gets = after.gets - before.gets;
    const consulted = after.tableFilesConsulted - before.tableFilesConsulted;
    const blocks = after.blockReads + after.blockCacheHits - before.blockReads - before.blockCacheHits;
    expect(gets).toBe(600);
    expect(blocks).toBeLessThanOrEqual(consulted);
    expect(consulted / gets).toBeLessThanOrEqual(8);
    expect(after.bloomNegatives - before.bloomNegatives).toBeGreaterThan(0);
    expect(after.blockCacheBytes).toBeLessThanOrEqual(8 * 1024 * 1024);
    await w.close();
  });
});

describe('compaction', () => {
  it('keeps space amplification at or below 1.5 under uniform overwrite once it has caught up, and near 1 after compact()', async () => {
    const w = await open(new MemoryStorage(), { maxMemtableBytes: 256 * 1024 });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 20_000; i += 1_000) await w.put(rows(i, 1_000, `round${round}-`));
    }
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await until(
      async () => !(await w.compactionStats()).running && (await w.compactionStats()).pendingBytes === 0,
      20_000,
      'compaction to settle',
    );
    const live = await liveBytes(w);
    const settled = await w.compactionStats();
    expect(settled.completedCount).toBeGreaterThan(0);
    expect(settled.tableBytes / live).toBeLessThanOrEqual(1.5);
    await w.compact();
    const compacted = await w.compactionStats();
    expect(compacted.tableBytes / live).toBeLessThanOrEqual(1.15);
    expect(compacted.levels.map((l) => l.level)).toEqual([1]);
    expect(idsOf(await w.scan())).toHaveLength(20_000);
    await w.close();
  });

  it('drops deletes at the bottom level, and deleted keys stay deleted', async () => {
    const w = await open(new MemoryStorage(), { maxMemtableRows: 1_000 });
    await w.put(rows(0, 3_000));
    await w.delete(Array.from({ length: 1_500 }, (_, i) => ({ id: 2 * i })));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    const s = await w.compactionStats();
    const t = await w.scan();
    expect(t.numRows).toBe(1_500);
    expect((await w.storageStats()).tableFileCount).toBe(s.tableCount);
    // 1,500 live rows and no delete rows left in the files.
    const stored = s.levels.find((l) => l.level === 1)!;
    expect(stored.files).toBeGreaterThan(0);
    expect(await w.get({ id: 2 })).toBeUndefined();
    expect(await w.get({ id: 3 })).toMatchObject({ name: 'v3' });
    await w.close();
  });

  it('merges append-only files into fewer larger ones and keeps insertion order', async () => {
    const w = await open(new MemoryStorage(), { primaryKey: [], maxMemtableRows: 100 });
    for (let i = 0; i < 1_000; i += 50) await w.put(rows(i, 50, 'a'));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    expect((await w.compactionStats()).tableCount).toBeGreaterThan(1);
    await w.compact();
    expect((await w.compactionStats()).tableCount).toBe(1);
    const ids = Array.from((await w.scan()).getChild('id')!.toArray(), Number);
    expect(ids).toEqual(Array.from({ length: 1_000 }, (_, i) => i));
    await w.close();
  });

  it('never rewrites large append-only files: they move to level 1 by a manifest edit, in order', async () => {
    // Output 64 KiB, so files of 8 KiB or more count as large; each flush here writes about 20 KiB.
    const w = await MemWal.open(
      {
        name: storeName(),
        schema,
        primaryKey: [],
        storage: new MemoryStorage(),
        maxMemtableRows: 1_000,
        logger: { warn: () => undefined },
      },
      { compactionPolicy: { appendOnlyOutputBytes: 64 * 1024 } },
    );
    for (let i = 0; i < 6_000; i += 500) await w.put(rows(i, 500, 'a'));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    const s = await w.compactionStats();
    expect(s.levels.find((l) => l.level === 0)?.files ?? 0).toBe(0);
    expect(s.tableCount).toBe(6);
    expect(s.bytesWritten).toBe(0);
    expect(Array.from((await w.scan()).getChild('id')!.toArray(), Number)).toEqual(Array.from({ length: 6_000 }, (_, i) => i));
    await w.close();
  });

  it("a reader's view keeps reading the inputs of a compaction until it lets go; then they are deleted", async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, { maxMemtableRows: 500 }, name);
    for (let i = 0; i < 4_000; i += 500) await w.put(rows(i, 500));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const it = w.scanBatches()[Symbol.asyncIterator]();
    const first = await it.next();
    let seen = first.value!.numRows;
    await w.compact(); // replaces every file the scan is reading
    for (let r = await it.next(); !r.done; r = await it.next()) seen += r.value.numRows;
    expect(seen).toBe(4_000);
    await w.close();
    const h = await storage.openStore(name, { timeoutMs: 0 });
    const live = new Set((await h.manifestLoad())!.tables.map((t) => t.name));
    expect((await h.tableList()).every((t) => live.has(t))).toBe(true); // the old inputs are gone
    await h.release();
  });

  it('never moves the replay cursor', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, { maxMemtableRows: 200 }, name);
    for (let i = 0; i < 2_000; i += 100) await w.put(rows(i, 100));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const cursor = (await w.walStats()).nextPosition - 1;
    await w.put(rows(5_000, 10)); // in the WAL only
    await w.compact();
    await w.abort();
    const h = await storage.openStore(name, { timeoutMs: 0 });
    expect((await h.manifestLoad())!.replayCursor).toBe(cursor);
    await h.release();
    const again = await open(storage, {}, name);
    expect(idsOf(await again.scan())).toHaveLength(2_010);
    await again.close();
  });

  it('a compaction that keeps failing is visible and never deadlocks: flushes stop at the level-0 bound, puts wait with cause "compaction", and go on once it recovers', async () => {
    const failing = { on: true };
    const w = await openFailingCompactions(failing, { maxMemtableRows: 100, maxUnflushedMemtableBytes: 64 * 1024 });
    let stalledPut: Promise<unknown> | undefined;
    for (let i = 0; i < 40 && !stalledPut; i++) {
      const p = w.put(rows(0, 100, `v${i}-`)); // the same keys: every compaction must merge (rewrite)
      const settledFast = await Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), 500))]);
      if (!settledFast) stalledPut = p;
    }
    expect(stalledPut).toBeDefined();
    const cs = await w.compactionStats();
    expect(cs.failureCount).toBeGreaterThan(0);
    expect(cs.l0StallCount).toBeGreaterThan(0);
    expect(cs.levels.find((l) => l.level === 0)!.files).toBeGreaterThanOrEqual(L0_STOP_TRIGGER);
    const bp = await w.backpressureStats();
    expect(bp.activeCount).toBeGreaterThan(0);
    expect(bp.cause).toBe('compaction');
    expect(await w.metrics()).toContain('wal_backpressure_cause{store=');
    failing.on = false; // the fault clears: compaction catches up, flushes resume, the put goes through
    await stalledPut;
    await until(
      async () => (await w.compactionStats()).levels.every((l) => l.level !== 0 || l.files < L0_STOP_TRIGGER),
      10_000,
      'level 0 to drain',
    );
    expect((await w.backpressureStats()).cause).toBeNull();
    await w.close();
  });

  it('compact() while a compaction keeps failing in the background rejects IOError instead of waiting for it', async () => {
    // Found by the simulation (test/sim, seed 206): compact() waited for the background lane, which
    // retries for as long as the failure lasts.
    const failing = { on: true };
    const w = await openFailingCompactions(failing, { maxMemtableRows: 10 });
    for (let i = 0; i < 5; i++) {
      await w.put(rows(0, 10, `v${i}-`));
      await w.waitForFlushDrain();
    }
    await until(async () => (await w.compactionStats()).failureCount >= 2, 5000, 'background compactions failing');
    const outcome = await Promise.race([
      rejection(w.compact()).then((e) => e.code),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3000)),
    ]);
    expect(outcome).toBe('IOError');
    failing.on = false;
    expect((await w.compact()).tablesAfter).toBeGreaterThan(0);
    expect((await w.compactionStats()).levels.every((l) => l.level !== 0)).toBe(true);
    await w.close();
  });

  it('compact() rejects on a poisoned writer and in WAL-only mode', async () => {
    const w = await open(new MemoryStorage(), { primaryKey: [], enableMemtable: false });
    expect((await rejection(w.compact())).code).toBe('NotSupported');
    await w.close();
  });
});

/** Every table file the stored manifest of `name` names exists in storage. */
async function namedFilesExist(storage: StorageAdapter, name: string): Promise<void> {
  const h = await storage.openStore(name, { timeoutMs: 0 });
  try {
    const stored = new Set(await h.tableList());
    const missing = (await h.manifestLoad())!.tables.map((t) => t.name).filter((t) => !stored.has(t));
    expect(missing).toEqual([]);
  } finally {
    await h.release();
  }
}

describe('compaction commits in doubt', () => {
  // The background lane never compacts here; compact() does, so the test picks the commit to fail.
  const manualOnly = { compactionPolicy: { level0Trigger: 1_000, spaceAmpTrigger: Number.POSITIVE_INFINITY } };
  const openManual = (storage: StorageAdapter, name: string) =>
    MemWal.open({ name, schema, primaryKey: ['id'], storage, flushRetry: { baseMs: 1, maxMs: 5 }, logger: quiet }, manualOnly);
  const flushed = async (w: MemWal, put: () => Promise<unknown>) => {
    await put();
    await w.forceSealActive();
    await w.waitForFlushDrain();
  };

  /**
   * compact() again: it resolves the doubt, then may merge the same inputs. Its reads wait until
   * whatever the resolution retired has been removed (removal runs in the background), so a live
   * file deleted by mistake is seen missing rather than read just before it goes.
   */
  const retryHoldingReads = async (storage: FaultInjectingStorage, w: MemWal) => {
    const release = storage.hold('tableRead');
    const retry = w.compact();
    await tick(20);
    release();
    await retry;
  };

  for (const applied of [false, true]) {
    for (const resolvedBy of ['compact', 'flush'] as const) {
      it(`a move whose commit is in doubt (${applied ? 'applied' : 'not applied'}, resolved by a ${resolvedBy}) never deletes a live file`, async () => {
        const storage = new FaultInjectingStorage(new MemoryStorage());
        const name = storeName();
        const w = await openManual(storage, name);
        await flushed(w, () => w.put(rows(0, 100)));
        // The lone level-0 file moves to level 1 by a manifest edit; its commit's outcome is unknown.
        if (applied) storage.failAfter('manifestCommit');
        else storage.failNext('manifestCommit');
        storage.failNext('manifestLoad');
        expect((await rejection(w.compact())).code).toBe('IOError');
        if (resolvedBy === 'flush') await flushed(w, () => w.put(rows(200, 1)));
        await retryHoldingReads(storage, w);
        expect(await w.get({ id: 7 })).toMatchObject({ name: 'v7' });
        expect(idsOf(await w.scan())).toHaveLength(resolvedBy === 'flush' ? 101 : 100);
        await w.close();
        await namedFilesExist(storage, name);
        const again = await open(storage, {}, name);
        expect(await again.get({ id: 7 })).toMatchObject({ name: 'v7' });
        expect(idsOf(await again.scan())).toHaveLength(resolvedBy === 'flush' ? 101 : 100);
        await again.close();
      });
    }

    it(`a keyed compaction that merges to nothing, its commit in doubt (${applied ? 'applied' : 'not applied'}), never deletes a live file`, async () => {
      const storage = new FaultInjectingStorage(new MemoryStorage());
      const name = storeName();
      const w = await openManual(storage, name);
      await flushed(w, () => w.put(rows(0, 100)));
      await flushed(w, () => w.delete(rows(0, 100).map(({ id }) => ({ id }))));
      // Every row deleted: the merge has no output, and the commit only removes its two inputs.
      if (applied) storage.failAfter('manifestCommit');
      else storage.failNext('manifestCommit');
      storage.failNext('manifestLoad');
      expect((await rejection(w.compact())).code).toBe('IOError');
      await retryHoldingReads(storage, w);
      expect(await w.get({ id: 7 })).toBeUndefined();
      expect((await w.scan()).numRows).toBe(0);
      expect((await w.compactionStats()).tableCount).toBe(0);
      await w.close();
      await namedFilesExist(storage, name);
      const again = await open(storage, {}, name);
      expect((await again.scan()).numRows).toBe(0);
      await again.close();
    });
  }
});

describe('grace period', () => {
  /** Whether `p` settles within `ms` (it keeps running either way). */
  const settlesWithin = (p: Promise<unknown>, ms: number): Promise<boolean> =>
    Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
    ]);

  it('level 0 stopped at its trigger inside one grace period drains when the grace ends: blocked puts and close() settle', async () => {
    const w = await open(new MemoryStorage(), { frozenMemtableGraceMs: 100, maxMemtableRows: 10, maxUnflushedMemtableBytes: 8 * 1024 });
    // Every put freezes a memtable: twelve flushes commit inside one grace period, level 0 reaches
    // its stop trigger, and compaction may not take files whose generations are still in grace.
    const puts: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) puts.push(w.put(rows(i * 10, 10)));
    await until(async () => (await w.compactionStats()).l0StallCount > 0, 5_000, 'the flush lane to stop at the level-0 trigger');
    expect(await settlesWithin(Promise.all(puts), 3_000)).toBe(true);
    expect(idsOf(await w.scan())).toHaveLength(300);
    expect(await settlesWithin(w.close(), 3_000)).toBe(true);
  });

  it('close() flushes past a level-0 stop without waiting for a long grace period to end; blocked puts settle', async () => {
    const w = await open(new MemoryStorage(), { frozenMemtableGraceMs: 60_000, maxMemtableRows: 10, maxUnflushedMemtableBytes: 8 * 1024 });
    const puts: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) puts.push(w.put(rows(i * 10, 10)));
    const settled = Promise.allSettled(puts); // puts still blocked when close starts reject Closed
    await until(async () => (await w.compactionStats()).l0StallCount > 0, 5_000, 'the flush lane to stop at the level-0 trigger');
    expect(await settlesWithin(w.close(), 3_000)).toBe(true);
    expect(await settlesWithin(settled, 1_000)).toBe(true);
  });
});
