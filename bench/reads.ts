// The read case (docs/benchmarks.md), in the bench worker: `n` keyed `{id, value, name}` rows written in
// rounds of overwrites (1,000 rows per durable put or transaction), then random point reads of
// present and absent keys — cold (right after a fresh open) and warm — and a full scan, for
// memwal and the peers on the same rows; for memwal also the space on disk and the write
// amplification, before and after `compact()`. The read ladder uses the same engines on one
// store grown from size to size (readsGrow; keys spread by data.ts's ladderKey). One store or
// database at a time, driven phase by phase from bench/run (cases/reads.mjs). Dedicated worker.

import { Table, tableToIPC } from 'apache-arrow';
import { deleteDB, type IDBPDatabase } from 'idb';
import { MemWal, type MemWalOptions } from '../src/index.js';
import { defaultBrowserStorage } from '../src/worker.js';
import { BENCH_SCHEMA, type BenchRow, ladderKey, ladderRows, readKey, readKeys, readRound, rowsToBatch } from './data.js';
import { now, settleStore, uniqueName } from './measure.js';
import {
  PGLITE_TABLE,
  type SqliteDb,
  idbPutChunk,
  openIdbRows,
  pgliteOpen,
  pglitePutChunks,
  sqliteOpen,
  sqlitePutChunks,
  sqliteUnlink,
  SQLITE_CONFIGS,
} from './peers.js';

/** The engines of the read case: SQLite in WAL mode (4 KiB pages), PGlite writing through unnest. */
export type ReadEngineName = 'memwal' | 'sqlite_sahpool_wal' | 'pglite_opfs_ahp' | 'idb' | 'dexie';

/** What one engine must do for the read case. */
interface ReadEngine {
  /** A fresh open of the store or database (nothing of it cached in this JS context). */
  open(): Promise<void>;
  /** Write `chunks`, one durable put or transaction each, in order. */
  write(chunks: BenchRow[][]): Promise<void>;
  /**
   * Load `chunks` as fast as the engine takes them (the read ladder, whose figures are the reads):
   * larger transactions where the engine is slow per transaction. Default: `write`.
   */
  load?(chunks: BenchRow[][]): Promise<void>;
  /** True when `get` answers synchronously (SQLite); else it returns a promise (or thenable). */
  readonly syncGet?: boolean;
  /** One point read: the row, or undefined/null when absent. */
  get(id: number): unknown;
  /** Every live row once, as the engine hands rows back; resolves the row count. */
  scan(): Promise<number>;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

// ------------------------------------------------------------------------------------------------
// memwal

type CompactionStats = Awaited<ReturnType<MemWal['compactionStats']>>;
type ReadStats = Awaited<ReturnType<MemWal['readStats']>>;

class MemwalReads implements ReadEngine {
  db: MemWal | undefined;
  /** Table bytes written (flushes + compactions) and compactions run by the sessions closed so far. */
  closedSessions = { bytesWritten: 0, compactions: 0 };
  constructor(readonly name: string) {}

  /** The same totals since the store was created (the stats count from each open). */
  async totals(): Promise<{ bytesWritten: number; compactions: number }> {
    const [ws, cs] = await Promise.all([this.db!.writeStats(), this.db!.compactionStats()]);
    return {
      bytesWritten: this.closedSessions.bytesWritten + ws.flushBytes + cs.bytesWritten,
      compactions: this.closedSessions.compactions + cs.completedCount,
    };
  }

