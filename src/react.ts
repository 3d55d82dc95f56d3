// memwal/react: React hooks over `watch` and the stats, and a store opened once per page that
// survives StrictMode and HMR (docs/react.md). React (19) is an optional peer dependency: only this
// entry imports it. Safe to import on the server (SSR): nothing here runs at import, hooks do
// nothing before their effects run (effects never run on the server), and a store from
// `memwalStore` opens on first use in the browser.

import { useEffect, useState } from 'react';
import type { Schema } from 'apache-arrow';
import type { RowsOf, RowsParam, SchemaColumn, UntypedRows } from './data/define-schema.js';
import type { WatchOptions, WatchResult, WatchSpec } from './engine/api.js';
import type { MemWal, OpenHooks } from './engine/memwal.js';
import type {
  BackpressureStats,
  MemTableStats,
  StatsSnapshot as FullStatsSnapshot,
  StorageStats,
  WalStats,
  WriteStats,
} from './metrics/stats.js';
import type { MemWalClient } from './rpc/client.js';
import { openMemWal, type OpenMemWalOptions, type TypedOpenMemWalOptions } from './rpc/open-memwal.js';

/** A store the hooks take: a page's client or an in-process `MemWal` (their row types inferred). */
export type MemWalDb<R extends RowsParam = UntypedRows> = MemWalClient<R> | MemWal<R>;

/** A spec as a stable string: a new object with the same read does not re-subscribe. */
function specKey(spec: unknown): string {
  return JSON.stringify(spec, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
}

/**
 * The live result of the read `spec` names (`db.watch(spec)`): `undefined` until the first result
 * arrives (and while `db` is undefined, e.g. still opening), then each new result as a commit —
 * from this tab or another — alters it. A new `spec` object naming the same read keeps the
 * subscription; another read, or another `db`, starts again from `undefined`. Unsubscribes on
 * unmount. `opts.onError` as `watch`'s (a failed read keeps the last result).
 */
export function useQuery<R extends RowsParam, S extends WatchSpec<R>>(
  db: MemWalDb<R> | undefined | null,
  spec: S,
  opts: Pick<WatchOptions, 'onError'> = {},
): WatchResult<R, S> | undefined {
  const key = specKey(spec);
  const [state, setState] = useState<{ db: unknown; key: string; value: WatchResult<R, S> } | undefined>(undefined);
  const onError = opts.onError;
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for `spec` (a new object each render)
  useEffect(() => {
    if (!db) return undefined;
    return db.watch(spec, (value) => setState({ db, key, value }), { onError });
  }, [db, key, onError]);
  return state && state.db === db && state.key === key ? state.value : undefined;
}

/** What `useStats` returns: the stats as the accessors answer them. */
export interface StatsSnapshot {
  /** Undefined in WAL-only mode. */
  memtable: MemTableStats | undefined;
  backpressure: BackpressureStats;
  wal: WalStats;
  write: WriteStats;
  storage: StorageStats;
  /** Active plus frozen memtable bytes not yet flushed (WAL-only mode: bytes accepted and not yet appended). */
  unflushedBytes: number;
}

/** The part of a store's one stats snapshot (`onStats`, SPEC §15.3) that `useStats` shows. */
function shown(s: FullStatsSnapshot): StatsSnapshot {
  return {
    memtable: s.memtable,
    backpressure: s.backpressure,
    wal: s.wal,
    write: s.write,
    storage: s.storage,
    unflushedBytes: s.unflushedBytes,
  };
}

/**
 * The store's stats, from its one snapshot (`onStats`): now and every `intervalMs` (default 1000)
 * while mounted; `undefined` until the first (and while `db` is undefined). When the store closes
 * the pushes end and the last value stays.
 */
export function useStats<R extends RowsParam>(
  db: MemWalDb<R> | undefined | null,
  opts: { intervalMs?: number } = {},
): StatsSnapshot | undefined {
  const intervalMs = opts.intervalMs ?? 1000;
  const [state, setState] = useState<{ db: unknown; stats: StatsSnapshot } | undefined>(undefined);
  useEffect(() => {
    if (!db) return undefined;
    return db.onStats((stats) => setState({ db, stats: shown(stats) }), { intervalMs });
  }, [db, intervalMs]);
  return state && state.db === db ? state.stats : undefined;
}

/** A store opened once per page (`memwalStore`). */
export interface MemWalStore<R extends RowsParam = UntypedRows> {
  /** The open client; opens the store on the first call (browser only: on the server it rejects `NotSupported`). */
  open(): Promise<MemWalClient<R>>;
  /** The client once open, else undefined (it does not start the open). For components: `useMemWal(store)`. */
  readonly current: MemWalClient<R> | undefined;
  /** Close this store handle (HMR: `import.meta.hot.dispose(() => store.close())`). The next `open()` opens anew. */
  close(): Promise<void>;
}

/**
 * A store opened once per page, for a module of its own: create it at module level, read it in
 * components with `useMemWal(store)`. It opens on first use, in the browser only (importing it on
 * the server opens nothing). StrictMode's double effects do not touch it (no effect opens or
 * closes it); an HMR re-run of its module creates a new one whose open joins the open store
 * (same-realm reopen) instead of waiting on its lock; give `import.meta.hot.dispose(() =>
 * store.close())` so the old handle lets go (docs/react.md).
 */
export function memwalStore<S extends Schema, K extends SchemaColumn<S> = never>(
  options: TypedOpenMemWalOptions<S, K>,
  hooks?: OpenHooks,
): MemWalStore<RowsOf<S, K>>;
export function memwalStore(options: OpenMemWalOptions, hooks?: OpenHooks): MemWalStore {
  let opening: Promise<MemWalClient> | undefined;
  let client: MemWalClient | undefined;
  const store: MemWalStore = {
    open() {
      opening ??= openMemWal(options as TypedOpenMemWalOptions<Schema, never>, hooks).then(
        (c) => (client = c),
        (e: unknown) => {
          opening = undefined; // a later open tries again
          throw e;
        },
      );
      return opening;
    },
    get current() {
      return client;
    },
    async close() {
      const p = opening;
      opening = undefined;
      client = undefined;
      const c = await p?.catch(() => undefined);
      await c?.close();
    },
  };
  return store;
}

/**
 * The client of `store` (`memwalStore`), `undefined` until it is open; opens it on mount. An
 * open that fails throws from the component on the next render (an error boundary shows it).
 */
export function useMemWal<R extends RowsParam>(store: MemWalStore<R>): MemWalClient<R> | undefined {
  const [state, setState] = useState<{ client?: MemWalClient<R>; error?: unknown }>({});
  useEffect(() => {
    let live = true;
    store.open().then(
      (client) => live && setState({ client }),
      (error: unknown) => live && setState({ error }),
    );
    return () => {
      live = false;
    };
  }, [store]);
  if (state.error !== undefined) throw state.error;
  return state.client ?? store.current;
}
