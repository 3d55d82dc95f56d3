// The engines as a page calls them, for the page cases: memwal through `openMemWal` (its default
// worker and storage, as an app opens it), IndexedDB through `idb` and Dexie on the page, SQLite
// through its Worker API #1 (`sqlite3Worker1Promiser`, bench/sqlite-page.worker.ts: opfs-sahpool)
// and PGlite through `PGliteWorker` (bench/pglite.worker.ts: opfs-ahp). Each holds the app rows of
// app-data.ts under the same key. Browser main thread.

import type { PGliteWorker } from '@electric-sql/pglite/worker';
import type { Worker1Promiser } from '@sqlite.org/sqlite-wasm';
import { deleteDB, type IDBPDatabase } from 'idb';
import { type MemWalClient, openMemWal } from '../src/index.js';
import { APP_COLUMNS, APP_SCHEMA, type AppRow, appBatch, appRows } from './app-data.js';
import type { BenchRow } from './data.js';
import { now, settleStore } from './measure.js';
import { idbPutChunk, openIdbRows, SQLITE_CONFIGS } from './peers.js';

/** The engines of the page's read case. */
export type PageEngineName = 'memwal' | 'idb' | 'dexie' | 'sqlite_page_wal' | 'pglite_page';

/** What a page engine does for the read case. */
export interface PageEngine {
  /** A fresh open (memwal: a new worker; the others: a new connection, nothing cached). */
  open(): Promise<void>;
  /** Add rows `from .. to - 1` (the figures are the reads; each engine loads its fastest way). */
  load(from: number, to: number): Promise<void>;
  get(key: string): Promise<AppRow | undefined>;
  close(): Promise<void>;
  /** Delete the store or database (open or closed). */
  destroy(): Promise<void>;
}

/** Rows per load step: one put, transaction or statement batch. */
const LOAD_ROWS = 10_000;

async function loadInSteps(from: number, to: number, step: (rows: AppRow[]) => Promise<unknown>): Promise<void> {
  for (let a = from; a < to; a += LOAD_ROWS) await step(appRows(a, Math.min(to, a + LOAD_ROWS)));
}

// ------------------------------------------------------------------------------------------------
// memwal

export class MemwalPage implements PageEngine {
  db: MemWalClient | undefined;
  constructor(
    readonly name: string,
    private readonly destroyStore: (name: string) => Promise<void>,
  ) {}

  async open(): Promise<void> {
    this.db = await openMemWal({ name: this.name, schema: APP_SCHEMA, primaryKey: ['id'], logger: { warn: () => undefined } });
  }
  async load(from: number, to: number): Promise<void> {
    await loadInSteps(from, to, (rows) => this.db!.put(appBatch(rows)));
  }
  /** Every flush and compaction done (the read figures are of a settled store). */
  settle(): ReturnType<typeof settleStore> {
    return settleStore(this.db!);
  }
  async get(key: string): Promise<AppRow | undefined> {
    return (await this.db!.get({ id: key })) as AppRow | undefined;
  }
  /** The client's `getMany`. */
  get getMany(): (keys: string[]) => Promise<(AppRow | undefined)[]> {
    const db = this.db!;
    return async (keys) => (await db.getMany(keys.map((id) => ({ id })))) as (AppRow | undefined)[];
  }
  async close(): Promise<void> {
    await this.db?.close();
    this.db = undefined;
  }
  async destroy(): Promise<void> {
    await this.close();
    await this.destroyStore(this.name);
  }
}

// ------------------------------------------------------------------------------------------------
// IndexedDB and Dexie

export class IdbPage implements PageEngine {
  db: IDBPDatabase | undefined;
  constructor(readonly name: string) {}

  async open(): Promise<void> {
    this.db = await openIdbRows(this.name);
  }
  async load(from: number, to: number): Promise<void> {
    await loadInSteps(from, to, (rows) => idbPutChunk(this.db!, rows, 'relaxed'));
  }
  get(key: string): Promise<AppRow | undefined> {
    return this.db!.get('rows', key);
  }
  async close(): Promise<void> {
    this.db?.close();
    this.db = undefined;
  }
  async destroy(): Promise<void> {
    await this.close();
    await deleteDB(this.name);
  }
}

type DexieDb = InstanceType<typeof import('dexie').Dexie>;

/** Dexie reads the database IdbPage loaded (the same object store, keyPath `id`). */
export class DexiePage implements PageEngine {
  db: DexieDb | undefined;
  constructor(readonly name: string) {}

