// The query case's engines from the page (bench/page-queries.ts), each as an app calls it:
// memwal through `openMemWal` (its worker and storage) with the index declared, Dexie on the
// page, SQLite through its Worker API (opfs-sahpool, page-peers.ts), PGlite through PGliteWorker
// (opfs-ahp). Browser main thread.

import type { PGliteWorker } from '@electric-sql/pglite/worker';
import { type MemWalClient, openMemWal } from '../src/index.js';
import { APP_SCHEMA, type AppRow, appBatch } from './app-data.js';
import { PromiserDb } from './page-peers.js';
import { DexieQueries, pg, type QueryEngine, type QueryEngineName, queryDbName, SQL } from './page-queries.js';
import { SQLITE_CONFIGS } from './peers.js';

const INSERT = (n: number): string =>
  `INSERT INTO app(id, title, owner, score, count, done) VALUES ${Array(n).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`;
const values = (rows: AppRow[]): unknown[] => rows.flatMap((r) => [r.id, r.title, r.owner, r.score, r.count, r.done ? 1 : 0]);

class MemwalClientQueries implements QueryEngine {
  db: MemWalClient | undefined;
  constructor(
    readonly name: string,
    private readonly destroyStore: (name: string) => Promise<void>,
    private readonly settle: (db: MemWalClient) => Promise<unknown>,
  ) {}
  async open(): Promise<void> {
    this.db = await openMemWal({
      name: this.name,
      schema: APP_SCHEMA,
      primaryKey: ['id'],
      indexes: { byCount: { column: 'count' } },
      logger: { warn: () => undefined },
    });
  }
  async load(rows: AppRow[]): Promise<void> {
    await this.db!.put(appBatch(rows));
  }
  /** The rows flushed and compacted, as a store an app reopens holds them. */
  async ready(): Promise<void> {
    await this.settle(this.db!);
  }
  first(from: number, n: number) {
    return this.db!.query('byCount', { range: { gte: from }, limit: n }) as Promise<AppRow[]>;
  }
  next(from: number, after: AppRow, n: number) {
    return this.db!.query('byCount', { range: { gte: from }, after, limit: n }) as Promise<AppRow[]>;
  }
  count(lo: number, hi: number): Promise<number> {
    return this.db!.count('byCount', { range: { gte: lo, lt: hi } });
  }
  async destroy(): Promise<void> {
    await this.db?.close();
    await this.destroyStore(this.name);
  }
}

class SqlitePageQueries implements QueryEngine {
  db: PromiserDb | undefined;
  constructor(readonly filename: string) {}
  async open(): Promise<void> {
    this.db = await PromiserDb.open(this.filename, `${SQLITE_CONFIGS.sqlite_sahpool_wal} PRAGMA cache_size=-8192;`, SQL.sqliteTable);
  }
  async load(rows: AppRow[]): Promise<void> {
    const db = this.db!;
    await db.exec('BEGIN');
    for (let i = 0; i < rows.length; i += 500) await db.exec(INSERT(rows.slice(i, i + 500).length), values(rows.slice(i, i + 500)));
    await db.exec('COMMIT');
  }
  first(from: number, n: number) {
    return this.db!.exec(SQL.first, [from, n]) as Promise<AppRow[]>;
  }
  next(from: number, after: AppRow, n: number) {
    return this.db!.exec(SQL.next, [from, after.count, after.id, n]) as Promise<AppRow[]>;
  }
  async count(lo: number, hi: number): Promise<number> {
    return Number((await this.db!.exec(SQL.count, [lo, hi]))[0]!.n);
  }
  async destroy(): Promise<void> {
    await this.db?.close(true);
  }
}

class PglitePageQueries implements QueryEngine {
  pg: PGliteWorker | undefined;
  worker: Worker | undefined;
  constructor(readonly dir: string) {}
  async open(): Promise<void> {
    const { PGliteWorker } = await import('@electric-sql/pglite/worker');
    this.worker = new Worker(new URL('./pglite.worker.ts', import.meta.url), { type: 'module' });
    this.pg = new PGliteWorker(this.worker, { dataDir: `opfs-ahp://${this.dir}` });
    await this.pg.waitReady;
    await this.pg.exec(SQL.pgTable);
  }
  async load(rows: AppRow[]): Promise<void> {
    await this.pg!.query(
      'INSERT INTO app(id, title, owner, score, count, done) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::int[], $6::bool[])',
      [
        rows.map((r) => r.id),
        rows.map((r) => r.title),
        rows.map((r) => r.owner),
        rows.map((r) => r.score),
        rows.map((r) => r.count),
        rows.map((r) => r.done),
      ],
    );
  }
  async first(from: number, n: number) {
    return (await this.pg!.query<AppRow>(pg(SQL.first), [from, n])).rows;
  }
  async next(from: number, after: AppRow, n: number) {
    return (await this.pg!.query<AppRow>(pg(SQL.next), [from, after.count, after.id, n])).rows;
  }
  async count(lo: number, hi: number): Promise<number> {
    return Number((await this.pg!.query<{ n: number }>(pg(SQL.count), [lo, hi])).rows[0]!.n);
  }
  async destroy(): Promise<void> {
    await this.pg?.close();
    this.worker?.terminate();
    const root = await navigator.storage.getDirectory();
    await root.removeEntry(this.dir, { recursive: true }).catch(() => undefined);
  }
}

/** The page's engines of the query case. */
export function pageQueryEngine(
  engine: QueryEngineName,
  destroyStore: (name: string) => Promise<void>,
  settle: (db: MemWalClient) => Promise<unknown>,
): QueryEngine {
  const name = queryDbName(engine);
  switch (engine) {
    case 'memwal':
      return new MemwalClientQueries(name, destroyStore, settle);
    case 'dexie':
      return new DexieQueries(name);
    case 'sqlite':
      return new SqlitePageQueries(`/${name}.db`);
    case 'pglite':
      return new PglitePageQueries(name);
  }
}
