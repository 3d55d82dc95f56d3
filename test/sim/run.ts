// One seed of the simulation: draw the configuration and the steps, run them against MemWal over
// FaultInjectingStorage (over seeded latency, over MemoryStorage) on the virtual clock, and check
// after every step: reads against the model, every part's invariants, the manifest's invariants,
// calls pending past their limit, opens that fail without a reason, the drain's sink. The first
// violation ends the run; the result carries the trace (every step and every settlement, with
// virtual times), which is the same byte for byte each time the seed runs.

import { Field, Int64, Schema, tableFromIPC, Utf8 } from 'apache-arrow';
import { MemWal } from '../../src/engine/memwal.js';
import { rowObject } from '../../src/data/rows.js';
import { encodeSchema, RENAMED_FROM } from '../../src/data/schema.js';
import { type DrainHandle, drain } from '../../src/drain/drain.js';
import { MemWalError, quotaExceededError } from '../../src/util/errors.js';
import type { Manifest } from '../../src/format/manifest/manifest.js';
import type { StatsSnapshot } from '../../src/metrics/stats.js';
import { recordedVersions } from '../../src/format/schema-versions.js';
import { MemoryStorage } from '../../src/storage/memory.js';
import type { FaultOp } from '../../src/testing/fault-controller.js';
import { FaultInjectingStorage } from '../../src/testing/fault.js';
import { int, rng } from '../../src/testing/rng.js';
import { scanSegment } from '../../src/format/wal/codec.js';
import { asFormat2 } from '../../src/format/table/previous-format.test-util.js';
import { crc32c } from '../../src/util/crc32c.js';
import { installClock, type Leak, VirtualClock } from './clock.js';
import { type Action, drawConfig, drawSteps, type Evolve, type FaultSpec, type SimConfig, type Step } from './gen.js';
import { LatencyStorage } from './latency.js';
import { type Candidate, diffRow, Model, type ModelRow, type WriteOp } from './model.js';
import { describeQuery, indexOption, type QueryAction, runQuery } from './queries.js';
import { ModelSink } from './sink.js';
import {
  type ColType,
  type ColumnSpec,
  type KeyType,
  columnValue,
  compareKeyValues,
  keyColumns,
  keyId,
  keyObject,
  keyOfRow,
  type KeyValue,
  show,
  storeSchema,
} from './values.js';

const STORE = 'sim';

/** A broken promise of the engine, found by a check. `kind` groups violations for shrinking. */
export class Violation extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(`${kind}: ${message}`);
  }
}

export interface SimResult {
  seed: number;
  config: SimConfig;
  steps: Step[];
  /** Indices of the steps that ran (all of them unless a subset was asked for). */
  ran: number[];
  violation: Violation | undefined;
  trace: string[];
  /** Figures for the test's own sanity checks (did the seeds do real work?). */
  counts: Record<string, number>;
}

export interface RunOptions {
  /** Run only these step indices (shrinking). */
  keep?: ReadonlySet<number>;
  /** Run these steps without their faults (shrinking). */
  dropFaults?: ReadonlySet<number>;
  /** Keep the trace lines (always kept on a violation). */
  trace?: boolean;
  /** Trace every storage call too. */
  traceStorage?: boolean;
}

/** A writer the simulation drives. */
interface Live {
  w: MemWal;
  session: number;
  columns: ColumnSpec[];
  /** No fault was injected, no crash, steal or close touched it since its open began. */
  faultFree: boolean;
  /** The simulation started closing or aborting it (its pending puts may reject `Closed`). */
  ending: boolean;
  /** A call that never settles was injected while it ran (a later read may share that call and hit its time limit). */
  hung?: boolean;
  /** A call of this writer may never settle (hangNext, hangAfter: only a crash ends it; holds end with their step). */
  hangsForEver?: boolean;
  /** Opened by a steal or beside an old writer still running: segments that writer adds are not its own to remove. */
  besideOld?: boolean;
  /** The faults that fired, by operation, since its open; undefined once they cannot be told apart (hangs, steals, outages). */
  ledger?: Map<FaultOp, number>;
  /** Its puts rejected `BackpressureTimeout` or `Aborted` (a wait that ended without admission) so far. */
  gaveUp?: number;
  drain?: DrainHandle;
  sink?: ModelSink;
}

/** A WAL segment inside MemoryStorage. */
interface MemSegment {
  length: number;
  read(offset: number): Uint8Array;
  truncate(length: number): void;
}

/** An open in progress. */
interface Opening {
  call: Tracked<unknown>;
  session: number;
  /** The opener's columns (its view). */
  columns: ColumnSpec[];
  /** The columns the store keeps after this open (hidden ones included), in their stored order. */
  stored: ColumnSpec[];
  /** `dropColumns` of this open. */
  drop: string[];
  /** Incarnations from this one on were drawn for this open (a new column keeps its own). */
  incFloor: number;
  expect: 'open' | 'invalid' | 'reset';
  /** A steal: the predecessor goes on and may win the claim race every time (docs/impl.md §7: 3 tries). */
  steal: boolean;
  crashes: number;
  /** Faults armed so far when it started (any arming while it runs explains a failure). */
  arms: number;
  /** Hangs armed so far when it started (a hang armed while it opens may outlive the open). */
  hangArms: number;
  armed: boolean;
  /** The store's record in MemoryStorage when the open started (a reset replaces it). */
  store: unknown;
  /** What storage held when it started: a refused schema change must leave it as it was. */
  held: string;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** A call the simulation tracks: its outcome once settled. */
interface Tracked<T> extends Pending {
  result?: Outcome<T>;
  settled: Promise<void>;
}

/** A call the simulation made and has not seen settle. */
interface Pending {
  label: string;
  started: number;
}

const CLEAN = new Set(['InvalidArgument', 'NotSupported', 'Aborted', 'BackpressureTimeout']);

export async function runSeed(seed: number, options: RunOptions = {}): Promise<SimResult> {
  const config = drawConfig(seed);
  const steps = drawSteps(seed, config);
  const sim = new Sim(seed, config, options.trace ?? false);
  if (options.traceStorage) sim.latency.log = (line) => sim.log(line);
  const ran: number[] = [];
  const leaks: Leak[] = [];
  const uninstall = installClock(sim.clock, leaks);
  sim.leaks = leaks;
  try {
    await sim.start();
    for (let i = 0; i < steps.length; i++) {
      if (options.keep && !options.keep.has(i)) continue;
      ran.push(i);
      await sim.step(i, options.dropFaults?.has(i) ? { ...steps[i]!, faults: [] } : steps[i]!);
      if (sim.finished) break;
    }
    await sim.finish();
  } catch (e) {
    if (!(e instanceof Violation)) {
      sim.violation ??= new Violation('harness', `${(e as Error)?.stack ?? String(e)}`);
    } else sim.violation ??= e;
  } finally {
    await sim.teardown();
    uninstall();
  }
  if (sim.violation) sim.log(`VIOLATION ${sim.violation.message}`);
  return { seed, config, steps, ran, violation: sim.violation, trace: sim.traceLines, counts: sim.counts };
}

class Sim {
  readonly clock: VirtualClock;
  leaks: Leak[] = [];
  readonly mem = new MemoryStorage();
  readonly latency: LatencyStorage;
  readonly storage: FaultInjectingStorage;
  readonly model: Model;
  readonly traceLines: string[] = [];
  readonly counts: Record<string, number> = {};
  violation: Violation | undefined;
  finished = false;
  /** Virtual ms any call may take before it counts as a hang. */
  readonly bound: number;
  private readonly r: () => number;
  private readonly sinkRandom: () => number;
  private readonly sinkFailChance: number;
  private readonly pending = new Set<Pending>();
  /** The columns the current opener names (its view of the store, SPEC §9.1). */
  private columns: ColumnSpec[];
  /** The columns the store keeps, hidden ones included, in their stored order (the manifest's schema). */
  private stored: ColumnSpec[];
  /** Columns `dropColumns` removed (an evolution may add them again: a new column). */
  private readonly droppedColumns: ColumnSpec[] = [];
  private nextInc: number;
  private session = 0;
  private current: Live | undefined;
  private readonly stale: Live[] = [];
  private route: { to: Live; left: number; successor: Opening } | undefined;
  private holds: (() => void)[] = [];
  private faultsArmed = false;
  /**
   * An evolving open (or reset) that failed under faults: its claim may still land. `after`: the
   * newest schema version the store recorded when it failed (a claim that lands records a newer one).
   */
  private inDoubt: { columns: ColumnSpec[]; stored: ColumnSpec[]; reset: boolean; after: number } | undefined;
  /** This step armed a persistent outage (a failNext of 1000): background work cannot finish while it lasts. */
  private outage = false;
  /** How many steps armed faults so far, and how many of them calls that never settle (or are held). */
  private arms = 0;
  private hangArms = 0;
  /** The step now running armed a hang. */
  private stepHangs = false;
  /** The faults armed for the step that runs now. */
  private stepFaults: readonly FaultSpec[] = [];
  /** The faults that had fired when an outage ended within its step (`endOutage`). */
  private firedBeforeHealing: Map<FaultOp, number> | undefined;
  /** An outage ended within the step that runs now (the writer's ledger is dropped, as for any outage). */
  private outageEnded = false;
  private damaged = false;
  private crashesSeen = 0;
  /** The consumer cursor the simulation set itself (no drain). */
  private consumed = 0;
  /** Pool indices of the keys of the last put (they sit in the active memtable until it seals). */
  private lastPutKeys: number[] = [];
  /** Pool indices the last `edgeDelete` aimed at (`edgePut` writes them again). */
  private edgeKeys: number[] = [];
  /** Writers closed or aborted whose compaction may still be running (see `step`). */
  private ended: MemWal[] = [];
  /** Table files `downgrade` rewrote in format 2 (the engine writes only format 3). */
  private readonly previousFormat = new Set<string>();
  private sink: ModelSink | undefined;

  constructor(
    readonly seed: number,
    readonly config: SimConfig,
    private readonly keepTrace: boolean,
  ) {
    this.clock = new VirtualClock(rng(seed * 7 + 3), config.stall.chance, config.stall.maxMs);
    this.latency = new LatencyStorage(this.mem, rng(seed * 7 + 4), config.latencyMs);
    this.storage = new FaultInjectingStorage(this.latency, { seed: seed * 7 + 5 });
    this.model = new Model(config.keyType);
    this.r = rng(seed * 7 + 6);
    this.sinkRandom = rng(seed * 7 + 7);
    this.sinkFailChance = rng(seed * 7 + 8)() < 0.5 ? 0 : 0.2;
    this.columns = config.columns.map((c) => ({ ...c }));
    this.stored = config.columns.map((c) => ({ ...c }));
    this.nextInc = this.columns.length + 1;
    const w = config.walRetry.timeoutMs;
    this.bound = 4 * (w + config.flushRetry.stallMs + Math.max(w, 1000)) + config.frozenMemtableGraceMs + 30_000;
  }

  log(line: string): void {
    if (process.env.MEMWAL_SIM_ECHO) console.log(`${String(this.clock.now()).padStart(7)}ms ${line}`);
    if (this.keepTrace || this.traceLines.length < 1000) this.traceLines.push(`${String(this.clock.now()).padStart(7)}ms ${line}`);
    else if (this.traceLines.length === 1000) this.traceLines.push('… (trace cut at 1000 lines; rerun with --trace)');
  }

  private count(what: string): void {
    this.counts[what] = (this.counts[what] ?? 0) + 1;
  }

  fail(kind: string, message: string): never {
    const v = new Violation(kind, message);
    this.violation ??= v;
    throw v;
  }

  /** Record a violation found in a callback (it ends the run at the next check). */
  private flag(kind: string, message: string): undefined {
    this.violation ??= new Violation(kind, message);
  }

  // ------------------------------------------------------------------ lifecycle of the run