  options(): MemWalOptions {
    return {
      name: this.name,
      schema: BENCH_SCHEMA,
      primaryKey: ['id'],
      storage: defaultBrowserStorage(),
      logger: { warn: () => undefined },
    };
  }
  async open(): Promise<void> {
    this.db = await MemWal.open(this.options());
  }
  async write(chunks: BenchRow[][]): Promise<void> {
    for (const c of chunks) await this.db!.put(c);
  }
  get(id: number): Promise<unknown> {
    return this.db!.get({ id });
  }
  async scan(): Promise<number> {
    // Arrow record batches as scanBatches yields them (one block per table file in memory);
    // the value column is summed so every batch is really read.
    let rows = 0;
    let sum = 0;
    for await (const b of this.db!.scanBatches()) {
      rows += b.numRows;
      const values = b.getChild('value')!;
      for (const d of values.data) for (const v of d.values as Float64Array) sum += v;
    }
    if (Number.isNaN(sum)) throw new Error('scan: NaN');
    return rows;
  }
  async close(): Promise<void> {
    if (!this.db) return;
    const totals = await this.totals();
    await this.db.close();
    this.db = undefined;
    // A flush at close (nothing is left to flush after the space phase) is not counted.
    this.closedSessions = totals;
  }
  async destroy(): Promise<void> {
    await this.close();
    await MemWal.destroy(this.name, { storage: defaultBrowserStorage() });
  }
}

/** Bytes of the store's files in OPFS (`memwal/<name>/…`, docs/format.md), read with the store closed. */
async function opfsStoreBytes(name: string): Promise<{ walBytes: number; tableBytes: number; files: number }> {
  const root = await navigator.storage.getDirectory();
  const store = await (await root.getDirectoryHandle('memwal')).getDirectoryHandle(name);
  const out = { walBytes: 0, tableBytes: 0, files: 0 };
  const walk = async (dir: FileSystemDirectoryHandle, kind: 'walBytes' | 'tableBytes'): Promise<void> => {
    for await (const h of (dir as unknown as { values(): AsyncIterable<FileSystemHandle> }).values()) {
      if (h.kind === 'directory') await walk(h as FileSystemDirectoryHandle, h.name === 'wal' ? 'walBytes' : 'tableBytes');
      else {
        out[kind] += (await (h as FileSystemFileHandle).getFile()).size;
        out.files += 1;
      }
    }
  };
  await walk(store, 'tableBytes');
  return out;
}

// ------------------------------------------------------------------------------------------------
// the peers

/** SQLite's page cache is set to memwal's default block cache (8 MiB), so both cache as much. */
const SQLITE_READ_PRAGMAS = `${SQLITE_CONFIGS.sqlite_sahpool_wal} PRAGMA cache_size=-8192;`;

class SqliteReads implements ReadEngine {
  readonly syncGet = true;
  db: SqliteDb | undefined;
  stmt: ReturnType<SqliteDb['prepare']> | undefined;
  created = false;
  constructor(readonly path: string) {}

  async open(): Promise<void> {
    this.db = await sqliteOpen(SQLITE_READ_PRAGMAS, this.path, !this.created);
    this.created = true;
    this.stmt = this.db.prepare('SELECT id, value, name FROM t WHERE id = ?');
  }
  async write(chunks: BenchRow[][]): Promise<void> {
    sqlitePutChunks(this.db!, chunks, true);
  }
  async load(chunks: BenchRow[][]): Promise<void> {
    sqlitePutChunks(this.db!, [chunks.flat()], true);
  }
  get(id: number): unknown {
    const s = this.stmt!;
    s.bind(1, id);
    const row = s.step() ? s.get([]) : undefined;
    s.reset();
    return row;
  }
  async scan(): Promise<number> {
    const s = this.db!.prepare('SELECT id, value, name FROM t');
    let rows = 0;
    try {
      while (s.step()) {
        s.get([]);
        rows += 1;
      }
    } finally {
      s.finalize();
    }
    return rows;
  }
  async close(): Promise<void> {
    this.stmt?.finalize();
    this.stmt = undefined;
    this.db?.close();
    this.db = undefined;
  }
  async destroy(): Promise<void> {
    await this.close();
    await sqliteUnlink(this.path);
  }
}

type PgliteInstance = Awaited<ReturnType<typeof pgliteOpen>>;

/** Rows per page of the peers' scans (IndexedDB getAll, Dexie, PGlite): bounded memory, as memwal's scanBatches. */
const SCAN_PAGE = 10_000;

class PgliteReads implements ReadEngine {
  pg: PgliteInstance | undefined;
  created = false;
  constructor(readonly dir: string) {}

