// DurableObjectStorageAdapter: stores in a SQLite-backed Durable Object's `ctx.storage.sql`
// (docs/format.md): WAL segments, table files and the manifest as rows, every
// mutation in one `transactionSync` followed by `storage.sync()`. Cloudflare Workers / workerd.

import { MemWalError, toMemWalError } from '../util/errors.js';
import { checkManifest } from '../format/manifest/manifest.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { checkAppendOffset, checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import { checkEpoch, checkManifestSuccessor, checkSegmentEpoch, decideManifestCommit } from './fencing.js';
import { claimLock, type HeldLock, InProcessLocks } from './lock-table.js';

/** A value SQLite hands back: BLOBs come back as `ArrayBuffer`. */
export type SqlValue = ArrayBuffer | string | number | null;

/** The part of a Durable Object's `SqlStorage` (`ctx.storage.sql`) this adapter uses. */
export interface SqlStorageLike {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, SqlValue>[] };
}

/**
 * The part of a SQLite-backed Durable Object's `ctx.storage` this adapter uses, typed
 * structurally so memwal does not depend on `@cloudflare/workers-types`.
 */
export interface DurableObjectStorageLike {
  readonly sql: SqlStorageLike;
  /** Runs `closure` in one SQLite transaction; a throw rolls it back. */
  transactionSync<T>(closure: () => T): T;
  /** Resolves once every write made so far is on disk. */
  sync(): Promise<void>;
}

/** Options of `DurableObjectStorageAdapter`. */
export interface DurableObjectStorageOptions {
  /**
   * Largest BLOB per row for WAL and table-file chunks, in bytes. Default and maximum 1 MiB:
   * Cloudflare limits a row to 2 MB (local workerd allows about 8 MiB). Smaller values only cost
   * rows; tests use them to exercise chunk boundaries.
   */
  chunkBytes?: number;
}

/** Default and largest `chunkBytes`. */
export const DURABLE_OBJECT_MAX_CHUNK_BYTES = 1024 * 1024;

