// The read case from the page (docs/benchmarks.md): app rows (app-data.ts) loaded into one engine
// at a time and grown from size to size (200k, 1M, 4M rows), each size read after a fresh open:
// random point reads of present keys, one at a time, each awaited and timed, as a page renders;
// and memwal's `getMany` in batches of 100 keys where the client has it. Driven phase by phase
// from bench/run (cases/reads.mjs). Browser main thread.

import { appKeys } from './app-data.js';
import { now, spread, uniqueName } from './measure.js';
import { DexiePage, IdbPage, MemwalPage, type PageEngine, type PageEngineName, PglitePage, SqlitePage } from './page-peers.js';

let current: { engine: PageEngine; name: PageEngineName; n: number } | undefined;

/** Start the page read case of `engine`: a fresh store or database, open, empty. */
export async function pageReadsOpen(engine: PageEngineName, destroyStore: (name: string) => Promise<void>): Promise<{ vfs?: string }> {
  if (current) throw new Error(`page reads: ${current.name} is still open`);
  const e: PageEngine =
    engine === 'memwal'
      ? new MemwalPage(uniqueName('page-reads'), destroyStore)
      : engine === 'idb'
        ? new IdbPage(uniqueName('page-reads-idb'))
        : engine === 'sqlite_page_wal'
          ? new SqlitePage(`/${uniqueName('page-reads')}.db`)
          : engine === 'pglite_page'
            ? new PglitePage(uniqueName('page-reads-pglite'))
            : (() => {
                throw new Error('page reads: dexie reads the database of idb (pageReadsSwitchToDexie)');
              })();
  await e.open();
  current = { engine: e, name: engine, n: 0 };
  return e instanceof SqlitePage ? { vfs: e.vfs } : {};
}

/** Grow the current engine to `to` rows; resolves how long loading took. */
export async function pageReadsGrow(to: number): Promise<{ rows: number; loadMs: number }> {
  const c = current!;
  const t0 = now();
  await c.engine.load(c.n, to);
  const loadMs = now() - t0;
  const rows = to - c.n;
  c.n = to;
  return { rows, loadMs };
}

/** memwal: wait until every flush and compaction is done (the read figures are of a settled store). */
export async function pageReadsSettle(): Promise<Awaited<ReturnType<MemwalPage['settle']>> | undefined> {
  const e = current!.engine;
  return e instanceof MemwalPage ? await e.settle() : undefined;
}

/** Close and open the current engine again (nothing cached); resolves the open's ms. */
export async function pageReadsReopen(): Promise<{ openMs: number }> {
  const e = current!.engine;
  await e.close();
  const t0 = now();
  await e.open();
  return { openMs: now() - t0 };
}

/** Read the database idb loaded through `view`: idb or Dexie (the other's connection closes first). */
export async function pageReadsUse(view: 'idb' | 'dexie'): Promise<void> {
  const c = current;
  if (!(c?.engine instanceof IdbPage || c?.engine instanceof DexiePage))
    throw new Error('page reads: Dexie reads what idb loaded; open idb first');
  if (c.name === view) return;
  await c.engine.close();
  const e = view === 'idb' ? new IdbPage(c.engine.name) : new DexiePage(c.engine.name);
  await e.open();
  current = { ...c, engine: e, name: view };
}

/** Latencies and rate of one series of point reads from the page. */
export interface PageReadPass {
  gets: number;
  ms: number;
  p50: number;
  p99: number;
  max: number;
  /** memwal: what the store's readStats counted during the series. */
  blockReads?: number;
  blockCacheHits?: number;
}

type ReadStatsOf = { blockReads: number; blockCacheHits: number };

/**
 * `count` random present keys, read one at a time, each awaited and timed; stops early once
 * `maxMs` have passed. Every answer must be the row asked for.
 */
export async function pageReadsPass(count: number, seed: number, maxMs: number): Promise<PageReadPass> {
  const c = current!;
  const keys = appKeys(c.n, count, seed);
  const memwal = c.engine instanceof MemwalPage ? c.engine : undefined;
  const before: ReadStatsOf | undefined = memwal ? await memwal.db!.readStats() : undefined;
  const lat = new Float64Array(count);
  let gets = 0;
  const t0 = now();
  while (gets < count && now() - t0 < maxMs) {
    const key = keys[gets]!;
    const t = now();
    const row = await c.engine.get(key);
    lat[gets++] = now() - t;
    if (row?.id !== key) throw new Error(`page reads ${c.name}: get(${key}) answered ${JSON.stringify(row)}`);
  }
  const ms = now() - t0;
  const out: PageReadPass = { gets, ms, ...spread(lat.subarray(0, gets)) };
  if (memwal && before) {
    const after: ReadStatsOf = await memwal.db!.readStats();
    out.blockReads = after.blockReads - before.blockReads;
    out.blockCacheHits = after.blockCacheHits - before.blockCacheHits;
  }
  return out;
}

/**
 * memwal's `getMany`: `batches` calls of 100 random present keys each, awaited one by one; every
 * answer must hold the rows asked for, in key order. `{ available: false }` when the client has
 * no `getMany`.
 */
export async function pageReadsMany(
  batches: number,
  seed: number,
  maxMs: number,
): Promise<{ available: false } | ({ available: true; batches: number; keys: number; ms: number } & ReturnType<typeof spread>)> {
  const c = current!;
  const getMany = c.engine instanceof MemwalPage ? c.engine.getMany : undefined;
  if (!getMany) return { available: false };
  const keys = appKeys(c.n, batches * 100, seed);
  const lat: number[] = [];
  const t0 = now();
  for (let b = 0; b < batches && now() - t0 < maxMs; b++) {
    const batch = keys.slice(b * 100, b * 100 + 100);
    const t = now();
    const rows = await getMany(batch);
    lat.push(now() - t);
    if (rows.length !== batch.length || rows.some((r, i) => r?.id !== batch[i]))
      throw new Error(`page reads: getMany answered ${rows.length} rows for ${batch.length} keys, or out of key order`);
  }
  const ms = now() - t0;
  return { available: true, batches: lat.length, keys: lat.length * 100, ms, ...spread(lat) };
}

/** End the page read case of the current engine: close it and delete its data. */
export async function pageReadsClose(): Promise<void> {
  const c = current;
  current = undefined;
  await c?.engine.destroy();
}
