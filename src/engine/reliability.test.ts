// The holes a storage review found (ambiguous commits, stale writers, calls that never settle,
// mid-segment truncation, recovery that mutated before validating, close racing abort), each as
// the behaviour that closes it. Fault model: docs/impl.md, "Faults the tests inject".

import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemWalError, quotaExceededError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { StorageAdapter, StorageEstimate, StoreHandle } from '../storage/adapter.js';
import { FileStorage } from '../storage/fs.js';
import type { FileSystemShim } from '../storage/fs-shim.js';
import { nodeFileSystem } from '../storage/fs-node.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { Signal, sleep } from '../util/schedule.js';
import { encodeFrame, scanSegment } from '../format/wal/codec.js';
import { MemWal } from './memwal.js';
import { idsOf, open, rejection, rows, schema, storeName, tick, until } from './testkit.test-util.js';

const quiet = { warn: () => undefined };

/** Opens `name` directly on the adapter as the current writer epoch would (for inspecting or damaging a store). */
async function asCurrentWriter(storage: StorageAdapter, name: string): Promise<{ h: StoreHandle; m: Manifest }> {
  const h = await storage.openStore(name, { timeoutMs: 0 });
  const m = (await h.manifestLoad())!;
  const again = { ...m, version: m.version + 1 };
  await h.manifestCommit(m.version, again);
  return { h, m: again };
}

describe('ambiguous outcomes', () => {
  it('a manifest commit applied but reported failed, then a failed re-read, loses no acknowledged row', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const w = await open(storage, { flushRetry: { baseMs: 1, maxMs: 5 } }, name);
    await w.put(rows(1, 3));
    storage.failAfter('manifestCommit'); // the flush's commit lands; its reply is lost
    storage.failNext('manifestLoad'); // and the re-read that would resolve it fails once
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.abort();
    const again = await open(storage, {}, name);
    expect(idsOf(await again.scan())).toEqual([1, 2, 3]);
    expect((await again.storageStats()).tableFileCount).toBe(1);
    await again.close();
  });

  it('a WAL append applied but reported failed is retried without duplicating or losing the put', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const w = await open(storage, { walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 2000 } }, name);
    storage.failAfter('walAppend');
    await w.put(rows(1, 2));
    await w.put(rows(3, 1));
    await w.abort();
    const again = await open(storage, {}, name);
    expect(idsOf(await again.scan())).toEqual([1, 2, 3]);
    await again.close();
  });

  it('a markConsumed whose commit outcome is unknown rejects IOError, and the next commit resolves it by content', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const w = await open(storage, { primaryKey: [], enableMemtable: false }, name);
    await w.put(rows(1, 1));
    await w.put(rows(2, 1));
    storage.failAfter('manifestCommit');
    storage.failNext('manifestLoad');
    expect((await rejection(w.markConsumed(1))).code).toBe('IOError');
    await w.markConsumed(2); // resolves the doubt (it landed), then commits on top of it
    await w.close();
    const look = await storage.openStore(name, { timeoutMs: 0 });
    expect((await look.manifestLoad())!.consumerCursor).toBe(2);
    await look.release();
  });
});

describe('stale writers', () => {
  /** A Node file system that reports `pid` and sees the processes in `dead` as dead. */
  const processShim = (pid: number, dead: number[], failDatasyncOnce?: { armed: boolean }): FileSystemShim => ({
    ...nodeFileSystem,
    pid,
    isProcessAlive: (p) => !dead.includes(p),
    async open(path, flags) {
      const file = await nodeFileSystem.open(path, flags);
      if (!failDatasyncOnce || !path.includes('/wal/')) return file;
      return {
        ...file,
        read: (into, position) => file.read(into, position),
        write: (bytes, position) => file.write(bytes, position),
        sync: () => file.sync(),
        truncate: (length) => file.truncate(length),
        size: () => file.size(),
        close: () => file.close(),
        datasync: async () => {
          await file.datasync();
          if (failDatasyncOnce.armed) {
            failDatasyncOnce.armed = false;
            throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
          }
        },
      };
    },
  });

  it('a writer whose lock was taken over cannot truncate away the entry its successor replayed (Node files)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-stale-'));
    const name = storeName();
    const faultA = { armed: false };
    // Writer A (pid 1001) never notices the takeover by itself (its lock watch is off).
    const a = await open(
      new FileStorage(processShim(1001, [], faultA), root, { lockWatchMs: 3_600_000 }),
      {
        walRetry: { baseMs: 400, maxMs: 400, timeoutMs: 10_000 },
      },
      name,
    );
    faultA.armed = true;
    const putA = rejection(a.put(rows(1, 1))); // its bytes reach the file, then fdatasync fails; A retries in 400 ms
    await sleep(50);
    // Writer B (pid 1002) believes A is dead: it takes the lock over, claims, replays A's entry, writes.
    const b = await open(new FileStorage(processShim(1002, [1001]), root), {}, name);
    expect(idsOf(await b.scan())).toEqual([1]);
    await b.put(rows(2, 1));
    // A's retry would cut its segment back before appending again: fenced now.
    expect((await putA).code).toBe('Fenced');
    expect(a.writerState).toBe('fenced');
    await b.abort(); // B crashes before flushing: the next open must replay A's entry from the WAL
    await a.abort();
    const c = await open(new FileStorage(nodeFileSystem, root), {}, name);
    expect(idsOf(await c.scan())).toEqual([1, 2]);
    await c.close();
  });
});