  async start(): Promise<void> {
    this.log(`config ${JSON.stringify(this.config, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
    this.current = await this.openWriter(undefined, false);
    if (!this.current) this.fail('open', 'the first open of an empty store failed');
  }

  async step(i: number, s: Step): Promise<void> {
    if (this.violation) throw this.violation;
    const a = s.action;
    // A writer is needed first (opened before this step's faults are armed).
    if (this.route && (!isWrite(a) || this.route.left <= 0)) await this.finishSteal();
    if (this.needsWriter(a) && !this.current && !this.route) this.current = await this.openWriter(undefined, false);
    // Liveness (docs/impl.md, "Faults: retry or poison"): a writer open before a step whose
    // faults are all of the "retry" class must still be open after them, and flush.
    const before = this.current;
    const live =
      before !== undefined &&
      s.faults.length > 0 &&
      s.faults.every(retried) &&
      !['close', 'abort', 'crash', 'reopen', 'stale', 'damage', 'destroy', 'downgrade'].includes(a.a) &&
      this.writerIsWell(before);
    // The retry counters are compared with the faults that fired while the writer lived (a writer
    // that hangs, steals or is stolen from, or meets an outage leaves the ledger).
    // A writer aborted or closed may still finish a compaction it had started (its calls fail on the
    // released handle), and a fault it meets is not this writer's: no count while one runs.
    this.ended = this.ended.filter((w) => compactionRunning(w));
    const counted =
      before?.ledger !== undefined && !['stale', 'damage', 'destroy'].includes(a.a) && this.writerIsWell(before) && this.ended.length === 0;
    if (before && !counted) before.ledger = undefined;
    this.arm(s.faults);
    this.stepFaults = s.faults;
    this.log(`#${i} ${describeAction(a)}${s.faults.length ? ` with ${s.faults.map(describeFault).join(', ')}` : ''}`);
    this.count(a.a);
    if (this.needsWriter(a) && !this.current && !this.route) this.log('  no writer: skipped');
    else await this.act(a);
    if (s.window > 0) await this.clock.advance(s.window);
    await this.afterCrash();
    const fired = this.firedBeforeHealing ?? this.firedFaults(s.faults);
    const outage = this.outage || this.outageEnded;
    this.firedBeforeHealing = undefined;
    this.outageEnded = false;
    this.disarm();
    if (before?.ledger && counted) {
      if (outage || before.hung) before.ledger = undefined;
      else for (const [op, n] of fired) before.ledger.set(op, (before.ledger.get(op) ?? 0) + n);
    }
    const quiet = live && this.current === before && this.storage.crashed === this.crashesSeen;
    if (quiet) await this.checkLive(before);
    if (before?.ledger && this.current === before && this.writerIsWell(before)) this.checkCounters(before, before.ledger, quiet === true);
    await this.check(`after step ${i}`);
  }

  /**
   * Whether `live` is the only writer, open, not poisoned, with no call of an earlier fault still
   * hanging and nothing else (a steal, damage, an outage) that may stop it for a documented reason.
   */
  private writerIsWell(live: Live): boolean {
    return (
      this.current === live &&
      this.stale.length === 0 &&
      !this.route &&
      !this.damaged &&
      !live.hangsForEver &&
      !live.ending &&
      this.inDoubt === undefined &&
      live.w.writerState === 'open'
    );
  }

  /**
   * After a step whose faults were all retried in place, once they cleared: the writer is still
   * open, and a seal and `waitForFlushDrain` complete within the usual bound of simulated time.
   */
  private async checkLive(live: Live): Promise<void> {
    const state = live.w.writerState;
    if (state !== 'open') {
      this.fail('liveness', `faults the engine retries in place left the writer ${state}`);
    }
    if (this.config.mode === 'wal-only') return;
    this.count('liveness checks');
    const call = this.track(
      `seal + waitForFlushDrain after retried faults (session ${live.session})`,
      live.w.forceSealActive().then(() => live.w.waitForFlushDrain()),
    );
    await this.runUntil(call);
    const res = call.result!;
    if (!res.ok) {
      const e = res.error as Error;
      this.fail('liveness', `after faults the engine retries in place, the flush failed: ${this.codeOf(e, 'flush')} ${e.message}`);
    }
    this.log('  (liveness) seal + waitForFlushDrain after retried faults: ok');
  }

  /**
   * How many of each operation's injected faults fired (failed, lost their reply or tore a call)
   * during the step: what was armed less what is still queued. Read before the faults are cleared.
   */
  private firedFaults(faults: readonly FaultSpec[]): Map<FaultOp, number> {
    const fired = new Map<FaultOp, number>();
    const add = (op: FaultOp, n: number) => fired.set(op, (fired.get(op) ?? 0) + n);
    for (const f of faults) {
      if (f.f === 'failNext' || f.f === 'failAfter') add(f.op, f.count);
      if (f.f === 'failAfter' && f.reread) add('manifestLoad', 1);
      if (f.f === 'tearNext') add(f.op, 1);
    }
    const controller = (this.storage as unknown as { faults: { faults: Map<FaultOp, Queued[]>; faultsAfter: Map<FaultOp, Queued[]> } })
      .faults;
    for (const table of [controller.faults, controller.faultsAfter]) {
      for (const [op, queue] of table) for (const q of queue) if (q.fault.kind !== 'hang') add(op, -q.remaining);
    }
    return fired;
  }

  /**
   * The writer's retry counters against the faults that fired since it opened (docs/impl.md,
   * "Faults: retry or poison"). Each failed WAL append is one `walAppendRetries` (and so is the
   * append after a failed truncate back, which meets the segment's old length); each failed table
   * write is one failed flush or compaction; no flush or compaction fails without a fault of an
   * operation it issues. Upper bounds hold after every step (a fault with no effect yet counts
   * nothing); after a liveness check's flush (`settled`) the failures have surfaced, so the lower
   * bounds hold too: a retried fault is counted.
   */
  private checkCounters(live: Live, fired: Map<FaultOp, number>, settled: boolean): void {
    const now = retryCounters(live);
    const n = (op: FaultOp) => fired.get(op) ?? 0;
    const appends = now.walAppendRetries;
    const failed = now.flushFailures + now.compactionFailures;
    const background = (['tableWrite', 'manifestCommit', 'manifestLoad', 'tableRead', 'tableList', 'walRead', 'walList'] as const).reduce(
      (t, op) => t + n(op),
      0,
    );
    this.count('counter checks');
    if (appends > n('walAppend') + n('walTruncate') || (settled && appends < n('walAppend'))) {
      this.fail(
        'counters',
        `${n('walAppend')} WAL append and ${n('walTruncate')} truncate fault(s) fired since the open; walAppendRetries is ${appends}`,
      );
    }
    // A compaction still running may have met a fault whose failure it has not reported yet (its
    // write lands after the liveness check's flush): the lower bound waits for it (seed 129).
    const surfaced = settled && !compactionRunning(live.w);
    if (failed > background || (surfaced && failed < n('tableWrite'))) {
      this.fail(
        'counters',
        `${n('tableWrite')} table write fault(s) of ${background} a flush or compaction may meet fired since the open; flushFailureCount + compaction failureCount is ${failed}`,
      );
    }
  }

  async finish(): Promise<void> {
    if (this.violation) throw this.violation;
    this.disarm();
    if (this.route) await this.finishSteal();
    for (const l of this.stale.splice(0)) await this.end(l, 'abort');
    if (this.finished) return; // a damaged store: nothing more to open
    if (this.current) await this.end(this.current, 'close');
    // A fault-free open must succeed and show every acknowledged write.
    this.current = await this.openWriter(undefined, false);
    const live = this.current;
    if (!live) this.fail('open', 'the final fault-free open did not open the store');
    // The sizes dimension's reach: table files larger than two keyed blocks (16 KiB each).
    for (const bytes of [...(this.memStore()?.tables.values() ?? [])].map((t) => t.length))
      if (bytes > 32 * 1024) this.count('tables of 3+ blocks');
    await this.check('final', true);
    if (live.drain) await this.catchUp(live);
    await this.end(live, 'close');
    await this.clock.run(() => this.pending.size === 0, this.bound);
    for (const p of this.pending) this.fail('hang', `${p.label} never settled (pending since ${p.started} ms)`);
  }

  async teardown(): Promise<void> {
    this.disarm();
    // Nothing here awaits the engine directly: only the clock moves it.
    for (const l of this.liveWriters()) {
      l.drain?.stop().catch(() => undefined);
      l.w.abort().catch(() => undefined);
    }
    this.storage.crash();
    await this.clock.run(() => false, 1000).catch(() => undefined);
  }

  // ------------------------------------------------------------------ faults

  private arm(faults: FaultSpec[]): void {
    if (faults.length === 0) return;
    this.faultsArmed = true;
    this.outage = faults.some((f) => f.f === 'failNext' && f.count >= 1000);
    this.arms++;
    const hangs = faults.some((f) => f.f === 'hangNext' || f.f === 'hangAfter' || f.f === 'hold');
    this.stepHangs = hangs;
    if (hangs) this.hangArms++;
    for (const l of this.liveWriters()) {
      l.faultFree = false;
      if (hangs) l.hung = true;
      if (faults.some((f) => f.f === 'hangNext' || f.f === 'hangAfter')) l.hangsForEver = true;
      // A WAL append or manifest commit held past its time limit (MIN_CALL_LIMIT_MS and up) poisons
      // by design (docs/impl.md, "Faults: retry or poison"), and the limit may fire as the hold ends,
      // at the next step's first instant: such a writer is not held to the liveness check again.
      if (faults.some((f) => f.f === 'hold' && (f.op === 'walAppend' || f.op === 'manifestCommit'))) l.hangsForEver = true;
    }
    for (const f of faults) {
      switch (f.f) {
        case 'failNext':
          this.storage.failNext(f.op, f.count, f.quota ? quotaExceededError() : undefined);
          break;
        case 'failAfter':
          this.storage.failAfter(f.op, f.count);
          if (f.reread) this.storage.failNext('manifestLoad');
          break;
        case 'hangNext':
          this.storage.hangNext(f.op);
          break;
        case 'hangAfter':
          this.storage.hangAfter(f.op);
          break;
        case 'tearNext':
          this.storage.tearNext(f.op);
          break;
        case 'hold': {
          const release = this.storage.hold(f.op);
          this.holds.push(release);
          this.clock.setTimeout(release, f.ms);
          break;
        }
        case 'crashAt':
          this.storage.crashAt(f.n);
          break;
      }
    }
  }

  private disarm(): void {
    this.stepHangs = false;
    this.storage.clearFaults();
    for (const release of this.holds.splice(0)) release();
    this.faultsArmed = false;
    this.outage = false;
  }

  /** A crash happened (crashAt, or the crash action): every writer is gone, as its process is. */
  private async afterCrash(): Promise<void> {
    if (this.storage.crashed === this.crashesSeen) return;
    this.crashesSeen = this.storage.crashed;
    this.count('crashes');
    this.log('  storage crashed: every writer is gone');
    if (this.route) await this.finishSteal();
    for (const l of [...this.stale.splice(0), ...(this.current ? [this.current] : [])]) await this.end(l, 'abort');
    this.current = undefined;
  }

  // ------------------------------------------------------------------ opening and ending writers

  private liveWriters(): Live[] {
    return [...(this.current ? [this.current] : []), ...this.stale];
  }

  private needsWriter(a: Action): boolean {
    return !['advance', 'close', 'abort', 'crash', 'reopen', 'damage', 'destroy', 'downgrade'].includes(a.a);
  }

  private options(
    columns: ColumnSpec[],
    steal: boolean,
    reset: boolean,
    keyChange?: KeyChange,
    dropColumns: string[] = [],
    rename?: Rename,
  ) {
    const c = this.config;
    let schema = changeKey(storeSchema(c.keyType, columns), c.keyType, keyChange);
    if (rename?.how === 'metadata') {
      const meta = new Map([[RENAMED_FROM, rename.from]]);
      schema = new Schema(schema.fields.map((f) => (f.name === rename.to ? new Field(f.name, f.type, f.nullable, meta) : f)));
    }
    return {
      name: STORE,
      schema,
      ...(rename?.how === 'option' ? { renameColumns: { [rename.from]: rename.to } } : {}),
      primaryKey: c.keyType ? keyColumns(c.keyType).map((k) => k.name) : [],
      storage: this.storage,
      enableMemtable: c.mode !== 'wal-only',
      durableWrite: c.durableWrite,
      maxWalBufferBytes: c.maxWalBufferBytes,
      maxWalFlushIntervalMs: c.maxWalFlushIntervalMs,
      maxMemtableBytes: c.maxMemtableBytes,
      maxPutBytes: c.maxPutBytes,
      maxMemtableRows: c.maxMemtableRows,
      maxMemtableBatches: c.maxMemtableBatches,
      maxUnflushedMemtableBytes: c.maxUnflushedMemtableBytes,
      blockCacheBytes: c.blockCacheBytes,
      maxPendingCompactionBytes: c.maxPendingCompactionBytes,
      frozenMemtableGraceMs: c.frozenMemtableGraceMs,
      backpressureTimeoutMs: c.backpressureTimeoutMs,
      walRetry: c.walRetry,
      flushRetry: c.flushRetry,
      steal,
      ...(dropColumns.length > 0 ? { dropColumns } : {}),
      onSchemaMismatch: reset ? ('reset' as const) : ('throw' as const),
      ...indexOption(c, columns, this.session),
      logger: { warn: (message: string) => this.log(`  warn: ${message.slice(0, 300)}`) },
    };
  }

  /**
   * The columns an evolution makes of the current ones (the opener's view), the columns it names in
   * `dropColumns`, and what the open must do with them (SPEC §9, §9.1).
   */
  private evolve(e: Evolve | undefined): {
    columns: ColumnSpec[];
    drop?: string[];
    expect: 'open' | 'invalid' | 'reset';
    keyChange?: KeyChange;
    rename?: Rename;
  } {
    const cols = this.columns.map((c) => ({ ...c }));
    if (!e) return { columns: cols, expect: 'open' };
    const name = () => `c${this.nextInc}`;
    switch (e.e) {
      case 'add': {
        // Anywhere in the schema (SPEC §9: "added nullable fields, anywhere"); the store appends it.
        cols.splice(e.at % (cols.length + 1), 0, { name: name(), type: e.type, nullable: true, inc: this.nextInc++ });
        return { columns: cols, expect: 'open' };
      }
      case 'drop': {
        // Omitted: kept hidden with its values (SPEC §9.1); a non-nullable one refuses the open (the
        // opener's puts could not give it a value), whatever onSchemaMismatch says.
        if (cols.length === 0) return { columns: cols, expect: 'open' };
        const gone = cols[e.pick % cols.length]!;
        return { columns: cols.filter((c) => c !== gone), expect: gone.nullable ? 'open' : 'invalid' };
      }
      case 'dropColumns': {
        // Named in dropColumns (shown or hidden): gone with its values.
        if (this.stored.length === 0) return { columns: cols, expect: 'open' };
        const gone = this.stored[e.pick % this.stored.length]!;
        this.droppedColumns.push(gone);
        return { columns: cols.filter((c) => c.name !== gone.name), drop: [gone.name], expect: 'open' };
      }
      case 'readd': {
        // A hidden column named again is the same column (its values back) and keeps its type and
        // nullability; a dropped one named again is a new column (its old values read null).
        const hidden = this.stored.filter((s) => !cols.some((c) => c.name === s.name));
        const dropped = this.droppedColumns.filter((d) => !this.stored.some((c) => c.name === d.name));
        const back = [...hidden, ...dropped];
        if (back.length === 0) return { columns: cols, expect: 'open' };
        const i = e.pick % back.length;
        const d = back[i]!;
        const type: ColType = e.type === 'same' ? d.type : e.type;
        if (i < hidden.length) {
          const same = type === d.type && d.nullable === !e.nonNull;
          const col = { name: d.name, type, nullable: !e.nonNull, inc: same ? d.inc : -1 };
          return { columns: [...cols, col], expect: same ? 'open' : 'invalid' };
        }
        if (e.nonNull) return { columns: [...cols, { name: d.name, type, nullable: false, inc: -1 }], expect: 'invalid' };
        return { columns: [...cols, { name: d.name, type, nullable: true, inc: this.nextInc++ }], expect: 'open' };
      }
      case 'retype': {
        if (cols.length === 0) return { columns: cols, expect: 'open' };
        const i = e.pick % cols.length;
        const c = cols[i]!;
        const type: ColType = c.type === 'utf8' ? 'int32' : 'utf8';
        cols[i] = { ...c, type, inc: -1 };
        return { columns: cols, expect: 'invalid' };
      }
      case 'widen': {
        // A kept column's type widened (Int32 → Int64, Int64 → Float64, Bool → Int32): refused.
        const widened: Partial<Record<ColType, ColType>> = { int32: 'int64', int64: 'float64', bool: 'int32' };
        const at = cols.findIndex((_, i) => widened[cols[(i + e.pick) % cols.length]!.type] !== undefined);
        if (at < 0) return { columns: cols, expect: 'open' };
        const i = (at + e.pick) % cols.length;
        cols[i] = { ...cols[i]!, type: widened[cols[i]!.type]!, inc: -1 };
        return { columns: cols, expect: 'invalid' };
      }
      case 'nullability': {
        // A kept column's nullability changed, either way: refused.
        if (cols.length === 0) return { columns: cols, expect: 'open' };
        const i = e.pick % cols.length;
        cols[i] = { ...cols[i]!, nullable: !cols[i]!.nullable, inc: -1 };
        return { columns: cols, expect: 'invalid' };
      }
      case 'key':
        if (!this.config.keyType) return { columns: cols, expect: 'open' };
        return { columns: cols, expect: 'invalid', keyChange: e.how };
      case 'addNonNull':
        return { columns: [...cols, { name: name(), type: e.type, nullable: false, inc: -1 }], expect: 'invalid' };
      case 'rename': {
        // A shown column renamed keeps its identity and values (SPEC §9.1). Its old name is left
        // out of later draws: an opener naming it reads the renamed column (a release from before).
        if (cols.length === 0) return { columns: cols, expect: 'open' };
        const i = e.pick % cols.length;
        const from = cols[i]!.name;
        const to = `c${this.nextInc++}`;
        cols[i] = { ...cols[i]!, name: to };
        for (let j = this.droppedColumns.length - 1; j >= 0; j--)
          if (this.droppedColumns[j]!.name === from) this.droppedColumns.splice(j, 1);
        return { columns: cols, expect: 'open', rename: { from, to, how: e.how } };
      }
      case 'reset': {
        // An incompatible schema with onSchemaMismatch 'reset': a new store.
        return { columns: [{ name: name(), type: e.type, nullable: false, inc: this.nextInc++ }], expect: 'reset' };
      }
    }
  }

  /**
   * What the store keeps after an open of `view` with `drop` over the stored columns `base`
   * (undefined: a new store), as engine planSchema decides it (docs/impl.md §12): the stored
   * columns minus those dropped, in their order, then the opener's new columns appended. Returns
   * them and the view with each column's incarnation: a kept column's by name; a new one its own
   * (drawn for this open, from `incFloor` on) or, when it names a column the store no longer has
   * (a drop landed meanwhile), a fresh one.
   */
  private plan(
    base: readonly ColumnSpec[] | undefined,
    view: readonly ColumnSpec[],
    drop: readonly string[],
    incFloor: number,
    rename?: Rename,
  ): { stored: ColumnSpec[]; view: ColumnSpec[] } {
    if (!base) {
      const fresh = view.map((c) => ({ ...c }));
      return { stored: fresh.map((c) => ({ ...c })), view: fresh };
    }
    const kept = base.filter((c) => !drop.includes(c.name)).map((c) => ({ ...c, name: c.name === rename?.from ? rename.to : c.name }));
    const added: ColumnSpec[] = [];
    const out = view.map((c) => {
      // By name; else the same column renamed since (its incarnation): a rename that landed after
      // its open failed, which this opener, naming the old name, reads as that column (§9.1).
      const k = kept.find((s) => s.name === c.name) ?? (c.inc >= 0 ? kept.find((s) => s.inc === c.inc) : undefined);
      if (k) return { ...c, inc: c.inc < 0 ? c.inc : k.inc };
      const n = { ...c, inc: c.inc < 0 || c.inc >= incFloor ? c.inc : this.nextInc++ };
      added.push({ ...n });
      return n;
    });
    return { stored: [...kept, ...added], view: out };
  }

  /** The store schema of `columns`, encoded as the manifest records it. */
  private encoded(columns: readonly ColumnSpec[]): string {
    return encodeSchema(storeSchema(this.config.keyType, columns));
  }

  /** Open a writer, waiting for the open (bounded). Returns it (not yet `current`), or undefined when the open failed. */
  private async openWriter(e: Evolve | undefined, steal: boolean): Promise<Live | undefined> {
    const opening = this.startOpen(e, steal);
    await this.runUntil(opening.call);
    return this.finishOpen(opening);
  }

  private startOpen(e: Evolve | undefined, steal: boolean): Opening {
    // A store that does not exist (destroyed) is created with the current columns: nothing to evolve.
    const incFloor = this.nextInc;
    const exists = this.memStore()?.manifest !== undefined;
    const { columns, drop = [], expect, keyChange, rename } = this.evolve(exists ? e : undefined);
    if (expect === 'invalid') this.nextInc++; // an invalid column's incarnation is never used
    const { stored, view } = this.plan(exists && expect !== 'reset' ? this.stored : undefined, columns, drop, incFloor, rename);
    if (rename) this.count(`rename by ${rename.how}`);
    const session = ++this.session;
    const held = this.heldState();
    const call = this.track(
      `open (session ${session})`,
      MemWal.open(this.options(columns, steal, expect === 'reset', keyChange, drop, rename), {
        compactionPolicy: this.config.policy,
        walSegmentTargetBytes: this.config.walSegmentBytes,
      }),
    );
    return {
      call,
      session,
      columns: view,
      stored,
      drop,
      incFloor,
      expect,
      steal,
      crashes: this.storage.crashed,
      arms: this.arms,
      hangArms: this.hangArms - (this.faultsArmed && this.stepHangs ? 1 : 0),
      armed: this.faultsArmed,
      store: this.memStore(),
      held,
    };
  }

  private async finishOpen(o: Opening): Promise<Live | undefined> {
    const { session, expect } = o;
    let { columns } = o;
    const outcome = o.call.result;
    if (!outcome) this.fail('hang', `open of session ${session} did not settle within ${this.bound} ms`);
    const faulty = o.armed || this.faultsArmed || this.arms !== o.arms || this.storage.crashed !== o.crashes;
    if (!outcome.ok) {
      const code = this.codeOf(outcome.error, 'open');
      this.log(`  open of session ${session} failed: ${code} ${(outcome.error as Error).message.slice(0, 200)}`);
      this.count(`open failed ${code}`);
      // An earlier evolving open that failed (a crash) may have had its claim in flight: it can land
      // later, and then this open's older columns are a schema change the store refuses.
      const stored = this.memStore()?.manifest?.schema;
      // (A column it dropped named again as non-nullable, or the non-nullable column of a reset
      // hidden; a column it added is only hidden from this open, which then succeeds.)
      const evolvedMeanwhile = code === 'InvalidArgument' && this.inDoubt !== undefined && stored === this.encoded(this.inDoubt.stored);
      if (evolvedMeanwhile) {
        this.log('  (an earlier evolving open landed after it failed: the store has its columns now)');
        if (this.inDoubt!.reset) this.resetModel();
        this.columns = this.inDoubt!.columns;
        this.stored = this.inDoubt!.stored;
        this.inDoubt = undefined;
        return undefined;
      }
      const reason =
        (expect === 'invalid' && code === 'InvalidArgument') ||
        (this.damaged && code === 'Corruption') ||
        (o.steal && code === 'IOError' && /manifest commit conflict/.test((outcome.error as Error).message)) ||
        (faulty && !['Corruption', 'InvalidArgument', 'NotSupported'].includes(code));
      if (!reason) this.fail('open', `open failed without a fault to explain it: ${code}: ${(outcome.error as Error).message}`);
      // A refused schema change fails before anything is claimed or written (SPEC §9). Judged when
      // nothing else could have changed storage meanwhile: no fault, no crash, no claim in doubt.
      if (expect === 'invalid' && code === 'InvalidArgument' && !faulty && this.inDoubt === undefined && this.heldState() !== o.held) {
        this.fail('open', `a refused schema change changed storage: ${o.held} → ${this.heldState()}`);
      }
      // A reset that failed after destroying the store, or an evolution whose claim landed before
      // the open failed: storage tells which schema the store has now.
      if (expect === 'reset' && this.memStore() !== o.store) this.resetModel();
      // An open that only hides columns records nothing: whether or not its claim lands, an
      // opener that names them sees what it saw (SPEC §9.1), so it leaves nothing in doubt.
      const changes = this.encoded(o.stored) !== this.encoded(this.stored);
      if (expect !== 'invalid' && changes && stored !== undefined && stored === this.encoded(o.stored)) {
        this.columns = columns;
        this.stored = o.stored;
      } else if (expect !== 'invalid' && faulty && changes) {
        this.inDoubt = { columns, stored: o.stored, reset: expect === 'reset', after: newestSchemaVersion(this.memStore()?.manifest) };
      }
      return undefined;
    }
    const w = outcome.value as MemWal;
    if (expect === 'invalid') {
      await this.runUntil(this.track('abort', w.abort()));
      this.fail('open', `open accepted an invalid schema change (${JSON.stringify(columns.map((c) => [c.name, c.type, c.nullable]))})`);
    }
    if (expect === 'reset') this.resetModel();
    let stored = o.stored;
    const landed = this.landedInDoubt();
    if (landed) {
      // An earlier evolving open failed (a crash) after its claim was in flight, and the claim
      // landed: this open evolved the store from its columns, not from the ones the model had. A
      // column it added and this open lacks is hidden (its values kept); a column it dropped
      // (dropColumns) and this open names is a new column (its old values read null), as
      // engine/schema-evolution.test.ts ("an evolving open that crashes") shows through the API.
      this.log('  (an earlier evolving open landed after it failed: this open evolved the store from its columns)');
      ({ stored, view: columns } = this.plan(landed.stored, columns, o.drop, o.incFloor));
    }
    const truth = this.memStore()?.manifest?.schema;
    if (truth !== undefined && truth !== this.encoded(stored)) {
      this.fail('open', `the store keeps other columns than the model: ${JSON.stringify(stored.map((c) => [c.name, c.type, c.nullable]))}`);
    }
    this.stored = stored;
    this.columns = columns;
    this.inDoubt = undefined;
    const hung = this.hangArms !== o.hangArms;
    const live: Live = { w, session, columns, faultFree: !faulty, ending: false, hung, hangsForEver: hung };
    if (o.steal || this.stale.length > 0) live.besideOld = true;
    if (!faulty && !hung) live.ledger = new Map();
    this.log(`  opened session ${session}${live.faultFree ? '' : ' (faults around)'}`);
    this.count('opens');
    if (this.config.drain) await this.startDrain(live);
    return live;
  }

  /**
   * The columns of an evolving open that failed and whose claim landed later, as the store
   * recorded them after it failed, or undefined. (A reset that failed is not judged here: its
   * destroy, which storage shows at once, already emptied the model.)
   */
  private landedInDoubt(): { columns: ColumnSpec[]; stored: ColumnSpec[] } | undefined {
    const d = this.inDoubt;
    const m = this.memStore()?.manifest;
    if (!d || d.reset || !m) return undefined;
    const want = this.encoded(d.stored);
    return recordedVersions(m).some((v) => v.version > d.after && v.schema === want) ? d : undefined;
  }

  /** What storage holds of the store, in brief: the manifest's version and epoch, each WAL segment and table file. */
  private heldState(): string {
    const s = this.memStore();
    if (!s) return 'no store';
    const wal = [...s.wal.entries()].map(([n, seg]) => `${n}:${seg.length}`);
    return `manifest ${s.manifest?.version}@${s.manifest?.writerEpoch}; wal ${wal.join(',')}; tables ${[...s.tables.keys()].join(',')}`;
  }

  /** The store was destroyed (`onSchemaMismatch: 'reset'`): no row, no consumer, a new sink. */
  private resetModel(): void {
    this.model.reset();
    this.sink = undefined;
    this.consumed = 0;
    this.droppedColumns.length = 0;
  }

  /** The store's record inside MemoryStorage (ground truth, for the checks). */
  private memStore(): { manifest?: Manifest; tables: Map<string, Uint8Array>; wal: Map<string, MemSegment> } | undefined {
    return (
      this.mem as unknown as { stores: Map<string, { manifest?: Manifest; tables: Map<string, Uint8Array>; wal: Map<string, MemSegment> }> }
    ).stores.get(STORE);
  }

  /** Start a drain into the model sink; a new sink is pinned first (the store keeps every entry until the sink has it). */
  private async startDrain(live: Live): Promise<void> {
    if (!this.sink) {
      const pin = this.track('markConsumed(0) (drain pin)', live.w.markConsumed(0));
      await this.runUntil(pin);
      if (!pin.result!.ok) {
        this.note(live, 'markConsumed(0)', pin.result!);
        return;
      }
      this.sink = new ModelSink(this.sinkRandom, this.sinkFailChance);
    }
    live.sink = this.sink;
    live.drain = drain(live.w, {
      sink: this.sink,
      storeId: STORE,
      batchBytes: 1 + int(this.r, 4096),
      retry: { baseMs: 1, maxMs: 50 },
      logger: { warn: () => undefined },
    });
    live.drain.done.catch(() => undefined);
  }

  /** Close or abort a writer, waiting (bounded) for the call; the model learns what it made durable. */
  private async end(live: Live, how: 'close' | 'abort'): Promise<void> {
    if (this.current === live) this.current = undefined;
    const i = this.stale.indexOf(live);
    if (i >= 0) this.stale.splice(i, 1);
    live.ending = true;
    const wasFaultFree = live.faultFree && !this.faultsArmed;
    // A close that resolves makes every accepted put durable, unless the writer was poisoned before
    // (then it only releases).
    const healthy = live.w.writerState === 'open';
    const seq = this.model.tick();
    const call = this.track(`${how} (session ${live.session})`, how === 'close' ? live.w.close() : live.w.abort());
    this.ended.push(live.w);
    await this.clock.run(() => call.result !== undefined || this.violation !== undefined, this.bound);
    if (!call.result) this.fail('hang', `${how} of session ${live.session} did not settle within ${this.bound} ms; ${writerState(live.w)}`);
    if (!call.result) this.fail('hang', `${how} of session ${live.session} did not settle within ${this.bound} ms`);
    if (call.result.ok && how === 'close' && healthy) this.model.durableUpTo(live.session, seq);
    if (call.result.ok && how === 'close' && healthy && wasFaultFree && !live.besideOld && this.stale.length === 0)
      this.checkCheckpoint(live);
    this.model.sessionEnded(live.session);
    if (!call.result.ok) {
      const code = this.codeOf(call.result.error, how);
      this.log(`  ${how} of session ${live.session} failed: ${code}`);
      if (wasFaultFree && live.w.writerState !== 'fenced')
        this.fail('error', `close of a fault-free writer failed: ${code}: ${(call.result.error as Error).message}`);
    } else this.log(`  ${how} of session ${live.session} done`);
    if (live.drain) {
      const stop = this.track('drain stop', live.drain.stop());
      await this.runUntil(stop);
      this.checkSinkProblems(live);
    }
  }

  /**
   * A clean close checkpoints the WAL (docs/impl.md §4): every segment whose entries are all at or
   * below the retention cursor (the replay cursor, and the consumer cursor once a drain pinned it)
   * is removed, the last one appended to included; with small segments (`walSegmentBytes`) that is
   * many segments, of this writer and of the writers before it.
   */
  private checkCheckpoint(live: Live): void {
    const store = this.memStore();
    const m = store?.manifest;
    if (!store || !m) return;
    const cursor = m.consumerCursor === null ? m.replayCursor : Math.min(m.replayCursor, m.consumerCursor);
    let kept = 0;
    for (const [name, seg] of store.wal) {
      const frames = scanSegment(seg.read(0)).frames;
      if (frames.length > 0 && frames.every((f) => f.position <= cursor)) {
        this.fail(
          'retention',
          `session ${live.session} closed cleanly, yet WAL segment ${name} (entries ${frames[0]!.position}–${frames.at(-1)!.position}) is still stored; the retention cursor is ${cursor}`,
        );
      }
      kept++;
    }
    this.count('checkpoints');
    if (kept > 0) this.count('checkpoints keeping segments');
  }

  /**
   * The pool indices of a range edge: the first and/or last key (in key order) of the `pick`-th
   * table file of level `at` in the stored manifest (any level when that one has none; its rows,
   * delete markers included, read straight from MemoryStorage), or of the last put's rows.
   */
  private edgeOf(at: 0 | 1 | 'memtable', pick: number, ends: 'first' | 'last' | 'both'): number[] {
    const t = this.config.keyType!;
    const pool = this.config.keyPool;
    let keys: KeyValue[] = [];
    const store = this.memStore();
    const tables = store?.manifest?.tables ?? [];
    const ofLevel = tables.filter((e) => (e.level ?? 0) === at);
    const from = at === 'memtable' ? [] : ofLevel.length > 0 ? ofLevel : tables;
    if (from.length > 0) {
      const entry = from[pick % from.length]!;
      const bytes = store!.tables.get(entry.name);
      if (bytes) {
        for (const b of tableFromIPC(bytes).batches) for (let i = 0; i < b.numRows; i++) keys.push(keyOfRow(t, rowObject(b, i)));
        this.count(`edge deletes at a level-${entry.level ?? 0} file`);
      }
    } else {
      keys = this.lastPutKeys.map((k) => pool[k]!);
      this.count('edge deletes at the memtable');
    }
    if (keys.length === 0) return [];
    keys.sort(compareKeyValues);
    const chosen = ends === 'first' ? [keys[0]!] : ends === 'last' ? [keys.at(-1)!] : [keys[0]!, keys.at(-1)!];
    const index = new Map(pool.map((k, i) => [keyId(k), i]));
    return chosen.flatMap((k) => {
      const i = index.get(keyId(k));
      return i === undefined ? [] : [i];
    });
  }

  /**
   * Table files of the previous format (docs/format.md §8, §11): the writer closes, and every
   * format-3 file the manifest lists is rewritten as the release before index sections would have
   * written it (format 2: the same rows, blocks, key bounds and Bloom filter, no sections), the
   * manifest entry with it. The next writer must read, query and compact them as before; only
   * files this step wrote may be of format 2 (checkManifest), so compaction writes format 3.
   */
  private async downgrade(): Promise<void> {
    if (this.route || this.stale.length > 0) return this.log('  an old writer still runs: skipped');
    if (this.current) await this.end(this.current, 'close');
    // A crash's in-flight operations land after it (the fault controller applies them): a manifest
    // commit landing after the rewrite would list a rewritten file at its old size (seed 4930).
    await this.runUntil(this.track('storage settled', this.storage.settled()));
    const store = this.memStore();
    if (this.liveWriters().length > 0 || !store?.manifest) return;
    for (const t of store.manifest.tables) {
      const bytes = store.tables.get(t.name);
      if ((t.format ?? 1) !== 3 || !bytes) continue;
      const old = await asFormat2(bytes);
      store.tables.set(t.name, old.bytes);
      Object.assign(t, { format: 2, bytes: old.bytes.length, checksum: old.checksum });
      this.previousFormat.add(t.name);
      this.count('table files rewritten in format 2');
    }
  }

  private async finishSteal(): Promise<void> {
    const route = this.route!;
    this.route = undefined;
    await this.runUntil(route.successor.call);
    this.storage.silenceLockLoss(false);
    if (!route.successor.call.result?.ok) {
      await this.finishOpen(route.successor);
      return;
    }
    // The old writer goes on (it has not learnt of the steal) without its drain.
    if (route.to.drain) {
      const stop = this.track('drain stop', route.to.drain.stop());
      await this.runUntil(stop);
      route.to.drain = undefined;
    }
    const live = await this.finishOpen(route.successor);
    if (!live) return;
    this.stale.push(route.to);
    // What the old writer holds only in its memory is not the store's any more.
    this.model.sessionEnded(route.to.session);
    this.current = live;
  }

  // ------------------------------------------------------------------ tracking calls

  private track<T>(label: string, p: Promise<T>): Tracked<T> {
    const entry: Tracked<T> = { label, started: this.clock.now(), settled: Promise.resolve() };
    this.pending.add(entry);
    entry.settled = p
      .then(
        (value) => {
          entry.result = { ok: true, value };
        },
        (error: unknown) => {
          entry.result = { ok: false, error };
        },
      )
      .finally(() => this.pending.delete(entry));
    return entry;
  }

  /** Run the clock until `entry` settles; one that has not settled within `bound` virtual ms is a hang. */
  private async runUntil(entry: Tracked<unknown>): Promise<void> {
    await this.clock.run(() => entry.result !== undefined || this.violation !== undefined, this.bound);
    if (this.violation) throw this.violation;
    if (entry.result === undefined)
      this.fail('hang', `${entry.label} did not settle within ${this.bound} ms (pending since ${entry.started} ms)`);
  }

  /** The code of an error the engine returned; anything but a MemWalError is a violation. */
  private codeOf(e: unknown, what: string): string {
    if (e instanceof MemWalError) return e.code;
    this.flag('error', `${what} rejected with a ${(e as Error)?.name ?? typeof e}, not a MemWalError: ${(e as Error)?.stack ?? String(e)}`);
    return 'NOT-A-MEMWALERROR';
  }

  // ------------------------------------------------------------------ actions

  private async act(a: Action): Promise<void> {
    switch (a.a) {
      case 'put':
      case 'delete':
        return this.write(a);
      case 'edgeDelete': {
        this.edgeKeys = this.edgeOf(a.at, a.pick, a.ends);
        if (this.edgeKeys.length === 0) return this.log('  no edge to aim at');
        this.log(`  at keys #${this.edgeKeys.join(', #')}`);
        return this.write({ a: 'delete', keys: this.edgeKeys, wait: a.wait });
      }
      case 'downgrade':
        return this.downgrade();
      case 'edgePut':
        if (this.edgeKeys.length === 0) return;
        return this.write({ a: 'put', rows: this.edgeKeys.map((key, i) => ({ key, seed: (a.seed + i) % 2 ** 31 })), wait: a.wait });
      case 'get':
        return a.more ? this.readGetMany(this.current!, [a.key, ...a.more], a.alt) : this.readGet(this.current!, a.key, a.alt);
      case 'scan':
        return this.readScan(this.current!, undefined, Number.POSITIVE_INFINITY, false, false);
      case 'scanBatches':
        return this.readScan(this.current!, a.after ?? undefined, a.limit, a.someColumns, false);
      case 'sync':
        return this.sync(this.current!);
      case 'seal':
        return this.simple(this.current!, 'forceSealActive', (w) => w.forceSealActive());
      case 'compact':
        return this.simple(this.current!, 'compact', (w) => w.compact());
      case 'flushDrain':
        return this.simple(this.current!, 'waitForFlushDrain', (w) => w.waitForFlushDrain());
      case 'stats':
        return this.stats(this.current!);
      case 'tail':
        return this.readTail(this.current!, a.consume, false);
      case 'advance':
        return this.clock.advance(a.ms);
      case 'close':
        if (this.current) await this.end(this.current, 'close');
        return;
      case 'abort':
        if (this.current) await this.end(this.current, 'abort');
        return;
      case 'crash':
        for (const l of this.liveWriters()) l.faultFree = false;
        this.storage.crash();
        return;
      case 'reopen':
        if (this.current) await this.end(this.current, 'close');
        this.current = await this.openWriter(a.evolve, false);
        return;
      case 'stale':
        return this.steal(a.writes);
      case 'catchUp':
        if (this.current?.drain) await this.catchUp(this.current);
        return;
      case 'damage':
        return this.damage(a.frac, a.pick);
      case 'destroy':
        return this.destroy(a.keep);
      case 'query':
        return this.query(this.current!, a);
      case 'burst':
        for (const put of a.puts) {
          await this.write(put);
          if (a.gapMs > 0) await this.clock.advance(a.gapMs);
        }
        return;
    }
  }

  /** An ordered query step, checked against the model (test/sim/queries.ts). */
  private async query(live: Live, a: QueryAction): Promise<void> {
    await runQuery(
      {
        model: this.model,
        config: this.config,
        live,
        call: async (label, p) => {
          const call = this.track(label, p);
          await this.runUntil(call);
          return call.result! as never;
        },
        failed: (what, error) => this.readFailed(live, what, error),
        flag: (kind, message) => this.flag(kind, message),
        log: (line) => this.log(line),
        count: (what) => this.count(what),
      },
      a,
    );
  }

  private async steal(writes: number): Promise<void> {
    const old = this.current;
    if (!old || this.route) return;
    old.faultFree = false;
    this.storage.silenceLockLoss(true);
    // The successor opens meanwhile; the old writer, never told, takes the next writes.
    this.route = { to: old, left: writes, successor: this.startOpen(undefined, true) };
  }

  private async write(a: Extract<Action, { a: 'put' | 'delete' }>): Promise<void> {
    let live = this.current;
    if (this.route) {
      live = this.route.to;
      this.route.left--;
    }
    if (!live) return;
    const keyed = this.config.keyType !== undefined;
    const opId = this.model.peekOpId();
    const rows: Omit<ModelRow, 'op'>[] = [];
    const input: Record<string, unknown>[] = [];
    const seen = new Set<string>();
    if (a.a === 'put') {
      if (keyed) this.lastPutKeys = a.rows.map((d) => d.key % this.config.keyPool.length);
      // Several rows of one key in one put: the last one wins (SPEC: puts are upserts, newest
      // wins); the model knows only that one, so a read showing an earlier one's tag is a violation.
      const last = new Map<string, number>();
      if (keyed) {
        for (const [i, d] of a.rows.entries()) last.set(keyId(this.config.keyPool[d.key % this.config.keyPool.length]!), i);
      }
      a.rows.forEach((d, i) => {
        const key = keyed ? this.config.keyPool[d.key % this.config.keyPool.length]! : undefined;
        const id = key ? keyId(key) : undefined;
        if (id !== undefined) seen.add(id);
        const shadowed = id !== undefined && last.get(id) !== i;
        const vals = new Map<number, unknown>();
        const obj: Record<string, unknown> = key ? keyObject(this.config.keyType!, key, (d.seed & 1) === 1) : {};
        const tag = `o${opId}r${i}`;
        obj.v = tag;
        for (const c of live!.columns) {
          const v = columnValue(d.seed, c);
          vals.set(c.inc, v);
          if (v !== null || (d.seed & 2) === 0) obj[c.name] = v; // a null is sometimes left out
        }
        if (shadowed) this.count('rows shadowed in their put');
        rows.push({ key, keyId: id, tag, vals: vals as Map<number, never>, ...(shadowed ? { shadowed: true as const } : {}) });
        input.push(obj);
      });
    } else {
      for (const k of a.keys) {
        const key = this.config.keyPool[k % this.config.keyPool.length]!;
        const id = keyId(key);
        if (seen.has(id)) continue;
        seen.add(id);
        rows.push({ key, keyId: id, vals: new Map() });
        input.push(keyObject(this.config.keyType!, key, (k & 1) === 1));
      }
    }
    // Writes of one key overlap only in seeds drawn so: otherwise wait for earlier writes of these keys.
    const busy = () => this.model.pendingOps().some((o) => o.rows.some((r) => r.keyId !== undefined && seen.has(r.keyId)));
    if (keyed && this.config.overlap && busy()) this.count('writes overlapping one of their keys');
    if (keyed && !this.config.overlap) {
      if (busy()) await this.clock.run(() => !busy() || this.violation !== undefined, this.bound);
      if (busy()) this.fail('hang', `a write of keys ${[...seen].join(', ')} did not settle within ${this.bound} ms`);
    }
    const op = this.model.issue(live.session, a.a, rows);
    let signal: AbortSignal | undefined;
    if (a.a === 'put' && a.abortMs !== undefined) {
      const ac = new AbortController();
      this.clock.setTimeout(() => ac.abort(), a.abortMs);
      signal = ac.signal;
    }
    const call = this.track(
      `${a.a} op ${op.id} (session ${live.session})`,
      a.a === 'put' ? live.w.put(input, signal ? { signal } : undefined) : live.w.delete(input),
    );
    void call.settled.then(() => this.settleWrite(live!, op, call.result!));
    if (a.wait) await this.runUntilHealed(call);
  }

  /**
   * A call that may wait out a persistent outage: a waited write on the unflushed budget while a
   * flush retries a fault that lasts (`failNext` 1000 of a table write or a manifest commit), or a
   * wait for background work. "Retry" in docs/impl.md's table, not a hang: if it has not settled
   * within `bound`, the outage ends, and from then on it must settle within `bound`.
   */
  private async runUntilHealed(entry: Tracked<unknown>): Promise<void> {
    if (this.outage) {
      await this.clock.run(() => entry.result !== undefined || this.violation !== undefined, this.bound);
      if (this.violation) throw this.violation;
      if (entry.result === undefined) {
        this.log(`  ${entry.label} still waits after ${this.bound} ms of outage; the outage ends`);
        this.endOutage();
        entry.started = this.clock.now();
      }
    }
    await this.runUntil(entry);
  }

  /** A persistent outage ends within its step: the faults that fired are kept for the ledger (which the outage drops). */
  private endOutage(): void {
    this.firedBeforeHealing = this.firedFaults(this.stepFaults);
    this.outageEnded = true;
    this.disarm();
  }

  private settleWrite(live: Live, op: WriteOp, result: { ok: true; value: unknown } | { ok: false; error: unknown }): void {
    if (result.ok) {
      const r = result.value as { position: number; durable: boolean };
      const ended = live.ending || this.current !== live;
      const outcome = r.durable ? 'acked' : ended ? 'doubt' : 'visible';
      if (!this.model.settle(op, outcome, r.durable ? r.position : undefined)) {
        this.flag('model', `op ${op.id} was acknowledged durable after a later writer read past it (it was not applied)`);
      }
      this.log(`  ↳ ${op.kind} op ${op.id} ${outcome} at position ${r.position}`);
      return;
    }
    const code = this.codeOf(result.error, `${op.kind} op ${op.id}`);
    if (code === 'BackpressureTimeout' || code === 'Aborted') live.gaveUp = (live.gaveUp ?? 0) + 1;
    const clean = CLEAN.has(code);
    this.model.settle(op, clean ? 'failed' : 'doubt');
    this.log(`  ↳ ${op.kind} op ${op.id} rejected ${code}${clean ? '' : ' (outcome unknown)'}`);
    if (live.faultFree && !live.ending && code !== 'BackpressureTimeout') {
      this.flag('error', `${op.kind} op ${op.id} on a fault-free writer rejected ${code}: ${(result.error as Error).message}`);
    }
  }

  private async sync(live: Live): Promise<void> {
    const seq = this.model.tick();
    const call = this.track(`sync (session ${live.session})`, live.w.sync());
    await this.runUntil(call);
    const res = call.result!;
    if (res.ok) this.model.durableUpTo(live.session, seq);
    this.note(live, 'sync', res);
  }

  private async simple(live: Live, what: string, f: (w: MemWal) => Promise<unknown>): Promise<void> {
    if (this.config.mode === 'wal-only') return;
    const call = this.track(`${what} (session ${live.session})`, f(live.w));
    // A wait for background work (waitForFlushDrain, compact) may last as long as a persistent
    // outage does (failed flushes are retried, never dropped).
    await this.runUntilHealed(call);
    this.note(live, what, call.result!);
  }

  /** Log an outcome; a failure of a call on a fault-free, open writer is a violation. */
  private note(live: Live, what: string, res: { ok: true; value: unknown } | { ok: false; error: unknown }): void {
    if (res.ok) {
      this.log(`  ${what}: ok`);
      return;
    }
    const code = this.codeOf(res.error, what);
    this.log(`  ${what}: ${code} ${(res.error as Error).message.slice(0, 160)}`);
    if (live.faultFree && !live.ending && this.current === live) {
      this.flag('error', `${what} on a fault-free writer rejected ${code}: ${(res.error as Error).message}`);
    }
  }

  private async stats(live: Live): Promise<void> {
    const w = live.w;
    const memtable = this.config.mode !== 'wal-only';
    const calls: [string, Promise<unknown>][] = [
      ['backpressureStats', w.backpressureStats()],
      ['walStats', w.walStats()],
      ['writeStats', w.writeStats()],
      ['storageStats', w.storageStats()],
      ['metrics', w.metrics()],
    ];
    if (memtable) calls.push(['memtableStats', w.memtableStats()], ['compactionStats', w.compactionStats()], ['readStats', w.readStats()]);
    const tracked = calls.map(([name, p]) => this.track(`${name} (session ${live.session})`, p));
    await this.clock.run(() => tracked.every((t) => t.result !== undefined) || this.violation !== undefined, this.bound);
    tracked.forEach((t, i) => {
      if (!t.result) this.fail('hang', `${calls[i]![0]} did not settle within ${this.bound} ms`);
      if (!t.result.ok) this.flag('error', `${calls[i]![0]} rejected: ${(t.result.error as Error)?.message}`);
    });
  }

  // ------------------------------------------------------------------ reads and their checks

  private async readGet(live: Live, k: number, alt: boolean): Promise<void> {
    const key = this.config.keyPool[k % this.config.keyPool.length]!;
    const from = this.model.tick();
    const call = this.track(`get (session ${live.session})`, live.w.get(keyObject(this.config.keyType!, key, alt) as never));
    await this.runUntil(call);
    const to = this.model.tick();
    const res = call.result!;
    if (!res.ok) return this.readFailed(live, 'get', res.error);
    const got = res.value as Record<string, unknown> | undefined;
    this.checkKey(live, key, got, from, to, 'get');
  }

  /** One getMany of `ks`: each answer, in the order asked, checked as that key's get. */
  private async readGetMany(live: Live, ks: number[], alt: boolean): Promise<void> {
    const keys = ks.map((k) => this.config.keyPool[k % this.config.keyPool.length]!);
    const from = this.model.tick();
    const call = this.track(
      `getMany of ${keys.length} (session ${live.session})`,
      live.w.getMany(keys.map((key) => keyObject(this.config.keyType!, key, alt)) as never),
    );
    await this.runUntil(call);
    const to = this.model.tick();
    const res = call.result!;
    if (!res.ok) return this.readFailed(live, 'getMany', res.error);
    const got = res.value as (Record<string, unknown> | undefined)[];
    if (got.length !== keys.length) return this.flag('read', `getMany of ${keys.length} keys answered ${got.length} rows`);
    for (const [i, key] of keys.entries()) this.checkKey(live, key, got[i], from, to, `getMany[${i}]`);
  }

  /** A read failed: allowed only when the writer is not open any more, or a fault was armed. */
  private readFailed(live: Live, what: string, error: unknown): undefined {
    const code = this.codeOf(error, what);
    this.log(`  ${what}: ${code} ${(error as Error).message.slice(0, 160)}`);
    const sharedHang = live.hung && code === 'IOError' && /did not finish within/.test((error as Error).message);
    // A tail from the oldest retained entry races retention (the drain consumes meanwhile).
    if (code === 'Truncated' && what.startsWith('tail')) return;
    if (live.w.writerState === 'open' && !this.faultsArmed && !live.ending && this.current === live && !sharedHang) {
      this.flag('read', `${what} on an open writer with no fault armed rejected ${code}: ${(error as Error).message}`);
    }
  }

  /** One key's read (`got`: the row, or undefined) against the model's candidates. */
  private checkKey(live: Live, key: KeyValue, got: Record<string, unknown> | undefined, from: number, to: number, what: string): undefined {
    const id = keyId(key);
    const cands = this.model.candidates(id, from, to);
    let match: Candidate | undefined;
    if (got === undefined) {
      const absent = cands.filter((c) => c.absent);
      if (absent.length === 0) {
        return this.flag('read', `${what} of key ${showKey(key)} found nothing; expected ${describeCands(cands)}`);
      }
      match = absent[absent.length - 1];
      if (absent.some((c) => c.op && c.op.session >= live.session && c.op.state !== 'acked')) match = undefined;
      // Several deletes (or the key never written) explain an absent key: none of them is known applied.
      if (match) this.model.observe(id, match, live.session, absent.length === 1);
      return;
    } else {
      match = cands.find((c) => !c.absent && c.row!.tag === got.v);
      if (!match) return this.flag('read', `${what} of key ${showKey(key)} found tag ${show(got.v)}; expected ${describeCands(cands)}`);
      const want = this.model.expectedRow(match.row!, live.columns, key);
      const diff = diffRow(got, want);
      if (diff) return this.flag('read', `${what} of key ${showKey(key)} (op ${match.op!.id}): ${diff}`);
      this.model.won(id, match, from);
    }
    if (match) this.model.observe(id, match, live.session);
  }

  /**
   * A scan (or one `scanBatches` page from `afterIdx`, at most `limit` rows, some columns) against
   * the model: keyed stores key by key in key order, append-only stores op by op in insertion order.
   */
  private async readScan(
    live: Live,
    afterIdx: number | undefined,
    limit: number,
    someColumns: boolean,
    checkPhase: boolean,
  ): Promise<void> {
    if (this.config.mode === 'wal-only') return;
    const keyed = this.config.keyType !== undefined;
    const after = keyed && afterIdx !== undefined ? this.config.keyPool[afterIdx % this.config.keyPool.length] : undefined;
    let columns: string[] | undefined;
    if (someColumns) {
      columns = [...(keyed ? keyColumns(this.config.keyType!).map((k) => k.name) : []), 'v'];
      for (const c of live.columns) if (int(this.r, 2)) columns.push(c.name);
    }
    const from = this.model.tick();
    const read = async (): Promise<Record<string, unknown>[]> => {
      const rows: Record<string, unknown>[] = [];
      const opts: Record<string, unknown> = {};
      if (columns) opts.columns = columns;
      if (Number.isFinite(limit)) opts.limit = limit;
      if (after) opts.after = keyObject(this.config.keyType!, after);
      for await (const b of live.w.scanBatches(opts as never)) for (let i = 0; i < b.numRows; i++) rows.push(rowObject(b as never, i));
      return rows;
    };
    const what =
      afterIdx !== undefined || Number.isFinite(limit) ? `scanBatches(after ${after ? showKey(after) : '-'}, limit ${limit})` : 'scan';
    const call = this.track(`${what} (session ${live.session})`, read());
    await this.runUntil(call);
    const to = this.model.tick();
    const res = call.result!;
    if (!res.ok) return this.readFailed(live, what, res.error);
    const rows = res.value as Record<string, unknown>[];
    if (keyed) this.checkKeyedScan(live, rows, after, limit, columns, from, to, what);
    else this.checkAppendScan(live, rows, rows.length >= limit, columns, from, to, what, checkPhase);
  }

  private checkKeyedScan(
    live: Live,
    rows: Record<string, unknown>[],
    after: KeyValue | undefined,
    limit: number,
    columns: string[] | undefined,
    from: number,
    to: number,
    what: string,
  ): undefined {
    const t = this.config.keyType!;
    const seen = new Set<string>();
    let prev: KeyValue | undefined;
    for (const row of rows) {
      const key = keyOfRow(t, row);
      if (prev && compareKeyValues(prev, key) >= 0)
        return this.flag('read', `${what}: key ${showKey(key)} after ${showKey(prev)} (out of order)`);
      if (after && compareKeyValues(key, after) <= 0)
        return this.flag('read', `${what}: key ${showKey(key)} is not after ${showKey(after)}`);
      prev = key;
      const id = keyId(key);
      seen.add(id);
      const cands = this.model.candidates(id, from, to);
      const match = cands.find((c) => !c.absent && c.row!.tag === row.v);
      if (!match) return this.flag('read', `${what}: key ${showKey(key)} has tag ${show(row.v)}; expected ${describeCands(cands)}`);
      const want = this.model.expectedRow(match.row!, live.columns, match.row!.key);
      const diff = diffRow(row, want, columns);
      if (diff) return this.flag('read', `${what}: key ${showKey(key)} (op ${match.op!.id}): ${diff}`);
      this.model.won(id, match, from);
      this.model.observe(id, match, live.session);
    }
    if (rows.length > limit) return this.flag('read', `${what}: ${rows.length} rows past the limit ${limit}`);
    const complete = rows.length < limit;
    for (const id of this.model.keyIds()) {
      if (seen.has(id)) continue;
      const key = this.model.keyOf(id)!;
      if (after && compareKeyValues(key, after) <= 0) continue;
      if (!complete && prev && compareKeyValues(key, prev) > 0) continue;
      const cands = this.model.candidates(id, from, to);
      const absent = cands.filter((c) => c.absent);
      if (absent.length === 0) return this.flag('read', `${what}: key ${showKey(key)} is missing; expected ${describeCands(cands)}`);
      const match = absent[absent.length - 1]!;
      if (!absent.some((c) => c.op && c.op.session >= live.session && c.op.state !== 'acked')) {
        this.model.observe(id, match, live.session, absent.length === 1);
      }
    }
  }

  private checkAppendScan(
    live: Live,
    rows: Record<string, unknown>[],
    /** The limit cut the scan: the last op may show only its first rows, and later ops are not shown. */
    cut: boolean,
    columns: string[] | undefined,
    from: number,
    to: number,
    what: string,
    checkPhase: boolean,
  ): undefined {
    // Group rows by op: each present op shows all its rows, together, in order.
    const present = new Map<WriteOp, number>();
    let lastOp: WriteOp | undefined;
    let maxIssued = -1;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const m = this.model.byTag.get(row.v as string);
      if (!m) return this.flag('read', `${what}: row ${i} has tag ${show(row.v)}, which no write issued`);
      const op = m.op;
      const idx = op.rows.indexOf(m);
      if (op !== lastOp) {
        if (present.has(op)) return this.flag('read', `${what}: rows of op ${op.id} are not together`);
        if (idx !== 0) return this.flag('read', `${what}: op ${op.id} starts at its row ${idx}`);
        present.set(op, 0);
        // Insertion order: an op settled before another was issued comes first.
        if (op.settledSeq < maxIssued) return this.flag('read', `${what}: op ${op.id} comes after an op issued once it had settled`);
        lastOp = op;
      }
      maxIssued = Math.max(maxIssued, op.issuedSeq);
      if (present.get(op) !== idx) return this.flag('read', `${what}: op ${op.id} row ${idx} out of place`);
      present.set(op, idx + 1);
      if (op.state === 'failed' || op.state === 'dropped' || op.issuedSeq > to) {
        return this.flag('read', `${what}: op ${op.id} (${op.state}) is present`);
      }
      const diff = diffRow(row, this.model.expectedRow(m, live.columns, undefined), columns);
      if (diff) return this.flag('read', `${what}: op ${op.id} row ${idx}: ${diff}`);
    }
    for (const [op, n] of present) {
      if (n !== op.rows.length && !(cut && op === lastOp))
        return this.flag('read', `${what}: op ${op.id} shows ${n} of its ${op.rows.length} rows`);
    }
    if (cut) return;
    for (const op of this.model.ops) {
      if (op.kind !== 'put' || present.has(op)) continue;
      if ((op.state === 'acked' || op.state === 'visible') && op.knownSeq < from) {
        return this.flag('read', `${what}: op ${op.id} (${op.state}) is missing`);
      }
    }
    if (checkPhase) for (const op of this.model.ops) if (op.kind === 'put') this.model.observeOp(op, present.has(op), live.session);
  }

