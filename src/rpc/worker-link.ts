// The main thread's link to one memwal worker: start it (or take yours), connect over a
// MessagePort of its own, and notice its death (error event, a closed port, the lifetime Web
// Lock the host holds), so that no call ever hangs on a dead worker. Browser main thread.

import * as Comlink from 'comlink';
import { MemWalError, type MemWalErrorCode, errorFromWire, toMemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { ConnectMessage, Hello, HostApi, HostError, HostEvent } from './protocol.js';

/** What openMemWal needs of a Worker (a DOM `Worker` is one). */
export interface WorkerLike {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message' | 'error', listener: (ev: Event) => void): void;
  removeEventListener(type: 'message' | 'error', listener: (ev: Event) => void): void;
  terminate(): void;
}

/**
 * How long a worker that loads but never calls `hostMemWal()` is waited for: the connect message
 * is repeated meanwhile, and a host answers within milliseconds once its module has run.
 */
export const WORKER_HANDSHAKE_TIMEOUT_MS = 30_000;
/**
 * A `workerUrl` script has this long after it arrived (its Resource Timing entry) to call
 * `hostMemWal()`, which a host does while its module is evaluated: a script that is not a host
 * fails after seconds, not after WORKER_HANDSHAKE_TIMEOUT_MS.
 */
export const HOST_START_GRACE_MS = 5000;
/** A host that announces itself after our connect message gets a second one after this long. */
const RECONNECT_DELAY_MS = 250;
/** How long `abort()` (and detaching from your worker) waits for the worker before going on. */
export const GOODBYE_TIMEOUT_MS = 1000;

export type Remote = Comlink.Remote<HostApi>;

/** One client connection to a host: its port, the comlink remote on it and its lifetime lock. */
export interface Connection {
  port: MessagePort;
  remote: Remote;
  lockName: string | undefined;
  hello: Hello;
}

/** Where a client's calls are served (`MemWalApi.role()`, without `'in-process'`). */
export type ClientRole = 'leader' | 'follower';

/** What a link tells its client: host events, that it is gone for good, and its role changing. */
export interface LinkSink {
  event(e: HostEvent): void;
  dead(reason: string): void;
  /** `role()` changed (only `tabs: 'share'` links change role). */
  role?(role: ClientRole): void;
  /**
   * Calls are served by another worker from now on (a new leader under `tabs: 'share'`): what
   * lives in a worker for the client (its watches) must be set up there again.
   */
  served?(): void;
}

/**
 * The transport a `MemWalClient` calls through: one worker (`WorkerLink`) or the tabs sharing a
 * store (`TabsLink`, tabs.ts). @internal
 */
export interface ClientLink {
  readonly remote: Remote;
  role(): ClientRole;
  /** Start delivering events and death to `sink` (called once, by the client). */
  start(sink: LinkSink): void;
  /** The client is done: let go of everything (`detach`: tell a worker that is not ours). Never rejects. */
  end(detach: boolean): Promise<void>;
}

export const locks = (): LockManager | undefined => (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;

export function uuid(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return c?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/**
 * The MemWalError a rejected call carries (a HostError), or a mapped local failure: `local`
 * (default `IOError`) for what has no code of its own. A call whose only local failure is posting
 * its argument (a put's rows: a getter that threw while they were cloned) passes `InvalidArgument`.
 */
export function fromWire(e: unknown, context: string, local: MemWalErrorCode = 'IOError'): MemWalError {
  const w = (e as Partial<HostError> | null)?.memwalError;
  if (w) return errorFromWire(w);
  // Posting failed here: an argument that cannot be structured-cloned is the caller's mistake.
  const name = (e as { name?: unknown } | null)?.name;
  return toMemWalError(e, context, name === 'DataCloneError' ? 'InvalidArgument' : local);
}

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    p.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

export function describeErrorEvent(ev: Event, script: string): string {
  const e = ev as ErrorEvent;
  return e.message
    ? `${e.message}${e.filename ? ` (${e.filename}:${e.lineno})` : ''}`
    : `the worker script ${script} failed to load or run (is the URL right, and served as JavaScript?)`;
}

/** Why openMemWal cannot run here (no `Worker`: a server rendering the page, Node, a worker without nested workers). */
export const NO_WORKERS_MESSAGE =
  'openMemWal runs in a browser page (it starts a module worker), and there is no Worker here: on a server rendering the page (SSR), ' +
  'open the store in the browser only (in an effect, or with memwalStore() from memwal/react, which opens on first use in the browser); ' +
  'in Node, Deno or a worker of your own, use MemWal.open in-process';

/** How a worker was given or started: for error messages. */
export interface StartedWorker {
  worker: WorkerLike;
  /** memwal started it (and terminates it on close). */
  owned: boolean;
  /** The script's URL, or a description of a worker given as an object. */
  script: string;
  /** The absolute URL of a `workerUrl` script, whose arrival starts HOST_START_GRACE_MS. */
  hostCheckUrl?: string;
}

/** The main-thread functions that start a worker, and their in-process counterparts (for `NotSupported`). */
const IN_PROCESS = { openMemWal: 'MemWal.open', destroyMemWal: 'MemWal.destroy' } as const;
export type WorkerCaller = keyof typeof IN_PROCESS;

/**
 * The worker of `options`: yours, one started from `workerUrl`, or memwal's default worker.
 * `caller` names the function in the `NotSupported` of a context without module workers.
 */
export function startWorker(
  options: { worker?: WorkerLike; workerUrl?: string | URL },
  caller: WorkerCaller = 'openMemWal',
): StartedWorker {
  if (options.worker) return { worker: options.worker, owned: false, script: '(the worker passed as options.worker)' };
  if (typeof Worker !== 'function') {
    throw new MemWalError(
      'NotSupported',
      caller === 'openMemWal'
        ? NO_WORKERS_MESSAGE
        : `${caller} needs a context with module workers (a browser page); in-process, use ${IN_PROCESS[caller]}`,
    );
  }
  const { workerUrl } = options;
  const script = workerUrl === undefined ? "memwal's default worker" : String(workerUrl);
  const base = (globalThis as { location?: { href: string } }).location?.href;
  try {
    // The literal `new Worker(new URL('…', import.meta.url))` is what bundlers (Vite, webpack,
    // esbuild) recognise to bundle the default worker with the app: keep it literal.
    const worker =
      workerUrl !== undefined
        ? new Worker(workerUrl, { type: 'module' })
        : new Worker(new URL('./default-worker.js', import.meta.url), { type: 'module' });
    return { worker, owned: true, script, hostCheckUrl: workerUrl !== undefined && base ? new URL(script, base).href : undefined };
  } catch (e) {
    throw toMemWalError(e, `starting the memwal worker ${script}`, 'NotSupported');
  }
}

/**
 * Connect to the host in `worker`: post a MessagePort (and a lifetime lock name) and wait for
 * the host's hello, which comes once it holds that lock. A host that says 'host-ready' after our
 * message (it started listening late and dropped it) gets a fresh connect. Rejects
 * `NotSupported` when the worker fails to load (naming its script) or never answers. `prepare`
 * names the store the client will open, so the host starts on its storage during the handshake.
 */
export function connect(
  started: StartedWorker,
  prepare?: ConnectMessage['prepare'],
  timeoutMs = WORKER_HANDSHAKE_TIMEOUT_MS,
): Promise<Connection> {
  const { worker, script } = started;
  return new Promise<Connection>((resolve, reject) => {
    const attempts: Connection[] = [];
    let settled = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const finish = (winner: Connection | undefined, err?: MemWalError): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(retry);
      stopWatching();
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
      worker.postMessage({ memwal: 'connect', port: port2, lockName, prepare } satisfies ConnectMessage, [port2]);
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
      finish(undefined, new MemWalError('NotSupported', `the memwal worker failed to start: ${describeErrorEvent(ev, script)}`));
    let timer = setTimeout(
      () =>
        finish(
          undefined,
          new MemWalError(
            'NotSupported',
            `the memwal worker ${script} did not answer within ${timeoutMs} ms: does it call hostMemWal() from memwal/worker?`,
          ),
        ),
      timeoutMs,
    );
    const stopWatching = started.hostCheckUrl
      ? whenLoaded(started.hostCheckUrl, (loadedAtMs) => {
          const left = Math.max(0, loadedAtMs + HOST_START_GRACE_MS - performance.now());
          clearTimeout(timer);
          timer = setTimeout(
            () =>
              finish(
                undefined,
                new MemWalError(
                  'NotSupported',
                  `the worker script ${script} loaded but did not call hostMemWal() (from memwal/worker) within ${HOST_START_GRACE_MS} ms`,
                ),
              ),
            left,
          );
        })
      : () => undefined;
    worker.addEventListener('message', onMessage);
    worker.addEventListener('error', onError);
    attempt();
  });
}

/**
 * Call `onLoaded(responseEnd)` once the page's Resource Timing shows `url` arrived (Chromium
 * lists a worker's script there). Returns a function that stops watching. Where Resource Timing
 * does not list it, nothing is called and the handshake's own timeout applies.
 */
function whenLoaded(url: string, onLoaded: (responseEndMs: number) => void): () => void {
  if (typeof PerformanceObserver !== 'function') return () => undefined;
  const observer = new PerformanceObserver((list) => {
    const entry = list.getEntriesByName(url)[0];
    if (!entry) return;
    observer.disconnect();
    onLoaded((entry as PerformanceResourceTiming).responseEnd);
  });
  try {
    observer.observe({ type: 'resource', buffered: true });
  } catch {
    return () => undefined; // no Resource Timing here
  }
  return () => observer.disconnect();
}

/**
 * A client's link to one worker: calls go over the connection's comlink remote; the worker's
 * death (an uncaught error in a worker memwal started, a closed port, its lifetime lock freed)
 * is reported once. `end()` detaches from a worker that is yours and terminates one memwal started.
 */
export class WorkerLink implements ClientLink {
  private readonly lockWatch = new AbortController();
  private readonly cleanups: (() => void)[] = [];
  private ended = false;

  constructor(
    private readonly conn: Connection,
    private readonly started: StartedWorker,
    private readonly logger: Logger,
  ) {}

  get remote(): Remote {
    return this.conn.remote;
  }

  role(): ClientRole {
    return 'leader';
  }

  start(sink: LinkSink): void {
    const { port } = this.conn;
    this.listen(port, 'message', (ev) => sink.event((ev as MessageEvent<HostEvent>).data));
    // Where MessagePort has a close event, a port whose worker died closes.
    this.listen(port, 'close', () => sink.dead('its message port closed'));
    if (this.started.owned) {
      this.listen(this.started.worker, 'error', (ev) =>
        sink.dead(`uncaught error in the worker: ${describeErrorEvent(ev, this.started.script)}`),
      );
    }
    const lm = locks();
    if (this.conn.hello.lifetimeLock && this.conn.lockName && lm) {
      // The host holds this lock for as long as it lives; we are granted it once the worker is gone.
      lm.request(this.conn.lockName, { signal: this.lockWatch.signal }, () =>
        sink.dead('the worker ended (terminated, crashed or out of memory)'),
      ).catch(
        () => undefined, // AbortError: we stopped watching (close/abort)
      );
    }
  }

  private listen(target: Pick<EventTarget, 'addEventListener' | 'removeEventListener'>, type: string, fn: (ev: Event) => void): void {
    target.addEventListener(type, fn);
    this.cleanups.push(() => target.removeEventListener(type, fn));
  }

  async end(detach: boolean): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.lockWatch.abort();
    if (detach && !this.started.owned) {
      // The host releases the lifetime lock on detach; we stopped watching it just above.
      await withTimeout(this.conn.remote.detach(), GOODBYE_TIMEOUT_MS).catch((e: unknown) =>
        this.logger.warn('memwal: detaching from the worker failed', e),
      );
    }
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.conn.port.close();
    if (this.started.owned) this.started.worker.terminate();
  }
}

/** Start (or take) the worker of `options` and connect to its host (`prepare`: as `connect`). */
export async function openWorkerLink(
  options: { worker?: WorkerLike; workerUrl?: string | URL },
  logger: Logger,
  prepare?: ConnectMessage['prepare'],
  caller: WorkerCaller = 'openMemWal',
): Promise<WorkerLink> {
  const started = startWorker(options, caller);
  try {
    return new WorkerLink(await connect(started, prepare), started, logger);
  } catch (e) {
    if (started.owned) started.worker.terminate();
    throw e;
  }
}
