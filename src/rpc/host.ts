// The worker side of openMemWal: hostMemWal() answers MemWalClient connections on a worker scope,
// and makeHostApi() is what one connection exposes through comlink, adding what comlink lacks
// (Arrow as transferred buffers, MemWalError codes, signals as messages, paged iterators).

import * as Comlink from 'comlink';
import type { Schema } from 'apache-arrow';
import { MemWal } from '../engine/memwal.js';
import { describeSchemaDifference } from '../data/schema.js';
import type { StatsSnapshot, WriterState } from '../metrics/stats.js';
import type { WaitWindow } from '../engine/backpressure.js';
import { nowMs, setRepeating } from '../util/schedule.js';
import type { WalEntry } from '../engine/api.js';
import type { QueryFilter } from '../data/index-keys.js';
import type { QueryOptions } from '../engine/query.js';
import type { NearestOptions } from '../engine/nearest.js';
import type { SearchOptions } from '../engine/search.js';
import { MemWalError, errorToWire } from '../util/errors.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { defaultBrowserStorage, resolveBrowserStorage } from '../io-worker/browser.js';
import { resolveStorage, setBrowserStorageResolver } from '../engine/resolve-storage.js';
import { decodeData, encodeArrow, schemaFromWire, transfersOf } from './arrow-wire.js';
import { decodeColumns } from './columns-wire.js';
import { isArrowTable, isWireColumns, schemaToWire, wireBuffers } from './client-wire.js';
import { TabServer } from './tabs/server.js';
import type {
  ConnectMessage,
  Hello,
  HostEvent,
  HostReadyMessage,
  Page,
  WireArrow,
  WireData,
  HostError,
  WireOpenOptions,
  WireSchemaInfo,
  WireSignal,
  WireStorage,
  WireWalEntry,
  WireWatchSpec,
} from './protocol.js';

/**
 * How often a connection that publishes stats checks for a change it has not published yet (one
 * that no reply carried: a flush or compaction in the background), ms.
 */
export const STATS_CHECK_MS = 25;
/** A publishing connection posts a snapshot at least this often, changed or not (wait times, usage figures), ms. */
export const STATS_HEARTBEAT_MS = 250;

/** Most items in one page of `scanBatches` / `tail`. */
export const PAGE_MAX_ITEMS = 256;
/** A page stops growing once its buffers' bytes reach this (its first item may be larger). */
export const PAGE_MAX_BYTES = 4 * 1024 * 1024;

/** Options of `hostMemWal`. */
export interface HostMemWalOptions {
  /**
   * Choose the adapter for a client's `storage` option (`'opfs' | 'indexeddb' | 'memory'` or
   * undefined): return a `StorageAdapter` (a custom or `FaultInjectingStorage` one) or
   * `undefined` for the default resolution (OPFS where sync handles exist, else IndexedDB).
   */
  resolveStorage?: (storage: WireStorage | undefined) => StorageAdapter | undefined | Promise<StorageAdapter | undefined>;
}

/** The part of a worker scope (or any MessagePort-like endpoint) the host listens on. */
export interface HostScope {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  removeEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  postMessage(message: unknown): void;
}

/** Holds a connection's lifetime Web Lock; `held` resolves once it is granted (false: no Web Locks). */
export interface Lifetime {
  held: Promise<boolean>;
  release(): void;
}

const NO_LIFETIME: Lifetime = { held: Promise.resolve(false), release() {} };

/**
 * Serve memwal stores to `MemWalClient`s (`openMemWal({ worker })` or `{ workerUrl }`) from this
 * worker: call it once, synchronously, in your worker module. Each client gets a connection of
 * its own (several stores may share one worker). `options.resolveStorage` plugs in a custom
 * adapter. Installs the browser storage resolver (`storage: 'opfs' | 'indexeddb' | undefined`).
 * It posts `{ memwal: 'host-ready' }` once on the scope (a client whose connect message came too
 * early sends it again) and leaves every message without `memwal: 'connect'` to your own handlers.
 * Returns a function that stops accepting new connections. Browser dedicated workers (the OPFS
 * layout needs one); any context with MessageChannel otherwise. Never throws.
 */
