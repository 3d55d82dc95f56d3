// The schedule behind FaultInjectingStorage (fault.ts): which operations fail, hang, tear or are
// held, the operation counter, the live sessions, and what a crash leaves of each operation in
// flight (seeded, so a run can be replayed). Runs in every runtime.

import { MemWalError } from '../util/errors.js';
import { rng } from './rng.js';
import { setTimer } from '../util/schedule.js';

/** What the controller needs of a store session (fault.ts `FaultSession`). */
export interface ControlledSession {
  dead: boolean;
  readonly inflight: Set<InFlight>;
  readonly inner: { release(): Promise<void> };
  lost(reason: string): void;
}

/**
 * The operations that `failNext`, `failAfter`, `hangNext`, `hangAfter` and `hold` target: the
 * store-handle operations, and `estimate` of the adapter.
 */
export type FaultOp =
  | 'walAppend'
  | 'tableWrite'
  | 'manifestCommit'
  | 'walRead'
  | 'tableRead'
  | 'manifestLoad'
  | 'walRemove'
  | 'tableRemove'
  | 'walTruncate'
  | 'walList'
  | 'tableList'
  | 'estimate';

/** The operations `tearNext` can tear: those that write bytes. */
export type TearableOp = 'walAppend' | 'tableWrite';

/** What an injected fault does to one operation. */
export type Fault = { kind: 'fail'; error: unknown } | { kind: 'hang' } | { kind: 'tear'; error: unknown };

/** The seed used when none is given, so runs are reproducible by default. */
export const DEFAULT_SEED = 1;

export const crashedError = (): MemWalError => new MemWalError('IOError', 'storage crashed');
export const nextMacrotask = (): Promise<void> => new Promise((resolve) => setTimer(resolve, 0));

/** A mutation issued but not yet resolved to its caller. */
export interface InFlight {
  /** Set when the operation has been handed to the inner adapter: it counts as applied. */
  forwarded?: Promise<unknown>;
  /**
   * Decides synchronously, from `random`, what a crash leaves of this operation; returns the
   * inner call that applies it (in full or torn), or undefined when it is not applied.
   */
  crashOutcome(random: () => number): (() => Promise<unknown>) | undefined;
}

/** An operation waiting for `hold(op)` to be released (`op` undefined: hung until its session dies). */
export interface HeldWaiter {
  op: FaultOp | undefined;
  session: { dead: boolean };
  wake(): void;
}

/** The session of calls made outside any store handle (`estimate`): it never dies. */
export const ADAPTER_SESSION = { dead: false };

/** The failures, holds, op counter and sessions shared by one FaultInjectingStorage. */
export class FaultController {
  readonly sessions = new Set<ControlledSession>();
  readonly random: () => number;
  crashes = 0;
  ops = 0;
  /** While set, a session whose lock is stolen is not told (see `silenceLockLoss`). */
  silentLockLoss = false;
  crashTarget: number | undefined;
  /** Inner work started by crashes (applying in-flight ops, releasing locks). */
  settling: Promise<void> = Promise.resolve();
  private readonly faults = new Map<FaultOp, { remaining: number; fault: Fault }[]>();
  /** Faults applied after the operation: it reaches storage, then its caller gets the error (or no answer). */
  private readonly faultsAfter = new Map<FaultOp, { remaining: number; fault: Fault }[]>();
  private readonly holds = new Map<FaultOp, number>();
  private heldWaiters: HeldWaiter[] = [];

  constructor(seed: number) {
    this.random = rng(seed);
  }

  /** Counts one storage operation, crashing if it is the one `crashAt` named. */
  count(): void {
    this.ops++;
    if (this.ops === this.crashTarget) {
      this.crashTarget = undefined;
      this.crash();
    }
  }

  /** Queues `fault` for the next `count` operations `op` (`after`: once they are applied). `what` names the caller. */
  inject(what: string, op: FaultOp, count: number, fault: Fault, after = false): void {
    if (!(count === Number.POSITIVE_INFINITY || (Number.isSafeInteger(count) && count > 0))) {
      throw new MemWalError('InvalidArgument', `${what} count must be a positive integer or Infinity, got ${count}`);
    }
    const table = after ? this.faultsAfter : this.faults;
    const queue = table.get(op) ?? [];
    queue.push({ remaining: count, fault });
    table.set(op, queue);
  }

