// The list-screen query case (docs/benchmarks.md, "Queries"): app rows (app-data.ts) with an
// ordered index on `count` (an integer spread over 0..1M, as an `updatedAt` would be), in memwal
// (`indexes: { byCount: { column: 'count' } }`), Dexie (an index `[count+id]`), SQLite-wasm
// (opfs-sahpool, `CREATE INDEX … (count, id)`) and PGlite (`CREATE INDEX … (count, id)`). A list
// screen asks three things, each timed one call at a time: the first 50 rows from a random
// `count` on, in (count, id) order (`first`); the next page of 50 after the last row, 10 pages
// deep (`next`); how many rows have `count` in a random 1 % of its range (`count`). Every answer
// is checked against the rows sorted in JavaScript. The same code runs from the page (each engine
// as an app calls it: memwal's client, Dexie on the page, SQLite's worker API, PGliteWorker) and
// in the bench worker (memwal in-process on OPFS, Dexie, SQLite's OO API on opfs-sahpool, PGlite
// on opfs-ahp). Browser (page or worker).

import { type AppRow, appRows } from './app-data.js';
import { now, spread, uniqueName } from './measure.js';

/** The engines of the query case. */
export type QueryEngineName = 'memwal' | 'dexie' | 'sqlite' | 'pglite';

/** A row's place in the index: what a page hands on to ask for the next one. */
type Place = Pick<AppRow, 'id' | 'count'>;

/** What an engine answers for the list screen. */
export interface QueryEngine {
  open(): Promise<void>;
  load(rows: AppRow[]): Promise<void>;
  /** After loading (memwal: flushed and compacted, as a store an app reopens holds its rows). */
  ready?(): Promise<void>;
  /** The first `n` rows with count >= `from`, in (count, id) order. */
  first(from: number, n: number): Promise<Place[]>;
  /** The `n` rows after `after` (count >= `from`), in (count, id) order. */
  next(from: number, after: AppRow, n: number): Promise<AppRow[]>;
  /** Rows with lo <= count < hi. */
  count(lo: number, hi: number): Promise<number>;
  destroy(): Promise<void>;
}

/** How the query case opens each engine where it runs: the page's and the worker's differ. */
export type QueryEngineFactory = (name: QueryEngineName) => QueryEngine;

/** Rows per load step (one put, transaction or statement batch). */
export const QUERY_LOAD_ROWS = 10_000;
const PAGE = 50;
const PAGES = 10;

/** The SQL of the peers: the same table as the read cases, and the index. */
export const SQL = {
  sqliteTable:
    'CREATE TABLE IF NOT EXISTS app(id TEXT PRIMARY KEY, title TEXT NOT NULL, owner TEXT NOT NULL, score REAL NOT NULL, count INTEGER NOT NULL, done INTEGER NOT NULL); CREATE INDEX IF NOT EXISTS app_count ON app(count, id);',
  pgTable:
    'CREATE TABLE IF NOT EXISTS app(id text PRIMARY KEY, title text NOT NULL, owner text NOT NULL, score double precision NOT NULL, count integer NOT NULL, done boolean NOT NULL); CREATE INDEX IF NOT EXISTS app_count ON app(count, id);',
  first: 'SELECT id, title, owner, score, count, done FROM app WHERE count >= ? ORDER BY count, id LIMIT ?',
  next: 'SELECT id, title, owner, score, count, done FROM app WHERE count >= ? AND (count, id) > (?, ?) ORDER BY count, id LIMIT ?',
  count: 'SELECT count(*) AS n FROM app WHERE count >= ? AND count < ?',
};
/** `?` placeholders as PostgreSQL's `$n`. */
export const pg = (sql: string): string => {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
};

type DexieDb = InstanceType<typeof import('dexie').Dexie>;

/** Dexie with the index, the same on the page and in a worker. */
export class DexieQueries implements QueryEngine {
  db: DexieDb | undefined;
  constructor(readonly name: string) {}
  async open(): Promise<void> {
    const { Dexie } = await import('dexie');
    this.db = new Dexie(this.name);
    this.db.version(1).stores({ app: 'id, [count+id]' });
    await this.db.open();
  }
  async load(rows: AppRow[]): Promise<void> {
    await this.db!.table('app').bulkPut(rows);
  }
  async first(from: number, n: number): Promise<Place[]> {
    const { Dexie } = await import('dexie');
    return this.db!.table('app').where('[count+id]').between([from, Dexie.minKey], [Dexie.maxKey, Dexie.maxKey]).limit(n).toArray();
  }
  async next(_from: number, after: AppRow, n: number): Promise<AppRow[]> {
    const { Dexie } = await import('dexie');
    return this.db!.table('app')
      .where('[count+id]')
      .between([after.count, after.id], [Dexie.maxKey, Dexie.maxKey], false)
      .limit(n)
      .toArray();
  }
  count(lo: number, hi: number): Promise<number> {
    return this.db!.table('app').where('[count+id]').between([lo, ''], [hi, '']).count();
  }
  async destroy(): Promise<void> {
    this.db?.close();
    const { Dexie } = await import('dexie');
    await Dexie.delete(this.name);
  }
}