describe('errors of reads', () => {
  it('a read whose storage call fails with a platform error rejects a MemWalError with its code', async () => {
    // Found by the simulation (test/sim, seeds 1464, 1876): the adapter's error reached the caller as it was.
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const w = await open(storage, { flushRetry: { baseMs: 1, maxMs: 5 } });
    await w.put(rows(1, 3));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    storage.failNext('tableRead', 1, quotaExceededError());
    const e = await rejection(w.get({ id: 2 }));
    expect(e).toBeInstanceOf(MemWalError);
    expect(e.code).toBe('QuotaExceeded');
    expect((await w.get({ id: 2 }))?.id).toBe(2n);
    await w.close();
  });
});

/**
 * A writer that left entry 1 in segment 1-1 and died, and its successor `w2` (returned), which
 * replayed it and appended entry 2 to its own segment, and will not learn of a steal.
 */
async function predecessorOverTwoSegments(storage: FaultInjectingStorage, name: string): Promise<MemWal> {
  const w1 = await open(storage, {}, name);
  await w1.put(rows(1, 3));
  await w1.abort();
  const w2 = await open(storage, {}, name);
  await w2.put(rows(4, 1));
  storage.silenceLockLoss();
  return w2;
}

describe('a steal racing the old writer', () => {
  it('a steal whose predecessor flushes and removes a WAL segment between its manifest load and its WAL listing opens instead of failing Corruption', async () => {
    // Found by the simulation (test/sim, seed 39): the successor validated the WAL against the
    // manifest it had loaded before the predecessor's commit, and reported the removed entries as
    // Corruption.
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const w2 = await predecessorOverTwoSegments(storage, name);
    const release = storage.hold('walList');
    const successor = open(storage, { steal: true }, name);
    successor.catch(() => undefined);
    await tick(20); // the successor has loaded the manifest and waits to list the WAL
    await w2.forceSealActive();
    await w2.waitForFlushDrain(); // commits replayCursor 2 and removes segment 1-1
    await until(async () => (await w2.walStats()).oldestPosition > 1, 5000, 'removal of segment 1-1');
    release();
    const w3 = await successor;
    expect(idsOf(await w3.scan())).toEqual([1, 2, 3, 4]);
    storage.silenceLockLoss(false);
    await w3.close();
    await w2.abort();
  });

  it('a steal whose predecessor removes a listed WAL segment before the successor reads it opens instead of failing', async () => {
    // Found by the simulation (test/sim, seed 118): the successor failed open with IOError
    // 'WAL segment 1-1 does not exist' for a segment the manifest it had loaded no longer needed.
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const w2 = await predecessorOverTwoSegments(storage, name);
    const releaseRemove = storage.hold('walRemove');
    await w2.forceSealActive();
    await w2.waitForFlushDrain(); // commits replayCursor 2; the removal of segment 1-1 waits
    const releaseRead = storage.hold('walRead');
    const successor = open(storage, { steal: true }, name);
    successor.catch(() => undefined);
    await tick(20); // the successor loaded the manifest, listed segment 1-1 and waits to read it
    releaseRemove();
    await until(async () => (await w2.walStats()).oldestPosition > 1, 5000, 'removal of segment 1-1');
    releaseRead();
    const w3 = await successor;
    expect(idsOf(await w3.scan())).toEqual([1, 2, 3, 4]);
    storage.silenceLockLoss(false);
    await w3.close();
    await w2.abort();
  });
});

