// Types only: what the client e2e page (index.html) exposes to Playwright as `window.mw`, and the
// control messages its fault worker obeys.

export type Layout = 'opfs' | 'indexeddb';

/**
 * Which worker hosts the store: openMemWal's default one, one the page starts (so it can
 * terminate it), the fault worker, or the fault worker script started by openMemWal (`workerUrl`).
 */
export type WorkerKind = 'default' | 'own' | 'fault' | 'url';

export interface OpenRequest {
  name: string;
  storage?: Layout;
  worker?: WorkerKind;
  /** Keyed by `id` (upserts) or append-only (duplicates visible). */
  keyed?: boolean;
  /** Any further MemWalOptions (numbers, booleans, retry objects). */
  options?: Record<string, unknown>;
  /** A worker script for openMemWal's `workerUrl` (relative to the page). */
  workerUrl?: string;
}

/** A call's outcome with the MemWalError code kept (page.evaluate loses error fields). */
export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

export type FaultOp = 'walAppend' | 'tableWrite' | 'manifestCommit';

export type FaultControl =
  | { action: 'hold'; op: FaultOp }
  | { action: 'release'; op: FaultOp }
  | { action: 'failNext'; op: FaultOp; count: number; quota?: boolean }
  | { action: 'clear' };

/** Options of a write storm: puts of `batch` rows with fresh ids, `payloadBytes` of text each. */
export interface StormOptions {
  firstId: number;
  batch: number;
  payloadBytes: number;
  /** Puts in flight at once. */
  concurrency: number;
  /** Also report each ack through `window.__ack(ids)` (a test binding), before the page can close. */
  reportAcks?: boolean;
  /** Wait this long before each put (a steady load instead of a flat-out one). */
  pauseMs?: number;
}

export interface StormReport {
  acked: number[];
  /** Codes of rejected puts, counted. */
  errors: Record<string, number>;
  puts: number;
}

/** One acknowledged probe put: its row id, WAL position, and when it was acknowledged (Date.now()). */
export interface ProbeAck {
  id: number;
  position: number;
  atMs: number;
}

export interface ProbeReport {
  acks: ProbeAck[];
  errors: Record<string, number>;
}

export interface GetManyReport {
  ids: (number | null)[];
  sent: number;
  received: number;
}

export interface ScanReport {
  rows: number;
  /** How often each id occurs, for ids occurring other than once. */
  duplicates: Record<number, number>;
  ids: number[];
}

/** `window.mw` of client/index.html. Client ids name the stores this page opened. */
export interface ClientHarness {
  open(req: OpenRequest): Promise<Outcome<number>>;
  /** Start an open and return at once; `settled(op)` gives its outcome (the client id). */
  startOpen(req: OpenRequest): number;
  /** State changes of the open started as `op` so far (it may still be waiting). */
  openStates(op: number): string[];
  /** Every state change the client reported, in order (open's hook included). */
  states(client: number): string[];
  /** Every role change the client reported through `onRoleChange` since it opened, in order. */
  roleChanges(client: number): string[];
  put(client: number, firstId: number, rows: number, payloadBytes?: number): Promise<Outcome<unknown>>;
  /** Start a put and return at once; `settled(op)` answers later. */
  startPut(client: number, firstId: number, rows: number, payloadBytes?: number): number;
  settled(op: number, waitMs?: number): Promise<Outcome<unknown> | 'pending'>;
  /**
   * Stats from the page under load (SPEC §15.3): `puts` puts of `rowsPerPut` rows by `writers`
   * concurrent writers while a sampler times `stats()` (pausing 2 ms between calls) and an
   * `onStats` listener (every 100 ms) collects pushes; then 20 puts one by one, each followed by
   * `stats()`, counting those whose `write.putCount` misses a put already resolved.
   */
  statsUnderPuts(client: number, writers: number, puts: number, rowsPerPut: number): Promise<Outcome<StatsUnderPuts>>;
  /** Stats, metrics and other argument-less calls: `memtableStats`, `metrics`, `sync`, `close`, ... */
  call(client: number, method: string): Promise<Outcome<unknown>>;
  scan(client: number): Promise<Outcome<ScanReport>>;
  /**
   * `getMany` of these ids: the ids of the rows answered (null for absent), and how many
   * messages the page posted and received on MessagePorts during the call.
   */
  getMany(client: number, ids: unknown[]): Promise<Outcome<GetManyReport>>;
  storm(client: number, opts: StormOptions): void;
  stopStorm(client: number): Promise<StormReport>;
  /** Acked ids of the running storm so far. */
  acked(client: number): number[];
  /**
   * Start one-row puts one after another, `pauseMs` apart (ids from `firstId`), each ack timed;
   * also reported through `window.__ack`.
   */
  probe(client: number, firstId: number, pauseMs?: number): void;
  stopProbe(client: number): Promise<ProbeReport>;
  /** `[position, epoch]` of every WAL entry still retained (tail from the oldest retained to the end). */
  epochs(client: number): Promise<Outcome<[number, number][]>>;
  fault(client: number, control: FaultControl): void;
  /** Terminate the worker the page started for this client ('own' or 'fault'). */
  terminate(client: number): void;
  persisted(client: number): boolean | undefined;
  /** destroyMemWal(name, { storage }) from the page. */
  destroy(name: string, storage?: Layout): Promise<Outcome<void>>;
  /** MemWal.destroy(name, { storage }) on the page's own thread (no worker). */
  destroyHere(name: string, storage?: Layout): Promise<Outcome<void>>;
  /** Warnings the client's logger received (the worker's warnings come back to the page). */
  warnings(client: number): string[];
  /** Fire the page-lifecycle event the client listens to (`visibilitychange` with the page shown as hidden). */
  hide(event: 'pagehide' | 'visibilitychange'): void;
}

/** What `statsUnderPuts` measured. */
export interface StatsUnderPuts {
  /** Each timed `stats()` call, ms (performance.now on the page). */
  latenciesMs: number[];
  /** `onStats` pushes received. */
  pushes: number;
  /** Pushes whose parts disagreed (`unflushedBytes` not `estimatedBytes + frozenBytes`). */
  inconsistentPushes: number;
  /** Of the 20 put-then-stats steps, those whose stats missed a resolved put. */
  staleAfterReply: number;
  /** Messages the page posted to the worker during 200 `stats()` calls after the load. */
  postedDuringStats: number;
}
