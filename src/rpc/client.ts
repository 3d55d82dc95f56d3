// MemWalClient: the MemWalApi of the browser main thread. openMemWal() starts a dedicated module
// worker (or attaches to yours) hosting MemWal, and every call goes there over comlink; a dead
// worker is noticed (error event, lifetime Web Lock) so no call ever hangs on it.

import * as Comlink from 'comlink';
import type { RecordBatch, Table } from 'apache-arrow';
import type { OpenHooks } from '../core/memwal.js';
import type {
  BackpressureStats,
  CompactionResult,
  CompactionStats,
  ReadStats,
  MemTableStats,
  MemWalApi,
  PutResult,
  StorageStats,
  WalEntry,
  WalStats,
  WriteStats,
  WriterState,
} from '../core/stats.js';
import { MemWalError, isMemWalError, isMemWalErrorCode, toMemWalError } from '../errors.js';
import { resolveOptions, type Logger, type MemWalOptions } from '../options.js';
import { decodeArrow, decodeTable, encodeData, encodeSchema, transfersOf } from './arrow-wire.js';
import type { ConnectMessage, Hello, HostApi, HostEvent, Page, WireError, WireOpenOptions, WireSignal, WireStorage } from './protocol.js';
import { openThroughTestHook } from './test-hook.js';

/** What openMemWal needs of a Worker (a DOM `Worker` is one). */
export interface WorkerLike {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message' | 'error', listener: (ev: Event) => void): void;
  removeEventListener(type: 'message' | 'error', listener: (ev: Event) => void): void;
  terminate(): void;
}

/**
 * `MemWalOptions` for the main thread. `storage` is `'opfs'`, `'indexeddb'`, `'memory'` (that
 * worker's own registry) or undefined (OPFS where the worker has sync access handles, else
 * IndexedDB); an adapter object cannot be posted — host it in your own worker with
 * `memwal/worker` and pass that worker here.
 */
export type OpenMemWalOptions = Omit<MemWalOptions, 'storage'> & {
  storage?: WireStorage;
  /**
   * An already-started worker that calls `hostMemWal()` (memwal/worker). It is yours: `close()`
   * and `abort()` detach from it but do not terminate it.
   */
  worker?: WorkerLike;
  /** URL of a module worker script that calls `hostMemWal()`, for bundlers that cannot follow memwal's default. */
  workerUrl?: string | URL;
};

/** How long openMemWal waits for a worker to answer its handshake before giving up (`NotSupported`). */
export const WORKER_HANDSHAKE_TIMEOUT_MS = 30_000;
/** A host that announces itself after our connect message gets a second one after this long. */
const RECONNECT_DELAY_MS = 250;
/** How long `abort()` (and detaching from your worker) waits for the worker before going on. */
const GOODBYE_TIMEOUT_MS = 1000;

type Remote = Comlink.Remote<HostApi>;

interface Connection {
  port: MessagePort;
  remote: Remote;
  lockName: string | undefined;
  hello: Hello;
}

