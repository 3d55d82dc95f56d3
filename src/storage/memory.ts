// MemoryStorage: the reference StorageAdapter, kept in the process's memory. The readable model of
// what every backend must do (conformance cases in src/testing/conformance.ts); also the backend
// of `storage: 'memory'`. Runs in every runtime.

import { MemWalError, toMemWalError } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import { checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import { warnWhileWaiting } from './lock-wait.js';
import { clearTimer, setTimer, type Timer } from '../util/schedule.js';

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

/** A claim on the writer lock that has to wait for the current holder. */
interface Waiter {
  options: LockOptions;
  grant(session: MemorySession): void;
  cancel(): void;
}

/** Everything stored for one store name, plus its lock state. */
interface Store {
  manifest?: Manifest;
  wal: Map<string, Segment>;
  tables: Map<string, Uint8Array>;
  holder?: MemorySession;
  waiters: Waiter[];
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

  /**
   * Claim the writer lock of store `name` (in-process, FIFO). A free lock is taken at once. A
   * held one: `steal` takes it (the old handle's `onLost` gets `'stolen'` on a microtask; its
   * mutations fail `Fenced` once the new holder commits a newer epoch); `timeoutMs: 0` rejects
   * `Locked` at once; otherwise calls `onWaiting` once and waits (warning through `logger` while
   * it does), rejecting `Locked` after `timeoutMs` (undefined: never) or `Aborted` when `signal`
   * aborts. Rejects `InvalidArgument` for a negative `timeoutMs`.
   */
  openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const { timeoutMs, steal, onWaiting, signal } = options;
    if (timeoutMs !== undefined && !(timeoutMs >= 0)) {
      return Promise.reject(new MemWalError('InvalidArgument', `timeoutMs must be >= 0, got ${timeoutMs}`));
    }
    if (signal?.aborted) return Promise.reject(new MemWalError('Aborted', `opening store "${name}" was aborted`));
    const store = this.store(name);
    if (!store.holder) return Promise.resolve(grantLock(store, options));
    if (steal) {
      const old = store.holder;
      old.state = 'stolen';
      if (old.onLost) queueMicrotask(() => old.onLost?.('stolen'));
      return Promise.resolve(grantLock(store, options));
    }
    if (timeoutMs === 0) return Promise.reject(new MemWalError('Locked', `store "${name}" is locked by another writer`));
    try {
      onWaiting?.();
    } catch (e) {
      return Promise.reject(toMemWalError(e, 'onWaiting callback'));
    }
    return new Promise<StoreHandle>((resolve, reject) => {
      let timer: Timer | undefined;
      const stopWarning = warnWhileWaiting(name, options);
      const onAbort = (): void => {
        waiter.cancel();
        reject(new MemWalError('Aborted', `opening store "${name}" was aborted`));
      };
      const waiter: Waiter = {
        options,
        grant: (session) => {
          waiter.cancel();
          resolve(session);
        },
        cancel: () => {
          stopWarning();
          if (timer !== undefined) clearTimer(timer);
          signal?.removeEventListener('abort', onAbort);
          const i = store.waiters.indexOf(waiter);
          if (i >= 0) store.waiters.splice(i, 1);
        },
      };
      store.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) {
        timer = setTimer(() => {
          waiter.cancel();
          reject(new MemWalError('Locked', `store "${name}" is still locked after ${timeoutMs} ms`));
        }, timeoutMs);
      }
    });
  }

  /** Delete every record of store `name`. Rejects `Locked` while a handle holds its lock. */
  destroyStore(name: string): Promise<void> {
    return settle(() => {
      const store = this.stores.get(name);
      if (store?.holder) throw new MemWalError('Locked', `store "${name}" is open; release it before destroying it`);
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
      store = { wal: new Map(), tables: new Map(), waiters: [] };
      this.stores.set(name, store);
    }
    return store;
  }
}

/** Makes a new session the holder of `store`'s lock. */
function grantLock(store: Store, options: LockOptions): MemorySession {
  const session = new MemorySession(store, options.onLost);
  store.holder = session;
  return session;
}

/** Frees the lock of `store` if `session` holds it, handing it to the first waiter in line. */
function releaseLock(store: Store, session: MemorySession): void {
  if (store.holder !== session) return;
  store.holder = undefined;
  const next = store.waiters.shift();
  if (next) next.grant(grantLock(store, next.options));
}

/**
 * One holder of a store's writer lock. Fencing is by epoch, as in every adapter: a mutation of a
 * handle whose epoch (that of the newest manifest it committed) is older than the stored
 * manifest's fails `Fenced` and changes nothing, checked in the same synchronous step as the
 * mutation. A stolen handle is not cut off otherwise, so it models a writer whose lock was taken
 * over while it still runs (a process presumed dead, a frozen tab): only the epoch stops it.
 */
class MemorySession implements StoreHandle {
  state: 'open' | 'released' | 'stolen' = 'open';
  /** The writer epoch of the newest manifest this handle committed (0: none yet). */
  private epoch = 0;

  constructor(
    private readonly store: Store,
    readonly onLost: ((reason: string) => void) | undefined,
  ) {}

  manifestLoad(): Promise<Manifest | undefined> {
    return this.op(() => (this.store.manifest ? structuredClone(this.store.manifest) : undefined));
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    return this.op(() => {
      if (next.version !== expectedVersion + 1) {
        throw new MemWalError('InvalidArgument', `manifest version ${next.version} does not follow expected version ${expectedVersion}`);
      }
      const stored = this.store.manifest;
      const storedVersion = stored?.version ?? 0;
      if (stored && stored.writerEpoch > next.writerEpoch) {
        throw new MemWalError('Fenced', `writer epoch ${next.writerEpoch} is fenced by epoch ${stored.writerEpoch}`);
      }
      if (storedVersion !== expectedVersion) {
        throw new MemWalError('IOError', `manifest commit conflict: expected version ${expectedVersion}, stored ${storedVersion}`);
      }
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
      const epoch = this.store.manifest?.writerEpoch ?? 0;
      if (epoch > parsed.epoch) {
        throw new MemWalError('Fenced', `WAL segment ${name} belongs to epoch ${parsed.epoch}, fenced by epoch ${epoch}`);
      }
      const seg = this.store.wal.get(name);
      const length = seg?.length ?? 0;
      if (offset !== length) {
        throw new MemWalError(
          'IOError',
          `WAL segment ${name}: append at offset ${offset}, but its length is ${seg ? length : 'none (missing)'}`,
        );
      }
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
    if (this.state === 'open') releaseLock(this.store, this);
    this.state = 'released';
    return Promise.resolve();
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
    const stored = this.store.manifest?.writerEpoch ?? 0;
    if (stored > this.epoch) throw new MemWalError('Fenced', `${what}: writer epoch ${this.epoch} is fenced by epoch ${stored}`);
  }

  /** Runs `work` unless this handle was released (`Closed`). */
  private op<T>(work: () => T): Promise<T> {
    return settle(() => {
      if (this.state === 'released') throw new MemWalError('Closed', 'store handle was released');
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
