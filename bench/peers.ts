// Case 4, the peers: the same rows, 1,000 per durable transaction, into IndexedDB (idb, strict),
// Dexie (bulkPut, strict), SQLite-wasm on opfs-sahpool and PGlite on opfs-ahp — each in every
// configuration the bench compares, all equally durable (a transaction is on disk when it
// returns; why each one is, is written next to it). Each peer loads lazily; each repetition
// writes into a fresh database. Dedicated worker.

import { deleteDB, openDB } from 'idb';
import type { BenchRow } from './data.js';
import { now, uniqueName } from './measure.js';

/**
 * SQLite configurations, all with `synchronous=FULL` on the opfs-sahpool VFS, whose xSync is
 * `FileSystemSyncAccessHandle.flush()` (an fdatasync): a COMMIT returns only once it is synced.
 */
export const SQLITE_CONFIGS = {
  /** Rollback journal: the journal and the database file are synced at every COMMIT. */
  sqlite_sahpool: 'PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;',
  /**
   * Write-ahead log: with synchronous=FULL the WAL is synced at every COMMIT (SQLite's docs:
   * "WAL mode with synchronous=FULL ... transactions are durable"). opfs-sahpool has no shared
   * memory, so WAL needs the exclusive locking mode (one connection, as here).
   */
  sqlite_sahpool_wal: 'PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;',
  /**
   * The WAL configuration with 16 KiB pages instead of 4 KiB (set before the first table):
   * fewer, larger page writes per commit. The page size does not change when a COMMIT is
   * durable. The fastest of the configurations tried here (TRUNCATE and PERSIST journals, the
   * exclusive locking mode with DELETE, 8 KiB pages, a 16 MiB cache, checkpoints every 16 MiB),
   * though within the noise of a loaded machine; bench/results/HISTORY.md.
   */
  sqlite_sahpool_wal_tuned: 'PRAGMA page_size=16384; PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;',
} as const;
export type SqliteConfig = keyof typeof SQLITE_CONFIGS;

/**
 * PGlite variants. PGlite's opfs-ahp file system flushes every dirty sync access handle after
 * each query (`syncToFs`, unless `relaxedDurability`), so each one-statement transaction below
 * is on disk when its query resolves; the variants differ only in how the 1,000 rows are sent.
 */
export const PGLITE_VARIANTS = {
  /** One multi-row `INSERT … VALUES ($1,$2,$3), …` with 3,000 parameters. */
  pglite_opfs_ahp: 'values',
  /** One `INSERT … SELECT * FROM unnest($1::bigint[], $2::float8[], $3::text[])`: three array parameters. */
  pglite_opfs_ahp_unnest: 'unnest',
} as const;
export type PgliteVariant = keyof typeof PGLITE_VARIANTS;

/** The engine keys of latest.json. */
export type PeerName = 'idb' | 'dexie' | SqliteConfig | PgliteVariant;
export const PEERS: PeerName[] = [
  'idb',
  'dexie',
  ...(Object.keys(SQLITE_CONFIGS) as SqliteConfig[]),
  ...(Object.keys(PGLITE_VARIANTS) as PgliteVariant[]),
];

/** rows/s of one repetition: every chunk in its own durable transaction, awaited in order. */
export async function peerRows(peer: PeerName, chunks: BenchRow[][]): Promise<number> {
  const rows = chunks.reduce((n, c) => n + c.length, 0);
  const ms = await runner(peer)(chunks);
  return rows / (ms / 1000);
}

/** Time (ms) of writing every chunk; setup and teardown are outside the timed part. */
type Runner = (chunks: BenchRow[][]) => Promise<number>;

function runner(peer: PeerName): Runner {
  if (peer === 'idb') return idbRows;
  if (peer === 'dexie') return dexieRows;
  if (peer in SQLITE_CONFIGS) return (chunks) => sqliteRows(SQLITE_CONFIGS[peer as SqliteConfig], chunks);
  return (chunks) => pgliteRows(PGLITE_VARIANTS[peer as PgliteVariant], chunks);
}

/** IndexedDB database `name` with its object store `rows` (keyPath `id`), created on first open. */
export function openIdbRows(name: string): Promise<import('idb').IDBPDatabase> {
  return openDB(name, 1, {
    upgrade(d) {
      d.createObjectStore('rows', { keyPath: 'id' });
    },
  });
}

async function idbRows(chunks: BenchRow[][]): Promise<number> {
  const name = uniqueName('idb');
  const db = await openIdbRows(name);
  try {
    const t0 = now();
    for (const chunk of chunks) await idbPutChunk(db, chunk);
    return now() - t0;
  } finally {
    db.close();
    await deleteDB(name);
  }
}

/** One transaction putting every row of `chunk`; `strict` (the default): synced before it completes. */
export async function idbPutChunk<R>(
  db: import('idb').IDBPDatabase,
  chunk: R[],
  durability: IDBTransactionDurability = 'strict',
): Promise<void> {
  const tx = db.transaction('rows', 'readwrite', { durability });
  const puts: Promise<unknown>[] = chunk.map((r) => tx.store.put(r));
  puts.push(tx.done);
  await Promise.all(puts);
}

async function dexieRows(chunks: BenchRow[][]): Promise<number> {
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
}

/** The SQLite database of one repetition: the table, created under `pragmas`. */
export type SqliteDb = InstanceType<SahPool['OpfsSAHPoolDb']>;

