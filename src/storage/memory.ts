// MemoryStorage: the reference StorageAdapter, kept in the process's memory. The readable model of
// what every backend must do (conformance cases in src/testing/conformance.ts); also the backend
// of `storage: 'memory'`. Runs in every runtime.

import { MemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { checkAppendOffset, checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import { decideManifestCommit, checkEpoch, checkManifestSuccessor, checkSegmentEpoch } from './fencing.js';
import { claimLock, type HeldLock, InProcessLocks } from './lock-table.js';

/** A WAL segment (or a table file being assembled): bytes that grow by doubling. */
class Segment {
  private buf = new Uint8Array(0);
  length = 0;

  append(bytes: Uint8Array): void {
    const needed = this.length + bytes.length;
    if (needed > this.buf.length) {
      const grown = new Uint8Array(Math.max(needed, this.buf.length * 2, 64));
      grown.set(this.buf.subarray(0, this.length));
      this.buf = grown;
    }
    this.buf.set(bytes, this.length);
    this.length = needed;
  }

  /** A copy of the bytes from `offset` to the end. */
  read(offset: number): Uint8Array {
    return this.buf.slice(offset, this.length);
  }

  truncate(length: number): void {
    this.length = length;
  }
}

/** Everything stored for one store name. */
interface Store {
  manifest?: Manifest;
  wal: Map<string, Segment>;
  tables: Map<string, Uint8Array>;
}

/** Runs `work` now and reports its outcome on a microtask, as an async backend would. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * Stores in memory, one in-process writer lock per store. Every operation does its work
 * synchronously when called and resolves on a microtask. Bytes are copied on write and on read,
 * so callers may transfer or reuse their buffers. Runs in every runtime; nothing survives the
 * process (use `sharedMemoryStorage()` so a reopen in the same process finds the data).
 */
export class MemoryStorage implements StorageAdapter {
  readonly layout = 'memory';
  private readonly stores = new Map<string, Store>();
  /** The writer locks of this adapter's stores, by store name. */
  private readonly locks = new InProcessLocks();

  /**
   * Claim the writer lock of store `name` (in-process, FIFO: lock-table.ts). A free lock is taken
   * at once. A held one: `steal` takes it (the old handle's `onLost` gets `'stolen'`; its
   * mutations fail `Fenced` once the new holder commits a newer epoch); `timeoutMs: 0` rejects
   * `Locked` at once; otherwise calls `onWaiting` once and waits (warning through `logger` while
   * it does), rejecting `Locked` after `timeoutMs` (undefined: never) or `Aborted` when `signal`
   * aborts. Rejects `InvalidArgument` for a negative `timeoutMs`.
   */
  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const onLost = options.onLost;
    const lock = await claimLock(this.locks, name, options, (reason) => onLost?.(reason), { lock: name });
    return new MemorySession(this.store(name), lock);
  }

  /** Delete every record of store `name`. Rejects `Locked` while a handle holds its lock. */
  destroyStore(name: string): Promise<void> {
    return settle(() => {
      const store = this.stores.get(name);
      if (store && this.locks.held(name)) throw new MemWalError('Locked', `store "${name}" is open; release it before destroying it`);
      this.stores.delete(name);
    });
  }

  /**
   * `usageBytes`: the bytes of store `name`'s WAL segments and table files plus its manifest as
   * JSON (what a file adapter would write); 0 for a store that does not exist. No quota.
   */
  estimate(name: string): Promise<StorageEstimate> {
    const store = this.stores.get(name);
    let usageBytes = 0;
    if (store) {
      for (const seg of store.wal.values()) usageBytes += seg.length;
      for (const table of store.tables.values()) usageBytes += table.length;
      if (store.manifest) usageBytes += new TextEncoder().encode(JSON.stringify(store.manifest)).length;
    }
    return Promise.resolve({ usageBytes });
  }

  private store(name: string): Store {
    let store = this.stores.get(name);
    if (!store) {
      store = { wal: new Map(), tables: new Map() };
      this.stores.set(name, store);
    }
    return store;
  }
}

/**
 * One holder of a store's writer lock. Fencing is by epoch, as in every adapter: a mutation of a
 * handle whose epoch (that of the newest manifest it committed) is older than the stored
 * manifest's fails `Fenced` and changes nothing, checked in the same synchronous step as the
 * mutation. A stolen handle is not cut off otherwise, so it models a writer whose lock was taken
 * over while it still runs (a process presumed dead, a frozen tab): only the epoch stops it.
 */
class MemorySession implements StoreHandle {
  private released = false;
  /** The writer epoch of the newest manifest this handle committed (0: none yet). */
  private epoch = 0;

  constructor(
    private readonly store: Store,
    private readonly lock: HeldLock,
  ) {}

  manifestLoad(): Promise<Manifest | undefined> {
    return this.op(() => (this.store.manifest ? structuredClone(this.store.manifest) : undefined));
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    return this.op(() => {
      checkManifestSuccessor(expectedVersion, next);
      decideManifestCommit(expectedVersion, next, this.store.manifest);
      this.store.manifest = structuredClone(next);
      this.epoch = next.writerEpoch;
    });
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.op(() => {
      const list: WalSegmentInfo[] = [];
      for (const [name, seg] of this.store.wal) {
        const parsed = parseSegmentName(name);
        if (parsed) list.push({ name, ...parsed, bytes: seg.length });
      }
      return list;
    });
  }

  walRead(name: string, offset = 0): Promise<Uint8Array> {
    return this.op(() => {
      const seg = this.segment(name);
      if (!(offset >= 0 && offset <= seg.length)) {
        throw new MemWalError('IOError', `WAL segment ${name}: read offset ${offset} is outside 0..${seg.length}`);
      }
      return seg.read(offset);
    });
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.op(() => {
      const parsed = parseSegmentName(name);
      if (!parsed) throw new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`);
      checkSegmentEpoch(name, parsed.epoch, this.store.manifest?.writerEpoch);
      const seg = this.store.wal.get(name);
      checkAppendOffset(name, offset, seg?.length);
      if (seg) seg.append(bytes);
      else {
        const created = new Segment();
        created.append(bytes);
        this.store.wal.set(name, created);
      }
    });
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.op(() => {
      this.fence(`WAL truncate of ${name}`);
      const seg = this.segment(name);
      if (!(Number.isSafeInteger(length) && length >= 0 && length <= seg.length)) {
        throw new MemWalError('InvalidArgument', `WAL segment ${name}: cannot truncate ${seg.length} bytes to ${length}`);
      }
      seg.truncate(length);
    });
  }

  walRemove(name: string): Promise<void> {
    return this.op(() => {
      this.fence(`WAL remove of ${name}`);
      this.store.wal.delete(name);
    });
  }

  tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    if (!(Symbol.iterator in chunks)) return this.tableWriteAsync(name, chunks);
    return this.op(() => {
      this.checkNewTable(name);
      const file = new Segment();
      for (const chunk of chunks) file.append(chunk);
      this.putTable(name, file);
    });
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.op(() => {
      const table = this.store.tables.get(name);
      if (!table) throw new MemWalError('IOError', `table file ${name} does not exist`);
      return table.slice();
    });
  }

  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    return this.op(() => {
      checkRange(name, offset, length);
      const table = this.store.tables.get(name);
      if (!table) throw new MemWalError('IOError', `table file ${name} does not exist`);
      checkInside(name, offset, length, table.length);
      return table.slice(offset, offset + length);
    });
  }

  tableList(): Promise<string[]> {
    return this.op(() => [...this.store.tables.keys()]);
  }

  tableRemove(name: string): Promise<void> {
    return this.op(() => {
      this.fence(`table remove of ${name}`);
      this.store.tables.delete(name);
    });
  }

  release(): Promise<void> {
    this.released = true;
    return this.lock.release();
  }

  /** Collects an async iterable, checking before and after, then stores it at once. */
  private async tableWriteAsync(name: string, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    await this.op(() => {
      this.fence(`table write of ${name}`);
      this.checkNewTable(name);
    });
    const file = new Segment();
    for await (const chunk of chunks) file.append(chunk);
    await this.op(() => this.putTable(name, file));
  }

  private putTable(name: string, file: Segment): void {
    this.fence(`table write of ${name}`);
    this.checkNewTable(name);
    this.store.tables.set(name, file.read(0));
  }

  private checkNewTable(name: string): void {
    if (this.store.tables.has(name)) throw new MemWalError('IOError', `table file ${name} already exists`);
  }

  private segment(name: string): Segment {
    const seg = this.store.wal.get(name);
    if (!seg) throw new MemWalError('IOError', `WAL segment ${name} does not exist`);
    return seg;
  }

  /** `Fenced` if a newer writer epoch than this handle's has been committed. */
  private fence(what: string): void {
    checkEpoch(what, this.epoch, this.store.manifest?.writerEpoch);
  }

  /** Runs `work` unless this handle was released (`Closed`). */
  private op<T>(work: () => T): Promise<T> {
    return settle(() => {
      if (this.released) throw new MemWalError('Closed', 'store handle was released');
      return work();
    });
  }
}

let shared: MemoryStorage | undefined;

/**
 * The process-wide MemoryStorage behind `storage: 'memory'`, so a reopen in the same process
 * (or worker) finds the data. Runs in every runtime.
 */
export function sharedMemoryStorage(): MemoryStorage {
  shared ??= new MemoryStorage();
  return shared;
}
