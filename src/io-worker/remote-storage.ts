// RemoteStorage: a StorageAdapter whose calls run in a second worker, the store's I/O worker
// (io-host.ts), so that synchronous OPFS I/O, table encoding, CRCs and compaction never
// block the engine's thread, which then only admits, inserts and answers stats (docs/impl.md §11).
// Its stores are placed on the remote I/O plane (`RemotePlane`, lsm/io-plane.ts): WAL entries are
// framed there, tables built and kept there and written there.
// Bytes cross as transferred copies; the caller's buffers are never detached. Table reads of the
// OPFS layout are served from the engine thread's own read-only handles where it can open them.
// Browser contexts.

import type { BackgroundJobs, CompactJob, FlushJob, JobTable } from '../lsm/jobs.js';
import { type IoPlane, type JobsStore, type PlacedStore, placeStorage } from '../lsm/io-plane.js';
import type { StoreSchema } from '../data/schema.js';
import { encodeSchema } from '../data/schema.js';
import { MemWalError, errorFromWire } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from '../storage/adapter.js';
import { checkRange, tableChunks } from '../storage/adapter.js';
import { opfsTableOpener, readOnlySyncHandlesAvailable, type SyncAccessHandle } from '../storage/opfs-files.js';
import { readTableRange, readWholeTable, TableReaders } from '../storage/opfs-readers.js';
import {
  type IoApi,
  type IoEvent,
  type IoOp,
  type IoReply,
  type IoRequest,
  type IoResult,
  transferables,
  type WireBuiltTable,
  type WireSchemaVersions,
  type WireStoreSchema,
} from './io-protocol.js';
import { clearTimer, setTimer, type Timer } from '../util/schedule.js';

/** What RemoteStorage needs of the I/O worker: a Worker or a MessagePort. */
export interface IoEndpoint {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  addEventListener(type: 'error', listener: (ev: Event) => void): void;
  terminate?(): void;
  /**
   * Called once, before the first request that builds or writes a table file: an endpoint that
   * starts helpers of the I/O worker only when tables are written starts them here (the OPFS table
   * writer thread, io-worker/browser.ts), not at open, where they would compete with it.
   */
  tablesAhead?(): void;
}

/** The requests after which the I/O worker may write a table file (`IoEndpoint.tablesAhead`). */
const TABLE_OPS: ReadonlySet<IoOp> = new Set<IoOp>(['buildFlush', 'compactOpen', 'tableWriteOpen', 'tableWriteBuilt']);

/**
 * How long a started I/O worker may take to send its first message (a reply, or the event that
 * the store's lock is busy): one that sends none has failed to start, or runs a script that does
 * not serve memwal, and every call waiting on it would wait for ever.
 */
export const IO_WORKER_START_LIMIT_MS = 30_000;

/** A copy of `bytes` that owns its buffer (transferable without detaching the caller's). */
const own = (bytes: Uint8Array): Uint8Array => bytes.slice();

/** `bytes` itself where it spans its whole buffer (transferred, detaching the caller's), else a copy. */
const takeOver = (bytes: Uint8Array): Uint8Array =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();

/**
 * Opens read-only handles on store `store`'s table files from the engine's thread, in the files
 * its I/O worker writes (`opfsTableOpener`).
 */
export type LocalTableOpener = (store: string) => (name: string) => Promise<SyncAccessHandle>;

/** The OPFS layout's opener where this context has read-only sync access handles, else none. */
function defaultLocalTables(layout: string): LocalTableOpener | undefined {
  return layout === 'opfs' && readOnlySyncHandlesAvailable() ? opfsTableOpener : undefined;
}

