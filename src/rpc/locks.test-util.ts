// A FIFO exclusive LockManager for one process, for tests of tabs: 'share' in Node (which has
// BroadcastChannel but no navigator.locks). Not part of the package.

export class TestLocks {
  private readonly queues = new Map<string, (() => void)[]>();
  /** Names held right now. */
  readonly held = new Set<string>();

  request(name: string, a: unknown, b?: unknown): Promise<unknown> {
    const callback = (typeof a === 'function' ? a : b) as (lock: unknown) => unknown;
    const signal = typeof a === 'object' ? (a as { signal?: AbortSignal }).signal : undefined;
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        this.held.add(name);
        Promise.resolve(callback({ name }))
          .then(resolve, reject)
          .finally(() => {
            this.held.delete(name);
            this.queues.get(name)?.shift()?.();
          });
      };
      if (!this.held.has(name)) return grant();
      const queue = this.queues.get(name) ?? [];
      this.queues.set(name, queue);
      queue.push(grant);
      signal?.addEventListener('abort', () => {
        queue.splice(queue.indexOf(grant), 1);
        reject(new DOMException('aborted', 'AbortError'));
      });
    });
  }

  /** Hold `name` until the returned function is called. */
  hold(name: string): () => void {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    void this.request(name, () => held);
    return release;
  }
}
