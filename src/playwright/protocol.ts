// memwal/playwright's wire, types only: what the test (Node) reads from the init script's
// registry in each page, what it asks the kit's worker, and the names they share.

import type { FaultOp } from '../testing/fault-controller.js';

/** The ops a test may fail or hold: every `FaultInjectingStorage` op. */
export type KitFaultOp = FaultOp;

/**
 * The error an injected failure rejects with: `'IOError'` (default: a `MemWalError`) or
 * `'QuotaExceeded'` (a `DOMException` named `QuotaExceededError`, as a full disk throws it).
 */
export type KitFaultError = 'IOError' | 'QuotaExceeded';

/** One `openMemWal` call the init script saw in a page, as the test reads it. */
export interface OpenRecord {
  /** Numbers the opens of this document (1, 2, ...). */
  id: number;
  /** The store's `name` option. */
  name: string;
  /** The `tabs` option (`'exclusive'` when absent). */
  tabs: string;
  /** The store is hosted by the kit's worker (faults, crash). */
  kitHosted: boolean;
  /** Why the kit was asked to host it but did not (the app passes its own `worker`). */
  notHosted?: string;
  /**
   * The client's writer state; before openMemWal resolves the last state it reported
   * (`'waiting-for-lock'`), or `'opening'`; `'failed'` when it rejected.
   */
  state: string;
  /** Every state the client reported, in order. */
  states: string[];
  /** `role()` of the client where it has one (`tabs: 'share'`). */
  role?: string;
  /** How openMemWal rejected. */
  error?: { code: string; message: string };
}

/** A call's outcome in the page, with the `MemWalError` code kept (`page.evaluate` loses it). */
export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

/** What the init script asks the test through its binding when the page opens a store. */
export interface OpenQuery {
  name: string;
}

/** The test's answer: host this store in the kit's worker. */
export interface OpenAnswer {
  faults: boolean;
}

/** What the init script needs to know, fixed per browser context. */
export interface PageHookConfig {
  /** The kit's token (32 hex digits), also part of `workerPath`. */
  token: string;
  /** Name of the binding the init script asks at each open (`OpenQuery` → `OpenAnswer`). */
  binding: string;
  /** Path of the kit's worker script on the page's origin, served by the kit's route. */
  workerPath: string;
}

/** The controls of the kit's worker, at `globalThis[Symbol.for('memwal.playwright.worker')]`. */
export interface KitWorkerControls {
  /** Names of the stores whose writer this worker holds now. */
  hosting(): string[];
  failNext(op: KitFaultOp, count: number, error?: KitFaultError): void;
  failAfter(op: KitFaultOp, count: number, error?: KitFaultError): void;
  /** Hold `op`; returns the id `release(id)` takes. */
  hold(op: KitFaultOp): number;
  release(id: number): void;
  clearFaults(): void;
  /** Storage operations counted so far, over every adapter of this worker. */
  opCount(): number;
  /** End this worker at the next task, as a crash ends it: no close, no flush, no goodbye. */
  crash(): void;
}
