// FaultInjectingStorage: wraps any StorageAdapter to fail, hold, and crash its operations, so
// tests can pin what the engine does when storage misbehaves (LevelDB's fault-injection Env).
// Runs in every runtime.

import { MemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';
import { int } from './rng.js';
import {
  ADAPTER_SESSION,
  crashedError,
  DEFAULT_SEED,
  FaultController,
  type FaultOp,
  type InFlight,
  type MutationSpec,
  nextMacrotask,
  type TearableOp,
  tearError,
} from './fault-controller.js';
import { concatBytes } from '../util/bytes.js';

/** A StoreHandle whose operations go through the controller's faults, holds and crashes. */
class FaultSession implements StoreHandle {
  dead = false;
  readonly inflight = new Set<InFlight>();
  private lostReported = false;
  private released = false;

  constructor(
    private readonly faults: FaultController,
    readonly inner: StoreHandle,
    private readonly onLost: ((reason: string) => void) | undefined,
  ) {}

  /** Reports a lost lock to the opener, at most once (a steal not at all while lock loss is silenced). */
  lost(reason: string): void {
    if (this.lostReported || (reason === 'stolen' && this.faults.silentLockLoss)) return;
    this.lostReported = true;
    this.onLost?.(reason);
  }

  manifestLoad(): Promise<Manifest | undefined> {
    return this.read('manifestLoad', () => this.inner.manifestLoad());
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    const manifest = structuredClone(next);
    return this.mutate('manifestCommit', {
      forward: () => this.inner.manifestCommit(expectedVersion, manifest),
      crashOutcome: (random) => (int(random, 2) ? () => this.inner.manifestCommit(expectedVersion, manifest) : undefined),
    });
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.read('walList', () => this.inner.walList());
  }

  walRead(name: string, offset?: number): Promise<Uint8Array> {
    return this.read('walRead', () => this.inner.walRead(name, offset));
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    const copy = bytes.slice();
    const torn = (random: () => number) => () => this.inner.walAppend(name, offset, copy.subarray(0, int(random, copy.length)));
    return this.mutate('walAppend', {
      forward: () => this.inner.walAppend(name, offset, copy),
      tear: torn,
      crashOutcome: (random) => {
        const outcome = int(random, 3); // 0: not applied, 1: applied, 2: torn
        if (outcome === 0) return undefined;
        return outcome === 1 ? () => this.inner.walAppend(name, offset, copy) : torn(random);
      },
    });
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.mutate(
      'walTruncate',
      this.allOrNothing(() => this.inner.walTruncate(name, length)),
    );
  }

  walRemove(name: string): Promise<void> {
    return this.mutate(
      'walRemove',
      this.allOrNothing(() => this.inner.walRemove(name)),
    );
  }

  tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    // Sync chunks are taken at call time, so even a held write can be applied in full by a crash;
    // async chunks arrive while the write is in flight, and a crash tears what has arrived.
    const parts: Uint8Array[] = [];
    let complete = Symbol.iterator in chunks;
    const torn = (random: () => number) => {
      const whole = concatBytes(parts);
      const prefix = whole.subarray(0, int(random, whole.length));
      return () => this.inner.tableWrite(name, [prefix]);
    };
    if (Symbol.iterator in chunks) for (const chunk of chunks) parts.push(chunk.slice());
    return this.mutate('tableWrite', {
      prepare: async () => {
        if (Symbol.iterator in chunks) return;
        for await (const chunk of chunks) parts.push(chunk.slice());
        complete = true;
      },
      forward: () => this.inner.tableWrite(name, parts),
      tear: (random) => torn(random),
      crashOutcome: (random) => {
        const outcome = int(random, 3); // 0: not applied, 1: applied, 2: torn
        if (outcome === 0) return undefined;
        if (outcome === 1 && complete) return () => this.inner.tableWrite(name, parts);
        return torn(random);
      },
    });
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.read('tableRead', () => this.inner.tableRead(name));
  }

  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    return this.read('tableRead', () => this.inner.tableReadRange(name, offset, length));
  }

  tableList(): Promise<string[]> {
    return this.read('tableList', () => this.inner.tableList());
  }

  tableRemove(name: string): Promise<void> {
    return this.mutate(
      'tableRemove',
      this.allOrNothing(() => this.inner.tableRemove(name)),
    );
  }

  /** Releases the inner lock; a dead session's lock was released by the crash. Never throws. */
  release(): Promise<void> {
    if (this.dead || this.released) return Promise.resolve();
    this.released = true;
    this.faults.sessions.delete(this);
    return this.inner.release();
  }

  private allOrNothing(call: () => Promise<void>): MutationSpec {
    return { forward: call, crashOutcome: (random) => (int(random, 2) ? call : undefined) };
  }

  /** A read: counted, held, failed on demand; a crash before it resolves makes it reject. */
  private async read<T>(op: FaultOp, call: () => Promise<T>): Promise<T> {
    if (this.dead) throw crashedError();
    this.faults.count();
    if (this.dead) throw crashedError();
    await this.faults.whileHeld(op, this);
    if (this.dead) throw crashedError();
    await this.faults.apply(op, this);
    const result = await call().catch((e: unknown) => {
      throw this.dead ? crashedError() : e;
    });
    if (this.dead) throw crashedError();
    await this.faults.apply(op, this, true);
    return result;
  }

  /**
   * A mutation: in flight from its call until it resolves. It is counted, gathers its input,
   * is held, failed on demand, then waits one macrotask before reaching the inner adapter, so a crash can catch it in flight.
   */
  private async mutate(op: FaultOp, spec: MutationSpec): Promise<void> {
    if (this.dead) throw crashedError();
    const entry: InFlight = { crashOutcome: spec.crashOutcome };
    this.inflight.add(entry);
    try {
      this.faults.count();
      if (this.dead) throw crashedError();
      await spec.prepare?.();
      await this.faults.whileHeld(op, this);
      if (this.dead) throw crashedError();
      const tear = await this.faults.apply(op, this);
      await nextMacrotask();
      if (this.dead) throw crashedError();
      entry.forwarded = tear && spec.tear ? spec.tear(this.faults.random)() : spec.forward();
      await entry.forwarded.catch((e: unknown) => {
        throw this.dead ? crashedError() : e;
      });
      if (this.dead) throw crashedError();
      if (tear) throw tearError(op, tear);
      await this.faults.apply(op, this, true);
    } finally {
      this.inflight.delete(entry);
    }
  }
}

