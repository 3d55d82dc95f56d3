// A background lane (LevelDB's BackgroundCompaction, SlateDB's dispatcher): the one type every
// background loop of a writer runs in — WAL appends, flushes, compactions, WAL retention — with one
// lifecycle. `wake()` starts the lane when idle, or asks the running loop for one more pass; the
// loop runs passes until one finds nothing to do and nobody woke the lane meanwhile; close waits
// for the lanes whose I/O must end before the store is released, and shutdown ends the rest.
// Invariants: at most one loop per lane at a time; no loop starts on a dead writer; every end of
// a loop notifies `life.progress`.

import { MemWalError } from '../util/errors.js';
import type { Lifecycle } from './lifecycle.js';

/**
 * What one pass found: `more` to do now; `idle`, nothing left (a wake during the pass runs one
 * more); `stop`, end now whatever woke the lane (the writer is dead, or close had its one try).
 */
export type LaneStep = 'more' | 'idle' | 'stop';

/**
 * One pass. It answers synchronously when it finds nothing to do at once, so a lane woken with
 * nothing to do ends in the same synchronous step (its end's notification reaches no waiter that
 * woke it and then waits for progress: a flush waiting for compaction would otherwise wake again
 * at once, and again).
 */
export type LanePass = () => LaneStep | Promise<LaneStep>;

export interface LaneOptions {
  /**
   * At close: `finish`, the store is released only after the lane's loop ended (its I/O must
   * not outlive the handle); `stop`, the loop ends by itself or at shutdown (the writer turns
   * dead and the pass sees it).
   */
  atClose: 'finish' | 'stop';
  /** Whether the lane may start, or run another pass after a wake, besides the writer not being dead. Default: always. */
  mayRun?: () => boolean;
}

/** One background loop of a writer. */
export class BackgroundLane {
  private loop: Promise<void> | undefined;
  private woken = false;

  constructor(
    readonly name: string,
    private readonly life: Lifecycle,
    /** One pass of the loop (a commented ladder in each lane's owner). */
    private readonly pass: LanePass,
    readonly options: LaneOptions,
  ) {}

  /** True while a loop runs (or `exclusive` holds the lane). */
  get busy(): boolean {
    return this.loop !== undefined;
  }

  /** Start the loop if it is idle and may run; a running loop makes one more pass. */
  wake(): void {
    if (this.loop) {
      this.woken = true;
      return;
    }
    if (this.mayRun()) this.loop = this.run();
  }

  /** Resolves once no loop runs (a loop started meanwhile is waited for too). Never rejects. */
  async settled(): Promise<void> {
    while (this.loop) await this.loop;
  }

  /**
   * Run `work` with the lane to itself: waits until no loop runs, holds the lane (a wake meanwhile
   * starts the loop after `work`), then lets go. Rejects `Aborted` if `signal` aborts while it waits.
   */
  async exclusive<T>(work: () => Promise<T>, signal?: AbortSignal, what = `${this.name} aborted`): Promise<T> {
    while (this.loop) {
      if (signal?.aborted) throw new MemWalError('Aborted', what);
      await this.life.progress.wait(signal);
    }
    let release!: () => void;
    this.loop = new Promise<void>((resolve) => (release = resolve));
    try {
      return await work();
    } finally {
      this.loop = undefined;
      release();
      this.life.progress.notify();
      if (this.woken) {
        this.woken = false;
        this.wake();
      }
    }
  }

  /** Whether a loop may start (or go on after a wake) now: never on a dead writer. */
  private mayRun(): boolean {
    return !this.life.dead && (this.options.mayRun?.() ?? true);
  }

  /** Runs passes; undefined when the loop ended in this synchronous step, else the loop. */
  private run(): Promise<void> | undefined {
    let step: LaneStep | Promise<LaneStep>;
    try {
      for (;;) {
        this.woken = false;
        step = this.pass();
        if (step instanceof Promise) break;
        if (this.ends(step)) {
          this.end();
          return undefined;
        }
      }
    } catch (e) {
      this.end();
      throw e;
    }
    return this.runAsync(step);
  }

  private async runAsync(first: Promise<LaneStep>): Promise<void> {
    try {
      let step = await first;
      while (!this.ends(step)) {
        this.woken = false;
        step = await this.pass();
      }
    } finally {
      this.end();
    }
  }

  /** Whether the loop ends after `step`: a stop, or nothing left and no wake meanwhile. */
  private ends(step: LaneStep): boolean {
    return step === 'stop' || (step === 'idle' && !(this.woken && this.mayRun()));
  }

  private end(): void {
    this.loop = undefined;
    this.life.progress.notify();
  }
}

/** The lanes of one writer: open wakes them all, close settles them all, knowing none by name. */
export class BackgroundLanes {
  private readonly lanes: BackgroundLane[] = [];

  constructor(private readonly life: Lifecycle) {}

  /** A new lane of this writer running `pass`. */
  add(name: string, pass: LanePass, options: LaneOptions): BackgroundLane {
    const lane = new BackgroundLane(name, this.life, pass, options);
    this.lanes.push(lane);
    return lane;
  }

  /** Wake every lane (the end of open: each finds what recovery left it to do). */
  wakeAll(): void {
    for (const lane of this.lanes) lane.wake();
  }

  /** Close: resolves once every `finish` lane has ended; `stop` lanes end by themselves or at shutdown. */
  async settle(): Promise<void> {
    for (const lane of this.lanes) if (lane.options.atClose === 'finish') await lane.settled();
  }
}