  async open(): Promise<void> {
    const { Dexie } = await import('dexie');
    // No version(): Dexie opens the existing database as it is (its "dynamic mode").
    this.db = new Dexie(this.name);
    await this.db.open();
  }
  async load(): Promise<void> {
    throw new Error('dexie: reads the database idb loaded');
  }
  get(key: string): Promise<AppRow | undefined> {
    return this.db!.table<AppRow, string>('rows').get(key);
  }
  async close(): Promise<void> {
    this.db?.close();
    this.db = undefined;
  }
  async destroy(): Promise<void> {
    await this.close();
    await deleteDB(this.name);
  }
}

// ------------------------------------------------------------------------------------------------
// SQLite through its Worker API #1

let promiser: Promise<{ promiser: Worker1Promiser; vfsList: string[] }> | undefined;

/**
 * The page's promiser, started once: a worker running SQLite's Worker API #1 with opfs-sahpool
 * installed. The package exports `sqlite3Worker1Promiser.v2` (it resolves the promiser once the
 * worker is ready), typed as the v1 factory.
 */
function sqlitePromiser(): Promise<{ promiser: Worker1Promiser; vfsList: string[] }> {
  promiser ??= (async () => {
    const { sqlite3Worker1Promiser } = await import('@sqlite.org/sqlite-wasm');
    const worker = new Worker(new URL('./sqlite-page.worker.ts', import.meta.url), { type: 'module' });
    const v2 = sqlite3Worker1Promiser as unknown as (config: { worker: Worker; onerror?: () => void }) => Promise<Worker1Promiser>;
    const p = await v2({ worker });
    const config = await p('config-get', {});
    return { promiser: p, vfsList: config.result.vfsList };
  })();
  return promiser;
}

/** One open database of the promiser's worker, addressed by its id. */
export class PromiserDb {
  private constructor(
    readonly p: Worker1Promiser,
    readonly dbId: string,
    /** The VFS SQLite reports for the database. */
    readonly vfs: string,
  ) {}

  static async open(filename: string, pragmas: string, table: string): Promise<PromiserDb> {
    const { promiser: p } = await sqlitePromiser();
    const r = await p('open', { filename, vfs: 'opfs-sahpool' });
    const db = new PromiserDb(p, r.result.dbId, r.result.vfs);
    await db.exec(`${pragmas} ${table}`);
    return db;
  }

  async exec(sql: string, bind?: unknown[]): Promise<Record<string, unknown>[]> {
    const r = await this.p({ type: 'exec', dbId: this.dbId, args: { sql, bind: bind as never, rowMode: 'object', resultRows: [] } });
    return r.result.resultRows as Record<string, unknown>[];
  }

  async close(unlink = false): Promise<void> {
    await this.p({ type: 'close', dbId: this.dbId, args: { unlink } });
  }
}

/** `INSERT … VALUES (?, …), …` for `rows` rows of `columns` columns, cached per shape. */
const inserts = new Map<string, string>();
function insertSql(table: string, columns: readonly string[], rows: number, upsert: boolean): string {
  const k = `${table}/${rows}/${upsert}`;
  let sql = inserts.get(k);
  if (!sql) {
    const one = `(${columns.map(() => '?').join(', ')})`;
    sql = `INSERT${upsert ? ' OR REPLACE' : ''} INTO ${table}(${columns.join(', ')}) VALUES ${Array(rows).fill(one).join(', ')}`;
    inserts.set(k, sql);
  }
  return sql;
}

/** The app table in SQLite; SQLite's page cache at memwal's block cache size (8 MiB), as in the in-worker read case. */
const SQLITE_APP_TABLE =
  'CREATE TABLE IF NOT EXISTS app(id TEXT PRIMARY KEY, title TEXT NOT NULL, owner TEXT NOT NULL, score REAL NOT NULL, count INTEGER NOT NULL, done INTEGER NOT NULL);';
const SQLITE_PAGE_PRAGMAS = `${SQLITE_CONFIGS.sqlite_sahpool_wal} PRAGMA cache_size=-8192;`;
/** Rows per INSERT statement when loading: 500 × 6 = 3,000 parameters. */
const SQLITE_LOAD_ROWS = 500;

export class SqlitePage implements PageEngine {
  db: PromiserDb | undefined;
  constructor(readonly filename: string) {}

