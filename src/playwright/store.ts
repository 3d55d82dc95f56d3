// MemWalStore: one store of the app, seen from a Playwright test: its stats and calls (through a
// client the app opened, in whichever page has one) and its faults (through the kit's worker
// that hosts it). Node (Playwright test process).

import type { Page, Worker } from '@playwright/test';
import type { StatsSnapshot } from '../metrics/stats.js';
import { MemWalError } from '../util/errors.js';
import type { MemWalKit, PageOpenRecord } from './kit.js';
import type { KitFaultError, KitFaultOp, KitWorkerControls } from './protocol.js';

/** Where the kit's worker keeps its controls (`KitWorkerControls`). */
const WORKER_KEY = 'memwal.playwright.worker';
const POLL_MS = 50;

/**
 * A store's stats: the app's client's `stats()` snapshot (one moment; `memtable`, `compaction`
 * and `read` undefined in WAL-only mode). From an app on a memwal without `stats()`, each
 * accessor read separately (then not one moment, and only the accessors' fields).
 */
export type StoreStats = StatsSnapshot;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The kit's worker that hosts a store, and the page that started it. */
interface Hosting {
  worker: Worker;
  page: Page;
}

/**
 * One store of the app, by name, in every page of the test's browser context. Calls go to a
 * client the app opened (`MemWalClient`): the first page, in `context.pages()` order, that has
 * one. Fault controls go to the kit's worker hosting the store, which exists only when the test
 * asked with `memwal.store(name, { faults: true })` before the page opened it; they apply to that
 * worker (a reopened store starts with none). Every method rejects with a `MemWalError`. Get it
 * from `memwal.store(name)`.
 */
export class MemWalStore {
  /** @internal Use `memwal.store(name)`. */
  constructor(
    private readonly kit: MemWalKit,
    readonly name: string,
  ) {}

  // ------------------------------------------------------------------ through the app's client

  /** Every stats accessor (memtable, backpressure, compaction, WAL, writes, reads, storage). */
  stats(): Promise<StoreStats> {
    return this.kit.call(this.name, 'stats');
  }

  /** `metrics()`: Prometheus text. */
  metrics(): Promise<string> {
    return this.kit.call(this.name, 'metrics');
  }

  /** `sync()`: everything the app's puts so far is durable. */
  sync(): Promise<{ position: number }> {
    return this.kit.call(this.name, 'sync');
  }

  /** `forceSealActive()`: freeze the active memtable now (as a full one would be). */
  forceSealActive(): Promise<{ sealedGeneration: number | null }> {
    return this.kit.call(this.name, 'forceSealActive');
  }

  /** `waitForFlushDrain()`: every memtable frozen so far has committed (waits through retried failures). */
  async waitForFlushDrain(): Promise<void> {
    await this.kit.call(this.name, 'waitForFlushDrain');
  }

  /** `forceSealActive()` then `waitForFlushDrain()`: what the app holds in memory now reaches table files. */
  async flush(): Promise<void> {
    await this.forceSealActive();
    await this.waitForFlushDrain();
  }

  /** `compact()`: run compaction until none is pending. */
  compact(): Promise<unknown> {
    return this.kit.call(this.name, 'compact');
  }

  /**
   * `scan()` as plain rows (newest version of each key, tombstones hidden): Int64 as `bigint`,
   * binary as `Uint8Array`, as Arrow's `toJSON()` gives them.
   */
  scan(options: { columns?: string[] } = {}): Promise<Record<string, unknown>[]> {
    return this.kit.call(this.name, 'scan', [options]);
  }

  /** The opens of this store in every page, oldest first per page. */
  opens(): Promise<PageOpenRecord[]> {
    return this.kit.opens(this.name);
  }

  /**
   * Resolves once a client of the store in some page reports `'open'`. Rejects after `timeout` ms
   * (default 30 s) with the code of the open that failed (`Locked` while it still waits for the
   * lock, `Closed` when no page opened it), and a message listing the opens seen.
   */
  async waitForOpen(options: { timeout?: number } = {}): Promise<void> {
    const timeout = options.timeout ?? 30_000;
    const end = Date.now() + timeout;
    for (;;) {
      const opens = await this.opens();
      if (opens.some((o) => o.state === 'open')) return;
      if (Date.now() > end) {
        const last = opens.at(-1);
        const code =
          last?.error && last.error.code !== 'Error' ? last.error.code : last?.state === 'waiting-for-lock' ? 'Locked' : 'Closed';
        throw new MemWalError(
          code as 'Closed',
          `store '${this.name}' did not open within ${timeout} ms. ${await this.kit.describe(this.name)}`,
        );
      }
      await sleep(POLL_MS);
    }
  }

  // ------------------------------------------------------------------ through the kit's worker