describe('a steal racing the old writer (continued)', () => {
  it('a steal that read an older WAL segment before the predecessor removed it and the next one opens instead of failing Corruption', async () => {
    // Found by the simulation (test/sim, seed 914): segment 1-1 read, then 1-1 and 2-2 removed before
    // 2-2 was read; leaving 2-2 out made a gap between the stale copy of 1-1 and 3-3.
    const faults = new FaultInjectingStorage(new MemoryStorage());
    let open2: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open2 = resolve));
    const storage: StorageAdapter = {
      layout: faults.layout,
      destroyStore: (n) => faults.destroyStore(n),
      async openStore(n, o) {
        const h = await faults.openStore(n, o);
        if (!o.steal) return h;
        return new Proxy(h, {
          get(t, p) {
            const v = Reflect.get(t, p) as (...args: unknown[]) => Promise<unknown>;
            if (p === 'walRead') {
              return async (name: string, offset?: number) => {
                if (name === '2-2') await gate;
                return v.call(t, name, offset);
              };
            }
            return typeof v === 'function' ? v.bind(t) : v;
          },
        });
      },
    };
    const name = storeName();
    const w1 = await open(storage, {}, name);
    await w1.put(rows(1, 1)); // entry 1, segment 1-1
    await w1.abort();
    const w2 = await open(storage, {}, name);
    await w2.put(rows(2, 1)); // entry 2, segment 2-2
    await w2.abort();
    // No compaction (its commits would make the successor read the store again anyway).
    const noCompaction = { compactionPolicy: { level0Trigger: 100, spaceAmpTrigger: Number.POSITIVE_INFINITY } };
    const w3 = await MemWal.open({ name, schema, primaryKey: ['id'], storage, logger: quiet }, noCompaction);
    await w3.put(rows(3, 1)); // entry 3, segment 3-3
    faults.silenceLockLoss(); // w3 does not learn of the steal and goes on
    const releaseRemove = faults.hold('walRemove');
    await w3.forceSealActive();
    await w3.waitForFlushDrain(); // replayCursor 3: segments 1-1 and 2-2 may go
    const successor = open(storage, { steal: true }, name);
    successor.catch(() => undefined);
    await tick(20); // the successor read 1-1 and waits to read 2-2
    releaseRemove();
    await until(async () => (await w3.walStats()).oldestPosition > 2, 5000, 'removal of segments 1-1 and 2-2');
    open2();
    const w4 = await successor;
    expect(idsOf(await w4.scan())).toEqual([1, 2, 3]);
    faults.silenceLockLoss(false);
    await w4.close();
    await w3.abort();
  });
});

describe('tail racing retention', () => {
  it('a tail whose segment retention removes while it reads rejects Truncated, not IOError', async () => {
    // Found by the simulation (test/sim, seed 62).
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const walOnly = { primaryKey: [], enableMemtable: false };
    const w1 = await open(storage, walOnly, name);
    await w1.put(rows(1, 1));
    await w1.put(rows(2, 1)); // entries 1 and 2 in segment 1-1
    await w1.close();
    const w2 = await open(storage, walOnly, name);
    await w2.put(rows(3, 1)); // entry 3 in segment 2-3
    const release = storage.hold('walRead');
    const reading = rejection(
      (async () => {
        for await (const _ of w2.tail(1)) {
          // read everything
        }
      })(),
    );
    await tick(10); // the tail found segment 1-1 retained and waits to read it
    await w2.markConsumed(2); // retention removes segment 1-1
    await until(async () => (await w2.walStats()).oldestPosition === 3, 5000, 'removal of segment 1-1');
    release();
    expect((await reading).code).toBe('Truncated');
    await w2.close();
  });

  it('a tail of a consumed segment whose removal landed but was reported failed rejects Truncated', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const walOnly = { primaryKey: [], enableMemtable: false, logger: quiet };
    const w1 = await open(storage, walOnly, name);
    await w1.put(rows(1, 1));
    await w1.close();
    const w2 = await open(storage, walOnly, name);
    await w2.put(rows(2, 1));
    storage.failAfter('walRemove'); // segment 1-1 goes; the writer hears it failed and still lists it
    await w2.markConsumed(1);
    const e = await rejection(
      (async () => {
        for await (const _ of w2.tail(1)) {
          // read everything
        }
      })(),
    );
    expect(e.code).toBe('Truncated');
    await w2.close();
  });

  it('a tail of a segment whose removal has landed but not answered yet rejects Truncated', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const walOnly = { primaryKey: [], enableMemtable: false, walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 100 } };
    const w1 = await open(storage, walOnly, name);
    await w1.put(rows(1, 1));
    await w1.close();
    const w2 = await open(storage, walOnly, name);
    await w2.put(rows(2, 1));
    storage.hangAfter('walRemove'); // segment 1-1 goes; the answer does not come
    const consumed = w2.markConsumed(1); // resolves once the removal gives up (its time limit)
    await tick(10);
    const e = await rejection(
      (async () => {
        for await (const _ of w2.tail(1)) {
          // read everything
        }
      })(),
    );
    expect(e.code).toBe('Truncated');
    await w2.abort();
    await consumed.catch(() => undefined);
  });
});

