// The demo's I/O worker: memwal's I/O role (the stores' storage calls, and their flushes and
// compactions built next to the files) over the browser adapter wrapped in the demo's fault stack
// (fault-stack.ts), so a faulty write takes the path production takes. The demo worker starts it
// (demo.worker.ts) and hands it a MessagePort first, over which it arms the faults (comlink).
// Dedicated module worker.

import * as Comlink from 'comlink';
import { type IoRoleScope, serveIoRole } from '../src/io-worker/browser.js';
import { FaultStack, type StackFaults } from './fault-stack.js';
import { isFaultsPort } from './protocol.js';

const scope = self as unknown as IoRoleScope;
let stack: FaultStack | undefined;

const need = (): FaultStack => {
  if (!stack) throw new Error('the I/O worker serves no store yet');
  return stack;
};
const faults: StackFaults = {
  failNext: (ops, count, kind) => need().failNext(ops, count, kind),
  failFlushes: (count) => need().failFlushes(count),
  failCompactions: (count) => need().failCompactions(count),
  slowCompactions: (ms) => need().slowCompactions(ms),
  clear: () => stack?.clear(),
};

scope.addEventListener('message', (ev: MessageEvent) => {
  if (isFaultsPort(ev.data)) Comlink.expose(faults, ev.data.port);
});

// memwal's role sees every message but the demo's own.
const memwalScope: IoRoleScope = {
  postMessage: (message, transfer) => scope.postMessage(message, transfer),
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void, options?: { once?: boolean }) {
    let heard = false;
    scope.addEventListener(type, (ev: MessageEvent) => {
      if (isFaultsPort(ev.data) || (options?.once && heard)) return;
      heard = true;
      listener(ev);
    });
  },
};

serveIoRole(memwalScope, {
  wrap: (adapter) => {
    stack = new FaultStack(adapter);
    return stack.adapter;
  },
});
