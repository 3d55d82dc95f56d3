// The worker memwal/playwright hosts a store in when a test asks for faults: hostMemWal() over a
// FaultInjectingStorage wrapping the default browser storage (so data persists as in the app),
// with controls the test reaches through Playwright's worker handle. Bundled by worker-bundle.ts
// into one module script; dedicated module worker only.

import { quotaExceededError } from '../util/errors.js';
import { hostMemWal } from '../rpc/host.js';
import type { StorageAdapter, StoreHandle } from '../storage/adapter.js';
import { defaultBrowserStorage, resolveBrowserStorage } from '../io-worker/browser.js';
import { sharedMemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import type { KitFaultError, KitFaultOp, KitWorkerControls } from './protocol.js';

/** One fault-injecting adapter per layout, as hostMemWal's default resolution has one adapter per layout. */
const adapters = new Map<string, FaultInjectingStorage>();
/** Stores whose writer this worker holds, with how many handles (a reopen may overlap a release). */
const hosting = new Map<string, number>();
const holds = new Map<number, () => void>();
let nextHold = 1;

/** `handle` with `release()` also forgetting that this worker hosts `name`. */
function tracked(name: string, handle: StoreHandle): StoreHandle {
  hosting.set(name, (hosting.get(name) ?? 0) + 1);
  let released = false;
  return new Proxy(handle, {
    get(target, key) {
      if (key === 'release') {
        return () => {
          if (!released) {
            released = true;
            const left = (hosting.get(name) ?? 1) - 1;
            if (left > 0) hosting.set(name, left);
            else hosting.delete(name);
          }
          return target.release();
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The adapter of `inner`'s layout, wrapped for faults and tracking. */
function faulty(inner: StorageAdapter): StorageAdapter {
  let adapter = adapters.get(inner.layout);
  if (!adapter) {
    adapter = new FaultInjectingStorage(inner);
    adapters.set(inner.layout, adapter);
  }
  const faults = adapter;
  return {
    layout: faults.layout,
    openStore: async (name, options) => tracked(name, await faults.openStore(name, options)),
    destroyStore: (name) => faults.destroyStore(name),
    estimate: (name) => faults.estimate(name),
    // Its stores are inline (lsm/io-plane.ts): every WAL entry and table file passes the faults.
  };
}

const errorOf = (error: KitFaultError | undefined): unknown => (error === 'QuotaExceeded' ? quotaExceededError() : undefined);
const every = (fn: (a: FaultInjectingStorage) => void): void => {
  for (const a of adapters.values()) fn(a);
};

const controls: KitWorkerControls = {
  hosting: () => [...hosting.keys()],
  failNext: (op: KitFaultOp, count: number, error?: KitFaultError) => every((a) => a.failNext(op, count, errorOf(error))),
  failAfter: (op: KitFaultOp, count: number, error?: KitFaultError) => every((a) => a.failAfter(op, count, errorOf(error))),
  hold(op: KitFaultOp) {
    const releases = [...adapters.values()].map((a) => a.hold(op));
    const id = nextHold++;
    holds.set(id, () => {
      for (const r of releases) r();
    });
    return id;
  },
  release(id: number) {
    holds.get(id)?.();
    holds.delete(id);
  },
  clearFaults: () => every((a) => a.clearFaults()),
  opCount: () => [...adapters.values()].reduce((n, a) => n + a.opCount, 0),
  crash() {
    // close() ends the worker once this task is done: pending I/O callbacks, timers and flushes
    // never run, and the browser frees its locks and handles, as when its tab's process dies.
    setTimeout(() => (globalThis as unknown as { close(): void }).close(), 0);
  },
};
(globalThis as Record<symbol, unknown>)[Symbol.for('memwal.playwright.worker')] = controls;

// Storage I/O stays on this worker's thread (ioWorker: false): a nested worker's script request
// does not reach the kit's route in Playwright's Chromium (it fails), so the kit cannot serve an
// I/O worker the way it serves this one. Faults, data and layout are the app's all the same.
const inline = { ioWorker: false };
hostMemWal(undefined, {
  resolveStorage: (layout) =>
    faulty(
      layout === undefined
        ? defaultBrowserStorage(inline)
        : layout === 'memory'
          ? sharedMemoryStorage()
          : resolveBrowserStorage(layout, inline),
    ),
});
