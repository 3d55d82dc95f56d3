// Fixtures for the RPC tests (not part of the package): a host on a MessageChannel standing in
// for a worker, and a real worker thread hosting a store, both seen through WorkerLike.

import { Worker } from 'node:worker_threads';
import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import type { MemWalError } from '../util/errors.js';
import { hostMemWal, type HostMemWalOptions, type HostScope } from './host.js';
import type { WorkerLike } from './client.js';

export const schema = new Schema([new Field('id', new Int32(), false), new Field('name', new Utf8(), true)]);

let counter = 0;
export const storeName = (prefix = 'rpc'): string => `${prefix}-${++counter}-${Math.floor(Math.random() * 1e9)}`;

export const quiet = { warn: (): void => undefined };

export function rows(from: number, n: number, tag = 'v'): { id: number; name: string }[] {
  return Array.from({ length: n }, (_, i) => ({ id: from + i, name: `${tag}${from + i}` }));
}

/** A host listening on one end of a MessageChannel; the other end is the "worker". */
export function channelWorker(options?: HostMemWalOptions): WorkerLike & { terminated: boolean; fireError(message: string): void } {
  const { port1, port2 } = new MessageChannel();
  hostMemWal(port2 as unknown as HostScope, options);
  port1.start();
  const errors = new EventTarget();
  const worker = {
    terminated: false,
    postMessage: (message: unknown, transfer: Transferable[]) => port1.postMessage(message, transfer),
    addEventListener: (type: 'message' | 'error', listener: (ev: Event) => void) =>
      (type === 'error' ? errors : port1).addEventListener(type, listener as EventListener),
    removeEventListener: (type: 'message' | 'error', listener: (ev: Event) => void) =>
      (type === 'error' ? errors : port1).removeEventListener(type, listener as EventListener),
    terminate: () => {
      worker.terminated = true;
      port1.close();
    },
    /** An uncaught error in the "worker", as a Worker's 'error' event reports it. */
    fireError: (message: string) => errors.dispatchEvent(Object.assign(new Event('error'), { message })),
  };
  return worker;
}

/**
 * Install a global `Worker` whose instances are channelWorker()s (over `storage`), so that
 * openMemWal({ workerUrl }) starts — and owns — one. Returns the workers started and an undo.
 */
export function stubGlobalWorker(options?: HostMemWalOptions): { started: ReturnType<typeof channelWorker>[]; restore(): void } {
  const g = globalThis as { Worker?: unknown };
  const previous = g.Worker;
  const started: ReturnType<typeof channelWorker>[] = [];
  g.Worker = function FakeWorker() {
    const w = channelWorker(options);
    started.push(w);
    return w;
  };
  return { started, restore: () => (g.Worker = previous) };
}

/**
 * A "worker" whose host starts listening only after `delayMs`: messages posted before that are
 * dropped, as a module worker drops them when it calls hostMemWal() after an await.
 */
export function lateHostWorker(delayMs: number): WorkerLike {
  const { port1, port2 } = new MessageChannel();
  let listening = false;
  setTimeout(() => {
    listening = true;
    hostMemWal(port2 as unknown as HostScope, {});
  }, delayMs);
  port1.start();
  return {
    postMessage: (message, transfer) => {
      if (listening) port1.postMessage(message, transfer as Transferable[]);
    },
    addEventListener: (type, listener) => port1.addEventListener(type, listener as EventListener),
    removeEventListener: (type, listener) => port1.removeEventListener(type, listener as EventListener),
    terminate: () => port1.close(),
  };
}

/** A Node worker thread running rpc-thread.test-util.ts (a host over FaultInjectingStorage). */
export function threadWorker(): { worker: WorkerLike; control(message: string): void; terminate(): Promise<number> } {
  // A CommonJS bootstrap that registers tsx's loader, then imports the TypeScript host module.
  const entry = new URL('./rpc-thread.test-util.ts', import.meta.url).href;
  const bootstrap = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  const thread = new Worker(bootstrap, { eval: true });
  const wrapped = new Map<(ev: Event) => void, (v: unknown) => void>();
  const worker: WorkerLike = {
    postMessage: (message, transfer) => thread.postMessage(message, transfer as never),
    addEventListener(type, listener) {
      const h =
        type === 'message'
          ? (data: unknown) => listener({ data } as MessageEvent)
          : (e: unknown) => listener({ message: String(e) } as ErrorEvent);
      wrapped.set(listener, h);
      thread.on(type, h);
    },
    removeEventListener(type, listener) {
      const h = wrapped.get(listener);
      if (h) thread.off(type, h);
    },
    terminate: () => void thread.terminate(),
  };
  return { worker, control: (message) => thread.postMessage({ control: message }), terminate: () => thread.terminate() };
}

/** The MemWalError `p` rejects with; fails the test if it resolves. */
export async function rejection(p: Promise<unknown>): Promise<MemWalError> {
  try {
    await p;
  } catch (e) {
    return e as MemWalError;
  }
  throw new Error('expected a rejection');
}
