// How a LanceSink shares one Lance table between stores (docs/scale-out.md "Fairness"): each store
// has its own queue (its requests run one after another, in arrival order), and the table's
// commits are handed out in turns, round-robin over the stores that wait for one. A request is cut
// into turns of at most `maxRowsPerCommit` rows while other stores are active, so a store waits
// for at most one turn of each other store, however large their requests or however many they
// queue; `othersActive` tells the sink when a store has the table to itself.

import { MemWalError } from '../util/errors.js';

/** Per-key FIFO queues with a bound on what each may hold. */
export class Lanes {
  private readonly lanes = new Map<string, { tail: Promise<void>; pending: number }>();

  constructor(private readonly maxPending: number) {}

  /**
   * Runs `op` after every earlier `op` of `key`. Rejects `Locked` at once, without queueing, when
   * `key` already holds `maxPending` requests (waiting or running).
   */
  run<T>(key: string, op: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (lane && lane.pending >= this.maxPending) {
      return Promise.reject(new MemWalError('Locked', `${this.maxPending} requests of ${key} are already waiting; retry later`));
    }
    if (!lane) {
      lane = { tail: Promise.resolve(), pending: 0 };
      this.lanes.set(key, lane);
    }
    const own = lane;
    own.pending += 1;
    const run = own.tail.then(op);
    own.tail = run.then(
      () => this.done(key, own),
      () => this.done(key, own),
    );
    return run;
  }

  /** Resolves once every request queued so far has finished. */
  async idle(): Promise<void> {
    await Promise.all([...this.lanes.values()].map((l) => l.tail));
  }

  private done(key: string, lane: { pending: number }): void {
    lane.pending -= 1;
    if (lane.pending === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }
}

/**
 * One operation at a time, handed out round-robin over keys: when an operation ends, the key that
 * has waited longest since its last turn goes next, and a key that still waits after its turn
 * goes to the back.
 */
export class Turns {
  private busy = false;
  /** Waiting keys in turn order (a Map keeps insertion order), each with its waiting operations. */
  private readonly waiting = new Map<string, (() => void)[]>();
  /** When each key's last turn ended (`Date.now()`), kept while it may count as active. */
  private readonly ended = new Map<string, number>();

  async run<T>(key: string, op: () => Promise<T>): Promise<T> {
    await this.acquire(key);
    try {
      return await op();
    } finally {
      this.ended.set(key, Date.now());
      this.release();
    }
  }

  /** Whether a key other than `key` waits for a turn, or had one that ended less than `withinMs` ago. */
  othersActive(key: string, withinMs: number): boolean {
    for (const k of this.waiting.keys()) if (k !== key) return true;
    const since = Date.now() - withinMs;
    for (const [k, at] of this.ended) {
      if (at < since)
        this.ended.delete(k); // quiet for long enough: forgotten
      else if (k !== key) return true;
    }
    return false;
  }

  private acquire(key: string): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push(resolve);
      else this.waiting.set(key, [resolve]);
    });
  }

  private release(): void {
    const next = this.waiting.entries().next();
    if (next.done) {
      this.busy = false;
      return;
    }
    const [key, queue] = next.value;
    const wake = queue.shift()!;
    this.waiting.delete(key);
    if (queue.length > 0) this.waiting.set(key, queue); // to the back of the round
    wake(); // the turn passes on: busy stays true
  }
}
