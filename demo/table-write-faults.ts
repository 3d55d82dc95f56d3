// Faults for flushes only or compactions only. FaultInjectingStorage fails and holds operations
// by kind, and a flush and a compaction both end in a `tableWrite`; what tells them apart is the
// file name: compaction outputs are named `c<generation>-<epoch>-<seq>.arrow`
// (src/engine/compaction.ts), flushes `<generation>-<epoch>-<attempt>.arrow` (src/engine/flusher.ts).
// This wrapper, around the FaultInjectingStorage of the demo's fault stack (fault-stack.ts, in the
// stores' I/O worker), fails or delays table writes by that name and passes everything else through.
//
// - A failed flush is retried in place with backoff; younger frozen memtables queue behind it.
// - A failed compaction output fails that compaction: the engine counts it in
//   `compactionStats().failureCount`, deletes what it wrote and retries later with backoff,
//   while flushes go on (until level 0 reaches its stop trigger or the debt its bound).
// - A delayed (slow) compaction keeps its debt pending longer: flushes wait for it once the debt
//   passes `maxPendingCompactionBytes`, and puts then wait with cause 'compaction'.

import { MemWalError } from '../src/index.js';
import type { StorageAdapter, StorageEstimate, StoreHandle } from '../src/index.js';

/** Whether table file `name` is a compaction output (see the comment at the top). */
export const isCompactionOutput = (name: string): boolean => name.startsWith('c');

export class TableWriteFaults implements StorageAdapter {
  readonly layout: string;
  /** Flush writes still to fail. */
  private flushFailures = 0;
  /** Compaction output writes still to fail. */
  private compactionFailures = 0;
  /** How long each compaction output write waits before it starts, ms (0: no wait). */
  private compactionDelayMs = 0;
  /** Delays in progress; turning the delay off and a handle's release end them early. */
  private readonly sleepers = new Set<() => void>();

  /**
   * A wrapper is an adapter of its own: its stores are placed inline where it is
   * (src/lsm/io-plane.ts), so every table write passes through here. The demo puts it in the I/O
   * worker (demo-io.worker.ts), where the tables are built.
   */
  constructor(readonly inner: StorageAdapter) {
    this.layout = inner.layout;
  }

  /** Fail the next `count` flush attempts (their table write throws `IOError`). */
  failFlushes(count: number): void {
    this.flushFailures += count;
  }

  /** Fail the next `count` compactions (their first output write throws `IOError`). */
  failCompactions(count: number): void {
    this.compactionFailures += count;
  }

  /** Make every compaction output write wait `ms` first (0 turns it off). */
  slowCompactions(ms: number): void {
    this.compactionDelayMs = ms;
    if (ms === 0) this.wakeAll();
  }

  /** Drop pending failures and the compaction delay. */
  clear(): void {
    this.flushFailures = 0;
    this.compactionFailures = 0;
    this.slowCompactions(0);
  }

  /** Called before every table write of the store's handles: delays, then maybe throws. */
  async beforeTableWrite(name: string): Promise<void> {
    const compaction = isCompactionOutput(name);
    if (compaction && this.compactionDelayMs > 0) await this.sleep(this.compactionDelayMs);
    if (compaction ? this.compactionFailures > 0 : this.flushFailures > 0) {
      if (compaction) this.compactionFailures--;
      else this.flushFailures--;
      throw new MemWalError('IOError', `injected fault: ${compaction ? 'compaction output' : 'flush'} ${name} (demo)`);
    }
  }

  /** End every delay in progress now. */
  wakeAll(): void {
    for (const wake of [...this.sleepers]) wake();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  async openStore(name: string, options: Parameters<StorageAdapter['openStore']>[1]): Promise<StoreHandle> {
    return new TableWriteFaultHandle(this, await this.inner.openStore(name, options));
  }

  destroyStore(name: string): Promise<void> {
    return this.inner.destroyStore(name);
  }

  async estimate(name: string): Promise<StorageEstimate> {
    return (await this.inner.estimate?.(name)) ?? {};
  }
}

/** A store handle that asks TableWriteFaults before each table write and forwards everything. */
class TableWriteFaultHandle implements StoreHandle {
  constructor(
    private readonly faults: TableWriteFaults,
    readonly inner: StoreHandle,
  ) {}

  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    await this.faults.beforeTableWrite(name);
    return this.inner.tableWrite(name, chunks);
  }

  release(): Promise<void> {
    this.faults.wakeAll(); // a delayed compaction should not hold up a close
    return this.inner.release();
  }

  manifestLoad: StoreHandle['manifestLoad'] = () => this.inner.manifestLoad();
  manifestCommit: StoreHandle['manifestCommit'] = (version, next) => this.inner.manifestCommit(version, next);
  walList: StoreHandle['walList'] = () => this.inner.walList();
  walRead: StoreHandle['walRead'] = (name, offset) => this.inner.walRead(name, offset);
  walAppend: StoreHandle['walAppend'] = (name, offset, bytes) => this.inner.walAppend(name, offset, bytes);
  walTruncate: StoreHandle['walTruncate'] = (name, length) => this.inner.walTruncate(name, length);
  walRemove: StoreHandle['walRemove'] = (name) => this.inner.walRemove(name);
  tableRead: StoreHandle['tableRead'] = (name) => this.inner.tableRead(name);
  tableReadRange: StoreHandle['tableReadRange'] = (name, offset, length) => this.inner.tableReadRange(name, offset, length);
  tableList: StoreHandle['tableList'] = () => this.inner.tableList();
  tableRemove: StoreHandle['tableRemove'] = (name) => this.inner.tableRemove(name);
}