const locks = (): LockManager | undefined => (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;

function uuid(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return c?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** The MemWalError a rejected call carries (rebuilt from the wire), or a mapped local failure. */
function fromWire(e: unknown, context: string): MemWalError {
  const w = (e as Partial<WireError> | null)?.memwalError;
  if (w && isMemWalErrorCode(w.code)) return new MemWalError(w.code, w.message);
  // Posting failed here: an argument that cannot be structured-cloned is the caller's mistake.
  const name = (e as { name?: unknown } | null)?.name;
  return toMemWalError(e, context, name === 'DataCloneError' ? 'InvalidArgument' : 'IOError');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    p.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

function describeErrorEvent(ev: Event): string {
  const e = ev as ErrorEvent;
  return e.message ? `${e.message}${e.filename ? ` (${e.filename}:${e.lineno})` : ''}` : 'the worker script failed to load or run';
}

/** Options as posted, validated here first (InvalidArgument before any worker starts). */
function toWire(options: OpenMemWalOptions): { wire: WireOpenOptions; logger: Logger } {
  if (typeof options !== 'object' || options === null) throw new MemWalError('InvalidArgument', 'options must be an object');
  const { worker, workerUrl, ...rest } = options;
  if (typeof rest.storage === 'object' && rest.storage !== null) {
    throw new MemWalError('InvalidArgument', 'option storage: an adapter object cannot be posted to a worker; host it with memwal/worker');
  }
  if (worker !== undefined && workerUrl !== undefined)
    throw new MemWalError('InvalidArgument', 'option worker: give worker or workerUrl, not both');
  if (worker !== undefined && (typeof worker !== 'object' || worker === null || typeof worker.postMessage !== 'function')) {
    throw new MemWalError('InvalidArgument', 'option worker: must be a Worker running hostMemWal()');
  }
  if (workerUrl !== undefined && typeof workerUrl !== 'string' && !(workerUrl instanceof URL)) {
    throw new MemWalError('InvalidArgument', 'option workerUrl: must be a string or a URL');
  }
  const resolved = resolveOptions(rest as MemWalOptions);
  const { schema, logger: _logger, ...plain } = rest;
  return { wire: { ...plain, schemaIpc: encodeSchema(schema) }, logger: resolved.logger };
}

function startWorker(options: OpenMemWalOptions): { worker: WorkerLike; owned: boolean } {
  if (options.worker) return { worker: options.worker, owned: false };
  if (typeof Worker !== 'function') {
    throw new MemWalError('NotSupported', 'openMemWal needs a context with module workers (a browser page); in-process, use MemWal.open');
  }
  try {
    const worker =
      options.workerUrl !== undefined
        ? new Worker(options.workerUrl, { type: 'module' })
        : new Worker(new URL('./default-worker.js', import.meta.url), { type: 'module' });
    return { worker, owned: true };
  } catch (e) {
    throw toMemWalError(e, 'starting the memwal worker', 'NotSupported');
  }
}

/**
 * Connect to the host in `worker`: post a MessagePort (and a lifetime lock name) and wait for
 * the host's hello, which comes once it holds that lock. A host that says 'host-ready' after our
 * message (it started listening late and dropped it) gets a fresh connect.
 */
function connect(worker: WorkerLike): Promise<Connection> {
  return new Promise<Connection>((resolve, reject) => {
    const attempts: Connection[] = [];
    let settled = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const finish = (winner: Connection | undefined, err?: MemWalError): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(retry);
      worker.removeEventListener('message', onMessage);
      worker.removeEventListener('error', onError);
      for (const a of attempts) {
        if (a === winner) continue;
        void withTimeout(a.remote.detach(), GOODBYE_TIMEOUT_MS)
          .catch(() => undefined) // an abandoned duplicate connection: nothing of the user's is in it
          .finally(() => a.port.close());
      }
      if (winner) resolve(winner);
      else reject(err);
    };
    const attempt = (): void => {
      const { port1, port2 } = new MessageChannel();
      const lockName = locks() ? `memwal-worker:${uuid()}` : undefined;
      const remote = Comlink.wrap<HostApi>(port1);
      const conn: Connection = { port: port1, remote, lockName, hello: { lifetimeLock: false } };
      attempts.push(conn);
      worker.postMessage({ memwal: 'connect', port: port2, lockName } satisfies ConnectMessage, [port2]);
      remote.hello().then(
        (hello) => {
          conn.hello = hello;
          finish(conn);
        },
        (e: unknown) => finish(undefined, fromWire(e, 'memwal worker handshake')),
      );
    };
    const onMessage = (ev: Event): void => {
      if ((ev as MessageEvent).data?.memwal !== 'host-ready' || retry !== undefined) return;
      retry = setTimeout(attempt, RECONNECT_DELAY_MS);
    };
    const onError = (ev: Event): void =>
      finish(undefined, new MemWalError('NotSupported', `the memwal worker failed to start: ${describeErrorEvent(ev)}`));
    const timer = setTimeout(
      () =>
        finish(
          undefined,
          new MemWalError(
            'NotSupported',
            `the memwal worker did not answer within ${WORKER_HANDSHAKE_TIMEOUT_MS} ms: does it call hostMemWal() from memwal/worker?`,
          ),
        ),
      WORKER_HANDSHAKE_TIMEOUT_MS,
    );
    worker.addEventListener('message', onMessage);
    worker.addEventListener('error', onError);
    attempt();
  });
}

/**
 * Open a store in a dedicated module worker (one per call; or in `options.worker`) and return
 * its main-thread client. `hooks.onStateChange` sees every state change from the first one
 * ('waiting-for-lock' while another writer holds the store). With `persist: true` the client
 * requests `navigator.storage.persist()` here, on the main thread (`client.persisted`).
 *
 * Rejects as `MemWal.open` does (`InvalidArgument` before anything starts, `Locked`,
 * `NotSupported`, `Corruption`, ...), with `InvalidArgument` for an adapter object in `storage`,
 * `NotSupported` when no module worker can be started or it never answers, and `Closed` when
 * the worker dies during open. Browser main thread (any context with `Worker`).
 */
export async function openMemWal(options: OpenMemWalOptions, hooks: OpenHooks = {}): Promise<MemWalClient> {
  const underTest = openThroughTestHook(openMemWal, options, hooks); // memwal/playwright's init script only
  if (underTest) return underTest;
  const { wire, logger } = toWire(options);
  const { worker, owned } = startWorker(options);
  let conn: Connection;
  try {
    conn = await connect(worker);
  } catch (e) {
    if (owned) worker.terminate();
    throw e;
  }
  const client = new MemWalClient(conn, worker, owned, wire.name, logger, hooks);
  if (options.persist) client.requestPersist();
  try {
    await client.callOpen(wire);
  } catch (e) {
    await client.abort();
    throw e;
  }
  return client;
}

/**
 * A store open in a worker, used from the main thread: the same `MemWalApi` as `MemWal`, with
 * Arrow data crossing as transferred IPC bytes, errors as `MemWalError` with their codes, signals
 * as messages, and `tail` / `scanBatches` pulled page by page. When the worker dies (terminated,
 * crashed, out of memory) every pending and later call rejects `Closed`. After `close()` or
 * `abort()` the worker is gone, so every call (stats too) rejects `Closed`.
 * On `pagehide` and when the page turns hidden it asks the worker for `sync()`.
 * Create with `openMemWal`. Browser main thread.
 */
export class MemWalClient implements MemWalApi {
  private readonly remote: Remote;
  private readonly port: MessagePort;
  private readonly listeners = new Set<(s: WriterState) => void>();
  /** Rejecters of the calls in flight (a dying worker rejects them all). */
  private readonly pending = new Set<(e: MemWalError) => void>();
  private state: WriterState = 'open';
  /** Set when the worker is gone or we closed: every later call rejects with it. */
  private gone: MemWalError | undefined;
  /** True when `gone` came from our own close()/abort(), not from the worker dying. */
  private ended = false;
  private closing: Promise<void> | undefined;
  private aborting: Promise<void> | undefined;
  private nextSignalId = 1;
  private readonly lockWatch = new AbortController();
  private readonly cleanups: (() => void)[] = [];
  private persistResult: boolean | undefined;

  /** @internal Use `openMemWal`. */
  constructor(
    conn: Connection,
    private readonly worker: WorkerLike,
    private readonly owned: boolean,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly hooks: OpenHooks,
  ) {
    this.remote = conn.remote;
    this.port = conn.port;
    this.listen(this.port, 'message', (ev) => this.onEvent((ev as MessageEvent<HostEvent>).data));
    // Where MessagePort has a close event, a port whose worker died closes.
    this.listen(this.port, 'close', () => this.die('its message port closed'));
    if (owned) this.listen(worker, 'error', (ev) => this.die(`uncaught error in the worker: ${describeErrorEvent(ev)}`));
    const lm = locks();
    if (conn.hello.lifetimeLock && conn.lockName && lm) {
      // The host holds this lock for as long as it lives; we are granted it once the worker is gone.
      lm.request(conn.lockName, { signal: this.lockWatch.signal }, () =>
        this.die('the worker ended (terminated, crashed or out of memory)'),
      ).catch(
        () => undefined, // AbortError: we stopped watching (close/abort)
      );
    }
    const doc = (globalThis as { document?: Document }).document;
    if (doc && typeof globalThis.addEventListener === 'function') {
      this.listen(globalThis as unknown as EventTarget, 'pagehide', () => this.lifecycleSync('pagehide'));
      this.listen(doc, 'visibilitychange', () => doc.visibilityState === 'hidden' && this.lifecycleSync('visibilitychange'));
    }
  }

  private listen(target: Pick<EventTarget, 'addEventListener' | 'removeEventListener'>, type: string, fn: (ev: Event) => void): void {
    target.addEventListener(type, fn);
    this.cleanups.push(() => target.removeEventListener(type, fn));
  }

  /** @internal Open the store in the worker (state events arrive before the reply). */
  callOpen(wire: WireOpenOptions): Promise<void> {
    return this.call('open', (r) => r.open(Comlink.transfer(wire, [wire.schemaIpc.buffer as ArrayBuffer])));
  }

  /** @internal Request persistent storage on the main thread (it does not exist in workers). */
  requestPersist(): void {
    const storage = (globalThis as { navigator?: { storage?: StorageManager } }).navigator?.storage;
    if (typeof storage?.persist !== 'function') return;
    storage.persist().then(
      (granted) => (this.persistResult = granted),
      (e: unknown) => this.logger.warn('memwal: navigator.storage.persist() failed', e),
    );
  }

  /**
   * The answer of `navigator.storage.persist()` when `persist: true` was given: true (granted),
   * false (refused), undefined (not requested, not answered yet, or unavailable).
   */
  get persisted(): boolean | undefined {
    return this.persistResult;
  }

  /** The writer's state as last reported by the worker ('closed' once the worker is gone). */
  get writerState(): WriterState {
    return this.state;
  }

  private onEvent(e: HostEvent | undefined): void {
    if (e?.memwalEvent === 'state') this.setState(e.state);
    else if (e?.memwalEvent === 'warn') this.logger.warn(e.message, ...e.details);
  }

  private setState(s: WriterState): void {
    if (this.state === s || this.state === 'closed') return;
    this.state = s;
    this.hooks.onStateChange?.(s);
    for (const l of [...this.listeners]) {
      try {
        l(s);
      } catch (e) {
        this.logger.warn('memwal: onStateChange listener threw', e);
      }
    }
  }

  private lifecycleSync(why: string): void {
    if (this.gone) return;
    this.sync().catch((e: unknown) => {
      if (!isMemWalError(e, 'Closed')) this.logger.warn(`memwal: sync on ${why} failed`, e);
    });
  }

  /** One call to the worker: rejects `Closed` at once when the worker is gone or dies meanwhile. */
  private call<T>(what: string, fn: (r: Remote) => Promise<T>): Promise<T> {
    if (this.gone) return Promise.reject(this.gone);
    return new Promise<T>((resolve, reject) => {
      this.pending.add(reject);
      let p: Promise<T>;
      try {
        p = fn(this.remote);
      } catch (e) {
        p = Promise.reject(e);
      }
      p.then(resolve, (e: unknown) => reject(fromWire(e, what))).finally(() => this.pending.delete(reject));
    });
  }

  /** The worker is gone on its own: reject everything in flight and from now on with `Closed`. */
  private die(reason: string): void {
    if (this.gone) return;
    this.gone = new MemWalError(
      'Closed',
      `the memwal worker of store ${this.name} is gone (${reason}); the outcome of calls in flight is unknown`,
    );
    this.teardown();
  }

  /** We closed or aborted: later calls reject `Closed`; detach from a worker that is not ours. */
  private async finish(): Promise<void> {
    if (this.gone) return;
    this.gone = new MemWalError('Closed', `store ${this.name} is closed`);
    this.ended = true;
    this.lockWatch.abort();
    if (!this.owned) {
      // The host releases the lifetime lock on detach; we stopped watching it just above.
      await withTimeout(this.remote.detach(), GOODBYE_TIMEOUT_MS).catch((e: unknown) =>
        this.logger.warn('memwal: detaching from the worker failed', e),
      );
    }
    this.teardown();
  }

  private teardown(): void {
    const gone = this.gone!;
    for (const reject of [...this.pending]) reject(gone);
    this.pending.clear();
    this.lockWatch.abort();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.port.close();
    if (this.owned) this.worker.terminate();
    this.setState('closed');
  }

  /**
   * `signal` as a message: its WireSignal, and while registered an abort here posts
   * `abortSignal(id)` so the wait in the worker ends. `dispose()` unregisters.
   */
  private crossSignal(signal: AbortSignal | undefined): { wire: WireSignal | undefined; dispose(): void } {
    if (!signal) return { wire: undefined, dispose() {} };
    const id = this.nextSignalId++;
    const onAbort = (): void => {
      // Fails only when the worker is gone, and then the call itself rejects `Closed`.
      this.call('abortSignal', (r) => r.abortSignal(id)).catch(() => undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return { wire: { id, aborted: signal.aborted }, dispose: () => signal.removeEventListener('abort', onAbort) };
  }

  private async withSignal<T>(signal: AbortSignal | undefined, run: (w: WireSignal | undefined) => Promise<T>): Promise<T> {
    const crossed = this.crossSignal(signal);
    try {
      return await run(crossed.wire);
    } finally {
      crossed.dispose();
    }
  }

  /** A worker-side iterator pulled page by page; `return()` releases it in the worker. */
  private async *pull<W, T>(
    start: (r: Remote, signal: WireSignal | undefined) => Promise<number>,
    next: (r: Remote, id: number) => Promise<Page<W>>,
    decode: (w: W) => T,
    signal?: AbortSignal,
  ): AsyncGenerator<T> {
    const crossed = this.crossSignal(signal);
    let id: number | undefined;
    let done = false;
    try {
      id = await this.call('iterator', (r) => start(r, crossed.wire));
      while (!done) {
        const page = await this.call('next page', (r) => next(r, id!));
        done = page.done;
        for (const item of page.items) yield decode(item);
      }
    } finally {
      crossed.dispose();
      if (id !== undefined && !done && !this.gone) {
        this.call('release', (r) => r.release(id!)).catch(() => undefined); // only fails once the worker is gone
      }
    }
  }

  // ------------------------------------------------------------------ MemWalApi

  /** As `MemWal.put`; Arrow data crosses as IPC bytes (transferred), rows are structured-cloned. */
  put(data: RecordBatch | Table | Record<string, unknown>[], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    return this.withSignal(opts.signal, (w) => {
      const wire = encodeData(data);
      return this.call('put', (r) => r.put(Comlink.transfer(wire, transfersOf(wire)), w));
    });
  }

  /** As `MemWal.delete`. */
  delete(keys: Table | Record<string, unknown>[], opts: { signal?: AbortSignal } = {}): Promise<PutResult> {
    return this.withSignal(opts.signal, (w) => {
      const wire = encodeData(keys);
      return this.call('delete', (r) => r.delete(Comlink.transfer(wire, transfersOf(wire)), w));
    });
  }

  /** As `MemWal.get`. */
  get(key: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    return this.call('get', (r) => r.get(key));
  }

  /** As `MemWal.scan`; the table crosses as IPC bytes. */
  async scan(opts: { columns?: string[] } = {}): Promise<Table> {
    return decodeTable(await this.call('scan', (r) => r.scan(opts)));
  }

  /**
   * As `MemWal.scanBatches`, pulled from the worker a page (up to 256 batches or ~4 MiB) at a
   * time. Breaking out of the loop releases the worker-side iterator; one dropped half-way is
   * released when the store closes.
   */
  scanBatches(opts: { columns?: string[]; limit?: number } = {}): AsyncIterable<RecordBatch> {
    const limit = opts.limit ?? Infinity;
    if (!(limit >= 0)) throw new MemWalError('InvalidArgument', 'scanBatches: limit must be >= 0');
    return this.pull(
      (r) => r.scanBatches(opts),
      (r, id) => r.nextBatches(id),
      (w) => decodeArrow(w) as RecordBatch,
    );
  }

  /**
   * As `MemWal.tail`, pulled page by page; `signal` ends a following tail in the worker, and
   * breaking out of the loop releases it there.
   */
  tail(fromPosition: number, opts: { follow?: boolean; signal?: AbortSignal } = {}): AsyncIterable<WalEntry> {
    return this.pull(
      (r, w) => r.tail(fromPosition, { follow: opts.follow, signal: w }),
      (r, id) => r.nextEntries(id),
      (e) => ({ position: e.position, epoch: e.epoch, data: decodeTable(e.data) }),
      opts.signal,
    );
  }

  /** As `MemWal.sync`. */
  sync(): Promise<{ position: number }> {
    return this.call('sync', (r) => r.sync());
  }

  /** As `MemWal.forceSealActive`. */
  forceSealActive(): Promise<{ sealedGeneration: number | null }> {
    return this.call('forceSealActive', (r) => r.forceSealActive());
  }

  /** As `MemWal.waitForFlushDrain`; `signal` aborts the wait in the worker. */
  waitForFlushDrain(opts: { signal?: AbortSignal } = {}): Promise<void> {
    return this.withSignal(opts.signal, (w) => this.call('waitForFlushDrain', (r) => r.waitForFlushDrain(w)));
  }

  memtableStats(): Promise<MemTableStats> {
    return this.call('memtableStats', (r) => r.memtableStats());
  }

  backpressureStats(): Promise<BackpressureStats> {
    return this.call('backpressureStats', (r) => r.backpressureStats());
  }

  walStats(): Promise<WalStats> {
    return this.call('walStats', (r) => r.walStats());
  }

  /** As `MemWal.compactionStats`. */
  compactionStats(): Promise<CompactionStats> {
    return this.call('compactionStats', (r) => r.compactionStats());
  }

  /** As `MemWal.readStats`. */
  readStats(): Promise<ReadStats> {
    return this.call('readStats', (r) => r.readStats());
  }

  /** As `MemWal.compact`; `signal` aborts it in the worker. */
  compact(opts: { signal?: AbortSignal } = {}): Promise<CompactionResult> {
    return this.withSignal(opts.signal, (w) => this.call('compact', (r) => r.compact(w)));
  }

  writeStats(): Promise<WriteStats> {
    return this.call('writeStats', (r) => r.writeStats());
  }

  /** As `MemWal.storageStats`; `persisted` falls back to this client's `persist()` answer. */
  async storageStats(): Promise<StorageStats> {
    const s = await this.call('storageStats', (r) => r.storageStats());
    return s.persisted === undefined && this.persistResult !== undefined ? { ...s, persisted: this.persistResult } : s;
  }

  metrics(): Promise<string> {
    return this.call('metrics', (r) => r.metrics());
  }

  markConsumed(position: number): Promise<void> {
    return this.call('markConsumed', (r) => r.markConsumed(position));
  }

  /** Subscribe to state changes as the worker reports them (plus 'closed' when it is gone). */
  onStateChange(listener: (s: WriterState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * As `MemWal.close`, then the worker is terminated (a worker given as `options.worker` is only
   * detached). Rejects `Closed` if the worker died before or during the close (what it had not
   * flushed is in the WAL and replays at the next open). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.gone) {
        if (this.ended) return;
        throw this.gone;
      }
      try {
        await this.call('close', (r) => r.close());
      } finally {
        await this.finish();
      }
    })();
    return this.closing;
  }

  /** As `MemWal.abort`, then the worker is terminated (or detached when it is yours). Never rejects. */
  abort(): Promise<void> {
    this.aborting ??= (async () => {
      if (this.gone) return;
      // Stop now: a worker that does not answer promptly is terminated all the same.
      await withTimeout(
        this.call('abort', (r) => r.abort()),
        GOODBYE_TIMEOUT_MS,
      ).catch(() => undefined);
      await this.finish();
    })();
    return this.aborting;
  }
}
