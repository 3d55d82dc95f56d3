// drain(): the writer side of scale-out (docs/scale-out.md). Follows a store's `tail`,
// ships runs of entries to a sink (in-process) or an HTTP endpoint (http.ts), and
// calls `markConsumed` only with the position the sink reported durable. Runtime-agnostic: no
// node:*, no DOM; runs in browser workers and pages, Node, Deno and Durable Objects.
//
// Guarantees (with a sink that applies exactly once per position, as LanceSink does):
//  (1) an entry is consumed (and may be removed by retention) only after the sink said it is
//      applied and durable;
//  (2) after a crash or abort of either side, a new drain starts at the sink's applied position
//      + 1, so nothing is skipped and whatever is re-sent is skipped by the sink;
//  (3) shipping never blocks the writer, and memory is bounded: the reader holds at most two
//      runs of entries (the one being shipped and the next), and `tail` one read buffer.

import { estimateBatchBytes } from '../data/size.js';
import type { MemWalApi, WalEntry } from '../engine/api.js';
import { Signal, backoffMs, nowMs, random } from '../util/schedule.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import { escapeLabelValue } from '../metrics/prometheus.js';
import type { Logger } from '../util/logger.js';
import { endpointUrl, httpTransport, storeIdOf, type Transport } from './http.js';
import { STORE_ID_PATTERN } from './wire.js';

/**
 * A destination that applies WAL entries exactly once per `(storeId, position)`. `LanceSink`
 * (`memwal/lance`) is one; a test double is another.
 */
export interface DrainSink {
  /**
   * Highest position of `storeId` applied and durable in the sink (0: none). `incarnation` is the
   * store's (`walStats().incarnation`; undefined if it keeps none): an incarnation newer than the
   * one the sink recorded for `storeId` (a store created again under the id: its positions start
   * at 1 again) answers 0; an older one rejects `InvalidArgument`.
   */
  appliedPosition(storeId: string, incarnation?: string): Promise<number>;
  /**
   * Apply consecutive entries of `storeId` (one schema) and resolve once they are durable, with
   * the highest position now applied. Entries at or below the applied position are skipped; a
   * first position beyond applied + 1 rejects `InvalidArgument` and changes nothing. A newer
   * `incarnation` than the recorded one replaces the old incarnation's rows and position (applied
   * position 0 before it); an older one rejects `InvalidArgument`.
   */
  apply(storeId: string, entries: readonly WalEntry[], incarnation?: string): Promise<{ appliedPosition: number }>;
}

/** Options of {@link drain}. Exactly one of `endpoint` and `sink`. */
export interface DrainOptions {
  /**
   * The store's id at the sink (the `store` label of the metrics too). Required with `sink`;
   * with `endpoint` it defaults to the endpoint's last path segment (`…/drain/events` → `events`).
   * 1-200 characters of `A-Z a-z 0-9 . _ -`.
   */
  storeId?: string;
  /** URL of the store's drain resource: `GET` answers the applied position, `POST` applies. */
  endpoint?: string;
  /** Bearer token sent as `authorization: Bearer …` to the endpoint. */
  token?: string;
  /** Extra request headers for the endpoint. */
  headers?: Record<string, string>;
  /** The `fetch` to use (a Durable Object's service binding, a test double). Default: global `fetch`. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** An in-process sink instead of an endpoint. */
  sink?: DrainSink;
  /**
   * Target size of one shipment (estimated Arrow bytes of its body: its entries', and 8 bytes a
   * row for the wire's position column). A shipment holds at least one entry and stops at the
   * first entry that would pass this size. Default 1 MiB.
   */
  batchBytes?: number;
  /** Stops the drain; `done` then resolves. */
  signal?: AbortSignal;
  /** Backoff after a failed shipment: base and cap in ms. Default 100 ms … 5 s. */
  retry?: { baseMs?: number; maxMs?: number };
  /**
   * How long one request to the endpoint may take, response body included, before it is
   * abandoned as `IOError` and retried (the sink applies each position once, so a shipment whose
   * answer was lost is safe to send again). Default 30 s.
   */
  requestTimeoutMs?: number;
  /**
   * Whether `drainStats().lastError` and the log may quote the `message` of an endpoint's error
   * answer (cut to printable characters, at most 160). Default true. Pass false where the
   * endpoint is configured at run time and the stats reach people who may not read what it
   * answers: the error then holds the status and memwal's own words only (docs/scale-out.md,
   * "Security").
   */
  quoteEndpointMessages?: boolean;
  /**
   * Where the drain reports its state changes — failing, recovered, stopped for good — one
   * line each (`warn`), at most one line per 30 s but the last; default `console`.
   */
  logger?: Logger;
}

