// SQLite's Worker API #1 (what `sqlite3Worker1Promiser` talks to) with the opfs-sahpool VFS: the
// stock worker script (sqlite3-worker1.mjs) offers only the "opfs" VFS, which needs the
// async-proxy worker and SharedArrayBuffer; SQLite's docs say a worker that installs
// opfs-sahpool before `initWorker1API()` serves it to the promiser (`vfs: 'opfs-sahpool'` at
// open). The same VFS as the in-worker SQLite peers (bench/peers.ts), in a directory of its own.
// Dedicated module worker.

import sqlite3InitModule from '@sqlite.org/sqlite-wasm';

const sqlite3 = await sqlite3InitModule();
await sqlite3.installOpfsSAHPoolVfs({ name: 'opfs-sahpool', directory: '/bench-sahpool-page', clearOnInit: true, initialCapacity: 12 });
sqlite3.initWorker1API();
