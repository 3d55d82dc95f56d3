// RemoteStorage: a StorageAdapter whose calls run in a second worker, the store's I/O worker
// (storage/remote-host.ts), so that synchronous OPFS I/O, table encoding, CRCs and compaction never
// block the engine's thread, which then only admits, inserts and answers stats (docs/impl.md §11).
// Bytes cross as transferred copies; the caller's buffers are never detached. Browser contexts.

import type { BackgroundJobs, CompactJob, FlushJob, JobsPlace } from '../lsm/jobs.js';
import type { StoreSchema } from '../data/schema.js';
import { encodeSchema } from '../data/schema.js';
import { MemWalError, errorFromWire } from '../util/errors.js';
import type { Manifest, SchemaVersion } from '../format/manifest/manifest.js';
import type { BuiltTable } from '../format/table/writer.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from '../storage/adapter.js';
import { type IoEvent, type IoReply, type IoRequest, transferables, type WireBuiltTable, type WireSchemaVersions } from './io-protocol.js';

/** What RemoteStorage needs of the I/O worker: a Worker or a MessagePort. */
export interface IoEndpoint {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  addEventListener(type: 'error', listener: (ev: Event) => void): void;
  terminate?(): void;
}

/** A copy of `bytes` that owns its buffer (transferable without detaching the caller's). */
const own = (bytes: Uint8Array): Uint8Array => bytes.slice();

/** `bytes` itself where it spans its whole buffer (transferred, detaching the caller's), else a copy. */
const takeOver = (bytes: Uint8Array): Uint8Array =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();

/** The proxy adapter. One I/O worker per RemoteStorage, started on first use. */
export class RemoteStorage implements StorageAdapter, JobsPlace {
  private endpoint: IoEndpoint | undefined;
  private nextId = 1;
  private dead: MemWalError | undefined;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: MemWalError) => void }>();
  private readonly waiting = new Map<number, () => void>();
  private readonly lost = new Map<number, (reason: string) => void>();

  /**
   * `layout`: what the I/O worker stores with (`'opfs'` or `'indexeddb'`); `spawn` starts it.
   * `logger` gets the I/O worker's warnings.
   */
  constructor(
    readonly layout: string,
    private readonly spawn: () => IoEndpoint,
    private readonly logger: { warn(message: string): void } = console,
  ) {}

  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const id = this.nextId;
    if (options.onWaiting) this.waiting.set(id, options.onWaiting);
    const onAbort = (): void => void this.send('abortOpen', [id]).catch(() => undefined);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (options.signal?.aborted) throw new MemWalError('Aborted', `opening store "${name}" was aborted`);
      const handle = (await this.send('openStore', [name, { timeoutMs: options.timeoutMs, steal: options.steal }])) as number;
      if (options.onLost) this.lost.set(handle, options.onLost);
      return new RemoteHandle(this, handle);
    } finally {
      this.waiting.delete(id);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  destroyStore(name: string): Promise<void> {
    return this.send('destroyStore', [name]) as Promise<void>;
  }

  estimate(name: string): Promise<StorageEstimate> {
    return this.send('estimate', [name]) as Promise<StorageEstimate>;
  }

  /**
   * The jobs of a store opened through this adapter (`handle`, or a wrapper's handle around it)
   * run in the I/O worker, next to its files.
   */
  backgroundJobs(handle: StoreHandle, schema: StoreSchema, versions: SchemaVersion[], currentVersion: number): BackgroundJobs | undefined {
    let own: StoreHandle | undefined = handle;
    while (own && !(own instanceof RemoteHandle)) own = own.inner;
    return own ? new RemoteJobs(this, own.id, schema, { versions, currentVersion }) : undefined;
  }

  /** Send a request; resolves its reply. `IOError` when the I/O worker died. */
  send(op: string, args: unknown[], handle?: number): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    const endpoint = this.connect();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request: IoRequest = { id, op, args };
      if (handle !== undefined) request.handle = handle;
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
    return endpoint;
  }

  private receive(msg: IoReply | IoEvent): void {
    if ('event' in msg) {
      if (msg.event === 'lost') this.lost.get(msg.handle)?.(msg.reason);
      else if (msg.event === 'waiting') this.waiting.get(msg.request)?.();
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
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const onLost of this.lost.values()) onLost(err.message);
    this.lost.clear();
  }
}

