// The wire between MemWalClient (main thread) and the worker host, types only. Calls are comlink
// calls on a MessagePort of their own; the host's API type is derived from its implementation.

import type { WireError } from '../util/errors.js';
import type { MemWalOptions } from '../engine/options.js';
import type { StatsSnapshot, WriterState } from '../metrics/stats.js';
import type { SchemaChange, SchemaReset } from '../engine/memwal.js';
import type { SchemaInfo, SchemaVersionInfo } from '../engine/api.js';
import type { QueryFilter } from '../data/index-keys.js';
import type { QueryOptions } from '../engine/query.js';
import type { NearestOptions } from '../engine/nearest.js';
import type { SearchOptions } from '../engine/search.js';
import type { makeHostApi } from './host.js';
import type { TabMethod } from './tabs/routes.js';

/** Every method the host answers, exactly as `makeHostApi` implements it (client and host cannot drift). */
export type HostApi = ReturnType<typeof makeHostApi>;

/** The storage layouts a client may name; an adapter object cannot be posted to a worker. */
export type WireStorage = 'opfs' | 'indexeddb' | 'memory';

/**
 * Open options as posted: everything but the schema (sent as plain data), the logger (warnings
 * come back as events) and the storage adapter object.
 */
export type WireOpenOptions = Omit<MemWalOptions, 'schema' | 'storage' | 'logger'> & {
  schema: WireSchema;
  storage?: WireStorage;
};

/**
 * An Arrow type as plain data: apache-arrow's `Type` id and the type's own parameters
 * (`bitWidth`, `isSigned`, `precision`, `unit`, `timezone`, `byteWidth`, `listSize`, `mode`,
 * `typeIds`, `keysSorted`, `scale`, `id`, `isOrdered`; `dictionary`/`indices` as types, `children`
 * as fields). The main thread writes it without Arrow's classes; the other side rebuilds the type.
 */
export interface WireType {
  typeId: number;
  children?: WireField[];
  [parameter: string]: unknown;
}

export interface WireField {
  name: string;
  nullable: boolean;
  type: WireType;
  metadata: [string, string][];
}

/** An Arrow schema as plain data (see WireType). */
export interface WireSchema {
  fields: WireField[];
  metadata: [string, string][];
}

/**
 * Arrow data as its own buffers: the schema as plain data and each batch's column data
 * (`WireColumnData`), so neither side needs Arrow's IPC code. Every buffer is a copy in an
 * `ArrayBuffer` of its own, in the message's transfer list (it moves instead of being cloned).
 * `kind` restores a RecordBatch or a Table on the other side.
 */
export interface WireArrow {
  kind: 'table' | 'batch';
  schema: WireSchema;
  /** Each batch's struct data (its children are the columns). */
  batches: WireColumnData[];
}

/**
 * One apache-arrow `Data` node without its type (the schema gives it): offset, length, null
 * count, the buffers in apache-arrow's order (value offsets, values, validity bitmap, type ids),
 * a view type's variadic buffers, its children and a dictionary's chunks.
 */
export interface WireColumnData {
  offset: number;
  length: number;
  nullCount: number;
  buffers: (ArrayBufferView | undefined)[];
  variadic: Uint8Array[];
  children: WireColumnData[];
  dictionary?: WireColumnData[];
}

/**
 * A put's plain rows as the page built them (client-rows.ts): the store's columns by name,
 * without their types (the worker has the store's schema) and without an object a column.
 * `buffers` holds three a column, in apache-arrow's order: value offsets (variable-width
 * columns, else undefined), values, validity bitmap (empty or undefined without nulls), each in
 * an `ArrayBuffer` of its own, transferred. The worker checks their shape before it reads them
 * (columns-wire.ts, `decodeColumns`).
 */
export interface WireColumns {
  kind: 'columns';
  /** Rows in the put (at least one). */
  length: number;
  /** Each column's name (the worker takes its type from the store's schema). */
  names: string[];
  /** Each column's null count. */
  nullCounts: number[];
  buffers: (ArrayBufferView | undefined)[];
}

/** Put / delete input: Arrow as its buffers (WireArrow), a put's rows built on the page (WireColumns), other rows structured-cloned. */
export type WireData = WireArrow | WireColumns | Record<string, unknown>[];

/** An `AbortSignal` as a message: `id` names it in later `abortSignal(id)` calls. */
export interface WireSignal {
  id: number;
  /** Already aborted when the call was made. */
  aborted: boolean;
}

/**
 * A `MemWalError` as a host call throws it across the port (comlink keeps only the `message` of
 * an Error), and as a leader tab answers a failed call: the error's WireError (util/errors.ts),
 * under a key no other thrown value has.
 */
export interface HostError {
  memwalError: WireError;
}

/** One `tail` entry on the wire. */
export interface WireWalEntry {
  position: number;
  epoch: number;
  data: WireArrow;
}

