// The module worker openMemWal() starts by default: a memwal host with the default browser
// storage (OPFS where sync access handles exist, else IndexedDB). Dedicated module worker.

import { hostMemWal } from './host.js';

hostMemWal();
