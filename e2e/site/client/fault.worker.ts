// A user's own worker built on memwal/worker: hosts stores over a FaultInjectingStorage (in
// memory) and obeys { fault: FaultControl } messages from its page, which is how the e2e tests
// reach fault controls from the main thread.

import { quotaExceededError } from '../../../src/util/errors.js';
import { FaultInjectingStorage } from '../../../src/testing/index.js';
import { hostMemWal } from '../../../src/worker.js';
import type { FaultControl, FaultOp } from './protocol.js';

const storage = new FaultInjectingStorage();
const releases = new Map<FaultOp, () => void>();

self.addEventListener('message', (ev: MessageEvent<{ fault?: FaultControl }>) => {
  const c = ev.data?.fault;
  if (!c) return;
  if (c.action === 'hold') releases.set(c.op, storage.hold(c.op));
  else if (c.action === 'release') releases.get(c.op)?.();
  else if (c.action === 'failNext') storage.failNext(c.op, c.count, c.quota ? quotaExceededError() : undefined);
  else storage.clearFaults();
});

hostMemWal(undefined, { resolveStorage: () => storage });