/** The proxy adapter. One I/O worker per RemoteStorage, started on first use. */
export class RemoteStorage implements StorageAdapter {
  private endpoint: IoEndpoint | undefined;
  private nextId = 1;
  private nextOpen = 1;
  private dead: MemWalError | undefined;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: MemWalError) => void }>();
  private readonly waiting = new Map<number, () => void>();
  private readonly lost = new Map<number, (reason: string) => void>();
  /** Set while the started I/O worker has sent nothing yet: it dies when this fires. */
  private startTimer: Timer | undefined;
  /** Set once the endpoint was told that tables are coming (`IoEndpoint.tablesAhead`). */
  private tablesAhead = false;

  /**
   * `layout`: what the I/O worker stores with (`'opfs'` or `'indexeddb'`); `spawn` starts it.
   * `logger` gets the I/O worker's warnings. `localTables`: how this thread reads table files
   * itself (default: the OPFS layout's files where this context can open read-only sync access
   * handles; none: every read goes to the I/O worker). `startLimitMs`: how long the I/O worker
   * may take to send its first message before it is taken for dead (`IOError`).
   */
  constructor(
    readonly layout: string,
    private readonly spawn: () => IoEndpoint,
    private readonly logger: { warn(message: string): void } = console,
    private readonly localTables: LocalTableOpener | undefined = defaultLocalTables(layout),
    private readonly startLimitMs = IO_WORKER_START_LIMIT_MS,
  ) {
    placeStorage(this, { openStore: (name, options) => this.openPlaced(name, options) });
  }

  /** `openStore`, with the store's plane: the remote one, over the handle's id in the I/O worker. */
  async openPlaced(name: string, options: LockOptions = {}): Promise<PlacedStore> {
    const handle = await this.open(name, options);
    return { handle, plane: new RemotePlane(this, handle) };
  }

  openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    return this.open(name, options);
  }

  private async open(name: string, options: LockOptions): Promise<RemoteHandle> {
    const open = this.nextOpen++;
    if (options.onWaiting) this.waiting.set(open, options.onWaiting);
    const onAbort = (): void => void this.send('abortOpen', open).catch(() => undefined);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (options.signal?.aborted) throw new MemWalError('Aborted', `opening store "${name}" was aborted`);
      const handle = await this.send('openStore', open, name, { timeoutMs: options.timeoutMs, steal: options.steal });
      const remote = new RemoteHandle(this, handle, this.localTables?.(name));
      this.lost.set(handle, (reason) => {
        remote.closeLocalReaders(); // so that the store's next writer can remove or compact those files
        options.onLost?.(reason);
      });
      return remote;
    } finally {
      this.waiting.delete(open);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  destroyStore(name: string): Promise<void> {
    return this.send('destroyStore', name);
  }

  estimate(name: string): Promise<StorageEstimate> {
    return this.send('estimate', name);
  }

  /** Call method `op` of the I/O worker (io-host.ts); resolves its result. `IOError` when the I/O worker died. */
  send<K extends IoOp>(op: K, ...args: Parameters<IoApi[K]>): Promise<IoResult<K>> {
    if (this.dead) return Promise.reject(this.dead);
    const endpoint = this.connect();
    if (!this.tablesAhead && TABLE_OPS.has(op)) {
      this.tablesAhead = true;
      endpoint.tablesAhead?.();
    }
    const id = this.nextId++;
    return new Promise<IoResult<K>>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      const request: IoRequest<K> = { id, op, args };
      try {
        endpoint.postMessage(request, transferables(args));
      } catch (e) {
        this.pending.delete(id);
        reject(new MemWalError('IOError', `I/O worker request ${op} could not be sent: ${String(e)}`));
      }
    });
  }

  forget(handle: number): void {
    this.lost.delete(handle);
  }

  private connect(): IoEndpoint {
    if (this.endpoint) return this.endpoint;
    const endpoint = this.spawn();
    endpoint.addEventListener('message', (ev: MessageEvent) => this.receive(ev.data as IoReply | IoEvent));
    endpoint.addEventListener('error', (ev: Event) => {
      const what = (ev as ErrorEvent).message ?? 'it failed to load or threw';
      this.die(new MemWalError('IOError', `the store's I/O worker died (${what})`));
    });
    this.endpoint = endpoint;
    this.startTimer = setTimer(() => {
      this.startTimer = undefined;
      this.die(new MemWalError('IOError', `the store's I/O worker sent nothing within ${this.startLimitMs} ms (it did not start)`));
    }, this.startLimitMs);
    return endpoint;
  }

  private receive(msg: IoReply | IoEvent): void {
    if (this.startTimer !== undefined) {
      clearTimer(this.startTimer);
      this.startTimer = undefined;
    }
    if ('event' in msg) {
      if (msg.event === 'lost') this.lost.get(msg.handle)?.(msg.reason);
      else if (msg.event === 'waiting') this.waiting.get(msg.open)?.();
      else this.logger.warn(msg.message);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else p.reject(errorFromWire(msg.error));
  }

  /** The I/O worker is gone: every call fails, every store loses its lock (it was held there). */
  private die(err: MemWalError): void {
    if (this.dead) return;
    this.dead = err;
    if (this.startTimer !== undefined) clearTimer(this.startTimer);
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const onLost of this.lost.values()) onLost(err.message);
    this.lost.clear();
  }
}

