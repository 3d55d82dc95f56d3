// The wire between MemWalClient (main thread) and the worker host, types only. Calls are comlink
// calls on a MessagePort of their own; the host's API type is derived from its implementation.

import type { MemWalErrorCode } from '../errors.js';
import type { MemWalOptions } from '../options.js';
import type { WriterState } from '../core/stats.js';
import type { makeHostApi } from './host.js';

/** Every method the host answers, exactly as `makeHostApi` implements it (client and host cannot drift). */
export type HostApi = ReturnType<typeof makeHostApi>;

/** The storage layouts a client may name; an adapter object cannot be posted to a worker. */
export type WireStorage = 'opfs' | 'indexeddb' | 'memory';

/**
 * Open options as posted: everything but the schema (sent as Arrow IPC bytes), the logger
 * (warnings come back as events) and the storage adapter object.
 */
export type WireOpenOptions = Omit<MemWalOptions, 'schema' | 'storage' | 'logger'> & {
  /** The schema as an Arrow IPC stream with no record batch. */
  schemaIpc: Uint8Array;
  storage?: WireStorage;
};

/**
 * Arrow data as an Arrow IPC stream. Its `ArrayBuffer` is in the message's transfer list, so it
 * moves instead of being cloned. `kind` restores a RecordBatch or a Table on the other side.
 */
export interface WireArrow {
  kind: 'table' | 'batch';
  ipc: Uint8Array;
}

/** Put / delete input: Arrow as IPC bytes, plain rows structured-cloned. */
export type WireData = WireArrow | Record<string, unknown>[];

/** An `AbortSignal` as a message: `id` names it in later `abortSignal(id)` calls. */
export interface WireSignal {
  id: number;
  /** Already aborted when the call was made. */
  aborted: boolean;
}

/** A `MemWalError` as thrown across the port (comlink only keeps `message` of an Error). */
export interface WireError {
  memwalError: { code: MemWalErrorCode; message: string };
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

/** Host -> client, posted on the connection port beside comlink's replies (same order). */
export type HostEvent = { memwalEvent: 'state'; state: WriterState } | { memwalEvent: 'warn'; message: string; details: unknown[] };

/** Client -> worker scope: start a connection on `port`; the host holds `lockName` while it lives. */
export interface ConnectMessage {
  memwal: 'connect';
  port: MessagePort;
  /** Web Lock the host holds for the connection's lifetime (undefined: no Web Locks here). */
  lockName: string | undefined;
}

/** Worker scope -> client: posted when `hostMemWal()` starts listening (a late host). */
export interface HostReadyMessage {
  memwal: 'host-ready';
}
