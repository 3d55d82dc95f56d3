// The worker behind the page's main-thread client (openMemWal({ worker })): a memwal host with
// the default browser storage (OPFS). Dedicated module worker.

import { hostMemWal } from '../src/worker.js';

hostMemWal();