export function hostMemWal(scope?: HostScope, options: HostMemWalOptions = {}): () => void {
  setBrowserStorageResolver((layout) => (layout === undefined ? defaultBrowserStorage() : resolveBrowserStorage(layout)));
  const target = scope ?? (globalThis as unknown as HostScope);
  const onMessage = (ev: MessageEvent): void => {
    const msg = ev.data as Partial<ConnectMessage> | null;
    if (msg?.memwal !== 'connect' || !msg.port) return;
    // A failure here is the open's to report (it resolves the same adapter).
    if (msg.prepare) prepareStorage(options, msg.prepare.name, msg.prepare.storage).catch(() => undefined);
    Comlink.expose(makeHostApi(msg.port, options, holdLifetimeLock(msg.lockName)), msg.port);
  };
  target.addEventListener('message', onMessage);
  (target as { start?: () => void }).start?.();
  target.postMessage({ memwal: 'host-ready' } satisfies HostReadyMessage);
  return () => target.removeEventListener('message', onMessage);
}

/**
 * Get ready to open store `name` without opening it: resolve its storage adapter and ask it for
 * an estimate, which starts whatever the adapter needs (the browser layouts' I/O worker).
 */
async function prepareStorage(options: HostMemWalOptions, name: string, storage: WireStorage | undefined): Promise<void> {
  const adapter = (await options.resolveStorage?.(storage)) ?? resolveStorage(storage);
  await adapter.estimate?.(name);
}

/**
 * Take Web Lock `name` and hold it until `release()` (or until this worker dies, which is how the
 * client learns of the death). No Web Locks or no name: nothing is held.
 */
function holdLifetimeLock(name: string | undefined): Lifetime {
  const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
  if (!name || !locks) return NO_LIFETIME;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = new Promise<boolean>((resolve) => {
    locks.request(name, () => (resolve(true), released)).catch(() => resolve(false));
  });
  return { held, release };
}

/**
 * `fn` with every rejection thrown as a HostError (the client rebuilds the MemWalError), and
 * `beforeReply` run just before the reply (or the error) is posted: a connection's stats
 * publisher, so that a snapshot reflecting the call is on the port ahead of its reply.
 */
function wireWith(beforeReply: () => void): <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A) => Promise<R> {
  return <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (e) {
        throw { memwalError: errorToWire(e, 'memwal worker') } satisfies HostError;
      } finally {
        beforeReply();
      }
    };
}

/** Log details as they can cross (an unclonable value becomes its string). */
function cloneable(details: unknown[]): unknown[] {
  return details.map((d) => {
    try {
      return structuredClone(d);
    } catch {
      return String(d);
    }
  });
}

type Settled = { ok: true; r: IteratorResult<unknown> } | { ok: false; e: unknown };
const settle = (p: Promise<IteratorResult<unknown>>): Promise<Settled> =>
  p.then(
    (r) => ({ ok: true as const, r }),
    (e: unknown) => ({ ok: false as const, e }),
  );
const macrotask = (): Promise<undefined> => new Promise((resolve) => setTimeout(() => resolve(undefined), 0));

/** A worker-side iterator the client pulls page by page. */
interface Paged {
  source: AsyncIterator<unknown>;
  encode(value: unknown): WireArrow | WireWalEntry;
  /** Aborts the source's waits (a following tail) on release. */
  controller: AbortController;
  signalId: number | undefined;
  /** A `next()` started for the previous page that was not ready in time; it starts the next one. */
  ahead: Promise<Settled> | undefined;
}

const wireArrowOf = (item: WireArrow | WireWalEntry): WireArrow => ('batches' in item ? item : item.data);

/** A store another connection of this worker opened, for a connection attached to it (a sharing tab). */
interface SharedStore {
  store: MemWal;
  /** The options the store was opened with: a tab joining must agree on schema, key and mode. */
  opened: WireOpenOptions;
}

