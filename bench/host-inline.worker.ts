// A second memwal host for the page's client, with storage I/O and background jobs on the host's
// own thread (`ioWorker: false`): the stats case runs on both hosts, so one run shows what the
// I/O worker changes for the engine thread. Dedicated module worker.

import { hostMemWal, resolveBrowserStorage } from '../src/worker.js';

hostMemWal(undefined, {
  resolveStorage: (storage) => (storage === 'opfs' ? resolveBrowserStorage('opfs', { ioWorker: false }) : undefined),
});
