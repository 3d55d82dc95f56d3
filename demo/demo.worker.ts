// The demo's own dedicated module worker: hosts memwal stores with memwal/worker over the
// browser's default storage (OPFS, else IndexedDB) wrapped in FaultInjectingStorage and, around
// that, TableWriteFaults (failures of flushes only or compactions only, slow compactions), and
// answers a small control channel (comlink) for the fault buttons and "reset store".
//
// In an app these imports read `memwal/worker`, `memwal/testing` and `memwal`; the demo takes
// them from ../src so it runs without a build.

import * as Comlink from 'comlink';
import { MemWal, type StorageAdapter } from '../src/index.js';
import { defaultBrowserStorage, hostMemWal, resolveBrowserStorage } from '../src/worker.js';
import { FaultInjectingStorage, quotaExceededError, type FaultOp } from '../src/testing/index.js';
import { TableWriteFaults } from './table-write-faults.js';
import type { DemoControl, DemoStorage, FaultKind } from './protocol.js';

/** The storage stack of one layout: TableWriteFaults around FaultInjectingStorage around the browser's adapter. */
interface Wrapped {
  faults: FaultInjectingStorage;
  tables: TableWriteFaults;
}

/** One stack per layout, so a reopen in this worker keeps its pending faults. */
const wrappers = new Map<string, Wrapped>();
/** The stack the last open used: the one the fault buttons act on. */
let current: Wrapped | undefined;

function wrapperFor(storage: DemoStorage): Wrapped {
  const inner: StorageAdapter = storage === 'auto' ? defaultBrowserStorage() : resolveBrowserStorage(storage);
  let wrapped = wrappers.get(inner.layout);
  if (!wrapped) {
    const faults = new FaultInjectingStorage(inner);
    wrapped = { faults, tables: new TableWriteFaults(faults) };
    wrappers.set(inner.layout, wrapped);
  }
  return wrapped;
}

function opened(): Wrapped {
  if (!current) throw new Error('no store has been opened in this worker yet');
  return current;
}

hostMemWal(undefined, {
  // The page's `storage` option ('opfs' | 'indexeddb' | undefined = browser default) picks the
  // inner adapter; every store of this worker goes through TableWriteFaults and FaultInjectingStorage.
  resolveStorage: (storage) => {
    if (storage === 'memory') return undefined;
    current = wrapperFor(storage ?? 'auto');
    return current.tables;
  },
});

const control: DemoControl = {
  layout: () => current?.faults.layout,
  failNext(ops: FaultOp[], count: number, kind: FaultKind) {
    const { faults } = opened();
    for (const op of ops) faults.failNext(op, count, kind === 'quota' ? quotaExceededError() : undefined);
  },
  failFlushes(count: number) {
    opened().tables.failFlushes(count);
  },
  failCompactions(count: number) {
    opened().tables.failCompactions(count);
  },
  slowCompactions(ms: number) {
    opened().tables.slowCompactions(ms);
  },
  clearFaults() {
    for (const w of wrappers.values()) {
      w.faults.clearFaults();
      w.tables.clear();
    }
  },
  async destroy(name: string, storage: DemoStorage) {
    const wrapped = wrapperFor(storage);
    wrapped.faults.clearFaults();
    wrapped.tables.clear();
    await MemWal.destroy(name, { storage: wrapped.tables });
  },
};

// The page hands over a MessagePort for the control channel; memwal's host ignores this message.
self.addEventListener('message', (ev: MessageEvent) => {
  const msg = ev.data as { demo?: string; port?: MessagePort } | null;
  if (msg?.demo === 'control' && msg.port) Comlink.expose(control, msg.port);
});
