// memwal/worker: host stores in your own dedicated worker (a custom or fault-injecting adapter,
// your own bundling), for `openMemWal({ worker })` on the main thread. Re-exports only.

export { hostMemWal, type HostMemWalOptions, type HostScope } from './rpc/host.js';
export { defaultBrowserStorage, resolveBrowserStorage, type BrowserLayout } from './io-worker/browser.js';
export { OpfsStorage } from './storage/opfs.js';
export { IndexedDbStorage } from './storage/indexeddb.js';
