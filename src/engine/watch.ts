// Live reads (`watch`): a read re-run after each committed change that can alter its result, as
// Dexie's liveQuery does it. Each run of a read declares what it touched (its footprint: primary
// keys, column value ranges, or everything); each WAL commit group, once durable, is matched
// against every watch's footprint here, in the engine's thread, so a write that cannot alter a
// read wakes nothing and the page hears one message per affected watch per commit group.
//
// Guarantees, per watch: the first result at once; then at most one new result per commit group
// that intersects the footprint (commits that land during a run are coalesced into the next run);
// runs never overlap, so no result is older than one delivered before (each carries the durable
// position it reflects at least); after `stop` (or the store's end) nothing more is delivered
// and the watch is forgotten. Any runtime.

import type { RecordBatch } from 'apache-arrow';
import type { Key, KeyEncoder } from '../data/keys.js';
import { MemWalError, toMemWalError } from '../util/errors.js';

/** Values of one column a read covered (an index range): a row written with such a value may enter the result. */
export interface ColumnRange {
  column: string;
  /** Whether a row whose `column` holds `value` (as apache-arrow's `Vector.get` returns it) falls in the range. */
  contains(value: unknown): boolean;
}

/**
 * What one run of a read touched: a committed change outside it cannot alter the read's result.
 * - `all`: every row (a scan): every commit can;
 * - `keys`: the encoded primary keys it looked up or returned (`get`, `getMany`; an index query
 *   lists the keys of the rows it returned, so a change or delete of one of them is seen);
 * - `ranges`: the column (index) value ranges it covered, so a row written into one is seen.
 */
export interface ReadFootprint {
  all?: boolean;
  keys?: Iterable<Key>;
  ranges?: readonly ColumnRange[];
}

/** One run of a watched read: its result and what it touched. */
export type WatchRead<T> = () => Promise<{ value: T; touched: ReadFootprint }>;

/** A committed change (one WAL commit group, durable) as the watches see it. */
export interface Commit {
  /** Its WAL position. */
  position: number;
  /** Its rows (puts, and deletes as tombstone rows), in the store's internal schema. */
  batches: readonly RecordBatch[];
}

/** What a watch tells its owner. */
export interface WatchSink<T> {
  /** A result, reflecting at least durable position `position`. */
  deliver(value: T, position: number): void;
  /** A run failed; `final`: the read can never succeed (a bad key), and the watch has stopped. */
  fail(error: MemWalError, final: boolean): void;
}

/** Errors after which re-running a read is pointless: the watch stops. */
const FINAL: ReadonlySet<string> = new Set(['InvalidArgument', 'NotSupported']);

interface Footprint {
  all: boolean;
  keys: Set<Key> | undefined;
  ranges: readonly ColumnRange[];
}

const NOTHING: Footprint = { all: false, keys: undefined, ranges: [] };
const EVERYTHING: Footprint = { all: true, keys: undefined, ranges: [] };

function normalize(f: ReadFootprint): Footprint {
  return { all: f.all === true, keys: f.keys ? new Set(f.keys) : undefined, ranges: f.ranges ?? [] };
}

/** A commit's changed keys, encoded once (on first need) for all watches. */
class CommitView {
  private keys: ArrayLike<Key>[] | undefined;

  constructor(
    readonly commit: Commit,
    private readonly keyEncoder: KeyEncoder | undefined,
  ) {}

  changedKeys(): ArrayLike<Key>[] {
    if (!this.keyEncoder) return [];
    this.keys ??= this.commit.batches.map((b) => this.keyEncoder!(b));
    return this.keys;
  }

  /** Whether this commit can alter a read with footprint `f`. */
  touches(f: Footprint): boolean {
    if (f.all) return true;
    if (f.keys && f.keys.size > 0) {
      for (const keys of this.changedKeys()) {
        for (let i = 0; i < keys.length; i++) if (f.keys.has(keys[i]!)) return true;
      }
    }
    for (const range of f.ranges) {
      for (const b of this.commit.batches) {
        const column = b.getChild(range.column);
        if (!column) continue;
        for (let i = 0; i < b.numRows; i++) if (range.contains(column.get(i))) return true;
      }
    }
    return false;
  }
}