/** Default {@link DrainOptions.batchBytes}: 1 MiB, a few hundred ms of a browser's write load. */
export const DEFAULT_DRAIN_BATCH_BYTES = 1024 * 1024;
/**
 * The reader stops pulling from `tail` once this many times `batchBytes` are queued: the run
 * being shipped and the next one, read ahead.
 */
const QUEUE_BATCHES = 2;
/** At most one log line per this many ms (but the last one: the drain's end is always logged). */
const LOG_INTERVAL_MS = 30_000;
const DEFAULT_RETRY = { baseMs: 100, maxMs: 5000 };
/** Default {@link DrainOptions.requestTimeoutMs}. */
export const DEFAULT_DRAIN_REQUEST_TIMEOUT_MS = 30_000;

/** Where a drain is: reading and shipping, waiting out a backoff, or ended. */
export type DrainState = 'starting' | 'running' | 'backoff' | 'stopped' | 'failed';

/** A snapshot of a drain (counters count from this `drain` call). */
export interface DrainStats {
  /** The store's id at the sink (the metrics' `store` label). */
  storeId: string;
  /** Where the drain is: `'running'`, `'backoff'` after a failure, `'stopped'`, `'failed'`. */
  state: DrainState;
  /** Highest position sent to the sink, whatever the reply (0: none yet). */
  shippedPosition: number;
  /** Highest position the sink reported applied and durable. */
  appliedPosition: number;
  /** Highest position passed to `markConsumed` successfully. */
  consumedPosition: number;
  /** Last position the store has assigned (`walStats().nextPosition - 1`) when this snapshot was taken. */
  headPosition: number;
  /** Entries the store holds that the sink has not applied: `headPosition - appliedPosition`. */
  lagEntries: number;
  /**
   * Estimated Arrow bytes of those entries: exact estimates for the ones read from `tail`, the
   * mean entry size for those not read yet. An estimate.
   */
  lagBytes: number;
  /** Shipments the sink applied. */
  shipments: number;
  /** Entries, rows and bytes in them (bytes: the wire body with an endpoint, estimated Arrow bytes with a sink). */
  shippedEntries: number;
  shippedRows: number;
  shippedBytes: number;
  /** Failed shipments and `markConsumed` calls (each retried). */
  failureCount: number;
  /** Failures since the last success. */
  consecutiveFailures: number;
  /**
   * The most recent failure, if any, retried or terminal (then `state` is `'failed'`). For an
   * endpoint's answer: its status, what the status means for a drain, and (unless
   * `quoteEndpointMessages` is false) a short quote of its message; never its body otherwise.
   */
  lastError: { code: string; message: string } | null;
}

/** A running drain. */
export interface DrainHandle {
  /** Current stats; reads the store's head position (never rejects: a closed store keeps the last one). */
  drainStats(): Promise<DrainStats>;
  /**
   * Prometheus text (format 0.0.4) with `wal_drain_lag_entries`, `wal_drain_lag_bytes`,
   * `wal_drain_applied_position`, `wal_drain_shipped_bytes_total`, `wal_drain_failures_total`,
   * each with HELP, TYPE and the `store` label. Append it to `store.metrics()`.
   */
  metrics(): Promise<string>;
  /** Resolves once the sink has applied `position` or beyond; rejects if the drain ends first. */
  waitForApplied(position: number, opts?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Stop (as the signal does) and wait for the loops to end; an answer in flight (of a sink or an
   * endpoint) is not waited for. Never rejects.
   */
  stop(): Promise<void>;
  /**
   * Settles when the drain ends: resolves when stopped (signal, `stop()`) or when the store
   * closed and everything read was shipped; rejects with a `MemWalError` on a terminal failure
   * (`InvalidArgument` for a request the sink refuses, `Truncated` when the store no longer
   * holds the sink's next position, the store's own error when it is poisoned).
   */
  done: Promise<void>;
}

interface Queued {
  entry: WalEntry;
  /** Estimated Arrow bytes of the entry. */
  bytes: number;
  /** What it adds to a shipment's body: its bytes and the wire's position column (8 bytes a row). */
  wireBytes: number;
}

/**
 * Drain `store` into a sink or an endpoint until stopped: start at the sink's applied position
 * + 1, follow `tail(from, { follow: true })`, ship runs of about `batchBytes`, and
 * `markConsumed` what the sink reports durable. Failures back off and retry; refusals end the
 * drain (see `done`). Throws `InvalidArgument` at once for bad options. Any runtime.
 */
export function drain(store: MemWalApi, options: DrainOptions): DrainHandle {
  return new Drainer(store, options).handle();
}

class Drainer {
  private readonly storeId: string;
  private readonly transport: Transport;
  private readonly batchBytes: number;
  private readonly retry: { baseMs: number; maxMs: number };
  private readonly logger: Logger;
  private readonly stopper = new AbortController();
  /** Notified on every state change the loops or waiters care about. */
  private readonly changed = new Signal();

