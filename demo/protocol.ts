// Types shared by the demo page and its worker: the control channel beside memwal's own
// connection (fault buttons, reset), and the demo worker's to its I/O worker (demo-io.worker.ts).

import type { FaultOp } from '../src/testing/index.js';

/** Storage the page asks for: the browser default (OPFS, else IndexedDB) or one layout. */
export type DemoStorage = 'auto' | 'opfs' | 'indexeddb';

/** What an injected failure throws: memwal's default IOError or a browser QuotaExceededError. */
export type FaultKind = 'io' | 'quota';

/** The worker's control API (comlink over a MessagePort of its own). */
export interface DemoControl {
  /** Layout of the storage the last open used ('opfs' | 'indexeddb'), undefined before any. */
  layout(): string | undefined;
  /** `FaultInjectingStorage.failNext(op, count, error)` for each op, on the current store's storage. */
  failNext(ops: FaultOp[], count: number, kind: FaultKind): Promise<void>;
  /** Fail the next `count` flush attempts (table writes other than compaction outputs) with `IOError`. */
  failFlushes(count: number): Promise<void>;
  /** Fail the next `count` compactions: their output writes (`c…` table files) throw `IOError`. */
  failCompactions(count: number): Promise<void>;
  /** Make every compaction output write wait `ms` first; 0 turns it off. */
  slowCompactions(ms: number): Promise<void>;
  /** Drop every pending injected failure and the compaction delay. */
  clearFaults(): Promise<void>;
  /** `MemWal.destroy(name)` on that storage (pending faults cleared first). Rejects while open. */
  destroy(name: string, storage: DemoStorage): Promise<void>;
}

/** The demo worker's first message to its I/O worker: the port its fault stack is armed over. */
export interface FaultsPort {
  demo: 'faults';
  port: MessagePort;
}

/** True for a `FaultsPort` message. */
export function isFaultsPort(data: unknown): data is FaultsPort {
  return (data as Partial<FaultsPort> | null)?.demo === 'faults';
}
