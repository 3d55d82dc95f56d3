// IndexedDbStorage: the 'indexeddb' layout, everything in the "memwal" IndexedDB database — the
// fallback where OPFS sync access handles are missing (Safari private mode, shared workers, pages).
// Any browser context with IndexedDB; writer lock through Web Locks.

import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { checkAppendOffset, checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import {
  browserStorageEstimate,
  commitManifest,
  concatBytes,
  deleteStoreRecords,
  fileRange,
  inTransaction,
  loadManifest,
  memwalDb,
  onDatabaseClosed,
  ownBuffer,
  storeRange,
  TRANSACTION_LIMIT_MS,
} from './idb-db.js';
import type { MemwalDbSchema, WalChunkKey } from './idb-db.js';
import type { IDBPTransaction } from 'idb';
import { WriterSession } from './weblock.js';
import { checkEpoch, checkSegmentEpoch } from './fencing.js';

/** Table files are stored in records of exactly this many bytes (1 MiB), the last one shorter. */
export const TABLE_CHUNK_BYTES = 1024 * 1024;

/**
 * The IndexedDB-only layout. WAL: one record per append in object store `wal`, key
 * `[store, segment, offset, byteLength]`, added in one strict transaction that also reads the
 * manifest, so a stale writer's append is refused (`Fenced`) and never lands after a newer claim.
 * Tables: records of 1 MiB (the last one shorter) in `tables`, key `[store, name, chunkIndex]`,
 * written in one transaction (a failed write leaves nothing); a ranged read fetches only the
 * records it overlaps. Manifest: `manifests`, key `store`. Every readwrite transaction is
 * `durability: 'strict'`, and every mutation reads the manifest's epoch in its own transaction
 * (fencing, docs/impl.md). Any browser context with IndexedDB; the writer lock is a Web Lock
 * (`memwal:{store}`).
 */
export class IndexedDbStorage implements StorageAdapter {
  readonly layout = 'indexeddb';

  /**
   * Claims the writer lock (LockOptions: `Locked`, `Aborted`, `InvalidArgument`) and opens the
   * database (`IOError`, `NotSupported` without IndexedDB).
   */
  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const session = await WriterSession.claim(name, options);
    try {
      await memwalDb();
      session.check();
    } catch (e) {
      await session.release();
      throw toMemWalError(e, `opening store "${name}"`);
    }
    return new IndexedDbStoreHandle(session);
  }

  /** Deletes every record of store `name`. Rejects `Locked` while a writer holds it. */
  async destroyStore(name: string): Promise<void> {
    await WriterSession.whileHeld(name, () => deleteStoreRecords(name));
  }

  /** The origin's `navigator.storage` usage, quota and persistence. */
  estimate(): Promise<StorageEstimate> {
    return browserStorageEstimate();
  }
}

/** A table write's transaction may take TRANSACTION_LIMIT_MS plus 1 ms per KiB (a floor of about 1 MiB/s). */
const TABLE_WRITE_MIN_BYTES_PER_MS = 1024;

/** End offset of the chunk with key `key`. */
const chunkEnd = (key: WalChunkKey): number => key[2] + key[3];

/** A readwrite transaction that includes the `manifests` store (for the fencing check). */
type FencedTx = IDBPTransaction<MemwalDbSchema, ('manifests' | 'wal' | 'tables')[], 'readwrite'>;

class IndexedDbStoreHandle implements StoreHandle {
  private readonly store: string;
  /** The writer epoch of the newest manifest this handle committed (0: none yet); fences mutations. */
  private epoch = 0;

  constructor(private readonly session: WriterSession) {
    this.store = session.store;
    session.onEnd(onDatabaseClosed((reason) => session.lose(reason)));
  }

  async manifestLoad(): Promise<Manifest | undefined> {
    this.session.check();
    return loadManifest(this.store);
  }