  private state: DrainState = 'starting';
  private queue: Queued[] = [];
  private queuedBytes = 0;
  private readerEnded = false;
  private readerError: unknown;
  private ended = false;
  private endError: MemWalError | undefined;
  /** Last position read from tail and the summed bytes of entries read. */
  private readPosition = 0;
  private readEntries = 0;
  private readBytes = 0;
  private headPosition = 0;
  /** The store's incarnation id, sent with every request (read at the start). */
  private incarnation: string | undefined;
  private readonly stats = {
    shippedPosition: 0,
    appliedPosition: 0,
    consumedPosition: 0,
    shipments: 0,
    shippedEntries: 0,
    shippedRows: 0,
    shippedBytes: 0,
    failureCount: 0,
    consecutiveFailures: 0,
    lastError: null as { code: string; message: string } | null,
  };
  private readonly done: Promise<void>;

  constructor(
    private readonly store: MemWalApi,
    o: DrainOptions,
  ) {
    if ((o.endpoint === undefined) === (o.sink === undefined)) {
      throw new MemWalError('InvalidArgument', 'drain: pass exactly one of endpoint and sink');
    }
    const url = o.endpoint !== undefined ? endpointUrl(o.endpoint) : undefined;
    const storeId = o.storeId ?? (url && storeIdOf(url));
    if (storeId === undefined || !STORE_ID_PATTERN.test(storeId)) {
      throw new MemWalError('InvalidArgument', `drain: storeId must be 1-200 characters of A-Z a-z 0-9 . _ -, got ${storeId}`);
    }
    this.storeId = storeId;
    this.batchBytes = o.batchBytes ?? DEFAULT_DRAIN_BATCH_BYTES;
    if (!Number.isFinite(this.batchBytes) || this.batchBytes < 1) {
      throw new MemWalError('InvalidArgument', `drain: batchBytes must be >= 1, got ${o.batchBytes}`);
    }
    const timeout = o.requestTimeoutMs ?? DEFAULT_DRAIN_REQUEST_TIMEOUT_MS;
    if (!Number.isFinite(timeout) || timeout < 1) {
      throw new MemWalError('InvalidArgument', `drain: requestTimeoutMs must be >= 1, got ${o.requestTimeoutMs}`);
    }
    this.retry = { ...DEFAULT_RETRY, ...o.retry };
    this.logger = o.logger ?? console;
    this.transport = o.sink
      ? sinkTransport(o.sink, storeId)
      : httpTransport(url!.href, { ...o, requestTimeoutMs: timeout, quoteEndpointMessages: o.quoteEndpointMessages ?? true });
    if (o.signal?.aborted) this.stopper.abort();
    o.signal?.addEventListener('abort', () => this.stopper.abort(), { once: true });
    this.stopper.signal.addEventListener('abort', () => this.changed.notify(), { once: true });
    this.done = this.run();
    this.done.catch(() => {}); // observed through handle().done
  }

  handle(): DrainHandle {
    return {
      drainStats: () => this.snapshot(),
      metrics: async () => renderDrainMetrics(await this.snapshot()),
      waitForApplied: (position, opts) => this.waitForApplied(position, opts?.signal),
      stop: async () => {
        this.stopper.abort();
        await this.done.catch(() => {});
      },
      done: this.done,
    };
  }

  private get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  // ------------------------------------------------------------------ the two loops