  /** `tail` from the oldest retained entry: durable entries only, contiguous, each op whole and in one entry. */
  private async readTail(live: Live, consume: number, checkPhase: boolean): Promise<void> {
    type Entries = { position: number; tags: (string | undefined)[] }[];
    const collect = async (from: number): Promise<Entries> => {
      const entries: Entries = [];
      for await (const e of live.w.tail(from)) {
        const tags: (string | undefined)[] = [];
        for (const b of e.data.batches) {
          const tomb = b.schema.fields.findIndex((f) => f.name === '_tombstone');
          for (let i = 0; i < b.numRows; i++)
            tags.push(tomb >= 0 && b.getChildAt(tomb)!.get(i) === true ? undefined : (b.getChild('v')!.get(i) as string));
        }
        entries.push({ position: e.position, tags });
      }
      return entries;
    };
    // From the oldest retained entry; retention (a drain consuming) may remove it meanwhile: Truncated, read again.
    let fromPos = 0;
    let seqFrom = 0;
    let call: Tracked<Entries> | undefined;
    for (let attempt = 1; ; attempt++) {
      const start = this.track(`walStats (session ${live.session})`, live.w.walStats());
      await this.runUntil(start);
      if (!start.result!.ok) return this.readFailed(live, 'walStats', start.result!.error);
      fromPos = Math.max((start.result!.value as { oldestPosition: number }).oldestPosition, this.consumed + 1, 1);
      seqFrom = this.model.tick();
      call = this.track(`tail(${fromPos}) (session ${live.session})`, collect(fromPos));
      await this.runUntil(call);
      const r = call.result!;
      if (r.ok || attempt >= 3 || !(r.error instanceof MemWalError && r.error.code === 'Truncated')) break;
    }
    if (!call.result!.ok) return this.readFailed(live, `tail(${fromPos})`, call.result!.error);
    const entries = call.result!.value as { position: number; tags: (string | undefined)[] }[];
    const where = new Map<WriteOp, number>();
    let prev = fromPos - 1;
    for (const e of entries) {
      if (e.position !== prev + 1) return this.flag('tail', `tail(${fromPos}): entry ${e.position} after ${prev}`);
      prev = e.position;
      for (const tag of e.tags) {
        if (tag === undefined) continue;
        const m = this.model.byTag.get(tag);
        if (!m) return this.flag('tail', `tail: entry ${e.position} holds tag ${tag}, which no write issued`);
        const at = where.get(m.op);
        if (at !== undefined && at !== e.position)
          return this.flag('tail', `tail: op ${m.op.id} is split over entries ${at} and ${e.position}`);
        where.set(m.op, e.position);
        if (m.op.state === 'failed' || m.op.state === 'dropped')
          return this.flag('tail', `tail: op ${m.op.id} (${m.op.state}) is in entry ${e.position}`);
      }
    }
    for (const op of this.model.ops) {
      if (op.kind !== 'put' || where.has(op)) continue;
      if (op.state === 'acked' && op.position !== undefined && op.position >= fromPos && op.knownSeq < seqFrom) {
        return this.flag('tail', `tail(${fromPos}): acknowledged op ${op.id} at position ${op.position} is missing`);
      }
    }
    if (checkPhase)
      for (const [op, pos] of where) if (op.session < live.session && op.state !== 'acked') (op.state = 'acked'), (op.position = pos);
    if (consume >= 0 && entries.length > 0 && !live.drain) {
      const p = entries[Math.min(entries.length - 1, Math.floor(consume * entries.length))]!.position;
      const mark = this.track(`markConsumed(${p})`, live.w.markConsumed(p));
      await this.runUntil(mark);
      if (mark.result!.ok) this.consumed = Math.max(this.consumed, p);
      this.note(live, `markConsumed(${p})`, mark.result!);
    }
  }