  async manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    this.session.check();
    await commitManifest(this.store, expectedVersion, next);
    this.epoch = next.writerEpoch;
  }

  async walList(): Promise<WalSegmentInfo[]> {
    this.session.check();
    const keys = await inTransaction(['wal'], 'readonly', 'listing WAL segments', (tx) =>
      tx.objectStore('wal').getAllKeys(storeRange(this.store)),
    );
    const bytes = new Map<string, number>();
    for (const key of keys) bytes.set(key[1], Math.max(bytes.get(key[1]) ?? 0, chunkEnd(key)));
    const list: WalSegmentInfo[] = [];
    for (const [name, length] of bytes) {
      const parsed = parseSegmentName(name);
      if (parsed) list.push({ name, ...parsed, bytes: length });
    }
    return list;
  }

  async walRead(name: string, offset = 0): Promise<Uint8Array> {
    this.session.check();
    const chunks = await inTransaction(['wal'], 'readonly', `reading WAL segment ${name}`, async (tx) => {
      const wal = tx.objectStore('wal');
      // Two key lookups, whatever the segment's size: its last chunk (the length) and the last
      // chunk starting at or before `offset` (where the read begins).
      const last = await wal.openKeyCursor(fileRange(this.store, name), 'prev');
      if (!last) throw new MemWalError('IOError', `WAL segment ${name} does not exist`);
      const length = chunkEnd(last.key);
      if (!(Number.isSafeInteger(offset) && offset >= 0 && offset <= length)) {
        throw new MemWalError('IOError', `WAL segment ${name}: read offset ${offset} is outside 0..${length}`);
      }
      if (offset === length) return [];
      const first = await wal.openKeyCursor(IDBKeyRange.bound([this.store, name], [this.store, name, offset, []]), 'prev');
      if (!first) throw new MemWalError('Corruption', `WAL segment ${name}: no chunk holds offset ${offset}`);
      const values = await wal.getAll(IDBKeyRange.bound(first.key, [this.store, name, []]));
      values[0] = values[0]!.subarray(offset - first.key[2]);
      return values;
    });
    return ownBuffer(concatBytes(chunks));
  }

  async walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    const parsed = parseSegmentName(name);
    if (!parsed) throw new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`);
    this.session.check();
    const value = ownBuffer(bytes);
    await inTransaction(['manifests', 'wal'], 'readwrite', `WAL append to ${name}`, async (tx) => {
      checkSegmentEpoch(name, parsed.epoch, (await tx.objectStore('manifests').get(this.store))?.writerEpoch);
      const wal = tx.objectStore('wal');
      const last = await wal.openKeyCursor(fileRange(this.store, name), 'prev');
      const length = last ? chunkEnd(last.key) : 0;
      checkAppendOffset(name, offset, last ? length : undefined);
      await wal.put(value, [this.store, name, offset, value.length]);
    });
  }

  async walTruncate(name: string, length: number): Promise<void> {
    this.session.check();
    await inTransaction(['manifests', 'wal'], 'readwrite', `truncating WAL segment ${name}`, async (tx) => {
      await this.fence(tx, `WAL truncate of ${name}`);
      const wal = tx.objectStore('wal');
      const keys = await wal.getAllKeys(fileRange(this.store, name));
      const current = this.segmentLength(name, keys);
      if (!(Number.isSafeInteger(length) && length >= 0 && length <= current)) {
        throw new MemWalError('InvalidArgument', `WAL segment ${name}: cannot truncate ${current} bytes to ${length}`);
      }
      const straddling = keys.find((key) => key[2] < length && chunkEnd(key) > length);
      await wal.delete(fileRange(this.store, name, length));
      // An empty record keeps a segment cut to 0 bytes in existence, as in every other layout.
      if (length === 0) await wal.put(new Uint8Array(0), [this.store, name, 0, 0]);
      if (straddling) {
        const value = (await wal.get(straddling))!;
        await wal.delete(straddling);
        const kept = value.slice(0, length - straddling[2]);
        await wal.add(kept, [this.store, name, straddling[2], kept.length]);
      }
    });
  }

  async walRemove(name: string): Promise<void> {
    this.session.check();
    await inTransaction(['manifests', 'wal'], 'readwrite', `removing WAL segment ${name}`, async (tx) => {
      await this.fence(tx, `WAL remove of ${name}`);
      await tx.objectStore('wal').delete(fileRange(this.store, name));
    });
  }

  /** Collects `chunks` into ≤ 1 MiB records, then writes them all in one transaction. */
  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    this.session.check();
    const records: Uint8Array[] = [];
    let current = new Uint8Array(TABLE_CHUNK_BYTES);
    let used = 0;
    for await (const chunk of chunks) {
      for (let at = 0; at < chunk.length; ) {
        const n = Math.min(chunk.length - at, TABLE_CHUNK_BYTES - used);
        current.set(chunk.subarray(at, at + n), used);
        used += n;
        at += n;
        if (used === TABLE_CHUNK_BYTES) {
          records.push(current);
          current = new Uint8Array(TABLE_CHUNK_BYTES);
          used = 0;
        }
      }
    }
    if (used > 0 || records.length === 0) records.push(current.slice(0, used));
    this.session.check();
    const bytes = (records.length - 1) * TABLE_CHUNK_BYTES + records.at(-1)!.length;
    const context = `writing table file ${name}`;
    await inTransaction(
      ['manifests', 'tables'],
      'readwrite',
      context,
      async (tx) => {
        await this.fence(tx, context);
        const tables = tx.objectStore('tables');
        if ((await tables.count(fileRange(this.store, name))) > 0) {
          throw new MemWalError('IOError', `table file ${name} already exists`);
        }
        await Promise.all(records.map((record, i) => tables.add(record, [this.store, name, i])));
      },
      TRANSACTION_LIMIT_MS + bytes / TABLE_WRITE_MIN_BYTES_PER_MS,
    );
  }

  async tableRead(name: string): Promise<Uint8Array> {
    this.session.check();
    const records = await inTransaction(['tables'], 'readonly', `reading table file ${name}`, (tx) =>
      tx.objectStore('tables').getAll(fileRange(this.store, name)),
    );
    if (records.length === 0) throw new MemWalError('IOError', `table file ${name} does not exist`);
    return concatBytes(records);
  }

  /**
   * Reads only the records that overlap the range (every record but a file's last holds exactly
   * TABLE_CHUNK_BYTES, so the record of a byte is `floor(offset / TABLE_CHUNK_BYTES)`): a key
   * cursor finds the last record, one `getAll` fetches the overlapping ones.
   */
  async tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    checkRange(name, offset, length);
    this.session.check();
    const context = `reading table file ${name} at ${offset}`;
    return inTransaction(['tables'], 'readonly', context, async (tx) => {
      const tables = tx.objectStore('tables');
      const lastKey = (await tables.openKeyCursor(fileRange(this.store, name), 'prev'))?.key;
      if (!lastKey) throw new MemWalError('IOError', `table file ${name} does not exist`);
      const lastIndex = lastKey[2];
      const first = Math.min(Math.floor(offset / TABLE_CHUNK_BYTES), lastIndex);
      const last = Math.min(length === 0 ? first : Math.floor((offset + length - 1) / TABLE_CHUNK_BYTES), lastIndex);
      const records = await tables.getAll(IDBKeyRange.bound([this.store, name, first], [this.store, name, last]));
      if (records.length !== last - first + 1) {
        throw new MemWalError('IOError', `table file ${name}: chunks ${first}..${last} are incomplete (${records.length} found)`);
      }
      records.forEach((record, i) => {
        if (first + i < lastIndex && record.length !== TABLE_CHUNK_BYTES) {
          throw new MemWalError('IOError', `table file ${name}: chunk ${first + i} holds ${record.length} bytes, not ${TABLE_CHUNK_BYTES}`);
        }
      });
      // The file's size is known when its last record was read; otherwise the range ends before it.
      if (last === lastIndex) checkInside(name, offset, length, lastIndex * TABLE_CHUNK_BYTES + records.at(-1)!.length);
      const out = new Uint8Array(length);
      records.forEach((record, i) => {
        const start = (first + i) * TABLE_CHUNK_BYTES;
        const from = Math.max(offset, start);
        const to = Math.min(offset + length, start + record.length);
        if (to > from) out.set(record.subarray(from - start, to - start), from - offset);
      });
      return out;
    });
  }

  async tableList(): Promise<string[]> {
    this.session.check();
    const keys = await inTransaction(['tables'], 'readonly', 'listing table files', (tx) =>
      tx.objectStore('tables').getAllKeys(storeRange(this.store)),
    );
    return keys.filter((key) => key[2] === 0).map((key) => key[1]);
  }

  async tableRemove(name: string): Promise<void> {
    this.session.check();
    await inTransaction(['manifests', 'tables'], 'readwrite', `removing table file ${name}`, async (tx) => {
      await this.fence(tx, `table remove of ${name}`);
      await tx.objectStore('tables').delete(fileRange(this.store, name));
    });
  }

  release(): Promise<void> {
    return this.session.release();
  }

  /**
   * `Fenced` if the stored manifest's epoch is newer than the newest this handle committed. Called
   * inside the mutation's own transaction, so no claim can come between the check and the change.
   */
  private async fence(tx: Pick<FencedTx, 'objectStore'>, what: string): Promise<void> {
    checkEpoch(what, this.epoch, (await tx.objectStore('manifests').get(this.store))?.writerEpoch);
  }

  /** The length of segment `name` from its chunk keys; `IOError` when it has none. */
  private segmentLength(name: string, keys: WalChunkKey[]): number {
    const last = keys.at(-1);
    if (!last) throw new MemWalError('IOError', `WAL segment ${name} does not exist`);
    return chunkEnd(last);
  }
}