/** Refuse a tab whose open options disagree with the leader's on what the data is. */
function checkJoin(joining: WireOpenOptions, opened: WireOpenOptions): void {
  const refuse = (why: string): never => {
    throw new MemWalError(
      'InvalidArgument',
      `tabs: store ${opened.name} is open in another tab with other options: ${why} (do all tabs run the same release? reload the older ones)`,
    );
  };
  if (joining.name !== opened.name) refuse(`name "${joining.name}" is not "${opened.name}"`);
  const difference = describeSchemaDifference(schemaFromWire(opened.schema), schemaFromWire(joining.schema));
  if (difference) refuse(difference.replace('the stored schema', "the leader tab's schema"));
  const key = (k: string[] | undefined): string => JSON.stringify(k ?? []);
  if (key(joining.primaryKey) !== key(opened.primaryKey))
    refuse(`primaryKey ${key(joining.primaryKey)}, the leader tab's is ${key(opened.primaryKey)}`);
  if ((joining.enableMemtable ?? true) !== (opened.enableMemtable ?? true)) refuse('enableMemtable differs');
  if (joining.storage !== undefined && opened.storage !== undefined && joining.storage !== opened.storage) {
    refuse(`storage '${joining.storage}', the leader tab's is '${opened.storage}'`);
  }
}

/**
 * The API one client connection calls (comlink-exposed on `port`). Events (state changes,
 * warnings) are posted on `port` too, so they keep their order with the replies. `HostApi` in
 * protocol.ts is this function's return type. With `shared`, the connection is a sharing tab's
 * (tabs/server.ts): it serves the store another connection opened, its `open` only checks that the
 * tab agrees on what the data is, and its `close`, `abort` and `detach` let go of its own
 * iterators only.
 */
