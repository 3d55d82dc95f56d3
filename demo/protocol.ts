// Types shared by the demo page and its worker: the control channel beside memwal's own
// connection (fault buttons, reset). Types only.

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
  failNext(ops: FaultOp[], count: number, kind: FaultKind): void;
  /** Fail the next `count` flush attempts (table writes other than compaction outputs) with `IOError`. */
  failFlushes(count: number): void;
  /** Fail the next `count` compactions: their output writes (`c…` table files) throw `IOError`. */
  failCompactions(count: number): void;
  /** Make every compaction output write wait `ms` first; 0 turns it off. */
  slowCompactions(ms: number): void;
  /** Drop every pending injected failure and the compaction delay. */
  clearFaults(): void;
  /** `MemWal.destroy(name)` on that storage (pending faults cleared first). Rejects while open. */
  destroy(name: string, storage: DemoStorage): Promise<void>;
}