/** The rows of `n` in (count, id) order: what every answer is checked against. */
function sortedPlaces(n: number): Place[] {
  const rows = appRows(0, n).map((r) => ({ id: r.id, count: r.count }));
  return rows.sort((a, b) => a.count - b.count || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** First place with count >= x in `sorted`. */
function lowerBound(sorted: Place[], x: number): number {
  let a = 0;
  let b = sorted.length;
  while (a < b) {
    const m = (a + b) >> 1;
    if (sorted[m]!.count < x) a = m + 1;
    else b = m;
  }
  return a;
}

export interface QueryFigures {
  engine: QueryEngineName;
  rows: number;
  loadMs: number;
  /** memwal: the seal, flush and compaction after loading. */
  readyMs: number;
  first: ReturnType<typeof spread> & { calls: number };
  next: ReturnType<typeof spread> & { calls: number };
  count: ReturnType<typeof spread> & { calls: number };
}

/**
 * One engine: a fresh database, `n` rows loaded, then `chains` list screens (a first page and
 * PAGES - 1 next pages, each awaited and timed) and `counts` counts; every answer checked.
 * Always destroys the database.
 */
export async function queryCase(
  make: QueryEngineFactory,
  engine: QueryEngineName,
  n: number,
  chains: number,
  counts: number,
): Promise<QueryFigures> {
  const sorted = sortedPlaces(n);
  const e = make(engine);
  await e.open();
  try {
    const t0 = now();
    for (let a = 0; a < n; a += QUERY_LOAD_ROWS) await e.load(appRows(a, Math.min(n, a + QUERY_LOAD_ROWS)));
    const loadMs = now() - t0;
    const t1 = now();
    await e.ready?.();
    const readyMs = now() - t1;
    const same = (got: Place[], at: number, what: string): void => {
      const want = sorted.slice(at, at + PAGE);
      if (got.length !== want.length || got.some((r, i) => r.id !== want[i]!.id))
        throw new Error(
          `queries ${engine}: ${what} answered ${got.length} rows (${got[0]?.id} …), expected ${want.length} (${want[0]?.id} …)`,
        );
    };
    const first: number[] = [];
    const next: number[] = [];
    let x = 12_345;
    // One untimed screen first (JIT, caches), then the timed ones.
    for (let c = -1; c < chains; c++) {
      x = (x * 48271) % 2147483647;
      const from = x % 1_000_000;
      let at = lowerBound(sorted, from);
      let t = now();
      let page = (await e.first(from, PAGE)) as AppRow[];
      if (c >= 0) first.push(now() - t);
      same(page, at, `first(${from})`);
      for (let p = 1; p < PAGES && page.length === PAGE; p++) {
        t = now();
        const after = page[page.length - 1]!;
        page = await e.next(from, after, PAGE);
        if (c >= 0) next.push(now() - t);
        at += PAGE;
        same(page, at, `next page ${p} from ${from}`);
      }
    }
    const counted: number[] = [];
    for (let c = -1; c < counts; c++) {
      x = (x * 48271) % 2147483647;
      const lo = x % 990_000;
      const hi = lo + 10_000;
      const t = now();
      const got = await e.count(lo, hi);
      if (c >= 0) counted.push(now() - t);
      const want = lowerBound(sorted, hi) - lowerBound(sorted, lo);
      if (got !== want) throw new Error(`queries ${engine}: count [${lo}, ${hi}) = ${got}, expected ${want}`);
    }
    return {
      engine,
      rows: n,
      loadMs,
      readyMs,
      first: { calls: first.length, ...spread(first) },
      next: { calls: next.length, ...spread(next) },
      count: { calls: counted.length, ...spread(counted) },
    };
  } finally {
    await e.destroy();
  }
}

/** A unique database name for `engine`. */
export const queryDbName = (engine: QueryEngineName): string => uniqueName(`queries-${engine}`);