  // ------------------------------------------------------------------ the drain

  private async catchUp(live: Live): Promise<void> {
    if (this.model.pendingOps().length > 0 || live.w.writerState !== 'open') return;
    const synced = this.track('sync (catch-up)', live.w.sync());
    await this.runUntil(synced);
    if (!synced.result!.ok) return this.note(live, 'sync (catch-up)', synced.result!);
    const target = (synced.result!.value as { position: number }).position;
    const waited = this.track(`waitForApplied(${target})`, live.drain!.waitForApplied(target));
    await this.clock.run(() => waited.result !== undefined || this.violation !== undefined, this.bound);
    if (!waited.result) {
      const stats = this.track('drainStats', live.drain!.drainStats());
      await this.clock.run(() => stats.result !== undefined, 1000);
      this.fail('hang', `the drain did not reach position ${target} within ${this.bound} ms: ${JSON.stringify(stats.result)}`);
    }
    if (!waited.result!.ok) {
      const code = this.codeOf(waited.result!.error, 'waitForApplied');
      if (live.faultFree) this.flag('sink', `the drain of a fault-free writer ended: ${code}: ${(waited.result!.error as Error).message}`);
      return;
    }
    this.checkSinkProblems(live);
    this.count('catchUp');
    // The sink, replayed, equals the store.
    const sink = live.sink!;
    if (this.config.mode === 'wal-only') {
      for (const e of sink.entries) for (const r of e.rows) this.sinkRowSeen(r.row.v as string, e.position);
      return;
    }
    const call = this.track(
      'scan (catch-up)',
      (async () => {
        const rows: Record<string, unknown>[] = [];
        for await (const b of live.w.scanBatches()) for (let i = 0; i < b.numRows; i++) rows.push(rowObject(b as never, i));
        return rows;
      })(),
    );
    await this.runUntil(call);
    if (!call.result!.ok) return this.readFailed(live, 'scan (catch-up)', call.result!.error);
    const scanned = (call.result!.value as Record<string, unknown>[]).map((r) => r.v as string);
    let replayed: string[];
    if (this.config.keyType) {
      const m = new Map<string, { key: KeyValue; tag: string }>();
      for (const e of sink.entries) {
        for (const r of e.rows) {
          const key = keyOfRow(this.config.keyType, r.row);
          if (r.tombstone) m.delete(keyId(key));
          else {
            m.set(keyId(key), { key, tag: r.row.v as string });
            this.sinkRowSeen(r.row.v as string, e.position);
          }
        }
      }
      replayed = [...m.values()].sort((a, b) => compareKeyValues(a.key, b.key)).map((x) => x.tag);
    } else {
      replayed = sink.entries.flatMap((e) => e.rows.map((r) => r.row.v as string));
      for (const e of sink.entries) for (const r of e.rows) this.sinkRowSeen(r.row.v as string, e.position);
    }
    if (JSON.stringify(replayed) !== JSON.stringify(scanned)) {
      this.flag(
        'sink',
        `the sink replayed (${replayed.length} rows) differs from the store's scan (${scanned.length}): sink ${replayed.slice(0, 20).join(',')} store ${scanned.slice(0, 20).join(',')}`,
      );
    }
  }

