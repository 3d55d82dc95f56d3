// The demo's own dedicated module worker: hosts memwal stores with memwal/worker over the
// browser's default storage (OPFS, else IndexedDB) wrapped in FaultInjectingStorage, and answers
// a small control channel (comlink) for the fault buttons and "reset store".
//
// In an app these imports read `memwal/worker`, `memwal/testing` and `memwal`; the demo takes
// them from ../src so it runs without a build.

import * as Comlink from 'comlink';
import { MemWal, type StorageAdapter } from '../src/index.js';
import { defaultBrowserStorage, hostMemWal, resolveBrowserStorage } from '../src/worker.js';
import { FaultInjectingStorage, quotaExceededError, type FaultOp } from '../src/testing/index.js';
import type { DemoControl, DemoStorage, FaultKind } from './protocol.js';

/** One fault-injecting wrapper per layout, so a reopen in this worker keeps its pending faults. */
const wrappers = new Map<string, FaultInjectingStorage>();
/** The wrapper the last open used: the one the fault buttons act on. */
let current: FaultInjectingStorage | undefined;

function wrapperFor(storage: DemoStorage): FaultInjectingStorage {
  const inner: StorageAdapter = storage === 'auto' ? defaultBrowserStorage() : resolveBrowserStorage(storage);
  let wrapper = wrappers.get(inner.layout);
  if (!wrapper) {
    wrapper = new FaultInjectingStorage(inner);
    wrappers.set(inner.layout, wrapper);
  }
  return wrapper;
}

hostMemWal(undefined, {
  // The page's `storage` option ('opfs' | 'indexeddb' | undefined = browser default) picks the
  // inner adapter; every store of this worker goes through a FaultInjectingStorage.
  resolveStorage: (storage) => {
    if (storage === 'memory') return undefined;
    current = wrapperFor(storage ?? 'auto');
    return current;
  },
});

const control: DemoControl = {
  layout: () => current?.layout,
  failNext(ops: FaultOp[], count: number, kind: FaultKind) {
    const target = current;
    if (!target) throw new Error('no store has been opened in this worker yet');
    for (const op of ops) target.failNext(op, count, kind === 'quota' ? quotaExceededError() : undefined);
  },
  clearFaults() {
    for (const w of wrappers.values()) w.clearFaults();
  },
  async destroy(name: string, storage: DemoStorage) {
    const wrapper = wrapperFor(storage);
    wrapper.clearFaults();
    await MemWal.destroy(name, { storage: wrapper });
  },
};

// The page hands over a MessagePort for the control channel; memwal's host ignores this message.
self.addEventListener('message', (ev: MessageEvent) => {
  const msg = ev.data as { demo?: string; port?: MessagePort } | null;
  if (msg?.demo === 'control' && msg.port) Comlink.expose(control, msg.port);
});