  private async run(): Promise<void> {
    try {
      const from = await this.start();
      if (from === undefined) return;
      this.state = 'running';
      const reader = this.read(from);
      await this.ship();
      this.stopper.abort(); // the shipper ended: stop reading too
      await reader;
      if (this.readerError !== undefined) throw this.readerError; // set only when tail failed before a stop
    } catch (e) {
      this.endError = toMemWalError(e, `drain of ${this.storeId}`);
      this.state = 'failed';
      this.fail(this.endError);
      this.log(`stopped for good: ${this.endError.code}: ${this.endError.message}`, true);
      throw this.endError;
    } finally {
      await this.consuming; // the last markConsumed of what the sink applied
      if (this.state !== 'failed') this.state = 'stopped';
      this.ended = true;
      this.stopper.abort();
      this.changed.notify();
    }
  }

  /** Pins the WAL, then the sink's applied position, retried until it answers; undefined when stopped meanwhile. */
  private async start(): Promise<number | undefined> {
    // Pin the WAL before the sink answers, which may take long (an offline page): from here on
    // the store keeps every entry until one is consumed. A consumer cursor already set stays.
    if ((await this.withRetry(() => this.store.markConsumed(0).then(() => true))) === undefined) return undefined;
    const wal = await this.withRetry(() => this.store.walStats());
    if (wal === undefined) return undefined;
    this.incarnation = wal.incarnation;
    const applied = await this.withRetry(() => this.transport.applied(this.stopper.signal, this.incarnation));
    if (applied === undefined) return undefined;
    this.succeeded();
    this.stats.appliedPosition = applied;
    this.stats.shippedPosition = applied;
    this.changed.notify(); // a waitForApplied of a position the sink already holds is done
    this.headPosition = await this.readHead();
    if (applied > this.headPosition) {
      throw new MemWalError(
        'InvalidArgument',
        `drain: the sink has applied position ${applied} of ${this.storeId}, beyond the store's last position ${this.headPosition} (a different store under the same id?)`,
      );
    }
    this.readPosition = applied;
    // Consume what the sink has: finishes a previous drain that died between apply and markConsumed.
    if (applied > 0 && (await this.withRetry(() => this.store.markConsumed(applied).then(() => true))) === undefined) return undefined;
    this.stats.consumedPosition = applied;
    const oldest = (await this.store.walStats()).oldestPosition;
    if (oldest > applied + 1) {
      throw new MemWalError(
        'Truncated',
        `drain: the sink has applied ${this.storeId} up to position ${applied}, but the store's oldest retained WAL entry is ${oldest}: ` +
          'entries flushed and removed before any drain pinned the WAL cannot be shipped. Start drain() when the store is created ' +
          '(its first markConsumed keeps every later entry until the sink has it).',
      );
    }
    return applied + 1;
  }

  /** Pull entries from tail into the queue, holding at most QUEUE_BATCHES × batchBytes. */
  private async read(from: number): Promise<void> {
    try {
      for await (const entry of this.store.tail(from, { follow: true, signal: this.stopper.signal })) {
        if (this.stopped) break;
        const bytes = entryBytes(entry);
        this.queue.push({ entry, bytes, wireBytes: bytes + 8 * entry.data.numRows });
        this.queuedBytes += bytes;
        this.readPosition = entry.position;
        this.readEntries += 1;
        this.readBytes += bytes;
        this.headPosition = Math.max(this.headPosition, entry.position);
        this.changed.notify();
        while (this.queuedBytes >= QUEUE_BATCHES * this.batchBytes && !this.stopped) await this.changed.wait();
      }
    } catch (e) {
      if (!this.stopped) this.readerError = e;
    } finally {
      this.readerEnded = true;
      this.changed.notify();
    }
  }

  /** Ship runs from the queue until the reader has ended and the queue is empty, or stopped. */
  private async ship(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      if (this.queue.length === 0) {
        if (this.readerEnded) return;
        await this.changed.wait();
        continue;
      }
      const run = this.takeRun();
      const last = run[run.length - 1]!.position;
      this.stats.shippedPosition = Math.max(this.stats.shippedPosition, last);
      const result = await this.withRetry(() => this.transport.ship(run, this.stopper.signal, this.incarnation));
      if (result === undefined) return; // stopped during the shipment or its backoff
      this.accept(run, result);
    }
  }