  /** A row the sink holds: it is durable; an op known not applied there is a contradiction. */
  private sinkRowSeen(tag: string, position: number): undefined {
    const m = this.model.byTag.get(tag);
    if (!m) return this.flag('sink', `the sink holds tag ${tag} at position ${position}, which no write issued`);
    if (m.op.state === 'failed' || m.op.state === 'dropped')
      this.flag('sink', `the sink holds op ${m.op.id} (${m.op.state}) at position ${position}`);
  }

  private checkSinkProblems(live: Live): void {
    if (live.sink && live.sink.problems.length > 0) this.flag('sink', live.sink.problems[0]!);
  }

  // ------------------------------------------------------------------ damage

  /**
   * Storage loses the end of a WAL segment inside an entry the manifest records as durable (at or
   * below `positionHint`): the next open must refuse with `Corruption` and change nothing.
   */
  private async damage(frac: number, which: number): Promise<void> {
    if (this.route) await this.finishSteal();
    for (const l of [...this.stale.splice(0), ...(this.current ? [this.current] : [])]) await this.end(l, 'abort');
    await this.runUntil(this.track('storage settled', this.storage.settled()));
    const store = (
      this.mem as unknown as {
        stores: Map<string, { manifest?: Manifest; wal: Map<string, { read(o: number): Uint8Array; truncate(n: number): void }> }>;
      }
    ).stores.get(STORE);
    const m = store?.manifest;
    if (!store || !m) return;
    const frames: { seg: string; offset: number; length: number }[] = [];
    for (const [name, seg] of [...store.wal].sort()) {
      for (const f of scanSegment(seg.read(0)).frames) {
        if (f.position <= m.positionHint && f.frameBytes > 1) frames.push({ seg: name, offset: f.offset, length: f.frameBytes });
      }
    }
    if (frames.length === 0) {
      this.log('  damage: no durable entry to damage');
      return;
    }
    const f = frames[which % frames.length]!;
    const cut = f.offset + 1 + Math.floor(frac * (f.length - 1));
    const before = JSON.stringify(m);
    const seg = store.wal.get(f.seg)!;
    seg.truncate(cut);
    const bytes = seg.read(0);
    this.damaged = true;
    this.log(`  damage: segment ${f.seg} cut to ${cut} bytes, inside an entry at or below positionHint ${m.positionHint}`);
    const live = await this.openWriter(undefined, false);
    if (live) {
      this.current = live;
      this.fail('damage', `open after a cut inside a durable entry (segment ${f.seg} at ${cut}) succeeded instead of failing Corruption`);
    }
    if (JSON.stringify(store.manifest) !== before) this.fail('damage', 'an open that found Corruption changed the manifest');
    const now = store.wal.get(f.seg)?.read(0);
    if (!now || now.length !== bytes.length) this.fail('damage', 'an open that found Corruption changed the damaged segment');
    this.count('damage');
    this.finished = true;
  }