  async open(): Promise<void> {
    this.db = await PromiserDb.open(this.filename, SQLITE_PAGE_PRAGMAS, SQLITE_APP_TABLE);
  }
  get vfs(): string | undefined {
    return this.db?.vfs;
  }
  async load(from: number, to: number): Promise<void> {
    const db = this.db!;
    await loadInSteps(from, to, async (rows) => {
      await db.exec('BEGIN');
      for (let i = 0; i < rows.length; i += SQLITE_LOAD_ROWS) {
        const part = rows.slice(i, i + SQLITE_LOAD_ROWS);
        await db.exec(
          insertSql('app', APP_COLUMNS, part.length, false),
          part.flatMap((r) => [r.id, r.title, r.owner, r.score, r.count, r.done ? 1 : 0]),
        );
      }
      await db.exec('COMMIT');
    });
  }
  async get(key: string): Promise<AppRow | undefined> {
    return (await this.db!.exec('SELECT id, title, owner, score, count, done FROM app WHERE id = ?', [key]))[0] as AppRow | undefined;
  }
  async close(): Promise<void> {
    await this.db?.close();
    this.db = undefined;
  }
  async destroy(): Promise<void> {
    if (!this.db) await this.open();
    await this.db!.close(true);
    this.db = undefined;
  }
}

/**
 * Case 3 from the page, SQLite's way: `rows` rows of case 3 in 1,000-row statements (one
 * `INSERT … VALUES` of 3,000 parameters each, a transaction of its own), each posted to the
 * promiser's worker and awaited in order, in WAL mode with `synchronous=FULL` on opfs-sahpool (a
 * COMMIT is synced before it returns, as the in-worker peer). Resolves rows/s.
 */
export async function sqlitePageRows(chunks: BenchRow[][]): Promise<number> {
  const filename = `/rows-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}.db`;
  const db = await PromiserDb.open(
    filename,
    SQLITE_CONFIGS.sqlite_sahpool_wal,
    'CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, value REAL NOT NULL, name TEXT NOT NULL);',
  );
  try {
    const t0 = now();
    for (const c of chunks)
      await db.exec(
        insertSql('t', ['id', 'value', 'name'], c.length, false),
        c.flatMap((r) => [r.id, r.value, r.name]),
      );
    const ms = now() - t0;
    return chunks.reduce((n, c) => n + c.length, 0) / (ms / 1000);
  } finally {
    await db.close(true);
  }
}

// ------------------------------------------------------------------------------------------------
// PGlite through PGliteWorker

const PGLITE_APP_TABLE =
  'CREATE TABLE IF NOT EXISTS app(id text PRIMARY KEY, title text NOT NULL, owner text NOT NULL, score double precision NOT NULL, count integer NOT NULL, done boolean NOT NULL)';

export class PglitePage implements PageEngine {
  pg: PGliteWorker | undefined;
  worker: Worker | undefined;
  constructor(readonly dir: string) {}

  async open(): Promise<void> {
    const { PGliteWorker } = await import('@electric-sql/pglite/worker');
    this.worker = new Worker(new URL('./pglite.worker.ts', import.meta.url), { type: 'module' });
    this.pg = new PGliteWorker(this.worker, { dataDir: `opfs-ahp://${this.dir}` });
    await this.pg.waitReady;
    await this.pg.exec(PGLITE_APP_TABLE);
  }
  async load(from: number, to: number): Promise<void> {
    const pg = this.pg!;
    await loadInSteps(from, to, (rows) =>
      pg.query(
        'INSERT INTO app(id, title, owner, score, count, done) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::int[], $6::bool[])',
        [
          rows.map((r) => r.id),
          rows.map((r) => r.title),
          rows.map((r) => r.owner),
          rows.map((r) => r.score),
          rows.map((r) => r.count),
          rows.map((r) => r.done),
        ],
      ),
    );
  }
  async get(key: string): Promise<AppRow | undefined> {
    return (await this.pg!.query<AppRow>('SELECT id, title, owner, score, count, done FROM app WHERE id = $1', [key])).rows[0];
  }
  async close(): Promise<void> {
    await this.pg?.close();
    this.worker?.terminate();
    this.pg = undefined;
    this.worker = undefined;
  }
  async destroy(): Promise<void> {
    await this.close();
    // opfs-ahp keeps the cluster in an OPFS directory of that name.
    const root = await navigator.storage.getDirectory();
    await root.removeEntry(this.dir, { recursive: true }).catch(() => undefined);
  }
}
