// An async read/write lock for one JS thread, with reader preference (docs/impl.md §6): stats reads
// take the read side and never queue behind a writer that is merely waiting. Runs in every runtime.

/**
 * An async read/write lock for a single JS thread (any runtime).
 *
 * - A reader waits only while a writer **holds** the lock; it never queues behind a writer that is
 *   merely waiting. When no writer holds the lock, `read` calls `fn` at once, in the same tick.
 * - Writers are FIFO among themselves and start once the active readers have drained.
 * - When a writer releases, the readers that waited for it go first, then the next writer.
 *
 * Readers are short stats reads and writers are rare transitions (open/replay, close), so a
 * writer is not protected against an endless stream of overlapping readers. Not reentrant:
 * calling `write` from inside `read` or `write` (or `read` inside `write`) deadlocks.
 */
export class AsyncRwLock {
  #readers = 0;
  #writing = false;
  /** Readers blocked by the writer holding the lock; admitted together when it releases. */
  #blockedReaders: Array<() => void> = [];
  /** Writers in arrival order; each is granted the lock (already marked held) when resumed. */
  #queuedWriters: Array<() => void> = [];

  /** Readers holding the lock right now. */
  get readers(): number {
    return this.#readers;
  }

  /** True while a writer holds the lock (not while one merely waits). */
  get writing(): boolean {
    return this.#writing;
  }

  /**
   * Run `fn` under the read side and resolve with its result. `fn` runs in the same tick when no
   * writer holds the lock. Rejects with whatever `fn` throws; the lock is released either way.
   */
  async read<T>(fn: () => T | Promise<T>): Promise<T> {
    if (this.#writing) {
      // #releaseWrite counts us in before resuming us, so no writer can slip in between.
      await new Promise<void>((resolve) => this.#blockedReaders.push(resolve));
    } else {
      this.#readers++;
    }
    try {
      return await fn();
    } finally {
      this.#readers--;
      this.#grantNextWriter();
    }
  }

  /**
   * Run `fn` under the write side (exclusive) and resolve with its result. Waits for earlier
   * writers and for active readers. Rejects with whatever `fn` throws; the lock is released
   * either way.
   */
  async write<T>(fn: () => T | Promise<T>): Promise<T> {
    if (this.#writing || this.#readers > 0 || this.#queuedWriters.length > 0) {
      // #grantNextWriter marks the lock held before resuming us.
      await new Promise<void>((resolve) => this.#queuedWriters.push(resolve));
    } else {
      this.#writing = true;
    }
    try {
      return await fn();
    } finally {
      this.#releaseWrite();
    }
  }

  #releaseWrite(): void {
    this.#writing = false;
    const readers = this.#blockedReaders;
    this.#blockedReaders = [];
    this.#readers += readers.length;
    for (const admit of readers) admit();
    this.#grantNextWriter();
  }

  #grantNextWriter(): void {
    if (this.#writing || this.#readers > 0) return;
    const next = this.#queuedWriters.shift();
    if (next === undefined) return;
    this.#writing = true;
    next();
  }
}