describe('calls that never settle', () => {
  it('a WAL append that never settles: put rejects and close finishes within walRetry.timeoutMs', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const w = await open(storage, { walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 100 } });
    const release = storage.hold('walAppend');
    const put = w.put(rows(1, 1));
    const started = Date.now();
    expect((await rejection(put)).code).toBe('IOError');
    expect(w.writerState).toBe('poisoned');
    await w.close(); // a poisoned writer releases without I/O: it does not wait for the append
    expect(Date.now() - started).toBeLessThan(2000);
    release();
  });

  it('a manifest commit that never settles poisons the writer instead of hanging waitForFlushDrain and close', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const name = storeName();
    const w = await open(storage, { walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 100 } }, name);
    await w.put(rows(1, 2));
    const release = storage.hold('manifestCommit');
    await w.forceSealActive();
    expect((await rejection(w.waitForFlushDrain())).code).toBe('IOError');
    expect(w.writerState).toBe('poisoned');
    await w.close();
    release();
    await storage.settled();
    const again = await open(storage, {}, name);
    expect(idsOf(await again.scan())).toEqual([1, 2]);
    await again.close();
  });

  it('a release that never settles does not hang close', async () => {
    const inner = new MemoryStorage();
    const stuck: StorageAdapter = {
      layout: inner.layout,
      destroyStore: (n) => inner.destroyStore(n),
      async openStore(n, o) {
        const h = await inner.openStore(n, o);
        return new Proxy(h, {
          get(t, p) {
            if (p === 'release') return () => new Promise(() => undefined);
            const v = Reflect.get(t, p);
            return typeof v === 'function' ? v.bind(t) : v;
          },
        });
      },
    };
    const w = await open(stuck, { walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 100 } });
    await w.put(rows(1, 1));
    const started = Date.now();
    await w.close();
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('metrics() and storageStats() answer without waiting for an estimate() that never settles, and never ask for a second one meanwhile', async () => {
    const inner = new MemoryStorage();
    let calls = 0;
    const answers: ((e: StorageEstimate) => void)[] = [];
    const slow: StorageAdapter = {
      layout: inner.layout,
      destroyStore: (n) => inner.destroyStore(n),
      openStore: (n, o) => inner.openStore(n, o),
      estimate: () => {
        calls++;
        return new Promise((answer) => answers.push(answer));
      },
    };
    /** The value of `p`, or a failure when it is still pending after a second. */
    const within = <T>(p: Promise<T>): Promise<T> =>
      Promise.race([p, sleep(1000).then(() => Promise.reject(new Error('still pending after 1 s')))]);
    const w = await open(slow);
    for (let i = 0; i < 3; i++) {
      expect(await within(w.metrics())).toContain('wal_table_files{store=');
      expect((await within(w.storageStats())).usageBytes).toBeUndefined();
    }
    expect(calls).toBe(1);
    answers[0]!({ usageBytes: 1234 });
    await sleep(0);
    expect((await within(w.storageStats())).usageBytes).toBe(1234);
    // A second later the figures are asked for again; that call never settles: the last figures answer.
    await sleep(1_100);
    expect((await within(w.storageStats())).usageBytes).toBe(1234);
    expect(await within(w.metrics())).toContain('1234');
    expect(calls).toBe(2);
    await w.close();
  });
});

