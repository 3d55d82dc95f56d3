// The I/O worker script of stores hosted in your own worker (memwal/worker; started by
// io-script.ts): it serves storage calls and background jobs on the layout the engine names in
// its first message. memwal's default worker serves this role from its own script. Dedicated
// module worker.

import { type IoRoleScope, serveIoRole } from './browser.js';

serveIoRole(self as unknown as IoRoleScope);
