// The demo's own dedicated module worker: hosts memwal stores with memwal/worker over the
// browser's default storage (OPFS, else IndexedDB) wrapped in the demo's fault stack
// (fault-stack.ts: FaultInjectingStorage and, around it, TableWriteFaults), and answers a small
// control channel (comlink) for the fault buttons and "reset store". The stack sits in the
// stores' I/O worker (demo-io.worker.ts, started here in place of memwal's own I/O worker
// script), under memwal's I/O plane: flushes and compactions are built there, as in an app, and
// every table they write passes the faults. Where no I/O worker can be started, it wraps the
// adapter here.
//
// In an app these imports read `memwal/worker`, `memwal/testing` and `memwal`; the demo takes
// them from ../src so it runs without a build (the I/O worker starter and role are not public).

import * as Comlink from 'comlink';
import { MemWal, type StorageAdapter } from '../src/index.js';
import { defaultBrowserStorage, hostMemWal, resolveBrowserStorage } from '../src/worker.js';
import type { IoEndpoint } from '../src/io-worker/remote-storage.js';
import { type BrowserLayout, ioWorkerLayout, runsInIoWorker, setIoWorkerStarter } from '../src/io-worker/browser.js';
import { FaultStack, type StackFaults } from './fault-stack.js';
import type { DemoControl, DemoStorage, FaultsPort } from './protocol.js';

/** The fault stacks in the I/O workers started here, by layout (comlink proxies). */
const ioFaults = new Map<BrowserLayout, Comlink.Remote<StackFaults>>();

// Each layout's stores run in an I/O worker of the demo's script, whose fault stack this worker arms.
setIoWorkerStarter((name) => {
  const layout = ioWorkerLayout(name);
  // The OPFS table writer thread would write tables past the stack: the I/O worker writes them.
  if (!layout) throw new Error('the demo writes its tables in the I/O worker');
  const worker = new Worker(new URL('./demo-io.worker.ts', import.meta.url), { type: 'module', name });
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ demo: 'faults', port: port2 } satisfies FaultsPort, [port2]);
  ioFaults.set(layout, Comlink.wrap<StackFaults>(port1));
  return worker as unknown as IoEndpoint;
});

/** A layout's storage as the stores open it, and its faults (in its I/O worker, or here). */
interface Wrapped {
  storage: StorageAdapter;
  /** The faults, where they are now; none while its I/O worker has not been started (nothing armed there yet). */
  faults(): StackFaults | Comlink.Remote<StackFaults> | undefined;
}

/** One per layout, so a reopen in this worker keeps its pending faults. */
const wrappers = new Map<string, Wrapped>();
/** The storage the last open used: the one the fault buttons act on. */
let current: Wrapped | undefined;

function wrapperFor(storage: DemoStorage): Wrapped {
  const inner: StorageAdapter = storage === 'auto' ? defaultBrowserStorage() : resolveBrowserStorage(storage);
  let wrapped = wrappers.get(inner.layout);
  if (!wrapped) {
    if (runsInIoWorker()) {
      const layout = inner.layout as BrowserLayout;
      wrapped = { storage: inner, faults: () => ioFaults.get(layout) };
    } else {
      const stack = new FaultStack(inner);
      wrapped = { storage: stack.adapter, faults: () => stack };
    }
    wrappers.set(inner.layout, wrapped);
  }
  return wrapped;
}

/** The faults of the storage the last open used. */
function opened(): StackFaults | Comlink.Remote<StackFaults> {
  const faults = current?.faults();
  if (!faults) throw new Error('no store has been opened in this worker yet');
  return faults;
}

hostMemWal(undefined, {
  // The page's `storage` option ('opfs' | 'indexeddb' | undefined = browser default) picks the
  // inner adapter; every store of this worker goes through the fault stack.
  resolveStorage: (storage) => {
    if (storage === 'memory') return undefined;
    current = wrapperFor(storage ?? 'auto');
    return current.storage;
  },
});

const control: DemoControl = {
  layout: () => current?.storage.layout,
  failNext: async (ops, count, kind) => opened().failNext(ops, count, kind),
  failFlushes: async (count) => opened().failFlushes(count),
  failCompactions: async (count) => opened().failCompactions(count),
  slowCompactions: async (ms) => opened().slowCompactions(ms),
  async clearFaults() {
    await Promise.all([...wrappers.values()].map((w) => w.faults()?.clear()));
  },
  async destroy(name: string, storage: DemoStorage) {
    const wrapped = wrapperFor(storage);
    await wrapped.faults()?.clear();
    await MemWal.destroy(name, { storage: wrapped.storage });
  },
};

// The page hands over a MessagePort for the control channel; memwal's host ignores this message.
self.addEventListener('message', (ev: MessageEvent) => {
  const msg = ev.data as { demo?: string; port?: MessagePort } | null;
  if (msg?.demo === 'control' && msg.port) Comlink.expose(control, msg.port);
});
