// memwal/worker: host stores in your own dedicated worker (a custom or fault-injecting adapter,
// your own bundling), for `openMemWal({ worker })` on the main thread. Re-exports, and one side
// effect (package.json `sideEffects` names this module): browser stores hosted here start their
// I/O worker from memwal's io.worker script, which your bundler bundles with your worker.

import { setIoWorkerStarter } from './io-worker/browser.js';
import { startIoWorkerScript } from './io-worker/io-script.js';

setIoWorkerStarter(startIoWorkerScript);

export { hostMemWal, type HostMemWalOptions, type HostScope } from './rpc/host.js';
export { defaultBrowserStorage, resolveBrowserStorage, type BrowserLayout } from './io-worker/browser.js';
export { OpfsStorage } from './storage/opfs.js';
export { IndexedDbStorage } from './storage/indexeddb.js';
