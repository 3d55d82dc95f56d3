// The query case's engines in the bench worker (bench/page-queries.ts): memwal in-process on OPFS
// with the index declared, Dexie, SQLite's OO API on opfs-sahpool (peers.ts), PGlite on opfs-ahp.
// Dedicated worker.

import { MemWal } from '../src/engine/memwal.js';
import { defaultBrowserStorage } from '../src/worker.js';
import { APP_SCHEMA, type AppRow, appBatch } from './app-data.js';
import { settleStore } from './measure.js';
import { DexieQueries, pg, type QueryEngine, type QueryEngineName, queryDbName, SQL } from './page-queries.js';
import { pgliteOpen, SQLITE_CONFIGS, type SqliteDb, sqliteOpen, sqliteUnlink } from './peers.js';

class MemwalQueries implements QueryEngine {
  db: MemWal | undefined;
  constructor(readonly name: string) {}
  async open(): Promise<void> {
    this.db = (await MemWal.open({
      name: this.name,
      schema: APP_SCHEMA,
      primaryKey: ['id'],
      indexes: { byCount: { column: 'count' } },
      storage: defaultBrowserStorage(),
      logger: { warn: () => undefined },
    } as never)) as MemWal;
  }
  async load(rows: AppRow[]): Promise<void> {
    await this.db!.put(appBatch(rows) as never);
  }
  async ready(): Promise<void> {
    await settleStore(this.db!);
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
    await MemWal.destroy(this.name, { storage: defaultBrowserStorage() });
  }
}

class SqliteQueries implements QueryEngine {
  db: SqliteDb | undefined;
  constructor(readonly path: string) {}
  async open(): Promise<void> {
    this.db = await sqliteOpen(`${SQLITE_CONFIGS.sqlite_sahpool_wal} PRAGMA cache_size=-8192;`, this.path, false);
    this.db.exec(SQL.sqliteTable);
  }
  async load(rows: AppRow[]): Promise<void> {
    const db = this.db!;
    const stmt = db.prepare('INSERT INTO app(id, title, owner, score, count, done) VALUES (?, ?, ?, ?, ?, ?)');
    try {
      db.exec('BEGIN');
      for (const r of rows) stmt.bind([r.id, r.title, r.owner, r.score, r.count, r.done ? 1 : 0]).stepReset();
      db.exec('COMMIT');
    } finally {
      stmt.finalize();
    }
  }
  private rows(sql: string, bind: unknown[]): AppRow[] {
    return this.db!.selectObjects(sql, bind as never) as unknown as AppRow[];
  }
  async first(from: number, n: number) {
    return this.rows(SQL.first, [from, n]);
  }
  async next(from: number, after: AppRow, n: number) {
    return this.rows(SQL.next, [from, after.count, after.id, n]);
  }
  async count(lo: number, hi: number): Promise<number> {
    return Number(this.db!.selectValue(SQL.count, [lo, hi]));
  }
  async destroy(): Promise<void> {
    this.db?.close();
    await sqliteUnlink(this.path);
  }
}

type Pg = Awaited<ReturnType<typeof pgliteOpen>>;

class PgliteQueries implements QueryEngine {
  pg: Pg | undefined;
  constructor(readonly dir: string) {}
  async open(): Promise<void> {
    this.pg = await pgliteOpen(this.dir);
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
    const root = await navigator.storage.getDirectory();
    await root.removeEntry(this.dir, { recursive: true }).catch(() => undefined);
  }
}

/** The bench worker's engines of the query case. */
export function workerQueryEngine(engine: QueryEngineName): QueryEngine {
  const name = queryDbName(engine);
  switch (engine) {
    case 'memwal':
      return new MemwalQueries(name);
    case 'dexie':
      return new DexieQueries(name);
    case 'sqlite':
      return new SqliteQueries(`/${name}.db`);
    case 'pglite':
      return new PgliteQueries(name);
  }
}
