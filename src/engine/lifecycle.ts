// The writer's life: its state, the latched poison error, the flags that stop admission and I/O,
// and the signals every wait listens to. Invariants: once poisoned, fenced or closed the state
// never returns to 'open'; after `dead` no storage call is issued; every transition notifies.

import { MemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { WriterState } from '../metrics/stats.js';
import { Signal } from '../util/schedule.js';

/**
 * The state machine shared by the writer's parts. Transitions are synchronous (no `await`), so a
 * reader never sees half of one. `onTerminal` subscribers (the WAL writer, the admission ladder)
 * run inside the transition that poisons or closes the writer.
 */
export class Lifecycle {
  /** Undefined until the first transition, so that an uncontended open still reports 'open'. */
  private current: WriterState | undefined;
  private readonly listeners = new Set<(s: WriterState) => void>();
  private readonly terminalHooks: ((err: MemWalError) => void)[] = [];
  /** The latched terminal failure; set once. */
  poisonError: MemWalError | undefined;
  /** Set by close()/abort(): no more admissions. */
  stopping = false;
  /** Set by abort(), a lost lock or poison: no more storage I/O. */
  dead = false;
  /**
   * Notified when an entry turns durable, a flush or compaction commits or fails, the writer
   * poisons or stops. Waiters re-check their own condition after waking.
   */
  readonly progress = new Signal();
  /** Cuts backoff sleeps short (close wants one more try now). */
  readonly kick = new Signal();

  constructor(
    private readonly storeName: string,
    private readonly logger: Logger,
    private readonly hook?: (s: WriterState) => void,
  ) {}

  get state(): WriterState {
    return this.current ?? 'open';
  }

  /** Subscribe to state changes; returns the unsubscribe function. */
  subscribe(listener: (s: WriterState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Run `hook` inside every terminal transition (poison, fence, close). */
  onTerminal(hook: (err: MemWalError) => void): void {
    this.terminalHooks.push(hook);
  }

  setState(s: WriterState): void {
    if (this.current === s) return;
    this.current = s;
    this.hook?.(s);
    for (const l of [...this.listeners]) {
      try {
        l(s);
      } catch (e) {
        this.logger.warn('memwal: onStateChange listener threw', e);
      }
    }
  }

  /** Latch a terminal failure: stop I/O, reject what waits, wake everything. Idempotent. */
  poison(err: MemWalError): void {
    if (this.poisonError || this.state === 'closed') return;
    this.poisonError = err;
    this.dead = true;
    for (const h of this.terminalHooks) h(err);
    this.setState(err.code === 'Fenced' ? 'fenced' : 'poisoned');
    this.wakeAll();
  }

  /** The closing transition: no more I/O, everything that waits learns `err`. */
  shutdown(err: MemWalError): void {
    this.stopping = true;
    this.dead = true;
    for (const h of this.terminalHooks) h(err);
    this.setState('closed');
    this.wakeAll();
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  /** Reject reads and writes of a poisoned or closed writer. */
  throwIfUnusable(): void {
    if (this.poisonError) throw this.poisonError;
    if (this.stopping || this.closed) throw new MemWalError('Closed', `store ${this.storeName} is closed`);
  }

  /** Why a put can no longer be admitted, or undefined while it still can. */
  terminalForAdmission(): MemWalError | undefined {
    if (this.poisonError) return this.poisonError;
    if (this.stopping || this.closed) {
      return new MemWalError('Closed', `store ${this.storeName} closed while the put waited; nothing was written`);
    }
    return undefined;
  }

  private wakeAll(): void {
    this.progress.notify();
    this.kick.notify();
  }
}