  async open(): Promise<void> {
    this.pg = await pgliteOpen(this.dir);
    if (!this.created) await this.pg.exec(PGLITE_TABLE);
    this.created = true;
  }
  async write(chunks: BenchRow[][]): Promise<void> {
    await pglitePutChunks(this.pg!, 'unnest', chunks, true);
  }
  async get(id: number): Promise<unknown> {
    return (await this.pg!.query('SELECT id, value, name FROM t WHERE id = $1', [id])).rows[0];
  }
  async scan(): Promise<number> {
    let rows = 0;
    let last = -1;
    for (;;) {
      const page = (
        await this.pg!.query<{ id: number }>('SELECT id, value, name FROM t WHERE id > $1 ORDER BY id LIMIT $2', [last, SCAN_PAGE])
      ).rows;
      rows += page.length;
      if (page.length < SCAN_PAGE) return rows;
      last = Number(page.at(-1)!.id);
    }
  }
  async close(): Promise<void> {
    await this.pg?.close();
    this.pg = undefined;
  }
  async destroy(): Promise<void> {
    if (!this.pg) await this.open();
    await this.pg!.exec('DROP TABLE t');
    await this.close();
  }
}

/** Chunks of 1,000 rows per IndexedDB transaction when loading the read ladder. */
const IDB_LOAD_CHUNKS = 20;

class IdbReads implements ReadEngine {
  db: IDBPDatabase | undefined;
  constructor(readonly name: string) {}