  /**
   * The store is destroyed: by `MemWal.destroy` (`keep` < 0), or by one cut short (a process that
   * died while removing files; Node removes a directory's entries in any order): the manifest is
   * gone and each WAL segment and table file is left with chance `keep`. Either way the next open
   * creates an empty store, whose acknowledged writes must survive like any other's.
   */
  private async destroy(keep: number): Promise<void> {
    if (this.route) await this.finishSteal();
    for (const l of [...this.stale.splice(0), ...(this.current ? [this.current] : [])]) await this.end(l, 'abort');
    await this.runUntil(this.track('storage settled', this.storage.settled()));
    if (keep < 0) {
      const call = this.track('destroy', MemWal.destroy(STORE, { storage: this.storage }));
      await this.runUntil(call);
      if (!call.result!.ok) this.fail('error', `destroy of a store no writer holds failed: ${(call.result!.error as Error).message}`);
      this.log('  destroyed');
    } else {
      const store = this.memStore();
      if (!store) return;
      delete store.manifest;
      for (const name of [...store.wal.keys()].sort()) if (this.r() >= keep) store.wal.delete(name);
      for (const name of [...store.tables.keys()].sort()) if (this.r() >= keep) store.tables.delete(name);
      this.log(`  destroy cut short: no manifest; left WAL ${[...store.wal.keys()].join(' ') || '-'}, tables ${store.tables.size}`);
    }
    this.count('destroy');
    this.resetModel();
  }

