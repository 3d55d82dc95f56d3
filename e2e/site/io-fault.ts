// The I/O-fault page: starts engine workers (io-fault.worker.ts) on demand and exposes them to
// Playwright as `window.io`, so a test can kill an engine worker the way an app would.

import * as Comlink from 'comlink';
import type { IoFaultWorkerApi } from './io-fault.worker.js';

const workers: Worker[] = [];

const io = {
  /** A new engine worker; returns its index. */
  start(): number {
    workers.push(new Worker(new URL('./io-fault.worker.ts', import.meta.url), { type: 'module' }));
    return workers.length - 1;
  },
  api: (i: number): Comlink.Remote<IoFaultWorkerApi> => Comlink.wrap<IoFaultWorkerApi>(workers[i]!),
  terminate(i: number): void {
    workers[i]!.terminate();
  },
};

(window as unknown as { io: typeof io }).io = io;
