// A Node worker thread for the RPC tests: hosts memwal over a FaultInjectingStorage and obeys
// { control: 'hold-wal' } from its parent, so a test can keep a put pending and then kill it.

import { parentPort } from 'node:worker_threads';
import { FaultInjectingStorage } from '../testing/fault.js';
import { hostMemWal, type HostScope } from './host.js';

const storage = new FaultInjectingStorage();
const scope = parentPort as unknown as HostScope;
hostMemWal(scope, { resolveStorage: () => storage });
scope.addEventListener('message', (ev) => {
  if ((ev.data as { control?: string }).control === 'hold-wal') storage.hold('walAppend');
});