  // ------------------------------------------------------------------ checks after every step

  async check(where: string, full = false): Promise<void> {
    if (this.violation) throw this.violation;
    if (this.clock.thrown.length > 0) this.fail('timer', `a timer callback threw: ${(this.clock.thrown[0] as Error)?.stack}`);
    if (this.leaks.length > 0)
      this.fail('leak', `engine code used the host's ${this.leaks[0]!.what} during a simulated run:\n${this.leaks[0]!.stack}`);
    const now = this.clock.now();
    for (const p of this.pending) {
      if (now - p.started > this.bound) this.fail('hang', `${p.label} pending for ${now - p.started} ms (limit ${this.bound} ms)`);
    }
    for (const l of this.liveWriters()) {
      try {
        l.w.checkInvariants();
      } catch (e) {
        this.fail('invariant', `session ${l.session} (${where}): ${(e as Error).message}`);
      }
    }
    this.checkManifest(where);
    const segments = this.memStore()?.wal.size ?? 0;
    if (segments >= 3) this.count('checks with 3+ WAL segments stored');
    const live = this.current;
    if (!live || this.route || live.w.writerState !== 'open') return;
    await this.checkWaiters(live);
    if (this.config.mode === 'wal-only') {
      await this.readTail(live, -1, true);
    } else {
      // The WAL itself too, now and then, and whenever an old writer still runs beside this one.
      if (full || this.stale.length > 0 || int(this.r, 4) === 0) await this.readTail(live, -1, true);
      await this.readScan(live, undefined, Number.POSITIVE_INFINITY, false, true);
      if (this.config.keyType) {
        const pool = this.config.keyPool;
        const n = full ? pool.length : Math.min(pool.length, 4);
        for (let i = 0; i < n; i++) await this.readGet(live, full ? i : int(this.r, pool.length), int(this.r, 2) === 1);
        await this.readScan(live, int(this.r, pool.length), 1 + int(this.r, 8), false, false);
      }
    }
    if (this.violation) throw this.violation;
  }