/**
 * One open store, in the I/O worker. Table reads run on this thread's own read-only handles when
 * it has an opener (docs/impl.md §11): a file is removed only after this thread's handle on it is
 * closed, every handle is closed on release and when the store is lost, and a read that cannot be
 * served here (the handle did not open, the file is being removed, the handles were closed) goes
 * to the I/O worker, which answers it as it answered every read before.
 */
class RemoteHandle implements StoreHandle {
  /** This thread's read-only handles on the store's table files (none: every read goes to the I/O worker). */
  private readonly local: TableReaders | undefined;
  /** Files read through the I/O worker only: removed (or being removed), or not opened here. */
  private readonly remoteOnly = new Set<string>();

  constructor(
    readonly remote: RemoteStorage,
    readonly id: number,
    openLocal?: (name: string) => Promise<SyncAccessHandle>,
  ) {
    this.local =
      openLocal &&
      new TableReaders(async (name) => {
        try {
          return await openLocal(name);
        } catch (e) {
          this.remoteOnly.add(name);
          throw e;
        }
      });
  }

  manifestLoad(): Promise<Manifest | undefined> {
    return this.remote.send('manifestLoad', this.id);
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    return this.remote.send('manifestCommit', this.id, expectedVersion, next);
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.remote.send('walList', this.id);
  }

  walRead(name: string, offset?: number): Promise<Uint8Array> {
    return this.remote.send('walRead', this.id, name, offset);
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.remote.send('walAppend', this.id, name, offset, own(bytes));
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.remote.send('walTruncate', this.id, name, length);
  }

  walRemove(name: string): Promise<void> {
    return this.remote.send('walRemove', this.id, name);
  }

  /** Streams the chunks (each a transferred copy); the I/O worker writes them as they come. */
  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    const stream = await this.remote.send('tableWriteOpen', this.id, name);
    try {
      for await (const chunk of chunks) await this.remote.send('tableWriteChunk', this.id, stream, own(chunk));
    } catch (e) {
      await this.remote.send('tableWriteAbort', this.id, stream).catch(() => undefined);
      throw e;
    }
    await this.remote.send('tableWriteClose', this.id, stream);
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.readTable(
      name,
      (sync) => readWholeTable(sync, name),
      () => this.remote.send('tableRead', this.id, name),
    );
  }

  async tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    checkRange(name, offset, length);
    return this.readTable(
      name,
      (sync) => readTableRange(sync, name, offset, length),
      () => this.remote.send('tableReadRange', this.id, name, offset, length),
    );
  }

  tableList(): Promise<string[]> {
    return this.remote.send('tableList', this.id);
  }

  /** Closes this thread's handle on `name` first (an open handle would make the removal fail). */
  async tableRemove(name: string): Promise<void> {
    this.remoteOnly.add(name);
    await this.local?.close(name);
    return this.remote.send('tableRemove', this.id, name);
  }

  async release(): Promise<void> {
    this.closeLocalReaders();
    this.remote.forget(this.id);
    await this.remote.send('release', this.id).catch(() => undefined);
  }

  /** Closes every handle this thread keeps on the store's files (and any still opening); later reads go to the I/O worker. */
  closeLocalReaders(): void {
    this.local?.closeAll();
  }

  /** `read` on this thread's handle of `name`, or else `remote` (the I/O worker). */
  private async readTable<T>(name: string, read: (sync: SyncAccessHandle) => T, remote: () => Promise<T>): Promise<T> {
    if (this.local && !this.remoteOnly.has(name)) {
      try {
        return await this.local.read(name, read);
      } catch {
        // Not served here: the I/O worker answers, with the bytes or the error it always gave.
      }
    }
    return remote();
  }
}