  /** The queue's first entries up to batchBytes of body (at least one), all with the first one's schema. */
  private takeRun(): WalEntry[] {
    const run: WalEntry[] = [];
    let bytes = 0;
    for (const q of this.queue) {
      if (run.length > 0 && (bytes + q.wireBytes > this.batchBytes || !sameSchema(q.entry, run[0]!))) break;
      run.push(q.entry);
      bytes += q.wireBytes;
    }
    return run;
  }

  private accept(run: readonly WalEntry[], result: { appliedPosition: number; bytes: number }): void {
    const applied = result.appliedPosition;
    if (applied < run[0]!.position - 1) {
      throw new MemWalError(
        'InvalidArgument',
        `drain: the sink answered applied position ${applied} for entries ${run[0]!.position}..${run[run.length - 1]!.position} (it lost entries it had applied)`,
      );
    }
    // Only what this drain shipped is consumed: a sink may answer a position another drain of the
    // same store id shipped (two drains racing, or another store under the id), and entries this
    // drain has not sent are sent first (a sink that has them answers duplicate).
    const done = Math.min(applied, run[run.length - 1]!.position);
    let rows = 0;
    let entries = 0;
    while (this.queue.length > 0 && this.queue[0]!.entry.position <= done) {
      const q = this.queue.shift()!;
      this.queuedBytes -= q.bytes;
      rows += q.entry.data.numRows;
      entries += 1;
    }
    this.stats.shipments += 1;
    this.stats.shippedEntries += entries;
    this.stats.shippedRows += rows;
    this.stats.shippedBytes += result.bytes;
    this.stats.appliedPosition = Math.max(this.stats.appliedPosition, applied);
    this.succeeded();
    this.changed.notify();
    void this.consume(done);
  }

  /** markConsumed up to `position`; a failure is counted and retried with the next shipment. */
  private consuming: Promise<void> = Promise.resolve();
  private consume(position: number): Promise<void> {
    this.consuming = this.consuming.then(async () => {
      if (position <= this.stats.consumedPosition) return;
      try {
        await this.store.markConsumed(position);
        this.stats.consumedPosition = position;
      } catch (e) {
        const err = toMemWalError(e, 'drain: markConsumed');
        if (err.code === 'Closed') return; // the store closed under us; the next drain re-consumes
        this.failing(err);
      }
    });
    return this.consuming;
  }

  /**
   * Run `op` until it succeeds, backing off after each failure. Rethrows a terminal error
   * (see {@link isTerminal}); resolves undefined when the drain is stopped meanwhile.
   */
  private async withRetry<T>(op: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      if (this.stopped) return undefined;
      try {
        return await op();
      } catch (e) {
        if (this.stopped) return undefined;
        const err = toMemWalError(e, `drain of ${this.storeId}`);
        if (isTerminal(err)) throw err; // recorded and logged where the drain ends
        this.failing(err);
        this.state = 'backoff';
        const jitter = 0.5 + random() / 2;
        // Ends early on stop, and removes its listener from the stop signal either way.
        await new Signal().wait(this.stopper.signal, backoffMs(attempt, this.retry.baseMs, this.retry.maxMs) * jitter);
        this.state = 'running';
      }
    }
  }

  /** Count a failure and keep it as `lastError`. */
  private fail(err: MemWalError): void {
    this.stats.failureCount += 1;
    this.stats.consecutiveFailures += 1;
    this.stats.lastError = { code: err.code, message: err.message };
  }

  /** A failure that is retried; the first after a success is a state change, logged. */
  private failing(err: MemWalError): void {
    this.fail(err);
    if (this.stats.consecutiveFailures === 1) this.log(`failing (${err.code}: ${err.message}); retrying with backoff`);
  }

  /** A success: after failures, a state change, logged. */
  private succeeded(): void {
    const failures = this.stats.consecutiveFailures;
    this.stats.consecutiveFailures = 0;
    if (failures > 0) this.log(`recovered after ${failures} failed attempt${failures === 1 ? '' : 's'}`);
  }

  private lastLogMs = Number.NEGATIVE_INFINITY;
  private unlogged = 0;
  /** One line, at most one per LOG_INTERVAL_MS unless `always` (the drain's end); skipped lines are counted in the next. */
  private log(line: string, always = false): void {
    const now = nowMs();
    if (!always && now - this.lastLogMs < LOG_INTERVAL_MS) {
      this.unlogged += 1;
      return;
    }
    const skipped = this.unlogged > 0 ? ` (${this.unlogged} earlier state change${this.unlogged === 1 ? '' : 's'} not logged)` : '';
    this.lastLogMs = now;
    this.unlogged = 0;
    this.logger.warn(`memwal: drain of ${this.storeId} ${line}${skipped}`);
  }

  // ------------------------------------------------------------------ observers

  private async readHead(): Promise<number> {
    try {
      this.headPosition = Math.max(this.headPosition, (await this.store.walStats()).nextPosition - 1);
    } catch {
      // a closed or gone store keeps its last known head
    }
    return this.headPosition;
  }

  private async snapshot(): Promise<DrainStats> {
    const head = await this.readHead();
    const applied = this.stats.appliedPosition;
    const meanEntryBytes = this.readEntries > 0 ? this.readBytes / this.readEntries : 0;
    const unread = Math.max(0, head - Math.max(this.readPosition, applied));
    return {
      storeId: this.storeId,
      state: this.state,
      ...this.stats,
      lastError: this.stats.lastError && { ...this.stats.lastError },
      headPosition: head,
      lagEntries: Math.max(0, head - applied),
      lagBytes: Math.round(this.queuedBytes + unread * meanEntryBytes),
    };
  }

  private async waitForApplied(position: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (this.stats.appliedPosition >= position) return;
      if (signal?.aborted) throw new MemWalError('Aborted', 'waitForApplied: aborted');
      if (this.ended) {
        throw this.endError ?? new MemWalError('Closed', `drain of ${this.storeId} ended at position ${this.stats.appliedPosition}`);
      }
      await this.changed.wait(signal);
    }
  }
}