  /**
   * BackpressureStats against the puts the simulation has in flight (docs/impl.md §6): no put of
   * this writer pending means nobody waits (activeCount 0, activeWaitMs 0, cause null), and every
   * put of it rejected `BackpressureTimeout` or `Aborted` was a wait that ended without admission.
   */
  private async checkWaiters(live: Live): Promise<void> {
    const call = this.track(`backpressureStats (session ${live.session})`, live.w.backpressureStats());
    await this.runUntil(call);
    if (!call.result!.ok) return this.readFailed(live, 'backpressureStats', call.result!.error);
    const bp = call.result!.value as { activeCount: number; activeWaitMs: number; abortedCount: number; cause: string | null };
    const waiting = this.model.pendingOps().some((o) => o.session === live.session);
    if (!waiting && (bp.activeCount !== 0 || bp.activeWaitMs !== 0 || bp.cause !== null)) {
      this.fail('stats', `no put of session ${live.session} is pending, yet backpressureStats says ${JSON.stringify(bp)}`);
    }
    const gaveUp = live.gaveUp ?? 0;
    if (bp.abortedCount < gaveUp) {
      this.fail('stats', `${gaveUp} puts of session ${live.session} gave up waiting, yet abortedCount is ${bp.abortedCount}`);
    }
  }

  /** Manifest invariants, read straight from MemoryStorage: level 1 never overlaps, generations below nextGeneration, every named file exists whole. */
  private checkManifest(where: string): void {
    const store = (this.mem as unknown as { stores: Map<string, { manifest?: Manifest; tables: Map<string, Uint8Array> }> }).stores.get(
      STORE,
    );
    const m = store?.manifest;
    if (!store || !m) return;
    const level1 = m.tables.filter((t) => (t.level ?? 0) >= 1 && t.minKey !== undefined).sort((a, b) => (a.minKey! < b.minKey! ? -1 : 1));
    for (let i = 1; i < level1.length; i++) {
      if (level1[i]!.minKey! <= level1[i - 1]!.maxKey!)
        this.fail('manifest', `${where}: level-1 files ${level1[i - 1]!.name} and ${level1[i]!.name} overlap`);
    }
    for (const t of m.tables) {
      const g = t.maxGeneration ?? t.generation;
      if (g >= m.nextGeneration)
        this.fail('manifest', `${where}: table ${t.name} has generation ${g}, nextGeneration is ${m.nextGeneration}`);
      const bytes = store.tables.get(t.name);
      if (!bytes) this.fail('manifest', `${where}: the manifest names ${t.name}, which storage does not hold`);
      if (bytes.length !== t.bytes) this.fail('manifest', `${where}: ${t.name} holds ${bytes.length} bytes, the manifest says ${t.bytes}`);
      if (t.format !== 3 && !this.previousFormat.has(t.name))
        this.fail('manifest', `${where}: ${t.name} was written in format ${t.format}`);
      const crc = crc32c(bytes).toString(16).padStart(8, '0');
      if (crc !== t.checksum) this.fail('manifest', `${where}: ${t.name} has CRC-32C ${crc}, the manifest says ${t.checksum}`);
    }
    if (m.tables.some((t) => t.format === 2)) this.count('checks of a store holding format-2 files');
    if (m.replayCursor > m.positionHint) this.fail('manifest', `${where}: replayCursor ${m.replayCursor} > positionHint ${m.positionHint}`);
  }
}

/** What a stuck writer is doing (its parts' state), for a hang's report. */
/** A column an open renames, and how it asks (`renameColumns`, or `renamedFrom` field metadata). */
interface Rename {
  from: string;
  to: string;
  how: 'option' | 'metadata';
}

/** A queued injected fault (FaultController's queues, read by the counter check). */
interface Queued {
  remaining: number;
  fault: { kind: string };
}

/**
 * The writer's retry counters now, from its stats snapshot taken without refreshing the storage
 * estimate (a refresh is a storage call: it would move `crashAt`'s count).
 */
/** Whether `w` (closed or aborted) still runs a compaction it started before. */
function compactionRunning(w: MemWal): boolean {
  const source = w.statsSource as unknown as {
    snapshotNow(est: unknown, interval: undefined): StatsSnapshot;
    estimates: { peek(): unknown };
  };
  return source.snapshotNow(source.estimates.peek(), undefined).compaction?.running === true;
}

function retryCounters(live: Live): { walAppendRetries: number; flushFailures: number; compactionFailures: number } {
  const source = live.w.statsSource as unknown as {
    snapshotNow(est: unknown, interval: undefined): StatsSnapshot;
    estimates: { peek(): unknown };
  };
  const s = source.snapshotNow(source.estimates.peek(), undefined);
  return {
    walAppendRetries: s.write.walAppendRetries,
    flushFailures: s.write.flushFailureCount,
    compactionFailures: s.compaction?.failureCount ?? 0,
  };
}

function writerState(w: MemWal): string {
  const x = w as unknown as {
    life: { state: string; stopping: boolean; dead: boolean };
    memtables?: {
      frozen: { generation: number; state: string; fullyDurable: boolean; flushAttempts: number }[];
      active: { generation: number; rows: number };
    };
    background?: { busy: boolean; stalled: boolean };
    flusher?: { stage: string };
    wal: { queue: unknown[]; durablePosition: number };
    log: { manifest: Manifest };
  };
  const frozen = x.memtables?.frozen
    .map((f) => `${f.generation}:${f.state}${f.fullyDurable ? '' : ' (not durable)'} attempts ${f.flushAttempts}`)
    .join(', ');
  const tables = x.log?.manifest?.tables.map((t) => `${t.name}@L${t.level ?? 0}`).join(' ');
  return `state ${x.life.state}${x.life.stopping ? ' stopping' : ''}${x.life.dead ? ' dead' : ''}; WAL queue ${x.wal.queue.length}, durable ${x.wal.durablePosition}; frozen [${frozen ?? '-'}]; flush lane ${x.background?.busy ? 'busy' : 'idle'}${x.background?.stalled ? ' stalled' : ''} (${x.flusher?.stage ?? '-'}); tables ${tables ?? '-'}`;
}

function isWrite(a: Action): boolean {
  return a.a === 'put' || a.a === 'delete' || a.a === 'burst' || a.a === 'edgeDelete' || a.a === 'edgePut';
}

function showKey(k: KeyValue): string {
  return `[${k.map(show).join(', ')}]`;
}

function describeCands(cands: Candidate[]): string {
  return cands.map((c) => (c.op ? `${c.absent ? 'deleted' : c.row!.tag} (op ${c.op.id} ${c.op.state})` : 'absent')).join(' | ');
}

export function describeAction(a: Action): string {
  switch (a.a) {
    case 'put':
      return `put ${a.rows.length} rows${a.wait ? '' : ' (in flight)'}${a.abortMs !== undefined ? `, aborted after ${a.abortMs} ms` : ''}`;
    case 'delete':
      return `delete ${a.keys.length} keys${a.wait ? '' : ' (in flight)'}`;
    case 'edgeDelete':
      return `delete the ${a.ends === 'both' ? 'first and last' : a.ends} key of ${a.at === 'memtable' ? 'the last put' : `a level-${a.at} file (#${a.pick})`}${a.wait ? '' : ' (in flight)'}`;
    case 'edgePut':
      return `put the edge keys again${a.wait ? '' : ' (in flight)'}`;
    case 'get':
      return `${a.more ? `getMany keys #${[a.key, ...a.more].join(', #')}` : `get key #${a.key}`}${a.alt ? ' (alt form)' : ''}`;
    case 'scanBatches':
      return `scanBatches after #${a.after ?? '-'} limit ${a.limit}${a.someColumns ? ' some columns' : ''}`;
    case 'tail':
      return `tail${a.consume >= 0 ? ` + markConsumed at ${a.consume.toFixed(2)}` : ''}`;
    case 'advance':
      return `advance ${a.ms} ms`;
    case 'reopen':
      return `reopen${a.evolve ? ` evolving ${JSON.stringify(a.evolve)}` : ''}`;
    case 'stale':
      return `steal: a successor opens while the old writer takes ${a.writes} more writes`;
    case 'damage':
      return 'damage a durable WAL entry';
    case 'burst':
      return `burst of ${a.puts.length} puts ${a.gapMs} ms apart (${a.puts.filter((p) => p.abortMs !== undefined).length} with a signal)`;
    case 'destroy':
      return a.keep < 0 ? 'destroy' : `destroy cut short (each file left with chance ${a.keep.toFixed(2)})`;
    case 'query':
      return describeQuery(a);
    default:
      return a.a;
  }
}

export function describeFault(f: FaultSpec): string {
  switch (f.f) {
    case 'failNext':
      return `failNext(${f.op}, ${f.count}${f.quota ? ', quota' : ''})`;
    case 'failAfter':
      return `failAfter(${f.op}, ${f.count})${f.reread ? ' + failNext(manifestLoad)' : ''}`;
    case 'hangNext':
    case 'hangAfter':
      return `${f.f}(${f.op})`;
    case 'tearNext':
      return `tearNext(${f.op})`;
    case 'hold':
      return `hold(${f.op}, ${f.ms} ms)`;
    case 'crashAt':
      return `crashAt(${f.n})`;
  }
}

/** The newest schema version `m` records (0: no store). */
function newestSchemaVersion(m: Manifest | undefined): number {
  return m ? Math.max(...recordedVersions(m).map((v) => v.version)) : 0;
}

/** A change of the key column an open's schema makes (refused, SPEC §9). */
type KeyChange = 'type' | 'nullable' | 'drop';

/** `schema` with its first key column's type changed, made nullable, or dropped. */
function changeKey(schema: Schema, keyType: KeyType | undefined, change: KeyChange | undefined): Schema {
  if (!change || !keyType) return schema;
  const key = keyColumns(keyType)[0]!;
  const fields = schema.fields.flatMap((f) => {
    if (f.name !== key.name) return [f];
    if (change === 'drop') return [];
    if (change === 'nullable') return [new Field(f.name, f.type, true)];
    return [new Field(f.name, key.type === 'utf8' ? new Int64() : new Utf8(), false)];
  });
  return new Schema(fields);
}

/**
 * Faults of the "retry" class of docs/impl.md ("Faults: retry or poison") that the liveness check
 * holds the engine to, a few at a time: a flush's table write failing (IOError or QuotaExceeded),
 * losing its reply or torn, is retried in place; a manifest commit failing or losing its reply is
 * resolved by a re-read (or, in doubt, before the next commit) and retried; a failed removal is
 * retried after the next flush; a failed read fails only the call that read. Everything else (WAL
 * appends, whose retries end at walRetry.timeoutMs; calls that hang or are held; crashes; outages)
 * may poison or stop the writer by design, or outlast the step.
 */
function retried(f: FaultSpec): boolean {
  if (f.f === 'failNext') return f.count < 1000 && (RETRIED_WRITES.includes(f.op) || READS.includes(f.op));
  if (f.f === 'failAfter') return RETRIED_WRITES.includes(f.op);
  if (f.f === 'tearNext') return f.op === 'tableWrite';
  return false;
}

const RETRIED_WRITES: readonly FaultOp[] = ['tableWrite', 'manifestCommit', 'walRemove', 'tableRemove'];
const READS: readonly FaultOp[] = ['walRead', 'tableRead', 'manifestLoad', 'walList', 'tableList'];
