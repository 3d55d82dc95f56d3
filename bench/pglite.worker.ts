// The worker behind the page's `PGliteWorker` (@electric-sql/pglite/worker): a PGlite on the
// opfs-ahp file system in the directory the page names (`dataDir`), as the in-worker PGlite peer
// (bench/peers.ts) runs. Dedicated module worker.

import { PGlite } from '@electric-sql/pglite';
import { worker } from '@electric-sql/pglite/worker';

void worker({
  init: async (options) => {
    const pg = new PGlite(options.dataDir ?? 'opfs-ahp://bench-pglite-page');
    await pg.waitReady;
    return pg;
  },
});
