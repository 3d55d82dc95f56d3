// The I/O worker a browser store's engine starts (io-worker/browser.ts): it serves storage calls and
// background jobs on the layout the engine names in its first message. Dedicated module worker.

import type { BrowserLayout } from './browser.js';
import { IndexedDbStorage } from '../storage/indexeddb.js';
import { OpfsStorage } from '../storage/opfs.js';
import { serveStorage } from './io-host.js';

const scope = self as unknown as Parameters<typeof serveStorage>[0] & {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void, options?: { once?: boolean }): void;
};
scope.addEventListener(
  'message',
  (ev: MessageEvent) => {
    const layout = (ev.data as { layout: BrowserLayout }).layout;
    serveStorage(scope, layout === 'opfs' ? new OpfsStorage() : new IndexedDbStorage());
    scope.postMessage({ ready: layout }, []);
  },
  { once: true },
);