/**
 * The SQL tables, created on first use. Their names and columns reach disk: never rename them.
 * A WAL segment is a `memwal_wal_segment` row (its length) plus `memwal_wal_chunk` rows keyed by
 * their byte offset; a table file is a `memwal_table_file` row (`complete` = 0 while it is being
 * written, so a crash leaves a listed orphan for the sweep) plus `memwal_table_chunk` rows in
 * sequence; the manifest is one JSON row whose `writer_epoch` column fences WAL appends.
 */
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS memwal_manifest (store TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, writer_epoch INTEGER NOT NULL, body TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS memwal_wal_segment (store TEXT NOT NULL, name TEXT NOT NULL, epoch INTEGER NOT NULL, first_position INTEGER NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (store, name))`,
  `CREATE TABLE IF NOT EXISTS memwal_wal_chunk (store TEXT NOT NULL, segment TEXT NOT NULL, start INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (store, segment, start))`,
  `CREATE TABLE IF NOT EXISTS memwal_table_file (store TEXT NOT NULL, name TEXT NOT NULL, bytes INTEGER NOT NULL, complete INTEGER NOT NULL, PRIMARY KEY (store, name))`,
  `CREATE TABLE IF NOT EXISTS memwal_table_chunk (store TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (store, name, seq))`,
];

/** Per `ctx.storage` object: the isolate's lock table (by store name) and whether the SQL tables exist. */
interface PerStorage {
  locks: InProcessLocks;
  schemaReady: boolean;
}

/** Keyed by the storage object, so two adapters over one `ctx.storage` share one lock table. */
const perStorage = new WeakMap<object, PerStorage>();

/** Maps a thrown value to a MemWalError; SQLite's "full" and Cloudflare's size limit become QuotaExceeded. */
function storageError(e: unknown, context: string): MemWalError {
  const err = toMemWalError(e, context);
  if (
    err.code === 'IOError' &&
    /SQLITE_FULL|database or disk is full|exceeded.*(size|storage)|(size|storage).*exceeded/i.test(err.message)
  ) {
    return new MemWalError('QuotaExceeded', err.message, { cause: e });
  }
  return err;
}

/** Copies of consecutive `parts`, re-cut into pieces of at most `max` bytes. */
function* rechunk(parts: Iterable<Uint8Array>, max: number): Generator<Uint8Array> {
  for (const part of parts) {
    for (let at = 0; at < part.length; at += max) yield part.subarray(at, Math.min(part.length, at + max));
  }
}

/** Concatenates BLOBs read back from SQLite. */
function concatBlobs(blobs: ArrayBuffer[]): Uint8Array {
  const out = new Uint8Array(blobs.reduce((n, b) => n + b.byteLength, 0));
  let at = 0;
  for (const b of blobs) {
    out.set(new Uint8Array(b), at);
    at += b.byteLength;
  }
  return out;
}

/**
 * A StorageAdapter over a SQLite-backed Durable Object's storage (`ctx.storage`), layout
 * `'durable-object'`. Every mutation runs in one `transactionSync` and resolves after
 * `storage.sync()`, so "durable" means on disk as elsewhere; a WAL append checks the manifest
 * epoch (`Fenced`) and its offset in the same transaction; a manifest commit is a compare-and-set
 * in one transaction. The writer lock is the platform's single instance per Durable Object id
 * plus an in-isolate lock table (FIFO, steal, timeout, abort), shared by every adapter over the
 * same `ctx.storage`. Construct it in the Durable Object's constructor and pass it as `storage`
 * to `MemWal.open`. Throws `NotSupported` when `storage.sql` is missing (a key-value-backed
 * Durable Object: declare the class in a `new_sqlite_classes` migration, or `enableSql` in
 * workerd) and `InvalidArgument` for a bad `chunkBytes`. Cloudflare Workers / workerd only.
 */
export class DurableObjectStorageAdapter implements StorageAdapter {
  readonly layout = 'durable-object';
  private readonly chunkBytes: number;
  private readonly shared: PerStorage;

  constructor(
    private readonly storage: DurableObjectStorageLike,
    options: DurableObjectStorageOptions = {},
  ) {
    if (typeof storage?.sql?.exec !== 'function' || typeof storage.transactionSync !== 'function') {
      throw new MemWalError(
        'NotSupported',
        'DurableObjectStorageAdapter needs a SQLite-backed Durable Object (ctx.storage.sql): use a new_sqlite_classes migration, or enableSql in workerd',
      );
    }
    this.chunkBytes = options.chunkBytes ?? DURABLE_OBJECT_MAX_CHUNK_BYTES;
    if (!Number.isSafeInteger(this.chunkBytes) || this.chunkBytes < 1 || this.chunkBytes > DURABLE_OBJECT_MAX_CHUNK_BYTES) {
      throw new MemWalError(
        'InvalidArgument',
        `chunkBytes must be an integer in 1..${DURABLE_OBJECT_MAX_CHUNK_BYTES}, got ${String(options.chunkBytes)}`,
      );
    }
    let shared = perStorage.get(storage);
    if (!shared) {
      shared = { locks: new InProcessLocks(), schemaReady: false };
      perStorage.set(storage, shared);
    }
    this.shared = shared;
  }

  /**
   * Claim the writer lock of store `name` in this isolate. A free lock is taken at once. A held
   * one: `steal` takes it (the old handle's later operations reject `Fenced`, its `onLost` gets
   * `'stolen'` on a microtask); `timeoutMs: 0` rejects `Locked` at once; otherwise calls
   * `onWaiting` once and waits (warning through `logger` while it does), rejecting `Locked` after `timeoutMs` (undefined: never) or
   * `Aborted` when `signal` aborts. Rejects `InvalidArgument` for a negative `timeoutMs`, or the
   * storage error creating the tables.
   */
  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    this.ensureSchema();
    let handle: DurableObjectStoreHandle | undefined;
    let stolen = false;
    const lock = await claimLock(this.shared.locks, name, options, () => (handle ? handle.lose() : (stolen = true)), {
      lock: name,
      heldBy: 'another open in this Durable Object holds it',
    });
    handle = new DurableObjectStoreHandle(this.storage, name, this.chunkBytes, options.onLost, lock);
    if (stolen) handle.lose();
    return handle;
  }

  /** Delete every row of store `name`, durably. Rejects `Locked` while a handle holds its lock. */
  async destroyStore(name: string): Promise<void> {
    if (this.shared.locks.held(name)) {
      throw new MemWalError('Locked', `store "${name}" is open; release it before destroying it`);
    }
    try {
      this.ensureSchema();
      const sql = this.storage.sql;
      this.storage.transactionSync(() => {
        for (const table of ['memwal_manifest', 'memwal_wal_segment', 'memwal_wal_chunk', 'memwal_table_file', 'memwal_table_chunk']) {
          sql.exec(`DELETE FROM ${table} WHERE store = ?`, name);
        }
      });
      await this.storage.sync();
    } catch (e) {
      throw storageError(e, `destroying store "${name}"`);
    }
  }

  /**
   * `usageBytes`: the bytes store `name` keeps in this object's SQLite database — its WAL and
   * table-file chunks plus its manifest (0 when it does not exist); not SQLite's page overhead
   * nor other stores' rows (the whole database is `ctx.storage.sql.databaseSize`). No quota:
   * Cloudflare's per-object limit depends on the plan. Rejects with the storage error.
   */
  estimate(name: string): Promise<StorageEstimate> {
    try {
      this.ensureSchema();
      const [row] = this.storage.sql
        .exec(
          `SELECT (SELECT coalesce(sum(length(data)), 0) FROM memwal_wal_chunk WHERE store = ?1)
                + (SELECT coalesce(sum(length(data)), 0) FROM memwal_table_chunk WHERE store = ?1)
                + (SELECT coalesce(sum(length(CAST(body AS BLOB))), 0) FROM memwal_manifest WHERE store = ?1) AS bytes`,
          name,
        )
        .toArray();
      return Promise.resolve({ usageBytes: Number(row?.bytes ?? 0) });
    } catch (e) {
      return Promise.reject(storageError(e, `storage estimate of store "${name}"`));
    }
  }

  private ensureSchema(): void {
    if (this.shared.schemaReady) return;
    try {
      const sql = this.storage.sql;
      this.storage.transactionSync(() => {
        for (const statement of SCHEMA) sql.exec(statement);
      });
    } catch (e) {
      throw storageError(e, 'creating memwal tables');
    }
    this.shared.schemaReady = true;
  }
}

/** One holder of a store's writer lock; every operation first checks it is still the holder. */
class DurableObjectStoreHandle implements StoreHandle {
  private state: 'open' | 'released' | 'stolen' = 'open';
  /** The writer epoch of the newest manifest this handle committed (0: none yet); fences mutations. */
  private epoch = 0;
  private readonly sql: SqlStorageLike;

  constructor(
    private readonly storage: DurableObjectStorageLike,
    private readonly store: string,
    private readonly chunkBytes: number,
    private readonly onLost: ((reason: string) => void) | undefined,
    private readonly lock: HeldLock,
  ) {
    this.sql = storage.sql;
  }

  manifestLoad(): Promise<Manifest | undefined> {
    return this.read('manifest load', () => {
      const [row] = this.rows('SELECT body FROM memwal_manifest WHERE store = ?', this.store);
      if (!row) return undefined;
      let value: unknown;
      try {
        value = JSON.parse(String(row.body));
      } catch (e) {
        throw new MemWalError('Corruption', `manifest of store "${this.store}" is not JSON`, { cause: e });
      }
      return checkManifest(value);
    });
  }

  async manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    checkManifestSuccessor(expectedVersion, next);
    const body = JSON.stringify(next);
    return this.write('manifest commit', () => {
      const [stored] = this.rows('SELECT version, writer_epoch FROM memwal_manifest WHERE store = ?', this.store);
      decideManifestCommit(expectedVersion, next, stored && { version: Number(stored.version), writerEpoch: Number(stored.writer_epoch) });
      this.sql.exec(
        'INSERT OR REPLACE INTO memwal_manifest (store, version, writer_epoch, body) VALUES (?, ?, ?, ?)',
        this.store,
        next.version,
        next.writerEpoch,
        body,
      );
      this.epoch = next.writerEpoch;
    });
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.read('WAL list', () =>
      this.rows('SELECT name, epoch, first_position, bytes FROM memwal_wal_segment WHERE store = ?', this.store).map((r) => ({
        name: String(r.name),
        epoch: Number(r.epoch),
        firstPosition: Number(r.first_position),
        bytes: Number(r.bytes),
      })),
    );
  }

  walRead(name: string, offset = 0): Promise<Uint8Array> {
    return this.read(`WAL read of ${name}`, () => {
      const length = this.segmentLength(name);
      if (length === undefined) throw new MemWalError('IOError', `WAL segment ${name} does not exist`);
      if (!(Number.isSafeInteger(offset) && offset >= 0 && offset <= length)) {
        throw new MemWalError('IOError', `WAL segment ${name}: read offset ${offset} is outside 0..${length}`);
      }
      // From the chunk that holds `offset` (the last one starting at or before it) to the end.
      const rows = this.rows(
        `SELECT start, data FROM memwal_wal_chunk WHERE store = ?1 AND segment = ?2 AND start >= coalesce(
           (SELECT max(start) FROM memwal_wal_chunk WHERE store = ?1 AND segment = ?2 AND start <= ?3), 0)
         ORDER BY start`,
        this.store,
        name,
        offset,
      );
      const first = rows.length > 0 ? Number(rows[0]!.start) : offset;
      const bytes = concatBlobs(rows.map((r) => r.data as ArrayBuffer)).subarray(offset - first);
      if (first > offset || bytes.length !== length - offset) {
        throw new MemWalError(
          'Corruption',
          `WAL segment ${name}: chunks hold ${bytes.length} bytes from offset ${offset}, its length says ${length - offset}`,
        );
      }
      return bytes;
    });
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    const parsed = parseSegmentName(name);
    if (!parsed) return Promise.reject(new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`));
    return this.write(`WAL append to ${name}`, () => {
      const [m] = this.rows('SELECT writer_epoch FROM memwal_manifest WHERE store = ?', this.store);
      checkSegmentEpoch(name, parsed.epoch, Number(m?.writer_epoch ?? 0));
      const length = this.segmentLength(name);
      checkAppendOffset(name, offset, length);
      let at = offset;
      for (const piece of rechunk([bytes], this.chunkBytes)) {
        this.sql.exec('INSERT INTO memwal_wal_chunk (store, segment, start, data) VALUES (?, ?, ?, ?)', this.store, name, at, piece);
        at += piece.length;
      }
      this.sql.exec(
        `INSERT INTO memwal_wal_segment (store, name, epoch, first_position, bytes) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (store, name) DO UPDATE SET bytes = excluded.bytes`,
        this.store,
        name,
        parsed.epoch,
        parsed.firstPosition,
        at,
      );
    });
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.write(`WAL truncate of ${name}`, () => {
      this.fence(`WAL truncate of ${name}`);
      const current = this.segmentLength(name);
      if (current === undefined) throw new MemWalError('IOError', `WAL segment ${name} does not exist`);
      if (!(Number.isSafeInteger(length) && length >= 0 && length <= current)) {
        throw new MemWalError('InvalidArgument', `WAL segment ${name}: cannot truncate ${current} bytes to ${length}`);
      }
      this.sql.exec('DELETE FROM memwal_wal_chunk WHERE store = ? AND segment = ? AND start >= ?', this.store, name, length);
      // The chunk that straddles the cut keeps its prefix (substr counts bytes on a BLOB, from 1).
      this.sql.exec(
        `UPDATE memwal_wal_chunk SET data = substr(data, 1, ?3 - start)
         WHERE store = ?1 AND segment = ?2 AND start < ?3 AND start + length(data) > ?3`,
        this.store,
        name,
        length,
      );
      this.sql.exec('UPDATE memwal_wal_segment SET bytes = ? WHERE store = ? AND name = ?', length, this.store, name);
    });
  }

  walRemove(name: string): Promise<void> {
    return this.write(`WAL remove of ${name}`, () => {
      this.fence(`WAL remove of ${name}`);
      this.sql.exec('DELETE FROM memwal_wal_chunk WHERE store = ? AND segment = ?', this.store, name);
      this.sql.exec('DELETE FROM memwal_wal_segment WHERE store = ? AND name = ?', this.store, name);
    });
  }

  /**
   * Marks the file as being written, stores its chunks (re-cut to `chunkBytes`, one transaction
   * each, yielding between async chunks), then marks it complete and syncs. A failure or a lost
   * lock stops the write; the incomplete file stays listed, for the caller's remove or the sweep.
   */
  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    const context = `table write of ${name}`;
    await this.write(
      context,
      () => {
        this.fence(context);
        const [existing] = this.rows('SELECT complete FROM memwal_table_file WHERE store = ? AND name = ?', this.store, name);
        if (existing) throw new MemWalError('IOError', `table file ${name} already exists`);
        this.sql.exec('INSERT INTO memwal_table_file (store, name, bytes, complete) VALUES (?, ?, 0, 0)', this.store, name);
      },
      false,
    );
    let seq = 0;
    let bytes = 0;
    const put = (chunk: Uint8Array): void => {
      this.transaction(context, () => {
        this.fence(context);
        for (const piece of rechunk([chunk], this.chunkBytes)) {
          this.sql.exec('INSERT INTO memwal_table_chunk (store, name, seq, data) VALUES (?, ?, ?, ?)', this.store, name, seq++, piece);
          bytes += piece.length;
        }
      });
    };
    try {
      if (Symbol.iterator in chunks) for (const chunk of chunks) put(chunk);
      else for await (const chunk of chunks) put(chunk);
    } catch (e) {
      throw storageError(e, context);
    }
    await this.write(context, () => {
      this.fence(context);
      this.sql.exec('UPDATE memwal_table_file SET bytes = ?, complete = 1 WHERE store = ? AND name = ?', bytes, this.store, name);
    });
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.read(`table read of ${name}`, () => {
      const [file] = this.rows('SELECT bytes, complete FROM memwal_table_file WHERE store = ? AND name = ?', this.store, name);
      if (!file) throw new MemWalError('IOError', `table file ${name} does not exist`);
      if (Number(file.complete) !== 1) throw new MemWalError('IOError', `table file ${name} is incomplete (its write did not finish)`);
      const rows = this.rows('SELECT data FROM memwal_table_chunk WHERE store = ? AND name = ? ORDER BY seq', this.store, name);
      const bytes = concatBlobs(rows.map((r) => r.data as ArrayBuffer));
      if (bytes.length !== Number(file.bytes)) {
        throw new MemWalError('Corruption', `table file ${name}: chunks hold ${bytes.length} bytes, its length says ${Number(file.bytes)}`);
      }
      return bytes;
    });
  }

  /** Reads only the chunks that overlap the range (chunk lengths come from SQLite, not the data). */
  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    return this.read(`table read of ${name} at ${offset}`, () => {
      checkRange(name, offset, length);
      const [file] = this.rows('SELECT bytes, complete FROM memwal_table_file WHERE store = ? AND name = ?', this.store, name);
      if (!file) throw new MemWalError('IOError', `table file ${name} does not exist`);
      if (Number(file.complete) !== 1) throw new MemWalError('IOError', `table file ${name} is incomplete (its write did not finish)`);
      checkInside(name, offset, length, Number(file.bytes));
      const out = new Uint8Array(length);
      let start = 0;
      for (const c of this.rows(
        'SELECT seq, length(data) AS n FROM memwal_table_chunk WHERE store = ? AND name = ? ORDER BY seq',
        this.store,
        name,
      )) {
        const n = Number(c.n);
        const end = start + n;
        if (end > offset && start < offset + length) {
          const [row] = this.rows('SELECT data FROM memwal_table_chunk WHERE store = ? AND name = ? AND seq = ?', this.store, name, c.seq);
          const data = new Uint8Array(row!.data as ArrayBuffer);
          const from = Math.max(offset, start);
          const to = Math.min(offset + length, end);
          out.set(data.subarray(from - start, to - start), from - offset);
        }
        if (end >= offset + length) break;
        start = end;
      }
      return out;
    });
  }

  tableList(): Promise<string[]> {
    return this.read('table list', () =>
      this.rows('SELECT name FROM memwal_table_file WHERE store = ?', this.store).map((r) => String(r.name)),
    );
  }

  tableRemove(name: string): Promise<void> {
    return this.write(`table remove of ${name}`, () => {
      this.fence(`table remove of ${name}`);
      this.sql.exec('DELETE FROM memwal_table_chunk WHERE store = ? AND name = ?', this.store, name);
      this.sql.exec('DELETE FROM memwal_table_file WHERE store = ? AND name = ?', this.store, name);
    });
  }

  release(): Promise<void> {
    if (this.state === 'open') this.state = 'released';
    return this.lock.release();
  }

  /** The lock was stolen: later operations reject `Fenced`; `onLost('stolen')` fires on a microtask. */
  lose(): void {
    if (this.state !== 'open') return;
    this.state = 'stolen';
    const onLost = this.onLost;
    if (onLost) queueMicrotask(() => onLost('stolen'));
  }

  /** `Fenced` if the stored manifest's epoch is newer than this handle's; call inside the mutation's transaction. */
  private fence(what: string): void {
    const [m] = this.rows('SELECT writer_epoch FROM memwal_manifest WHERE store = ?', this.store);
    checkEpoch(what, this.epoch, Number(m?.writer_epoch ?? 0));
  }

  private segmentLength(name: string): number | undefined {
    const [row] = this.rows('SELECT bytes FROM memwal_wal_segment WHERE store = ? AND name = ?', this.store, name);
    return row ? Number(row.bytes) : undefined;
  }

  private rows(query: string, ...bindings: unknown[]): Record<string, SqlValue>[] {
    return this.sql.exec(query, ...bindings).toArray();
  }

  /** `Closed` after release, `Fenced` after a steal. */
  private check(): void {
    if (this.state === 'released') throw new MemWalError('Closed', 'store handle was released');
    if (this.state === 'stolen') throw new MemWalError('Fenced', `store handle of "${this.store}" lost its writer lock to a newer writer`);
  }

  /** Runs `work` in one transaction if this handle still holds the lock; storage errors mapped. */
  private transaction<T>(context: string, work: () => T): T {
    this.check();
    try {
      return this.storage.transactionSync(work);
    } catch (e) {
      throw storageError(e, context);
    }
  }

  private read<T>(context: string, work: () => T): Promise<T> {
    try {
      return Promise.resolve(this.transaction(context, work));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** `work` in one transaction, then (unless `sync` is false) `storage.sync()`: durable on resolve. */
  private async write(context: string, work: () => void, sync = true): Promise<void> {
    this.transaction(context, work);
    if (!sync) return;
    try {
      await this.storage.sync();
    } catch (e) {
      throw storageError(e, `${context} (sync)`);
    }
  }
}
