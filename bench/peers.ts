// Case 4, the peers: the same rows, 1,000 per durable transaction, into IndexedDB (idb, strict),
// Dexie (bulkPut, strict), SQLite-wasm opfs-sahpool (synchronous=FULL) and PGlite opfs-ahp.
// Each peer loads lazily; each repetition writes into a fresh database. Dedicated worker.

import { deleteDB, openDB } from 'idb';
import type { BenchRow } from './data.js';
import { now, uniqueName } from './measure.js';

/** The engine keys of latest.json. */
export type PeerName = 'idb' | 'dexie' | 'sqlite_sahpool' | 'pglite_opfs_ahp';
export const PEERS: PeerName[] = ['idb', 'dexie', 'sqlite_sahpool', 'pglite_opfs_ahp'];

/** rows/s of one repetition: every chunk in its own durable transaction, awaited in order. */
export async function peerRows(peer: PeerName, chunks: BenchRow[][]): Promise<number> {
  const rows = chunks.reduce((n, c) => n + c.length, 0);
  const ms = await RUNNERS[peer](chunks);
  return rows / (ms / 1000);
}

/** Time (ms) of writing every chunk; setup and teardown are outside the timed part. */
type Runner = (chunks: BenchRow[][]) => Promise<number>;

const RUNNERS: Record<PeerName, Runner> = {
  async idb(chunks) {
    const name = uniqueName('idb');
    const db = await openDB(name, 1, {
      upgrade(d) {
        d.createObjectStore('rows', { keyPath: 'id' });
      },
    });
    try {
      const t0 = now();
      for (const chunk of chunks) {
        const tx = db.transaction('rows', 'readwrite', { durability: 'strict' });
        const puts: Promise<unknown>[] = chunk.map((r) => tx.store.put(r));
        puts.push(tx.done);
        await Promise.all(puts);
      }
      return now() - t0;
    } finally {
      db.close();
      await deleteDB(name);
    }
  },

  async dexie(chunks) {
    const { Dexie } = await import('dexie');
    const db = new Dexie(uniqueName('dexie'), { chromeTransactionDurability: 'strict' });
    db.version(1).stores({ rows: 'id' });
    await db.open();
    try {
      const table = db.table<BenchRow, number>('rows');
      const t0 = now();
      for (const chunk of chunks) await table.bulkPut(chunk);
      return now() - t0;
    } finally {
      await db.delete();
    }
  },

  async sqlite_sahpool(chunks) {
    const pool = await sahPool();
    const path = `/${uniqueName('sqlite')}.db`;
    const db = new pool.OpfsSAHPoolDb(path);
    try {
      // Rollback journal + synchronous=FULL: every COMMIT is synced before it returns.
      db.exec('PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;');
      db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, value REAL NOT NULL, name TEXT NOT NULL)');
      const stmt = db.prepare('INSERT INTO t(id, value, name) VALUES (?, ?, ?)');
      try {
        const t0 = now();
        for (const chunk of chunks) {
          db.exec('BEGIN');
          for (const r of chunk) stmt.bind([r.id, r.value, r.name]).stepReset();
          db.exec('COMMIT');
        }
        return now() - t0;
      } finally {
        stmt.finalize();
      }
    } finally {
      db.close();
      pool.unlink(path);
    }
  },

  async pglite_opfs_ahp(chunks) {
    const pg = await pglite();
    await pg.exec('DROP TABLE IF EXISTS t; CREATE TABLE t(id bigint PRIMARY KEY, value double precision NOT NULL, name text NOT NULL)');
    const statements = new Map<number, string>();
    try {
      const t0 = now();
      for (const chunk of chunks) {
        // One multi-row INSERT: one implicit transaction, synced before the query resolves.
        let sql = statements.get(chunk.length);
        if (!sql) {
          const values = chunk.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`).join(', ');
          sql = `INSERT INTO t(id, value, name) VALUES ${values}`;
          statements.set(chunk.length, sql);
        }
        const params: unknown[] = [];
        for (const r of chunk) params.push(r.id, r.value, r.name);
        await pg.query(sql, params);
      }
      return now() - t0;
    } finally {
      await pg.exec('DROP TABLE t');
    }
  },
};

type SahPool = Awaited<ReturnType<Awaited<ReturnType<typeof import('@sqlite.org/sqlite-wasm').default>>['installOpfsSAHPoolVfs']>>;
let sahPoolPromise: Promise<SahPool> | undefined;

/** The opfs-sahpool VFS, installed once per worker in a directory of its own. */
function sahPool(): Promise<SahPool> {
  sahPoolPromise ??= (async () => {
    const { default: init } = await import('@sqlite.org/sqlite-wasm');
    const sqlite3 = await init();
    return sqlite3.installOpfsSAHPoolVfs({ name: 'bench-sahpool', directory: '/bench-sahpool', clearOnInit: true });
  })();
  return sahPoolPromise;
}

type PGliteInstance = InstanceType<typeof import('@electric-sql/pglite').PGlite>;
let pglitePromise: Promise<PGliteInstance> | undefined;

/** One PGlite instance per worker (its start-up takes seconds); each repetition recreates the table. */
function pglite(): Promise<PGliteInstance> {
  pglitePromise ??= (async () => {
    const { PGlite } = await import('@electric-sql/pglite');
    const pg = new PGlite(`opfs-ahp://${uniqueName('pglite')}`);
    await pg.waitReady;
    return pg;
  })();
  return pglitePromise;
}

/** Close PGlite (if started), so its OPFS handles are released. */
export async function closePeers(): Promise<void> {
  if (pglitePromise) await (await pglitePromise).close();
  pglitePromise = undefined;
}