// ------------------------------------------------------------------ the in-process transport (HTTP: http.ts)

/** The transport to an in-process sink: its own calls. */
function sinkTransport(sink: DrainSink, storeId: string): Transport {
  return {
    applied: (signal, incarnation) => untilStopped(sink.appliedPosition(storeId, incarnation), signal),
    ship: async (entries, signal, incarnation) => {
      const { appliedPosition } = await untilStopped(sink.apply(storeId, entries, incarnation), signal);
      return { appliedPosition, bytes: entries.reduce((n, e) => n + entryBytes(e), 0) };
    },
  };
}

/**
 * `call`, or `Aborted` once the drain stops: a stop does not wait for a sink that does not answer
 * (what the sink then does is safe either way: nothing is consumed, and a retry is skipped).
 */
function untilStopped<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stopped = (): void => reject(new MemWalError('Aborted', 'drain: stopped'));
    if (signal.aborted) stopped();
    signal.addEventListener('abort', stopped, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener('abort', stopped));
  });
}

/** Refusals and store states that retrying cannot fix. */
function isTerminal(e: MemWalError): boolean {
  return (
    e.code === 'InvalidArgument' ||
    e.code === 'NotSupported' ||
    e.code === 'Truncated' ||
    e.code === 'Corruption' ||
    e.code === 'Closed' ||
    e.code === 'Fenced'
  );
}

// ------------------------------------------------------------------ helpers

function entryBytes(e: WalEntry): number {
  let bytes = 0;
  for (const b of e.data.batches) bytes += estimateBatchBytes(b);
  return bytes;
}

function sameSchema(a: WalEntry, b: WalEntry): boolean {
  const fa = a.data.schema.fields;
  const fb = b.data.schema.fields;
  return fa.length === fb.length && fa.every((f, i) => f.name === fb[i]!.name && String(f.type) === String(fb[i]!.type));
}

/** Prometheus text for one drain snapshot (format 0.0.4). */
export function renderDrainMetrics(s: DrainStats): string {
  const label = `{store="${escapeLabelValue(s.storeId)}"}`;
  const family = (name: string, type: 'gauge' | 'counter', help: string, value: number): string =>
    `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}${label} ${value}\n`;
  return (
    family('wal_drain_lag_entries', 'gauge', 'WAL entries the store holds that the sink has not applied.', s.lagEntries) +
    family('wal_drain_lag_bytes', 'gauge', 'Estimated Arrow bytes of the entries the sink has not applied.', s.lagBytes) +
    family('wal_drain_applied_position', 'gauge', 'Highest WAL position the sink reported applied and durable.', s.appliedPosition) +
    family('wal_drain_shipped_bytes_total', 'counter', 'Bytes of shipments the sink applied.', s.shippedBytes) +
    family('wal_drain_failures_total', 'counter', 'Failed shipments and markConsumed calls (each retried).', s.failureCount)
  );
}