describe('recovery', () => {
  it('a truncation inside an entry at or below the recorded durable position is Corruption, and open changes nothing', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    for (let i = 1; i <= 5; i++) await w.put(rows(i, 1));
    await w.forceSealActive();
    await w.waitForFlushDrain(); // replay cursor and positionHint: 5
    await w.put(rows(6, 1));
    await w.abort();
    const { h } = await asCurrentWriter(storage, name);
    const [seg] = await h.walList();
    const frames = scanSegment(await h.walRead(seg!.name)).frames;
    await h.walTruncate(seg!.name, frames[2]!.offset + 10); // inside entry 3 (recorded as durable)
    const cut = await h.walRead(seg!.name);
    const before = await h.manifestLoad();
    await h.release();
    const e = await rejection(open(storage, {}, name));
    expect(e.code).toBe('Corruption');
    expect(e.message).toContain('recorded as durable');
    const look = await storage.openStore(name, { timeoutMs: 0 });
    expect(await look.manifestLoad()).toEqual(before); // not claimed
    expect(await look.walRead(seg!.name)).toEqual(cut); // not "repaired"
    await look.release();
  });

  it('a WAL payload with a valid checksum but no Arrow in it fails open with Corruption before the claim', async () => {
    const storage = new MemoryStorage();
    const name = storeName();
    const w = await open(storage, {}, name);
    await w.put(rows(1, 1));
    await w.abort();
    const { h, m } = await asCurrentWriter(storage, name);
    const [seg] = await h.walList();
    await h.walAppend(seg!.name, seg!.bytes, encodeFrame(seg!.epoch, 2, new Uint8Array([1, 2, 3, 4])));
    await h.tableWrite('9-9-9.arrow', [new Uint8Array([7])]); // an orphan a doomed open must not sweep
    await h.release();
    const e = await rejection(open(storage, {}, name));
    expect(e.code).toBe('Corruption');
    expect(e.message).toContain('entry 2');
    const look = await storage.openStore(name, { timeoutMs: 0 });
    expect((await look.manifestLoad())!.writerEpoch).toBe(m.writerEpoch);
    expect(await look.tableList()).toContain('9-9-9.arrow');
    await look.release();
  });
});

describe('close and abort', () => {
  it('close() cut short by abort() rejects Closed instead of resolving without making puts durable', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const w = await open(storage);
    const release = storage.hold('walAppend');
    const put = rejection(w.put(rows(1, 1)));
    const closing = rejection(w.close());
    await sleep(10); // close is waiting for the held append
    await w.abort();
    expect((await closing).code).toBe('Closed');
    expect((await put).code).toBe('Closed');
    release();
  });

  it('a clean close logs nothing: WAL retention never outlives the store handle', async () => {
    const warnings: string[] = [];
    const root = await mkdtemp(join(tmpdir(), 'memwal-quiet-'));
    const w = await MemWal.open({
      name: storeName(),
      schema,
      primaryKey: ['id'],
      storage: new FileStorage(nodeFileSystem, root),
      maxMemtableBytes: 64 * 1024 * 1024,
      maxUnflushedMemtableBytes: 128 * 1024 * 1024,
      logger: { warn: (m: string) => warnings.push(m) },
    });
    // 20 MiB of WAL in three segments and no flush before close: close's flush makes two of them
    // removable, and their removal runs while close releases the store.
    for (let i = 0; i < 20; i++) await w.put(rows(i, 1, 'x'.repeat(1024 * 1024)));
    await w.close();
    expect(warnings).toEqual([]);
    expect((await w.walStats()).oldestPosition).toBeGreaterThan(1); // the removal ran, and close waited for it
  });
});

describe('waits', () => {
  it('a wait that ends by its timer or its abort leaves no waiter behind', async () => {
    const s = new Signal();
    await sleep(1, s);
    const ac = new AbortController();
    const waiting = s.wait(ac.signal);
    ac.abort();
    await waiting;
    expect(s.waiting).toBe(0);
  });

  it('a long flush outage does not pile up waiters', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const w = await open(storage, { flushRetry: { baseMs: 1, maxMs: 1 }, logger: quiet });
    storage.failNext('tableWrite', Number.POSITIVE_INFINITY);
    await w.put(rows(1, 1));
    await w.forceSealActive();
    await until(async () => (await w.writeStats()).flushFailureCount >= 50, 30_000, '50 failed flushes');
    const life = (w as unknown as { life: { kick: Signal; progress: Signal } }).life;
    expect(life.kick.waiting).toBeLessThanOrEqual(1);
    expect(life.progress.waiting).toBeLessThanOrEqual(2);
    storage.clearFaults();
    await w.waitForFlushDrain();
    await w.close();
  });
});