export function makeHostApi(
  port: { postMessage(message: unknown, transfer?: Transferable[]): void },
  options: HostMemWalOptions = {},
  lifetime: Lifetime = NO_LIFETIME,
  shared?: SharedStore,
) {
  // A tab's connection serves the shared store from the start: after a leader change the tabs'
  // calls are re-sent to the new leader's worker before (or without) a new join.
  let store: MemWal | undefined = shared?.store;
  let opened: WireOpenOptions | undefined;
  let tabs: TabServer | undefined;
  let lastState: WriterState | undefined;
  const signals = new Map<number, AbortController>();
  const iterators = new Map<number, Paged>();
  /** This connection's watches: their stops, by the client's id. */
  const watches = new Map<number, () => void>();
  let nextIteratorId = 1;

  const emit = (e: HostEvent): void => port.postMessage(e);

  // Stats publishing (SPEC §15.3): once the client asked for stats, this connection posts a
  // snapshot whenever the store's stats changed — checked just before every reply (so a snapshot
  // at least as new as the reply's effect precedes it on the port: read-your-writes), every
  // STATS_CHECK_MS for changes made in the background, and at least every STATS_HEARTBEAT_MS —
  // and the client answers stats from the newest one without a round trip. The read counters
  // (gets, block reads) alone do not make a reply publish: a point read would post a whole
  // snapshot ahead of every answer (its cost was the message's own); the next check, within
  // STATS_CHECK_MS, publishes them.
  let statsWindow: { store: MemWal; interval: WaitWindow } | undefined;
  let lastMark: number[] | undefined;
  /** `lastMark` without the read counters (what a reply compares). */
  let lastReplyMark: number[] | undefined;
  let lastPublishMs = 0;
  let stopStatsTimer: (() => void) | undefined;
  const sameMark = (a: number[], b: number[] | undefined): boolean =>
    b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
  const snapshotFor = (s: MemWal): StatsSnapshot => {
    if (statsWindow?.store !== s) {
      if (statsWindow) statsWindow.store.statsSource.closeWindow(statsWindow.interval);
      statsWindow = { store: s, interval: s.statsSource.openWindow() };
    }
    lastMark = s.statsSource.mark();
    lastReplyMark = s.statsSource.mark(false);
    lastPublishMs = nowMs();
    return s.statsSource.now(statsWindow.interval);
  };
  /** `reply`: just before a reply, which the read counters alone do not make publish. */
  const publishStats = (force: boolean, reply = false): void => {
    if (!stopStatsTimer || !store) return;
    if (!force && (reply ? sameMark(store.statsSource.mark(false), lastReplyMark) : sameMark(store.statsSource.mark(), lastMark))) return;
    emit({ memwalEvent: 'stats', stats: snapshotFor(store) });
  };
  const stopStats = (): void => {
    stopStatsTimer?.();
    stopStatsTimer = undefined;
    if (statsWindow) statsWindow.store.statsSource.closeWindow(statsWindow.interval);
    statsWindow = undefined;
  };
  const startStats = (): void => {
    if (stopStatsTimer) return;
    stopStatsTimer = setRepeating(() => {
      if (store?.writerState === 'closed') return stopStats();
      publishStats(nowMs() - lastPublishMs >= STATS_HEARTBEAT_MS);
    }, STATS_CHECK_MS);
  };
  const wire = wireWith(() => publishStats(false, true));
  const emitState = (state: WriterState): void => {
    if (state === lastState) return;
    lastState = state;
    emit({ memwalEvent: 'state', state });
  };
  /** The schema a put's columns built on the page are read in (decodeColumns): the store's, as opened. */
  let columnsSchema: { of: WireOpenOptions; schema: Schema } | undefined;
  const putSchema = (): Schema => {
    const o = shared?.opened ?? opened;
    if (!o) throw new MemWalError('Closed', 'no store is open on this connection');
    if (columnsSchema?.of !== o) columnsSchema = { of: o, schema: schemaFromWire(o.schema) };
    return columnsSchema.schema;
  };
  /** The store this connection may end (not a shared one). */
  const own = (): MemWal | undefined => (shared ? undefined : store);
  const need = (): MemWal => {
    if (!store) throw new MemWalError('Closed', 'no store is open on this connection');
    return store;
  };

  /** Run `fn` with the client's signal (aborted by a later `abortSignal(id)`). */
  async function withSignal<R>(w: WireSignal | undefined, fn: (signal: AbortSignal | undefined) => Promise<R>): Promise<R> {
    if (!w) return fn(undefined);
    const controller = new AbortController();
    if (w.aborted) controller.abort();
    signals.set(w.id, controller);
    try {
      return await fn(controller.signal);
    } finally {
      signals.delete(w.id);
    }
  }

  function register(source: AsyncIterable<unknown>, encode: Paged['encode'], controller: AbortController, w?: WireSignal): number {
    const id = nextIteratorId++;
    if (w) {
      if (w.aborted) controller.abort();
      signals.set(w.id, controller);
    }
    iterators.set(id, { source: source[Symbol.asyncIterator](), encode, controller, signalId: w?.id, ahead: undefined });
    return id;
  }

  function end(id: number): Paged | undefined {
    const it = iterators.get(id);
    iterators.delete(id);
    if (it?.signalId !== undefined) signals.delete(it.signalId);
    return it;
  }

  function release(id: number): void {
    const it = end(id);
    if (!it) return;
    it.controller.abort();
    it.source.return?.().catch(() => undefined); // the iterator's own error already reached the client or nobody asks
  }

  /** Up to PAGE_MAX_ITEMS / PAGE_MAX_BYTES items: the first awaited, the rest only if ready now. */
  async function nextPage<T extends WireArrow | WireWalEntry>(id: number): Promise<Page<T>> {
    const it = iterators.get(id);
    if (!it) throw new MemWalError('InvalidArgument', `iterator ${id} is not open (it ended or was released)`);
    const items: T[] = [];
    let bytes = 0;
    let done = false;
    try {
      for (;;) {
        const next = it.ahead ?? settle(it.source.next());
        it.ahead = undefined;
        const s = items.length === 0 ? await next : await Promise.race([next, macrotask()]);
        if (s === undefined) {
          it.ahead = next;
          break;
        }
        if (!s.ok) {
          if (items.length === 0) throw s.e;
          it.ahead = next; // deliver what we have; the error comes with the next page
          break;
        }
        if (s.r.done) {
          done = true;
          end(id);
          break;
        }
        const item = it.encode(s.r.value) as T;
        items.push(item);
        for (const b of wireBuffers(wireArrowOf(item))) bytes += b.byteLength;
        if (items.length >= PAGE_MAX_ITEMS || bytes >= PAGE_MAX_BYTES) break;
      }
    } catch (e) {
      end(id);
      throw e;
    }
    return Comlink.transfer({ items, done }, transfersOf(...items.map(wireArrowOf)));
  }

  const unwatch = (id: number): void => {
    watches.get(id)?.();
    watches.delete(id);
  };

  const releaseAll = (): void => {
    for (const id of [...iterators.keys()]) release(id);
    for (const id of [...watches.keys()]) unwatch(id);
  };

  const arrowResult = (w: WireArrow): WireArrow => Comlink.transfer(w, transfersOf(w));

  return {
    /** Handshake: resolves once this connection's lifetime lock is held. */
    hello: wire(async (): Promise<Hello> => ({ lifetimeLock: await lifetime.held })),

    /**
     * Open the connection's store (join the shared one); state changes are posted as events from
     * the first one, `'open'` included, before this resolves.
     */
    open: wire(async (wireOptions: WireOpenOptions): Promise<void> => {
      if (shared) {
        checkJoin(wireOptions, shared.opened);
        emitState(shared.store.writerState);
        return;
      }
      if (store) throw new MemWalError('InvalidArgument', 'this connection already has an open store');
      const { schema, storage, ...rest } = wireOptions;
      const adapter = await options.resolveStorage?.(storage);
      const warn = (message: string, ...details: unknown[]): void => {
        const event: HostEvent = { memwalEvent: 'warn', message, details: cloneable(details) };
        emit(event);
        tabs?.broadcast(event);
      };
      store = await MemWal.open(
        { ...rest, schema: schemaFromWire(schema), storage: adapter ?? storage, logger: { warn } },
        {
          onStateChange: emitState,
          onSchemaReset: (reset) => emit({ memwalEvent: 'schema-reset', ...reset }),
          onSchemaChange: (change) => emit({ memwalEvent: 'schema-change', change }),
        },
      );
      opened = wireOptions;
      emitState(store.writerState);
    }),

    /**
     * Serve the other tabs of `tabs: 'share'` as leader `leader` (a term id) until this
     * connection closes, aborts or detaches. Resolves once the term is announced.
     */
    serveTabs: wire(async (leader: string): Promise<void> => {
      const s = need();
      if (shared || !opened || tabs) throw new MemWalError('InvalidArgument', 'this connection cannot serve tabs');
      const base = opened;
      tabs = await TabServer.start({
        name: base.name,
        leader,
        store: s,
        attach: (p) => makeHostApi(p, options, NO_LIFETIME, { store: s, opened: base }),
      });
    }),

    /**
     * Get ready to open store `name` without opening it (`prepareStorage`): a follower's standby
     * worker calls it, so that taking over does not wait for the I/O worker's start either.
     */
    prepare: wire((name: string, storage: WireStorage | undefined) => prepareStorage(options, name, storage)),

    /** Delete store `name` (`Locked` while a writer holds it); for `destroyMemWal`. */
    destroy: wire(async (name: string, storage: WireStorage | undefined): Promise<void> => {
      const adapter = await options.resolveStorage?.(storage);
      await MemWal.destroy(name, { storage: adapter ?? storage });
    }),

    put: wire((data: WireData, signal?: WireSignal) =>
      withSignal(signal, (s) => need().put(isWireColumns(data) ? decodeColumns(data, putSchema()) : decodeData(data), { signal: s })),
    ),
    delete: wire((keys: WireData, signal?: WireSignal) =>
      withSignal(signal, (s) => need().delete(decodeData(keys) as Parameters<MemWal['delete']>[0], { signal: s })),
    ),
    get: wire((key: Record<string, unknown>) => need().get(key)),
    getMany: wire((keys: Record<string, unknown>[]) => need().getMany(keys)),
    query: wire((index: string, opts?: QueryOptions) => need().query(index, opts)),
    count: wire((index: string, filter?: QueryFilter) => need().count(index, filter)),
    nearest: wire((index: string, vector: number[] | Float32Array, opts: NearestOptions) => need().nearest(index, vector, opts)),
    search: wire((index: string, text: string, opts?: SearchOptions) => need().search(index, text, opts)),
    indexStats: wire(() => need().indexStats()),
    scan: wire(async (opts?: { columns?: string[] }) => arrowResult(encodeArrow(await need().scan(opts)))),

    /**
     * Keep `spec` live for the client as watch `id` (MemWal.watch; a watch of that id already here
     * is replaced: a re-subscription after a leader change). Each result is posted as a `watch`
     * event, a `scan` table as its transferred buffers; a failed read as `watch-error`.
     */
    watch: wire(async (id: number, spec: WireWatchSpec): Promise<void> => {
      const s = need();
      unwatch(id);
      const stop = s.watch(
        spec as never,
        (value: unknown, info) => {
          if (isArrowTable(value)) {
            const w = encodeArrow(value);
            port.postMessage({ memwalEvent: 'watch', id, position: info.position, value: w } satisfies HostEvent, transfersOf(w));
          } else emit({ memwalEvent: 'watch', id, position: info.position, value });
        },
        {
          onError: (error, final) => {
            if (final) watches.delete(id);
            emit({ memwalEvent: 'watch-error', id, error: errorToWire(error, 'watch'), final });
          },
        },
      );
      watches.set(id, stop);
    }),
    /** The client is done with watch `id`. */
    unwatch: wire(async (id: number) => unwatch(id)),

    /** Start a worker-side scanBatches; returns the iterator id for `nextBatches`. */
    scanBatches: wire(async (opts?: { columns?: string[]; limit?: number; after?: Record<string, unknown> }) =>
      register(need().scanBatches(opts), (b) => encodeArrow(b as Parameters<typeof encodeArrow>[0]), new AbortController()),
    ),
    /** Start a worker-side tail; returns the iterator id for `nextEntries`. */
    tail: wire(async (fromPosition: number, opts: { follow?: boolean; signal?: WireSignal } = {}) => {
      const controller = new AbortController();
      const source = need().tail(fromPosition, { follow: opts.follow, signal: controller.signal });
      const encode = (v: unknown): WireWalEntry => {
        const e = v as WalEntry;
        return { position: e.position, epoch: e.epoch, data: encodeArrow(e.data) };
      };
      return register(source, encode, controller, opts.signal);
    }),
    nextBatches: wire((id: number) => nextPage<WireArrow>(id)),
    nextEntries: wire((id: number) => nextPage<WireWalEntry>(id)),
    /** The client is done with iterator `id` (it may be waiting: a following tail). */
    release: wire(async (id: number) => release(id)),
    /** The client's signal `id` aborted. */
    abortSignal: wire(async (id: number) => signals.get(id)?.abort()),

    sync: wire(() => need().sync()),
    forceSealActive: wire(() => need().forceSealActive()),
    waitForFlushDrain: wire((signal?: WireSignal) => withSignal(signal, (s) => need().waitForFlushDrain({ signal: s }))),
    /**
     * The stats snapshot now (for the client's first `stats()`, or when it has no recent
     * publication); from then on this connection publishes snapshots as they change.
     */
    stats: wire(async (): Promise<StatsSnapshot> => {
      const s = need();
      startStats();
      return snapshotFor(s);
    }),
    memtableStats: wire(() => need().memtableStats()),
    backpressureStats: wire(() => need().backpressureStats()),
    compactionStats: wire(() => need().compactionStats()),
    readStats: wire(() => need().readStats()),
    compact: wire((signal?: WireSignal) => withSignal(signal, (s) => need().compact({ signal: s }))),
    walStats: wire(() => need().walStats()),
    writeStats: wire(() => need().writeStats()),
    storageStats: wire(() => need().storageStats()),
    metrics: wire(() => need().metrics()),
    markConsumed: wire((position: number) => need().markConsumed(position)),
    schemaInfo: wire(async (): Promise<WireSchemaInfo> => {
      const info = await need().schemaInfo();
      return {
        ...info,
        schema: schemaToWire(info.schema),
        versions: info.versions.map((v) => ({ ...v, schema: schemaToWire(v.schema) })),
      };
    }),

    close: wire(async () => {
      tabs?.stopAccepting();
      stopStats();
      try {
        await own()?.close();
      } finally {
        releaseAll();
        tabs?.stop();
      }
    }),
    abort: wire(async () => {
      tabs?.stopAccepting();
      stopStats();
      releaseAll();
      await own()?.abort();
      tabs?.stop();
    }),
    /** The client is gone for good: abort whatever is still open and drop the lifetime lock. */
    detach: wire(async () => {
      tabs?.stopAccepting();
      stopStats();
      releaseAll();
      await own()?.abort();
      tabs?.stop();
      lifetime.release();
    }),
  };
}