/** One open store, in the I/O worker. */
class RemoteHandle implements StoreHandle {
  constructor(
    private readonly remote: RemoteStorage,
    readonly id: number,
  ) {}

  private call<T>(op: string, ...args: unknown[]): Promise<T> {
    return this.remote.send(op, args, this.id) as Promise<T>;
  }

  manifestLoad(): Promise<Manifest | undefined> {
    return this.call('manifestLoad');
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    return this.call('manifestCommit', expectedVersion, next);
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.call('walList');
  }

  walRead(name: string, offset?: number): Promise<Uint8Array> {
    return this.call('walRead', name, offset);
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.call('walAppend', name, offset, own(bytes));
  }

  walAppendEntry(name: string, offset: number, epoch: number, position: number, payload: Uint8Array): Promise<number> {
    return this.call('walAppendEntry', name, offset, epoch, position, takeOver(payload)); // the caller gave it up
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.call('walTruncate', name, length);
  }

  walRemove(name: string): Promise<void> {
    return this.call('walRemove', name);
  }

  /** Streams the chunks (each a transferred copy); the I/O worker writes them as they come. */
  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    const stream = await this.call<number>('tableWriteOpen', name);
    try {
      for await (const chunk of chunks) await this.call('tableWriteChunk', stream, own(chunk));
    } catch (e) {
      await this.call('tableWriteAbort', stream).catch(() => undefined);
      throw e;
    }
    await this.call('tableWriteClose', stream);
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.call('tableRead', name);
  }

  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    return this.call('tableReadRange', name, offset, length);
  }

  tableList(): Promise<string[]> {
    return this.call('tableList');
  }

  tableRemove(name: string): Promise<void> {
    return this.call('tableRemove', name);
  }

  async release(): Promise<void> {
    this.remote.forget(this.id);
    await this.call('release').catch(() => undefined);
  }
}

/** Jobs run by the I/O worker: it reads the rows next to its files and hands back built bytes. */
class RemoteJobs implements BackgroundJobs {
  private readonly schemaB64: string;

  constructor(
    private readonly remote: RemoteStorage,
    private readonly handle: number,
    private readonly schema: StoreSchema,
    private readonly versions: WireSchemaVersions,
  ) {
    this.schemaB64 = encodeSchema(schema.base);
  }

  private call<T>(op: string, ...args: unknown[]): Promise<T> {
    return this.remote.send(op, args, this.handle) as Promise<T>;
  }

  async buildFlush(job: FlushJob): Promise<BuiltTable> {
    const { generation, firstPosition, lastPosition, segments } = job;
    const request = { generation, firstPosition, lastPosition, segments };
    return fromWire(await this.call<WireBuiltTable>('buildFlush', this.schemaB64, this.schema.primaryKey, request, this.versions));
  }

  async *compactionOutputs(job: CompactJob, signal: AbortSignal | undefined): AsyncGenerator<BuiltTable> {
    const id = await this.call<number>('compactOpen', this.schemaB64, this.schema.primaryKey, job, this.versions);
    try {
      for (;;) {
        if (signal?.aborted) throw new MemWalError('Aborted', 'compaction stopped: the store is closing');
        const out = await this.call<WireBuiltTable | null>('compactNext', id);
        if (!out) return;
        yield fromWire(out);
      }
    } finally {
      await this.call('compactClose', id).catch(() => undefined);
    }
  }
}

function fromWire(w: WireBuiltTable): BuiltTable {
  const built: BuiltTable = { bytes: w.bytes, rows: w.rows, blocks: w.blocks };
  if (w.minKey !== undefined) built.minKey = w.minKey;
  if (w.maxKey !== undefined) built.maxKey = w.maxKey;
  return built;
}
