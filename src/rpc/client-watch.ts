// The page's side of `watch` (MemWalClient.watch, client.ts): the watches of one client by id,
// their subscription in the worker (again at each new leader), and the delivery of their results
// in order, never one older than a result already delivered.

import type { WatchInfo, WatchOptions, WatchSpec } from '../engine/api.js';
import { MemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { arrowCodec } from './client-wire.js';
import type { WireArrow, WireWatchSpec } from './protocol.js';
import type { Remote } from './worker-link.js';

/** The reads `watch` takes (engine/watch-reads.ts WATCH_READS), checked here before anything is posted. */
export const WATCH_KINDS = ['get', 'getMany', 'scan', 'query', 'count', 'nearest', 'search'] as const;

/** Reads whose spec carries options beside the read's name (`{ query: index, ...options }`). */
const WITH_OPTIONS: readonly string[] = ['query', 'count', 'nearest', 'search'];

/** Watch ids, unique in the page: the clients of one page may share a connection (realm.ts). */
let nextWatchId = 1;

/** A watch of this client: what it asks and the last position it delivered (nothing older is delivered). */
interface ClientWatch {
  spec: WireWatchSpec;
  scan: boolean;
  position: number;
  /** Results in arrival order (a scan's waits for the Arrow codec). */
  chain: Promise<void>;
  listener: (value: unknown, info: WatchInfo) => void;
  onError: WatchOptions['onError'];
}

/** What the page's watches need of their client. */
export interface WatchClient {
  /** One call to the worker (MemWalClient's `call`). */
  call<T>(what: string, fn: (r: Remote) => Promise<T>): Promise<T>;
  /** Set once the client is closed or its worker gone. */
  gone(): MemWalError | undefined;
  logger: Logger;
}

/** The watches of one client on the page. */
export class PageWatches {
  /** Live watches by id. */
  private readonly watches = new Map<number, ClientWatch>();

  constructor(private readonly client: WatchClient) {}

  /** `MemWalClient.watch`. */
  watch(spec: WatchSpec, listener: (value: unknown, info: WatchInfo) => void, opts: WatchOptions): () => void {
    const keys = typeof spec === 'object' && spec !== null ? Object.keys(spec) : [];
    const named = keys.filter((k) => (WATCH_KINDS as readonly string[]).includes(k));
    if (named.length !== 1 || (!WITH_OPTIONS.includes(named[0]!) && keys.length !== 1)) {
      throw new MemWalError('InvalidArgument', `watch: spec must name one read (${WATCH_KINDS.join(', ')}), as { get: key }`);
    }
    const gone = this.client.gone();
    if (gone) throw gone;
    if (opts.signal?.aborted) return () => undefined;
    const id = nextWatchId++;
    const w: ClientWatch = {
      spec: spec as unknown as WireWatchSpec,
      scan: named[0] === 'scan',
      position: -1,
      chain: Promise.resolve(),
      listener,
      onError: opts.onError,
    };
    this.watches.set(id, w);
    this.subscribe(id, w);
    const signal = opts.signal;
    const unsubscribe = (): void => {
      signal?.removeEventListener('abort', unsubscribe);
      if (!this.watches.delete(id) || this.client.gone()) return;
      this.client.call('unwatch', (r) => r.unwatch(id)).catch(() => undefined); // fails only once the worker is gone, which drops it
    };
    signal?.addEventListener('abort', unsubscribe, { once: true });
    return unsubscribe;
  }

  /** Watches registered and not unsubscribed. */
  get size(): number {
    return this.watches.size;
  }

  private subscribe(id: number, w: ClientWatch): void {
    this.client
      .call('watch', (r) => r.watch(id, w.spec))
      .catch((e: MemWalError) => {
        if (this.watches.get(id) !== w || this.client.gone()) return;
        if (e.code === 'LeaderChanged') return; // the next leader gets it again (resubscribe)
        this.onError(id, e, true);
      });
  }

  /** Calls are served elsewhere now (another leader): every watch subscribes there again. */
  resubscribe(): void {
    if (this.client.gone()) return;
    for (const [id, w] of this.watches) this.subscribe(id, w);
  }

  /** A result the worker posted for watch `id`. */
  onResult(id: number, position: number, value: unknown): void {
    const w = this.watches.get(id);
    if (!w || position < w.position) return; // never a result older than one delivered
    w.position = position;
    const deliver = (v: unknown): void => {
      if (this.watches.get(id) !== w) return; // unsubscribed meanwhile
      try {
        w.listener(v, { position });
      } catch (e) {
        this.client.logger.warn('memwal: a watch listener threw', e);
      }
    };
    if (!w.scan) {
      deliver(value);
      return;
    }
    w.chain = w.chain.then(async () => deliver((await arrowCodec()).decodeTable(value as WireArrow)));
  }

  /** A failure the worker posted for watch `id` (`final`: it stopped). */
  onError(id: number, error: MemWalError, final: boolean): void {
    const w = this.watches.get(id);
    if (!w) return;
    if (final) this.watches.delete(id);
    if (w.onError) w.onError(error, final);
    else this.client.logger.warn(`memwal: a watched read failed${final ? '; the watch stopped' : ''}`, error);
  }

  /** Let go of every watch in the worker (this client closes; the worker's store may stay open for other clients). */
  release(): void {
    for (const id of [...this.watches.keys()]) {
      this.watches.delete(id);
      this.client.call('unwatch', (r) => r.unwatch(id)).catch(() => undefined);
    }
  }

  /** Forget every watch here (the client is gone). */
  clear(): void {
    this.watches.clear();
  }
}