  /**
   * Make the next `count` (a positive integer or Infinity) storage operations `op` of the
   * store's worker fail without touching storage (`'tableWrite'` fails flushes, `'walAppend'`
   * puts, `'manifestCommit'` commits), with `error` (default `'IOError'`). Queues like
   * `FaultInjectingStorage.failNext`.
   */
  async failNext(op: KitFaultOp, count = 1, error?: KitFaultError): Promise<void> {
    await this.control('failNext', op, count, error);
  }

  /** As `failNext`, but each operation reaches storage first and then fails (a lost reply). */
  async failAfter(op: KitFaultOp, count = 1, error?: KitFaultError): Promise<void> {
    await this.control('failAfter', op, count, error);
  }

  /**
   * Make operations `op` wait until the returned function is called (idempotent). A held
   * operation is in flight: `crash()` while holding it is a crash mid-operation.
   */
  async hold(op: KitFaultOp): Promise<() => Promise<void>> {
    const { worker } = await this.hosting();
    const id = await controlIn(worker, 'hold', op);
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await controlIn(worker, 'release', id).catch(() => undefined); // the worker is gone: nothing is held
    };
  }

  /** Drop every pending `failNext` / `failAfter` failure (holds stay held). */
  async clearFaults(): Promise<void> {
    await this.control('clearFaults');
  }

  /**
   * Kill the store's worker as a crashed tab's process dies: no close, no flush; the browser
   * frees its locks and handles. Resolves once the worker is gone and, for `tabs: 'exclusive'`,
   * the page's client has noticed (it rejects calls `Closed`); the app then reopens the store as
   * it would in the field (`waitForOpen()` waits for that).
   */
  async crash(): Promise<void> {
    const { worker, page } = await this.hosting();
    const openId = Number(new URL(worker.url()).searchParams.get('open'));
    const gone = new Promise<void>((resolve) => worker.once('close', () => resolve()));
    await controlIn(worker, 'crash').catch(() => undefined); // the worker may close before it answers
    await Promise.race([
      gone,
      sleep(10_000).then(() => Promise.reject(new MemWalError('IOError', `crash(): the worker of '${this.name}' did not end`))),
    ]);
    const end = Date.now() + 10_000;
    for (;;) {
      const mine = (await this.kit.opens(this.name)).find((o) => o.page === page.url() && o.id === openId);
      if (!mine || mine.tabs === 'share' || mine.state !== 'open') return;
      if (Date.now() > end) throw new MemWalError('IOError', `crash(): the client of '${this.name}' did not notice its worker's death`);
      await sleep(POLL_MS);
    }
  }

  /** `method(...args)` of the controls of the kit's worker hosting this store. */
  private async control<M extends keyof KitWorkerControls>(
    method: M,
    ...args: Parameters<KitWorkerControls[M]>
  ): Promise<ReturnType<KitWorkerControls[M]>> {
    return controlIn((await this.hosting()).worker, method, ...args);
  }

  /**
   * The kit's worker that holds this store's writer now. Rejects `NotSupported` with what to do
   * when the kit does not host the store.
   */
  private async hosting(): Promise<Hosting> {
    for (const page of this.kit.context.pages()) {
      for (const worker of page.workers()) {
        if (new URL(worker.url()).pathname !== this.kit.workerPath) continue;
        const names = await controlIn(worker, 'hosting').catch(() => [] as string[]);
        if (names.includes(this.name)) return { worker, page };
      }
    }
    const opens = await this.opens();
    const why = !this.kit.wantsFaults(this.name)
      ? `ask with memwal.store('${this.name}', { faults: true }) before the page opens it`
      : opens.some((o) => o.notHosted)
        ? `the kit could not host it: ${opens.find((o) => o.notHosted)!.notHosted}`
        : opens.some((o) => o.kitHosted && o.state === 'open')
          ? 'its worker is gone'
          : `it is not open in a kit-hosted worker now (opened before the test asked? reload the page). ${await this.kit.describe(this.name)}`;
    throw new MemWalError('NotSupported', `store '${this.name}' has no fault controls: ${why}`);
  }
}

/** `method(...args)` of the kit's controls in `worker`. */
function controlIn<M extends keyof KitWorkerControls>(
  worker: Worker,
  method: M,
  ...args: Parameters<KitWorkerControls[M]>
): Promise<ReturnType<KitWorkerControls[M]>> {
  return worker.evaluate(
    ([key, m, a]) => {
      const controls = (globalThis as unknown as Record<symbol, Record<string, (...x: unknown[]) => unknown>>)[Symbol.for(key)]!;
      return controls[m]!(...a);
    },
    [WORKER_KEY, method, args as unknown[]] as const,
  ) as Promise<ReturnType<KitWorkerControls[M]>>;
}