/**
 * Wraps `inner` (default: a new MemoryStorage) to inject failures, hold operations, and crash.
 * An operation is "in flight" from its call until its promise settles. Runs in every runtime.
 *
 * Counted operations (for `crashAt` and `opCount`): `openStore` and every handle operation
 * except `release`; operations of a dead session are not counted. `destroyStore` and
 * `estimate` are not counted; they wait for the inner work of earlier crashes.
 */
export class FaultInjectingStorage implements StorageAdapter {
  readonly layout: string;
  private readonly faults: FaultController;

  /** `seed` (default 1) drives every crash outcome, so a failing run can be replayed. */
  constructor(
    readonly inner: StorageAdapter = new MemoryStorage(),
    options: { seed?: number } = {},
  ) {
    this.layout = inner.layout;
    this.faults = new FaultController(options.seed ?? DEFAULT_SEED);
  }

  /** Operations counted so far (see the class comment for which count). */
  get opCount(): number {
    return this.faults.ops;
  }

  /** How many times this storage has crashed. */
  get crashed(): number {
    return this.faults.crashes;
  }

  /**
   * Make the next `count` (positive integer or Infinity) operations of kind `op` reject with
   * `error` exactly as given (e.g. `quotaExceededError()`), or by default with
   * `MemWalError('IOError', 'injected fault: <op>')`, without touching storage. Calls queue up.
   * Throws `InvalidArgument` for a bad `count`.
   */
  failNext(op: FaultOp, count = 1, error?: unknown): void {
    this.faults.inject('failNext', op, count, { kind: 'fail', error });
  }

  /**
   * Let the next `count` operations of kind `op` reach storage and succeed there, then reject
   * with `error` (default `MemWalError('IOError', …)`): the reply was lost after the operation was
   * applied, so its caller cannot know whether it happened. Calls queue up like `failNext`.
   * Throws `InvalidArgument` for a bad `count`.
   */
  failAfter(op: FaultOp, count = 1, error?: unknown): void {
    this.faults.inject('failAfter', op, count, { kind: 'fail', error }, true);
  }

  /**
   * Make the next `count` operations of kind `op` never settle and never reach storage (a call
   * lost on its way). Each is in flight until a crash, which decides its outcome as for a held
   * operation and rejects it 'storage crashed'; nothing else ends it. Queues with `failNext`.
   * Throws `InvalidArgument` for a bad `count`.
   */
  hangNext(op: FaultOp, count = 1): void {
    this.faults.inject('hangNext', op, count, { kind: 'hang' });
  }