class Watch<T> {
  stopped = false;
  private running = false;
  private dirty = true;
  private footprint: Footprint = NOTHING;
  /** Commits that landed during the run in progress (matched again against its new footprint). */
  private duringRun: CommitView[] | undefined;
  private delivered = -1;

  constructor(
    private readonly read: WatchRead<T>,
    private readonly sink: WatchSink<T>,
    private readonly position: () => number,
    private readonly forget: (w: Watch<T>) => void,
  ) {}

  /** A commit group is durable: run again if it can alter the result. */
  committed(c: CommitView): void {
    if (this.stopped) return;
    if (this.running) {
      this.duringRun?.push(c);
      if (c.touches(this.footprint)) this.dirty = true;
      return;
    }
    if (c.touches(this.footprint)) {
      this.dirty = true;
      this.kick();
    }
  }

  kick(): void {
    if (this.running || this.stopped || !this.dirty) return;
    this.running = true;
    void this.loop();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.duringRun = undefined;
    this.forget(this);
  }

  /** One run at a time: a result is never older than one delivered before it. */
  private async loop(): Promise<void> {
    try {
      while (this.dirty && !this.stopped) {
        this.dirty = false;
        this.duringRun = [];
        const position = this.position();
        let result: { value: T; touched: ReadFootprint };
        try {
          result = await this.read();
        } catch (e) {
          const err = toMemWalError(e, 'watch read');
          if (this.stopped) return;
          if (err.code === 'Closed') return this.stop();
          const final = FINAL.has(err.code);
          if (final) this.stop();
          // Not knowing what it would have touched, any commit runs it again.
          if (this.footprint === NOTHING) this.footprint = EVERYTHING;
          this.sink.fail(err, final);
          continue; // a transient failure: the next matching commit runs it again
        }
        if (this.stopped) return;
        this.footprint = normalize(result.touched);
        for (const c of this.duringRun ?? []) if (c.touches(this.footprint)) this.dirty = true;
        this.duringRun = undefined;
        if (position < this.delivered) continue; // cannot happen while runs are serial; kept as the guarantee's check
        this.delivered = position;
        this.sink.deliver(result.value, position);
      }
    } finally {
      this.running = false;
    }
  }
}

/**
 * The live reads of one open store. `committed` is called for each durable commit group (in
 * position order, synchronously, from the WAL writer's `onDurable`); `close` stops every watch.
 */
export class Watches {
  private readonly live = new Set<Watch<unknown>>();
  private closed = false;

  constructor(
    private readonly keyEncoder: KeyEncoder | undefined,
    /** The durable WAL position now (a run's result reflects at least this). */
    private readonly durablePosition: () => number,
  ) {}

  /** Watches registered and not stopped (for tests and stats). */
  get size(): number {
    return this.live.size;
  }

  /** Start a watch: `read` runs now and after every commit that touches what it read. Returns its stop. */
  add<T>(read: WatchRead<T>, sink: WatchSink<T>): () => void {
    if (this.closed) throw new MemWalError('Closed', 'the store is closed');
    const w = new Watch<T>(read, sink, this.durablePosition, (x) => this.live.delete(x as Watch<unknown>));
    this.live.add(w as Watch<unknown>);
    w.kick();
    return () => w.stop();
  }

  /** A commit group is durable: wake the watches it can alter. */
  committed(commit: Commit): void {
    if (this.live.size === 0) return;
    const view = new CommitView(commit, this.keyEncoder);
    for (const w of [...this.live]) w.committed(view);
  }

  /** The store ended: every watch stops, nothing more is delivered. */
  close(): void {
    this.closed = true;
    for (const w of [...this.live]) w.stop();
  }
}