/**
 * The remote plane of one store: WAL entries are framed and appended in the I/O worker (the
 * payload transferred, its CRC-32C sent along), and the store's jobs run there.
 */
class RemotePlane implements IoPlane {
  constructor(
    private readonly remote: RemoteStorage,
    private readonly handle: RemoteHandle,
  ) {}

  appendEntry(name: string, offset: number, epoch: number, position: number, payload: Uint8Array, payloadCrc?: number): Promise<number> {
    return this.remote.send('walAppendEntry', this.handle.id, name, offset, epoch, position, takeOver(payload), payloadCrc); // the caller gave it up
  }

  writeTable(name: string, bytes: Uint8Array): Promise<void> {
    return this.handle.tableWrite(name, tableChunks(bytes));
  }

  /** From now on the I/O worker keeps the WAL payloads appended on this store until a flush builds them, so a flush does not read them back. */
  jobs(store: JobsStore): BackgroundJobs {
    void this.remote.send('keepPayloads', this.handle.id).catch(() => undefined); // before any append it sends later
    return new RemoteJobs(this.remote, this.handle.id, store.schema, { versions: store.versions, currentVersion: store.currentVersion });
  }
}

/**
 * Jobs run by the I/O worker: it reads the rows next to its files and keeps the tables it builds,
 * handing back what the manifest records of each (`remoteTable`).
 */
class RemoteJobs implements BackgroundJobs {
  private readonly schema: WireStoreSchema;

  constructor(
    private readonly remote: RemoteStorage,
    private readonly handle: number,
    schema: StoreSchema,
    private readonly versions: WireSchemaVersions,
  ) {
    this.schema = { schema: encodeSchema(schema.base), primaryKey: schema.primaryKey };
    if (schema.indexes && schema.indexes.length > 0) this.schema.indexes = [...schema.indexes];
  }

  async buildFlush(job: FlushJob): Promise<JobTable> {
    const { generation, firstPosition, lastPosition, segments } = job;
    const wire = { generation, firstPosition, lastPosition, segments };
    return remoteTable(this.remote, this.handle, await this.remote.send('buildFlush', this.handle, this.schema, wire, this.versions));
  }

  async *compactionOutputs(job: CompactJob, signal: AbortSignal | undefined): AsyncGenerator<JobTable> {
    const id = await this.remote.send('compactOpen', this.handle, this.schema, job, this.versions);
    try {
      for (;;) {
        if (signal?.aborted) throw new MemWalError('Aborted', 'compaction stopped: the store is closing');
        const out = await this.remote.send('compactNext', this.handle, id);
        if (!out) return;
        yield remoteTable(this.remote, this.handle, out);
      }
    } finally {
      await this.remote.send('compactClose', this.handle, id).catch(() => undefined);
    }
  }
}

/**
 * A table the I/O worker built and keeps for store handle `handle`: written there, where it is
 * (its bytes never cross to the engine's thread), and released there either way.
 */
function remoteTable(remote: RemoteStorage, handle: number, table: WireBuiltTable): JobTable {
  const { id, ...meta } = table;
  let kept = true;
  return {
    ...meta,
    async write(name: string): Promise<void> {
      if (!kept) throw new MemWalError('IOError', `table file ${name}: its built bytes were already written or released`);
      kept = false;
      return remote.send('tableWriteBuilt', handle, id, name);
    },
    release(): void {
      if (!kept) return;
      kept = false;
      void remote.send('builtRelease', handle, id).catch(() => undefined);
    },
  };
}