  /**
   * Let the next `count` operations of kind `op` reach storage and succeed there, then never
   * answer (a reply lost for good): the caller cannot learn the outcome from the call. A crash
   * rejects them 'storage crashed'. Queues with `failAfter`. Throws `InvalidArgument` for a bad `count`.
   */
  hangAfter(op: FaultOp, count = 1): void {
    this.faults.inject('hangAfter', op, count, { kind: 'hang' }, true);
  }

  /**
   * Tear the next `count` operations of kind `op`: a seeded prefix of their bytes (possibly none
   * or all of them) reaches storage, then each rejects with `error` (default `IOError`), as a
   * write cut short by a full disk or a failing device. Queues with `failNext`. Throws
   * `InvalidArgument` for a bad `count`.
   */
  tearNext(op: TearableOp, count = 1, error?: unknown): void {
    this.faults.inject('tearNext', op, count, { kind: 'tear', error });
  }

  /**
   * Model writers that never learn that their lock was taken (a process presumed dead, a frozen
   * tab): while `on`, a session whose lock is stolen does not get `onLost('stolen')`, keeps issuing
   * operations, and only storage's epoch fencing stops it (docs/impl.md, "Fencing").
   */
  silenceLockLoss(on = true): void {
    this.faults.silentLockLoss = on;
  }

  /**
   * Drop every pending `failNext`, `failAfter`, `hangNext`, `hangAfter` and `tearNext` fault and
   * a pending `crashAt`. Holds stay held; operations already hanging keep hanging.
   */
  clearFaults(): void {
    this.faults.clearFaults();
  }

  /**
   * Make operations of kind `op` wait, before doing anything, until the returned function is
   * called (idempotent). A held operation is in flight: `crash()` decides its outcome.
   */
  hold(op: FaultOp): () => void {
    return this.faults.hold(op);
  }

  /**
   * Crash the process, synchronously. Every session opened before now dies: each in-flight
   * mutation is, by the seeded choice, applied, not applied, or (`walAppend`, `tableWrite`) torn
   * to a random prefix of its bytes (possibly empty); a manifest commit is all or nothing. Then
   * every operation of a dead session (in flight, held, or issued later) rejects
   * `MemWalError('IOError', 'storage crashed')` and changes nothing; opens still pending reject
   * the same way. Each dead session's inner lock is released once its outcomes are applied, and
   * its `onLost('crashed')` runs on a microtask. Later `openStore` calls are the restarted
   * process: they first wait for that inner work (see `settled()`).
   */
  crash(): void {
    this.faults.crash();
  }

  /**
   * Crash at the start of the `n`-th counted operation from now (n = 1: the next one). That
   * operation is in flight when it happens: a mutation gets the seeded outcome and rejects; a
   * read or open rejects. Throws `InvalidArgument` unless `n` is a positive integer.
   */
  crashAt(n: number): void {
    if (!(Number.isSafeInteger(n) && n > 0)) throw new MemWalError('InvalidArgument', `crashAt needs a positive integer, got ${n}`);
    this.faults.crashTarget = this.faults.ops + n;
  }

  /** Resolves when the inner work started by every crash so far (outcomes, lock releases) is done. */
  settled(): Promise<void> {
    return this.faults.settling;
  }

  /**
   * Open through the inner adapter (counted). Rejects with the inner adapter's error, or
   * `IOError` 'storage crashed' when a crash happens before the open resolves.
   */
  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const generation = this.faults.crashes;
    this.faults.count();
    if (this.faults.crashes !== generation) throw crashedError();
    await this.faults.settling;
    let session: FaultSession | undefined;
    let lostEarly: string | undefined;
    const inner = await this.inner.openStore(name, {
      ...options,
      onLost: (reason) => (session ? session.lost(reason) : (lostEarly = reason)),
    });
    if (this.faults.crashes !== generation) {
      await inner.release();
      throw crashedError();
    }
    session = new FaultSession(this.faults, inner, options.onLost);
    this.faults.sessions.add(session);
    if (lostEarly !== undefined) session.lost(lostEarly);
    return session;
  }

  /** The inner adapter's `destroyStore`, after earlier crashes have settled. */
  async destroyStore(name: string): Promise<void> {
    await this.faults.settling;
    return this.inner.destroyStore(name);
  }

  /** The inner adapter's estimate, or `{}` when it has none; held, failed and hung as `'estimate'` (not counted). */
  async estimate(name: string): Promise<StorageEstimate> {
    await this.faults.settling;
    await this.faults.whileHeld('estimate', ADAPTER_SESSION);
    await this.faults.apply('estimate', ADAPTER_SESSION);
    const result = this.inner.estimate ? await this.inner.estimate(name) : {};
    await this.faults.apply('estimate', ADAPTER_SESSION, true);
    return result;
  }
}
