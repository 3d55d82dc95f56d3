// The module worker openMemWal() starts by default, in one of two roles by its name: a memwal
// host with the default browser storage (OPFS where sync access handles exist, else IndexedDB),
// whose stores start their I/O worker from this same script; or that I/O worker. One script for
// both roles, so an app's build ships Arrow and the storage code once. Dedicated module worker.

import { type IoRoleScope, isIoWorker, serveIoRole, setIoWorkerStarter } from '../io-worker/browser.js';
import type { IoEndpoint } from '../io-worker/remote-storage.js';
import { hostMemWal } from './host.js';

const scope = self as unknown as IoRoleScope & { name: string; location: { href: string } };
if (isIoWorker(scope)) serveIoRole(scope);
else {
  setIoWorkerStarter((name) => new Worker(scope.location.href, { type: 'module', name }) as unknown as IoEndpoint);
  hostMemWal();
}
