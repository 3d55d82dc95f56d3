// The demo's fault stack over one browser adapter: TableWriteFaults (failures of flushes only or
// compactions only, slow compactions) around FaultInjectingStorage (failures by operation) around
// the adapter. It sits where the adapter's stores do their I/O: in the demo's I/O worker
// (demo-io.worker.ts), under memwal's I/O plane, so that flushes and compactions are still built
// there and every table they write passes the faults; on the demo worker's own thread only where
// no I/O worker can be started.

import type { StorageAdapter } from '../src/index.js';
import { FaultInjectingStorage, quotaExceededError, type FaultOp } from '../src/testing/index.js';
import { TableWriteFaults } from './table-write-faults.js';
import type { FaultKind } from './protocol.js';

/** What the fault buttons do to one stack (called across a MessagePort where the stack is in the I/O worker). */
export interface StackFaults {
  /** `FaultInjectingStorage.failNext(op, count, error)` for each op. */
  failNext(ops: FaultOp[], count: number, kind: FaultKind): void;
  /** Fail the next `count` flush attempts (table writes other than compaction outputs) with `IOError`. */
  failFlushes(count: number): void;
  /** Fail the next `count` compactions: their output writes (`c…` table files) throw `IOError`. */
  failCompactions(count: number): void;
  /** Make every compaction output write wait `ms` first; 0 turns it off. */
  slowCompactions(ms: number): void;
  /** Drop every pending injected failure and the compaction delay. */
  clear(): void;
}

/** The stack over `inner`: `adapter` is what stores open on. */
export class FaultStack implements StackFaults {
  readonly adapter: StorageAdapter;
  private readonly faults: FaultInjectingStorage;
  private readonly tables: TableWriteFaults;

  constructor(inner: StorageAdapter) {
    this.faults = new FaultInjectingStorage(inner);
    this.tables = new TableWriteFaults(this.faults);
    this.adapter = this.tables;
  }

  failNext(ops: FaultOp[], count: number, kind: FaultKind): void {
    for (const op of ops) this.faults.failNext(op, count, kind === 'quota' ? quotaExceededError() : undefined);
  }

  failFlushes(count: number): void {
    this.tables.failFlushes(count);
  }

  failCompactions(count: number): void {
    this.tables.failCompactions(count);
  }

  slowCompactions(ms: number): void {
    this.tables.slowCompactions(ms);
  }

  clear(): void {
    this.faults.clearFaults();
    this.tables.clear();
  }
}
