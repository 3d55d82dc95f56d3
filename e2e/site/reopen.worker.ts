// Dedicated module worker of the reopen page (comlink): memwal stores on OPFS opened, loaded and
// closed one after another in this one worker, and the OPFS adapter's calls with a garbage
// collection forced while each sync access handle opens (docs/impl.md, "The OPFS stall").

import * as Comlink from 'comlink';
import { BENCH_SCHEMA, payloadPool, withIds } from '../../bench/data.js';
import { MemWal } from '../../src/engine/memwal.js';
import { MemWalError } from '../../src/util/errors.js';
import type { StoreHandle } from '../../src/storage/adapter.js';
import { resolveBrowserStorage } from '../../src/worker.js';
import { testManifest } from '../../src/testing/conformance.js';

/** One store's life under load. */
export interface RepResult {
  ms: number;
  flushes: number;
  flushFailures: number;
  /** The engine's warnings about table writes that did not finish within `flushRetry.stallMs`. */
  stalls: string[];
}

/** `'settled'`, or `'hung'` when `promise` has not settled after `ms`. */
function settles(promise: Promise<unknown>, ms: number): Promise<'settled' | 'hung'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('hung'), ms);
    promise.then(
      () => (clearTimeout(timer), resolve('settled')),
      () => (clearTimeout(timer), resolve('settled')),
    );
  });
}

const api = {
  /**
   * Opens a memwal store on OPFS (through its I/O worker, as apps do), puts `mib` of the
   * benchmark's batches of about 1 MiB (bench/data.ts) from `writers` concurrent writers, waits
   * for every flush, closes and destroys it. No GC is forced anywhere.
   */
  async rep(mib: number, writers: number, stallMs: number): Promise<RepResult> {
    // The default: the OPFS adapter in an I/O worker, the same one for every store opened here.
    const storage = resolveBrowserStorage('opfs');
    const name = `reopen-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const stalls: string[] = [];
    const db = await MemWal.open({
      name,
      schema: BENCH_SCHEMA,
      storage,
      flushRetry: { stallMs },
      logger: { warn: (m: unknown) => void (String(m).includes('did not finish') && stalls.push(String(m))) },
    });
    const t0 = performance.now();
    const pool = payloadPool();
    const rows = pool[0]!.rows;
    let k = 0;
    const loop = async (): Promise<void> => {
      while (k < mib) {
        const b = withIds(pool[k % pool.length]!, k * rows);
        k += 1;
        await db.put(b);
      }
    };
    await Promise.all(Array.from({ length: writers }, loop));
    await db.waitForFlushDrain();
    const ms = performance.now() - t0;
    const ws = await db.writeStats();
    await db.close();
    await MemWal.destroy(name, { storage });
    return { ms, flushes: ws.flushCount, flushFailures: ws.flushFailureCount, stalls };
  },

  /**
   * Needs `--js-flags=--expose-gc --allow-natives-syntax`. First `warmRounds` table writes and
   * removes, so that V8 optimizes the adapter's code as
   * a long-running app has it (the bench's stall needed that; V8 optimized the previous
   * `tableWrite` after about 420 calls). Then it forces a full GC in a microtask right after every
   * `createSyncAccessHandle()` call — inside the window where Chromium holds the file handle only
   * weakly — for `rounds` more rounds and a reopen that lists every segment. Returns the calls
   * that did not settle within `limitMs`, V8's optimization status of the calls, and a control:
   * whether a bare `createSyncAccessHandle()` whose caller dropped the file handle settles.
   */
  async gcWhileOpening(
    warmRounds: number,
    rounds: number,
    limitMs: number,
  ): Promise<{ calls: number; hung: string[]; optimized: string[]; controlDroppedHandle: string }> {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error('start Chromium with --js-flags=--expose-gc --allow-natives-syntax');
    const status = new Function('f', 'return %GetOptimizationStatus(f)') as (f: unknown) => number;
    // OpfsStorage itself, on this thread, where the GC is forced (not in an I/O worker).
    const adapter = resolveBrowserStorage('opfs', { ioWorker: false });
    const store = `gc-open-${Math.random().toString(36).slice(2, 10)}`;
    let h: StoreHandle = await adapter.openStore(store, { timeoutMs: 0 });
    await h.manifestCommit(0, testManifest(adapter, 1, 1));
    const bytes = new Uint8Array(4096).map((_, i) => i & 0xff);
    for (let i = 0; i < warmRounds; i++) {
      await h.tableWrite(`w${i}.arrow`, [bytes]);
      await h.tableRemove(`w${i}.arrow`);
    }
    const proto = Object.getPrototypeOf(h) as Record<string, unknown>;
    const optimized = ['tableWrite', 'tableReadRange', 'walAppend', 'walList'].filter((k) => (status(proto[k]) & 0b1000) !== 0);

    const fileProto = (globalThis as unknown as { FileSystemFileHandle: { prototype: Record<string, unknown> } }).FileSystemFileHandle
      .prototype;
    const original = fileProto.createSyncAccessHandle as (...args: unknown[]) => Promise<unknown>;
    fileProto.createSyncAccessHandle = function (this: unknown, ...args: unknown[]) {
      const opening = original.apply(this, args);
      queueMicrotask(gc);
      return opening;
    };
    const hung: string[] = [];
    let calls = 0;
    const run = async (what: string, call: () => Promise<unknown>): Promise<void> => {
      calls += 1;
      if ((await settles(call(), limitMs)) === 'hung') hung.push(what);
    };
    try {
      for (let i = 1; i <= rounds; i++) {
        await run(`tableWrite ${i}`, () => h.tableWrite(`${i}.arrow`, [bytes]));
        await run(`walAppend creating 1-${i}`, () => h.walAppend(`1-${i}`, 0, bytes.subarray(0, 100)));
        await run(`tableReadRange ${i}`, () => h.tableReadRange(`${i}.arrow`, 100, 100));
      }
      await h.release();
      h = await adapter.openStore(store, { timeoutMs: 0 });
      await run('walList after reopen (opens every segment)', () => h.walList());
      await run('tableRead after reopen', () => h.tableRead('1.arrow'));
      // The control: a handle nobody refers to while its createSyncAccessHandle() is pending.
      const dir = await navigator.storage.getDirectory();
      const start = async (): Promise<{ opening: Promise<unknown> }> => {
        const file = await dir.getFileHandle(`${store}-control`, { create: true });
        return { opening: (file as unknown as { createSyncAccessHandle(): Promise<unknown> }).createSyncAccessHandle() };
      };
      const { opening } = await start();
      const controlDroppedHandle = await settles(opening, limitMs);
      void opening.then((s) => (s as { close(): void }).close()).catch(() => undefined);
      await dir.removeEntry(`${store}-control`).catch(() => undefined);
      return { calls, hung, optimized, controlDroppedHandle };
    } finally {
      fileProto.createSyncAccessHandle = original;
      await h.release();
      await adapter.destroyStore(store).catch((e: unknown) => {
        if (!(e instanceof MemWalError)) throw e;
      });
    }
  },
};

export type ReopenWorkerApi = typeof api;

Comlink.expose(api);