  clearFaults(): void {
    this.faults.clear();
    this.faultsAfter.clear();
    this.crashTarget = undefined;
  }

  /** The next injected fault for `op`, if any (`after`: one queued to apply after the operation). */
  takeFault(op: FaultOp, after = false): Fault | undefined {
    const queue = (after ? this.faultsAfter : this.faults).get(op);
    const next = queue?.[0];
    if (!queue || !next) return undefined;
    if (--next.remaining <= 0) queue.shift();
    return next.fault;
  }

  /**
   * Applies the next fault for `op` that needs no bytes: throws a failure, or waits for ever (until
   * `session` dies, then throws 'storage crashed'). A tear is returned for the caller to apply.
   */
  async apply(op: FaultOp, session: { dead: boolean }, after = false): Promise<Fault | undefined> {
    const fault = this.takeFault(op, after);
    if (!fault) return undefined;
    if (fault.kind === 'fail') {
      throw fault.error ?? new MemWalError('IOError', `injected fault: ${op}${after ? ' (after it was applied: the reply was lost)' : ''}`);
    }
    if (fault.kind === 'hang') {
      await new Promise<void>((wake) => this.heldWaiters.push({ op: undefined, session, wake }));
      throw crashedError();
    }
    return fault;
  }

  hold(op: FaultOp): () => void {
    this.holds.set(op, (this.holds.get(op) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.holds.get(op) ?? 1) - 1;
      if (left > 0) this.holds.set(op, left);
      else {
        this.holds.delete(op);
        this.wake((w) => w.op === op);
      }
    };
  }

  /** Resolves once no hold of `op` remains, or at once when `session` dies. */
  async whileHeld(op: FaultOp, session: { dead: boolean }): Promise<void> {
    while (this.holds.has(op) && !session.dead) {
      await new Promise<void>((wake) => this.heldWaiters.push({ op, session, wake }));
    }
  }

  crash(): void {
    this.crashes++;
    this.crashTarget = undefined; // a crash disarms any pending crashAt
    const work: Promise<unknown>[] = [this.settling];
    for (const session of this.sessions) {
      session.dead = true;
      const pending: Promise<unknown>[] = [];
      // Decide every outcome now, in issue order; the inner calls start now, in that order.
      for (const op of session.inflight) {
        if (op.forwarded) pending.push(op.forwarded);
        else {
          const apply = op.crashOutcome(this.random);
          if (apply) pending.push(apply());
        }
      }
      // A failed or rejected outcome is simply "not applied": the process that issued it is gone.
      work.push(Promise.allSettled(pending).then(() => session.inner.release()));
      queueMicrotask(() => session.lost('crashed'));
    }
    this.sessions.clear();
    this.wake((w) => w.session.dead);
    this.settling = Promise.allSettled(work).then(() => undefined);
  }

  private wake(which: (w: HeldWaiter) => boolean): void {
    const woken = this.heldWaiters.filter(which);
    this.heldWaiters = this.heldWaiters.filter((w) => !which(w));
    for (const w of woken) w.wake();
  }
}

/** How a mutation reaches the inner adapter: in full, torn (`tear`), or as a crash decides. */
export type MutationSpec = Pick<InFlight, 'crashOutcome'> & {
  forward: () => Promise<void>;
  /** The inner call that applies a seeded prefix of the bytes (operations that write bytes). */
  tear?: (random: () => number) => () => Promise<void>;
  prepare?: () => Promise<void>;
};

/** The error of a torn operation: the one given to `tearNext`, or an IOError saying what happened. */
export function tearError(op: FaultOp, tear: Fault): unknown {
  return (
    (tear.kind === 'tear' ? tear.error : undefined) ??
    new MemWalError('IOError', `injected fault: ${op} (torn: a prefix of its bytes was written)`)
  );
}