  async open(): Promise<void> {
    this.db = await openIdbRows(this.name);
  }
  async write(chunks: BenchRow[][]): Promise<void> {
    for (const c of chunks) await idbPutChunk(this.db!, c);
  }
  async load(chunks: BenchRow[][]): Promise<void> {
    for (let i = 0; i < chunks.length; i += IDB_LOAD_CHUNKS)
      await idbPutChunk(this.db!, chunks.slice(i, i + IDB_LOAD_CHUNKS).flat(), 'relaxed');
  }
  get(id: number): Promise<unknown> {
    return this.db!.get('rows', id);
  }
  async scan(): Promise<number> {
    let rows = 0;
    let range: IDBKeyRange | undefined;
    for (;;) {
      const page = (await this.db!.getAll('rows', range, SCAN_PAGE)) as BenchRow[];
      rows += page.length;
      if (page.length < SCAN_PAGE) return rows;
      range = IDBKeyRange.lowerBound(page.at(-1)!.id, true);
    }
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

/** Dexie reads the database the IndexedDB engine wrote (the same object store, keyPath `id`). */
class DexieReads implements ReadEngine {
  db: DexieDb | undefined;
  constructor(readonly name: string) {}

  async open(): Promise<void> {
    const { Dexie } = await import('dexie');
    // No version(): Dexie opens the existing database as it is (its "dynamic mode").
    this.db = new Dexie(this.name, { chromeTransactionDurability: 'strict' });
    await this.db.open();
  }
  async write(): Promise<void> {
    throw new Error('dexie: the read case reads the database written through idb');
  }
  get(id: number): Promise<unknown> {
    return this.db!.table('rows').get(id);
  }
  async scan(): Promise<number> {
    const table = this.db!.table<BenchRow, number>('rows');
    let rows = 0;
    let last = -1;
    for (;;) {
      const page = await table.where(':id').above(last).limit(SCAN_PAGE).toArray();
      rows += page.length;
      if (page.length < SCAN_PAGE) return rows;
      last = page.at(-1)!.id;
    }
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
// the phases, called one by one from the runner

let current: { engine: ReadEngine; name: ReadEngineName; n: number; userBytes: number; key: (k: number) => number } | undefined;

/**
 * Start the read case of `engine` on `n` keys: create its store or database (fresh). `ladder`:
 * the read ladder's keys ({@link ladderKey}), written with {@link readsGrow}; `n` is then 0.
 */
export async function readsOpen(engine: ReadEngineName, n: number, ladder = false): Promise<void> {
  if (current) throw new Error(`reads: ${current.name} is still open`);
  const e: ReadEngine =
    engine === 'memwal'
      ? new MemwalReads(uniqueName('reads'))
      : engine === 'sqlite_sahpool_wal'
        ? new SqliteReads(`/${uniqueName('reads')}.db`)
        : engine === 'pglite_opfs_ahp'
          ? new PgliteReads(uniqueName('reads-pglite'))
          : engine === 'idb'
            ? new IdbReads(uniqueName('reads-idb'))
            : (() => {
                throw new Error(`reads: ${engine} reads the database of idb (readsSwitchToDexie)`);
              })();
  await e.open();
  current = { engine: e, name: engine, n: ladder ? 0 : n, userBytes: 0, key: ladder ? ladderKey : readKey };
}

/** The read ladder: load rows `current n .. to - 1` (so the store holds `to` keys); resolves how long it took. */
export async function readsGrow(to: number): Promise<{ rows: number; ms: number }> {
  const c = current!;
  if (c.key !== ladderKey) throw new Error('reads: readsGrow is for the read ladder (readsOpen with ladder)');
  const chunks = ladderRows(c.n, to);
  const t0 = now();
  await (c.engine.load ?? c.engine.write).call(c.engine, chunks);
  const ms = now() - t0;
  const rows = to - c.n;
  c.n = to;
  return { rows, ms };
}

/** Hand the database the idb engine wrote to Dexie (idb's connection closes first). */
export async function readsSwitchToDexie(): Promise<void> {
  const c = current;
  if (!(c?.engine instanceof IdbReads)) throw new Error('reads: Dexie reads what idb wrote; open idb first');
  await c.engine.close();
  const e = new DexieReads(c.engine.name);
  await e.open();
  current = { ...c, engine: e, name: 'dexie' };
}

/** Write overwrite round `round`, rows `from .. to` of it (generated outside the timed part). */
export async function readsWrite(round: number, from?: number, to?: number): Promise<{ rows: number; ms: number }> {
  const c = current!;
  const chunks = readRound(c.n, round, from, to);
  if (c.engine instanceof MemwalReads) c.userBytes += tableToIPC(new Table([rowsToBatch(chunks)]), 'file').byteLength;
  const t0 = now();
  await c.engine.write(chunks);
  return { rows: chunks.reduce((a, ch) => a + ch.length, 0), ms: now() - t0 };
}

/** Latencies and rates of one series of point reads. */
export interface ReadPass {
  gets: number;
  found: number;
  ms: number;
  p50: number;
  p99: number;
  max: number;
  /** memwal: what readStats counted during the series. */
  readStats?: Partial<ReadStats>;
  /** Time of the fresh open before a cold series, ms. */
  openMs?: number;
}

/**
 * `count` random point reads, one after another, each timed, stopping early once `maxMs` have
 * passed. `cold`: close and reopen first (a fresh open; the OS page cache stays warm, nothing can
 * empty it from inside a browser). `present` keys were written; absent ones are odd ids inside
 * the key range.
 */
export async function readsPass(
  count: number,
  seed: number,
  present: boolean,
  cold: boolean,
  maxMs = Number.POSITIVE_INFINITY,
): Promise<ReadPass> {
  const c = current!;
  const e = c.engine;
  let openMs: number | undefined;
  if (cold) {
    await e.close();
    const t = now();
    await e.open();
    openMs = now() - t;
  }
  const keys = readKeys(c.n, count, seed, present, c.key);
  const before = e instanceof MemwalReads ? await e.db!.readStats() : undefined;
  const all = new Float64Array(count);
  let found = 0;
  let gets = 0;
  const t0 = now();
  while (gets < count && now() - t0 < maxMs) {
    const t = now();
    const row = e.syncGet ? e.get(keys[gets]!) : await e.get(keys[gets]!);
    all[gets++] = now() - t;
    if (row !== undefined && row !== null) found += 1;
  }
  const ms = now() - t0;
  if (found !== (present ? gets : 0)) throw new Error(`reads ${c.name}: ${found} of ${gets} ${present ? 'present' : 'absent'} keys found`);
  const lat = all.subarray(0, gets).sort();
  const pct = (p: number): number => lat[Math.min(gets - 1, Math.ceil((p / 100) * gets) - 1)]!;
  const out: ReadPass = { gets, found, ms, p50: pct(50), p99: pct(99), max: lat[gets - 1]!, ...(openMs !== undefined ? { openMs } : {}) };
  if (before && e instanceof MemwalReads) {
    const after = await e.db!.readStats();
    out.readStats = {
      gets: after.gets - before.gets,
      tableFilesConsulted: after.tableFilesConsulted - before.tableFilesConsulted,
      bloomNegatives: after.bloomNegatives - before.bloomNegatives,
      bloomFalsePositives: after.bloomFalsePositives - before.bloomFalsePositives,
      blockReads: after.blockReads - before.blockReads,
      blockCacheHits: after.blockCacheHits - before.blockCacheHits,
      blockCacheBytes: after.blockCacheBytes,
      blockCacheLimitBytes: after.blockCacheLimitBytes,
      indexBytes: after.indexBytes,
    };
  }
  return out;
}

/** One full scan, timed. */
export async function readsScan(): Promise<{ rows: number; ms: number }> {
  const c = current!;
  const t0 = now();
  const rows = await c.engine.scan();
  const ms = now() - t0;
  if (rows !== c.n) throw new Error(`scan ${c.name}: ${rows} rows, expected ${c.n}`);
  return { rows, ms };
}

/** The space figures of a memwal store, at one moment. */
export interface SpaceFigures {
  /** Bytes of an Arrow IPC file of the newest version of every live row. */
  logicalBytes: number;
  /** Arrow IPC file bytes of every row put (all rounds). */
  userBytes: number;
  /** Live table files and their bytes (compactionStats). */
  tableCount: number;
  tableBytes: number;
  levels: CompactionStats['levels'];
  /** The engine's own estimate (compactionStats.spaceAmplification). */
  estimatedSpaceAmplification: number;
  /** Table bytes written since the store was created: flushes plus compactions. */
  tableBytesWritten: number;
  /** Files in OPFS, read with the store closed (WAL segments and table files). */
  opfs: { walBytes: number; tableBytes: number; files: number };
  compactions: number;
  l0StallCount: number;
  /** compact(): what it did, and how long it took. */
  compact?: { ms: number; compactions: number; bytesWritten: number; tablesBefore: number; tablesAfter: number };
}

/** memwal: the background after the last write, and the tables it left. */
export interface SettleFigures {
  /** From the last write until nothing ran and no debt was left for three polls in a row, ms. */
  settleMs: number;
  /** False when it had not settled after 300 s (the figures are then those at that moment). */
  settled: boolean;
  tableCount: number;
  levels: CompactionStats['levels'];
  l0StallCount: number;
}

function memwalOf(c: typeof current): MemwalReads {
  if (!(c?.engine instanceof MemwalReads)) throw new Error('reads: memwal only');
  return c.engine;
}

/**
 * memwal only: seal the active memtable, wait for every flush, then for the background
 * compaction to settle (nothing running, no debt, three polls 100 ms apart), at most 300 s.
 */
export async function readsSettle(): Promise<SettleFigures> {
  const db = memwalOf(current).db!;
  const s = await settleStore(db);
  const cs = await db.compactionStats();
  return { ...s, levels: cs.levels };
}

/**
 * memwal only: the space figures now (`compact`: after running `compact()` to completion). The
 * store is closed to read its files in OPFS, then reopened (cold) for what follows.
 */
export async function readsSpace(compact: boolean): Promise<SpaceFigures> {
  const c = current!;
  const e = memwalOf(c);
  const db = e.db!;
  let compactResult: SpaceFigures['compact'];
  if (compact) {
    const t0 = now();
    const r = await db.compact();
    compactResult = {
      ms: now() - t0,
      compactions: r.compactions,
      bytesWritten: r.bytesWritten,
      tablesBefore: r.tablesBefore,
      tablesAfter: r.tablesAfter,
    };
  }
  const cs = await db.compactionStats();
  const { bytesWritten: tableBytesWritten, compactions } = await e.totals();
  const logicalBytes = tableToIPC(await db.scan(), 'file').byteLength;
  await e.close();
  const opfs = await opfsStoreBytes(e.name);
  await e.open();
  return {
    logicalBytes,
    userBytes: c.userBytes,
    tableCount: cs.tableCount,
    tableBytes: cs.tableBytes,
    levels: cs.levels,
    estimatedSpaceAmplification: cs.spaceAmplification,
    tableBytesWritten,
    opfs,
    compactions,
    l0StallCount: cs.l0StallCount,
    ...(compactResult ? { compact: compactResult } : {}),
  };
}

/** memwal: what the store did while writing (read before the space phase). */
export async function readsWriteStats(): Promise<{
  backpressureWaits: number;
  backpressureWaitMs: number;
  l0StallCount: number;
  flushes: number;
}> {
  const e = current!.engine;
  if (!(e instanceof MemwalReads)) return { backpressureWaits: 0, backpressureWaitMs: 0, l0StallCount: 0, flushes: 0 };
  const [bp, cs, ws] = await Promise.all([e.db!.backpressureStats(), e.db!.compactionStats(), e.db!.writeStats()]);
  return { backpressureWaits: bp.totalCount, backpressureWaitMs: bp.totalWaitMs, l0StallCount: cs.l0StallCount, flushes: ws.flushCount };
}

/** End the read case of the current engine: close and delete its store or database. */
export async function readsClose(): Promise<void> {
  const c = current;
  current = undefined;
  await c?.engine.destroy();
}