/** One page of a worker-side iterator: the client asks for the next page when it needs it. */
export interface Page<T> {
  items: T[];
  /** The worker-side iterator has ended and was released. */
  done: boolean;
}

/** Answer of the handshake: the host holds the connection's lifetime lock (if it has Web Locks). */
export interface Hello {
  lifetimeLock: boolean;
}

/**
 * A `watch` spec as posted (`WatchSpec`): keys as plain objects, `scan`'s options, a query's or
 * count's index with its options. `id` names the
 * watch in its events and in `unwatch`; ids are unique in the page (several clients of one page
 * may share a connection: realm.ts).
 */
export type WireWatchSpec =
  | { get: Record<string, unknown> }
  | { getMany: Record<string, unknown>[] }
  | { scan: { columns?: string[] } }
  | ({ query: string } & QueryOptions)
  | ({ count: string } & QueryFilter)
  | ({ nearest: string; vector: number[] | Float32Array } & NearestOptions)
  | ({ search: string; text: string } & SearchOptions);

/** Host -> client, posted on the connection port beside comlink's replies (same order). */
export type HostEvent =
  | { memwalEvent: 'state'; state: WriterState }
  /** A watch's new result (`scan`: a WireArrow table, transferred), reflecting at least durable position `position`. */
  | { memwalEvent: 'watch'; id: number; position: number; value: unknown }
  /** A watch's read failed (`final`: the watch stopped). */
  | { memwalEvent: 'watch-error'; id: number; error: WireError; final: boolean }
  | { memwalEvent: 'warn'; message: string; details: unknown[] }
  /** A stats snapshot the host published (host.ts, SPEC §15.3): the client's `stats()` answers from the newest. */
  | { memwalEvent: 'stats'; stats: StatsSnapshot }
  | ({ memwalEvent: 'schema-reset' } & SchemaReset)
  | { memwalEvent: 'schema-change'; change: SchemaChange };

/** `schemaInfo()` as posted: its schemas as plain data. */
export type WireSchemaInfo = Omit<SchemaInfo, 'schema' | 'versions'> & {
  schema: WireSchema;
  versions: (Omit<SchemaVersionInfo, 'schema'> & { schema: WireSchema })[];
};

/** Client -> worker scope: start a connection on `port`; the host holds `lockName` while it lives. */
export interface ConnectMessage {
  memwal: 'connect';
  port: MessagePort;
  /** Web Lock the host holds for the connection's lifetime (undefined: no Web Locks here). */
  lockName: string | undefined;
  /**
   * The store the client is about to open: the host gets its storage ready (starts the browser
   * layouts' I/O worker) at once, while the handshake and the open message are on their way.
   */
  prepare?: { name: string; storage: WireStorage | undefined };
}

/** Worker scope -> client: posted when `hostMemWal()` starts listening (a late host). */
export interface HostReadyMessage {
  memwal: 'host-ready';
}

// ------------------------------------------------------------------ tabs: 'share' (tabs/)
// Channel and lock names are in tabs/names.ts; which host methods a tab may call, in tabs/routes.ts. A leader is one term of one tab's worker hosting
// the store; `leader` ids name terms, so a message of an earlier term is never taken for a later.

/** On the store's control channel, which every sharing tab and the leader's worker listen to. */
export type TabControlMessage =
  /** The leader of this term is serving (sent when it starts, and again on every `hello`). */
  | { memwalTabs: 'leader'; leader: string }
  /** A tab looking for the leader: the leader opens the tab's channel and answers `welcome` there. */
  | { memwalTabs: 'hello'; tab: string }
  /** The leader of this term accepts no more calls (it is closing or handing over). */
  | { memwalTabs: 'resign'; leader: string };

/** Tab -> leader, on the tab's own channel. */
export type TabRequest =
  | {
      memwalTabs: 'call';
      /** The term this call is meant for; another leader ignores it. */
      leader: string;
      /** Unique per tab, increasing. */
      id: number;
      /** A host method a tab may call (tabs/routes.ts), with its arguments. */
      method: TabMethod;
      args: unknown[];
      /** Wall-clock ms (Date.now()) after which the leader must not accept the call. */
      deadline: number;
      /** The lowest id the tab still waits on: the leader forgets older ids. */
      oldest: number;
    }
  /** The tab is done with this store (its iterators can go). */
  | { memwalTabs: 'bye'; leader: string };

/** Leader -> tab, on the tab's own channel. */
export type TabReply =
  | { memwalTabs: 'welcome'; leader: string }
  /** The leader took call `id`: from now on only it can answer it. */
  | { memwalTabs: 'accepted'; leader: string; id: number }
  | { memwalTabs: 'result'; leader: string; id: number; value: unknown }
  | { memwalTabs: 'error'; leader: string; id: number; error: HostError }
  | { memwalTabs: 'event'; leader: string; event: HostEvent };
