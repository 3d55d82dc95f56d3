// An I/O worker (serves OPFS like io-worker/io.worker.ts) that dies or hangs on a control message.
// Dedicated module worker.

import { OpfsStorage } from '../../src/storage/opfs.js';
import { type IoScope, serveStorage } from '../../src/io-worker/io-host.js';

const scope = self as unknown as IoScope;
serveStorage(scope, new OpfsStorage());
scope.addEventListener('message', (ev: MessageEvent) => {
  const control = (ev.data as { control?: string }).control;
  if (control === 'throw') {
    setTimeout(() => {
      throw new Error('the I/O worker crashed (test)');
    });
  }
  if (control === 'hang') {
    const until = Date.now() + 600_000;
    while (Date.now() < until) {
      // spin: no message is ever answered again
    }
  }
});
