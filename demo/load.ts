// The demo's write load, run on the page's main thread the way an app would write: a token
// bucket at the target rate, puts of `batch` rows through the MemWalClient, at most `inflight`
// at once. Work is done in short slices (a few ms each), so the page's long-task count measures
// memwal's client, not the generator.

import type { MemWalApi } from '../src/index.js';
import type { MemWalError } from '../src/index.js';
import { RowSource, SHAPES, type ShapeName } from './rows.js';

/** Longest slice of main-thread work one tick may take, ms. */
const SLICE_MS = 4;
/** Tick period, ms. */
const TICK_MS = 10;

export interface LoadParams {
  /** Target rate; 0 = as fast as `inflight` allows. */
  rowsPerSec: number;
  /** Rows per put. */
  batchRows: number;
  /** Most puts in flight at once. */
  inflight: number;
}

/** What the rows look like: their shape (schema) and key space (0: fresh ids). */
export interface RowParams {
  shape: ShapeName;
  keySpace: number;
}

export interface LoadCounters {
  /** Puts issued / resolved / rejected since the page loaded. */
  issued: number;
  acked: number;
  failed: number;
  /** Rows of the resolved puts. */
  ackedRows: number;
  /** Puts in flight right now. */
  inflight: number;
  /** Main-thread time spent building and sending puts (the synchronous part of `put`), ms. */
  sendMs: number;
  /** The longest single put send, ms. */
  maxSendMs: number;
  /** Rejections by MemWalError code. */
  errorsByCode: Record<string, number>;
  lastError: string | undefined;
}

/** The page's write load: start/stop, live parameters, and counters of what its puts did. */
export class LoadGenerator {
  readonly counters: LoadCounters = {
    issued: 0,
    acked: 0,
    failed: 0,
    ackedRows: 0,
    inflight: 0,
    sendMs: 0,
    maxSendMs: 0,
    errorsByCode: {},
    lastError: undefined,
  };
  private timer: ReturnType<typeof setTimeout> | undefined;
  private credit = 0;
  private lastTick = 0;
  private params: LoadParams;
  private source: RowSource;
  private target: MemWalApi | undefined;

  constructor(params: LoadParams & RowParams) {
    this.params = params;
    this.source = new RowSource(params.shape, params.keySpace);
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Rate, batch and in-flight limit take effect at the next tick. */
  setParams(p: LoadParams): void {
    this.params = p;
  }

  /** Rows of this shape and key space from now on (a reopened store of another shape). */
  setRows({ shape, keySpace }: RowParams): void {
    if (SHAPES[shape] !== this.source.shape || keySpace !== this.source.keySpace) this.source = new RowSource(shape, keySpace);
    this.source.prepare();
  }

  /** Where puts go (undefined while the store is reopening: the generator idles). */
  setTarget(t: MemWalApi | undefined): void {
    this.target = t;
  }

  start(): void {
    if (this.timer) return;
    this.credit = 0;
    this.lastTick = performance.now();
    this.schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.tick(), TICK_MS);
  }

  private tick(): void {
    const now = performance.now();
    const { rowsPerSec: rate, batchRows: batch, inflight } = this.params;
    const elapsed = (now - this.lastTick) / 1000;
    this.lastTick = now;
    // Token bucket: at most half a second (or one batch per in-flight slot) of burst after a stall.
    const cap = Math.max(batch * inflight, rate * 0.5);
    this.credit = rate > 0 ? Math.min(cap, this.credit + rate * elapsed) : Infinity;
    const deadline = now + SLICE_MS;
    while (this.target && this.counters.inflight < inflight && this.credit >= batch && performance.now() < deadline) {
      this.issue(this.target, batch);
      if (rate > 0) this.credit -= batch;
    }
    if (rate === 0) this.credit = 0;
    this.schedule();
  }

  private issue(target: MemWalApi, rows: number): void {
    const c = this.counters;
    c.issued++;
    c.inflight++;
    const started = performance.now();
    const put = target.put(this.source.next(rows));
    const took = performance.now() - started;
    c.sendMs += took;
    c.maxSendMs = Math.max(c.maxSendMs, took);
    put
      .then(
        (r) => {
          c.acked++;
          c.ackedRows += r.rows;
        },
        (e: unknown) => {
          c.failed++;
          const code = (e as Partial<MemWalError>)?.code ?? (e as Error)?.name ?? 'Error';
          c.errorsByCode[code] = (c.errorsByCode[code] ?? 0) + 1;
          c.lastError = `${code}: ${(e as Error)?.message ?? String(e)}`;
        },
      )
      .finally(() => c.inflight--);
  }
}
