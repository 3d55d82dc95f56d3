// Storage latency for the simulation: every call of the wrapped adapter waits a seeded number of
// virtual milliseconds before it reaches the adapter and before its answer comes back, so calls of
// the put path, flushes, compactions, reads and recovery interleave differently from seed to seed.
// The call itself stays atomic (MemoryStorage does its work in one synchronous step).

import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle } from '../../src/storage/adapter.js';
import { int } from '../../src/testing/rng.js';
import { setTimer } from '../../src/util/schedule.js';

export class LatencyStorage implements StorageAdapter {
  readonly layout: string;

  /** Where each call is reported (for `--trace-storage`). */
  log: ((line: string) => void) | undefined;
  private handles = 0;

  constructor(
    readonly inner: StorageAdapter,
    private readonly random: () => number,
    private readonly maxMs: number,
  ) {
    this.layout = inner.layout;
  }

  /** A delay: none half the time, else up to `maxMs` virtual ms. */
  private delay(): Promise<void> | undefined {
    if (this.maxMs === 0 || this.random() < 0.5) return undefined;
    const ms = int(this.random, this.maxMs + 1);
    return new Promise((resolve) => setTimer(resolve, ms));
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    await this.delay();
    const result = await work();
    await this.delay();
    return result;
  }

  async openStore(name: string, options: LockOptions): Promise<StoreHandle> {
    const handle = await this.call(() => this.inner.openStore(name, options));
    const self = this;
    const id = ++this.handles;
    return new Proxy(handle, {
      get(target, prop) {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) =>
          self.call(async () => {
            const what = `h${id}.${String(prop)}(${args.map(brief).join(', ')})`;
            try {
              const result = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
              self.log?.(`    storage ${what} -> ${brief(result)}`);
              return result;
            } catch (e) {
              self.log?.(`    storage ${what} -> ${(e as { code?: string }).code ?? 'error'} ${(e as Error).message}`);
              throw e;
            }
          });
      },
    });
  }

  destroyStore(name: string): Promise<void> {
    return this.call(() => this.inner.destroyStore(name));
  }

  estimate(name: string): Promise<StorageEstimate> {
    return this.call(() => this.inner.estimate?.(name) ?? Promise.resolve({}));
  }
}

/** A short form of a storage call's argument or result, for traces. */
function brief(v: unknown): string {
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (Array.isArray(v)) return `[${v.map(brief).join(', ')}]`;
  if (v && typeof v === 'object' && 'writerEpoch' in v) {
    const m = v as { version: number; writerEpoch: number; replayCursor: number; positionHint: number; tables: { name: string }[] };
    return `manifest{v${m.version} e${m.writerEpoch} cursor ${m.replayCursor} hint ${m.positionHint} tables ${m.tables.map((t) => t.name).join(' ')}}`;
  }
  if (v && typeof v === 'object' && 'name' in v && 'bytes' in v) return `${(v as { name: string }).name}:${(v as { bytes: number }).bytes}`;
  if (v === undefined) return 'ok';
  return typeof v === 'object' ? '{…}' : String(v);
}