export async function sqliteOpen(pragmas: string, path: string, create: boolean): Promise<SqliteDb> {
  const pool = await sahPool();
  const db = new pool.OpfsSAHPoolDb(path);
  db.exec(pragmas);
  if (create) db.exec('CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, value REAL NOT NULL, name TEXT NOT NULL)');
  return db;
}

/** Deletes the database and any journal or WAL left beside it (a persisted journal would keep its pool slot). */
export async function sqliteUnlink(path: string): Promise<void> {
  const pool = await sahPool();
  for (const p of [path, `${path}-journal`, `${path}-wal`]) pool.unlink(p);
}

/**
 * Writes `chunks` one transaction each through one prepared statement; `upsert` replaces rows
 * whose id exists (as memwal's keyed puts do), for the overwrite rounds of the read case.
 */
export function sqlitePutChunks(db: SqliteDb, chunks: BenchRow[][], upsert = false): void {
  const stmt = db.prepare(`INSERT${upsert ? ' OR REPLACE' : ''} INTO t(id, value, name) VALUES (?, ?, ?)`);
  try {
    for (const chunk of chunks) {
      db.exec('BEGIN');
      for (const r of chunk) stmt.bind([r.id, r.value, r.name]).stepReset();
      db.exec('COMMIT');
    }
  } finally {
    stmt.finalize();
  }
}

async function sqliteRows(pragmas: string, chunks: BenchRow[][]): Promise<number> {
  const path = `/${uniqueName('sqlite')}.db`;
  const db = await sqliteOpen(pragmas, path, true);
  try {
    const t0 = now();
    sqlitePutChunks(db, chunks);
    return now() - t0;
  } finally {
    db.close();
    await sqliteUnlink(path);
  }
}

type PgliteInstance = InstanceType<typeof import('@electric-sql/pglite').PGlite>;

/** The INSERT of `variant` for `n` rows, and its parameters. */
function pgliteInsert(variant: 'values' | 'unnest', chunk: BenchRow[], upsert: boolean, cache: Map<number, string>): [string, unknown[]] {
  const onConflict = upsert ? ' ON CONFLICT (id) DO UPDATE SET value = excluded.value, name = excluded.name' : '';
  if (variant === 'unnest') {
    const sql = `INSERT INTO t(id, value, name) SELECT * FROM unnest($1::bigint[], $2::float8[], $3::text[])${onConflict}`;
    return [sql, [chunk.map((r) => r.id), chunk.map((r) => r.value), chunk.map((r) => r.name)]];
  }
  let sql = cache.get(chunk.length);
  if (!sql) {
    const values = chunk.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`).join(', ');
    sql = `INSERT INTO t(id, value, name) VALUES ${values}${onConflict}`;
    cache.set(chunk.length, sql);
  }
  const params: unknown[] = [];
  for (const r of chunk) params.push(r.id, r.value, r.name);
  return [sql, params];
}

/**
 * Writes `chunks` into table `t` of `pg`, one statement (one implicit, synced transaction) each;
 * `upsert` as in {@link sqlitePutChunks}.
 */
export async function pglitePutChunks(
  pg: PgliteInstance,
  variant: 'values' | 'unnest',
  chunks: BenchRow[][],
  upsert = false,
): Promise<void> {
  const cache = new Map<number, string>();
  for (const chunk of chunks) {
    const [sql, params] = pgliteInsert(variant, chunk, upsert, cache);
    await pg.query(sql, params);
  }
}

export const PGLITE_TABLE = 'CREATE TABLE t(id bigint PRIMARY KEY, value double precision NOT NULL, name text NOT NULL)';

async function pgliteRows(variant: 'values' | 'unnest', chunks: BenchRow[][]): Promise<number> {
  const pg = await pglite();
  await pg.exec(`DROP TABLE IF EXISTS t; ${PGLITE_TABLE}`);
  try {
    const t0 = now();
    await pglitePutChunks(pg, variant, chunks);
    return now() - t0;
  } finally {
    await pg.exec('DROP TABLE t');
  }
}

type SahPool = Awaited<ReturnType<Awaited<ReturnType<typeof import('@sqlite.org/sqlite-wasm').default>>['installOpfsSAHPoolVfs']>>;
let sahPoolPromise: Promise<SahPool> | undefined;

/** The opfs-sahpool VFS, installed once per worker in a directory of its own. */
function sahPool(): Promise<SahPool> {
  sahPoolPromise ??= (async () => {
    const { default: init } = await import('@sqlite.org/sqlite-wasm');
    const sqlite3 = await init();
    return sqlite3.installOpfsSAHPoolVfs({ name: 'bench-sahpool', directory: '/bench-sahpool', clearOnInit: true, initialCapacity: 12 });
  })();
  return sahPoolPromise;
}

/** A PGlite on opfs-ahp in directory `dir` (start-up takes seconds). */
export async function pgliteOpen(dir: string): Promise<PgliteInstance> {
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = new PGlite(`opfs-ahp://${dir}`);
  await pg.waitReady;
  return pg;
}

let pglitePromise: Promise<PgliteInstance> | undefined;

/** One PGlite instance per worker for the row cases; each repetition recreates the table. */
function pglite(): Promise<PgliteInstance> {
  pglitePromise ??= pgliteOpen(uniqueName('pglite'));
  return pglitePromise;
}

/** Close PGlite (if started), so its OPFS handles are released. */
export async function closePeers(): Promise<void> {
  if (pglitePromise) await (await pglitePromise).close();
  pglitePromise = undefined;
}
