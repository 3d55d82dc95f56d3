// The demo's dashboard: the eight charts and the tiles, fed one stats sample per poll. Turns the
// store's counters (which count from each open) into rates and page-lifetime totals. Page only.

import type { BackpressureStats, MemTableStats, MemWalApi, WalStats, WriteStats } from '../src/index.js';
import { TimeChart } from './charts.js';
import { MiB, fmtBytes, fmtCount, fmtInt, fmtMiB, fmtSec } from './format.js';
import type { LoadCounters } from './load.js';

/** The element with `id`; throws when the page lacks it (a mistake in index.html). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`demo page: #${id} is missing`);
  return el as T;
}

/** `compactionStats()`'s answer (memwal's entry point does not export the type by name). */
export type CompactionStats = Awaited<ReturnType<MemWalApi['compactionStats']>>;

/** One poll's answers from the store, stamped with the session (open) they came from. */
export interface RawStats {
  session: number;
  /** Date.now() when the poll started, ms. */
  time: number;
  mt: MemTableStats;
  bp: BackpressureStats;
  ws: WriteStats;
  wal: WalStats;
  cs: CompactionStats;
  /** The snapshot's `unflushedBytes` (active + frozen bytes not yet flushed). */
  unflushedBytes: number;
}

/** The bounds the store was opened with (`maxUnflushedMemtableBytes`, `maxPendingCompactionBytes`). */
export interface Bounds {
  budgetBytes: number;
  debtBytes: number;
}

/** The latest sample: the raw stats and what the dashboard derived from them. */
export interface Sample extends RawStats, Bounds {
  unflushedBytes: number;
  rowsPerSec: number;
  walMiBPerSec: number;
  waitsPerSec: number;
  /** Table files and bytes in level 0 (flushed, not yet compacted) and in the levels below. */
  level0Files: number;
  level0Bytes: number;
  deeperFiles: number;
}

/** Long tasks seen by the page's PerformanceObserver. */
export interface LongTasks {
  supported: boolean;
  total: number;
  underLoad: number;
  longestMs: number;
}

/** Sums of the counters' deltas over every open since the page loaded. */
export interface Totals {
  waits: number;
  waitSeconds: number;
  aborted: number;
  flushes: number;
  flushFailures: number;
  compactions: number;
  compactionFailures: number;
  /** Flushes that waited for compaction (`l0StallCount`). */
  l0Stalls: number;
  /** Most active waiters seen in one sample. */
  activeWaitersPeak: number;
}

interface Tile {
  v: HTMLElement;
  s: HTMLElement;
}

const tile = (id: string): Tile => ({ v: byId(`t-${id}`), s: byId(`t-${id}-s`) });

function setTile(t: Tile, value: string, sub: string, bad = false): void {
  t.v.textContent = value;
  t.s.textContent = sub;
  t.v.classList.toggle('bad', bad);
}

const mib = (v: number): string => `${fmtMiB(v)} MiB`;
const whole = (v: number): string => (Number.isInteger(v) ? fmtCount(v) : '');

export class Dashboard {
  readonly totals: Totals = {
    waits: 0,
    waitSeconds: 0,
    aborted: 0,
    flushes: 0,
    flushFailures: 0,
    compactions: 0,
    compactionFailures: 0,
    l0Stalls: 0,
    activeWaitersPeak: 0,
  };
  latest: Sample | undefined;
  private prev: RawStats | undefined;
  private drawQueue: TimeChart[] = [];
  private readonly tiles = {
    unflushed: tile('unflushed'),
    unflushedBar: byId('t-unflushed-bar'),
    frozen: tile('frozen'),
    waiters: tile('waiters'),
    throughput: tile('throughput'),
    flushes: tile('flushes'),
    debt: tile('debt'),
    compactions: tile('compactions'),
    replayed: tile('replayed'),
    puts: tile('puts'),
    longtasks: tile('longtasks'),
  };
  private readonly charts: Record<
    'unflushed' | 'debt' | 'frozen' | 'tables' | 'backpressure' | 'throughput' | 'flushes' | 'compactions',
    TimeChart
  >;

  constructor(windowSec: number) {
    const chart = (id: string, spec: Omit<ConstructorParameters<typeof TimeChart>[0], 'el' | 'legend'>): TimeChart =>
      new TimeChart({ el: byId(`ch-${id}`), legend: byId(`lg-${id}`), ...spec }, windowSec);
    this.charts = {
      unflushed: chart('unflushed', {
        leftTicks: mib,
        series: [
          { label: 'unflushed', color: '#2563eb', fill: true, format: mib },
          { label: 'active memtable', color: '#7c3aed', format: mib },
          { label: 'budget', color: '#dc2626', dash: [6, 4], format: mib },
        ],
      }),
      debt: chart('debt', {
        leftTicks: mib,
        series: [
          { label: 'pending (debt)', color: '#b45309', fill: true, format: mib },
          { label: 'level-0 bytes', color: '#0d9488', format: mib },
          { label: 'bound', color: '#dc2626', dash: [6, 4], reference: true, format: mib },
        ],
      }),
      frozen: chart('frozen', {
        leftTicks: mib,
        rightTicks: whole,
        rightMinTop: 4,
        series: [
          { label: 'frozenBytes', color: '#ea580c', fill: true, format: mib },
          { label: 'graceBytes', color: '#94a3b8', format: mib },
          { label: 'frozenCount', color: '#0891b2', axis: 'right', stepped: true, format: String },
        ],
      }),
      tables: chart('tables', {
        leftTicks: whole,
        rightTicks: fmtMiB,
        leftMinTop: 4,
        series: [
          { label: 'level 0', color: '#0d9488', stepped: true, fill: true, format: String },
          { label: 'level 1', color: '#4f46e5', stepped: true, format: String },
          { label: 'table MiB', color: '#94a3b8', axis: 'right', format: fmtMiB },
        ],
      }),
      backpressure: chart('backpressure', {
        leftTicks: fmtCount,
        rightTicks: (v) => `${v >= 10 ? fmtCount(v) : +v.toFixed(2)} s`,
        leftMinTop: 5,
        rightMinTop: 1,
        series: [
          { label: 'waits/s', color: '#d97706', format: fmtCount },
          // backpressureStats().cause says why the current waiters wait: one series per cause.
          { label: 'waiting on memtable', color: '#dc2626', stepped: true, fill: true, format: String },
          { label: 'waiting on compaction', color: '#0891b2', stepped: true, fill: true, format: String },
          { label: 'wait seconds', color: '#7c3aed', axis: 'right', format: fmtSec },
        ],
      }),
      throughput: chart('throughput', {
        leftTicks: fmtCount,
        rightTicks: fmtMiB,
        series: [
          { label: 'rows/s', color: '#2563eb', fill: true, format: fmtCount },
          { label: 'WAL MiB/s', color: '#16a34a', axis: 'right', format: fmtMiB },
        ],
      }),
      flushes: chart('flushes', {
        leftTicks: whole,
        leftMinTop: 5,
        series: [
          { label: 'flushes committed', color: '#16a34a', stepped: true, format: fmtInt },
          { label: 'flush failures', color: '#dc2626', stepped: true, format: fmtInt },
        ],
      }),
      compactions: chart('compactions', {
        leftTicks: whole,
        leftMinTop: 5,
        series: [
          { label: 'compactions committed', color: '#4f46e5', stepped: true, format: fmtInt },
          { label: 'compaction failures', color: '#dc2626', stepped: true, format: fmtInt },
          { label: 'level-0 stalls', color: '#d97706', stepped: true, format: fmtInt },
        ],
      }),
    };
  }

  /** Add a poll's stats: rates from the deltas since the previous poll of the same open. */
  record(raw: RawStats, bounds: Bounds): Sample {
    const prev = this.prev;
    const same = prev?.session === raw.session;
    const dt = prev ? Math.max(0.001, (raw.time - prev.time) / 1000) : 1;
    // Counters count from each open: a new session's first delta is its whole count.
    const d = (get: (r: RawStats) => number): number => (same ? Math.max(0, get(raw) - get(prev!)) : get(raw));
    const t = this.totals;
    const dWaits = d((r) => r.bp.totalCount);
    t.waits += dWaits;
    t.waitSeconds += d((r) => r.bp.totalWaitMs) / 1000;
    t.aborted += d((r) => r.bp.abortedCount);
    t.flushes += d((r) => r.ws.flushCount);
    t.flushFailures += d((r) => r.ws.flushFailureCount);
    t.compactions += d((r) => r.cs.completedCount);
    t.compactionFailures += d((r) => r.cs.failureCount);
    t.l0Stalls += d((r) => r.cs.l0StallCount);
    t.activeWaitersPeak = Math.max(t.activeWaitersPeak, raw.bp.activeCount);
    const level0 = raw.cs.levels.find((l) => l.level === 0);
    const s: Sample = {
      ...raw,
      ...bounds,
      rowsPerSec: d((r) => r.ws.putRows) / dt,
      walMiBPerSec: d((r) => r.wal.bytesWritten) / MiB / dt,
      waitsPerSec: dWaits / dt,
      level0Files: level0?.files ?? 0,
      level0Bytes: level0?.bytes ?? 0,
      deeperFiles: raw.cs.tableCount - (level0?.files ?? 0),
    };
    this.prev = raw;
    this.latest = s;

    const x = raw.time / 1000;
    const c = this.charts;
    const waiting = (cause: BackpressureStats['cause']): number => (s.bp.cause === cause ? s.bp.activeCount : 0);
    c.unflushed.push(x, [s.unflushedBytes / MiB, s.mt.estimatedBytes / MiB, s.budgetBytes / MiB]);
    c.debt.push(x, [s.cs.pendingBytes / MiB, s.level0Bytes / MiB, s.debtBytes / MiB]);
    c.frozen.push(x, [s.mt.frozenBytes / MiB, s.mt.graceBytes / MiB, s.mt.frozenCount]);
    c.tables.push(x, [s.level0Files, s.deeperFiles, s.cs.tableBytes / MiB]);
    c.backpressure.push(x, [s.waitsPerSec, waiting('memtable'), waiting('compaction'), t.waitSeconds + s.bp.activeWaitMs / 1000]);
    c.throughput.push(x, [s.rowsPerSec, s.walMiBPerSec]);
    c.flushes.push(x, [t.flushes, t.flushFailures]);
    c.compactions.push(x, [t.compactions, t.compactionFailures, t.l0Stalls]);
    this.renderTiles(s);
    return s;
  }

  /** A poll while no store is open: the gauges show a gap, the totals carry on. */
  recordGap(time: number, bounds: Bounds): void {
    const x = time / 1000;
    const { charts: c, totals: t } = this;
    c.unflushed.push(x, [null, null, bounds.budgetBytes / MiB]);
    c.debt.push(x, [null, null, bounds.debtBytes / MiB]);
    c.frozen.push(x, [null, null, null]);
    c.tables.push(x, [null, null, null]);
    c.backpressure.push(x, [null, null, null, t.waitSeconds]);
    c.throughput.push(x, [0, 0]);
    c.flushes.push(x, [t.flushes, t.flushFailures]);
    c.compactions.push(x, [t.compactions, t.compactionFailures, t.l0Stalls]);
  }

  /**
   * Redraw the charts one per animation frame: each uPlot redraw is a few ms of canvas work, and
   * eight in one task could be a long task on a slow machine. Hidden tabs draw nothing.
   */
  drawSoon(): void {
    const idle = this.drawQueue.length === 0;
    this.drawQueue = Object.values(this.charts);
    if (!idle) return;
    const step = (): void => {
      this.drawQueue.shift()?.draw();
      if (this.drawQueue.length > 0) requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }

  showReplay(ws: WriteStats): void {
    setTile(
      this.tiles.replayed,
      `${fmtInt(ws.replayedRows)} rows`,
      `${fmtInt(ws.replayedEntries)} WAL entries in ${ws.replayTimeMs.toFixed(0)} ms`,
    );
  }

  showPuts(c: LoadCounters): void {
    const perPut = c.issued > 0 ? c.sendMs / c.issued : 0;
    setTile(
      this.tiles.puts,
      `${fmtInt(c.acked)} ok · ${fmtInt(c.failed)} rejected`,
      `${c.inflight} in flight · main thread ${perPut.toFixed(2)} ms/put`,
      c.failed > 0,
    );
    this.tiles.puts.s.title = c.lastError ?? '';
  }

  showLongTasks(l: LongTasks): void {
    if (!l.supported) setTile(this.tiles.longtasks, 'n/a', 'PerformanceObserver has no longtask here');
    else {
      const longest = l.longestMs ? ` · longest ${l.longestMs.toFixed(0)} ms` : '';
      setTile(this.tiles.longtasks, `${l.underLoad} under load`, `${l.total} since page load${longest}`, l.underLoad > 0);
    }
  }

  private renderTiles(s: Sample): void {
    const { tiles, totals } = this;
    const pct = s.budgetBytes > 0 ? s.unflushedBytes / s.budgetBytes : 0;
    setTile(tiles.unflushed, fmtBytes(s.unflushedBytes), `of ${fmtBytes(s.budgetBytes)} budget · ${(pct * 100).toFixed(0)}%`);
    tiles.unflushedBar.style.width = `${Math.min(100, pct * 100).toFixed(1)}%`;
    tiles.unflushedBar.classList.toggle('hot', pct >= 0.9);
    setTile(tiles.frozen, `${s.mt.frozenCount} held`, `${fmtBytes(s.mt.frozenBytes)} not flushed · ${fmtBytes(s.mt.graceBytes)} in grace`);
    setTile(
      tiles.waiters,
      `${s.bp.activeCount} waiting`,
      `${s.bp.cause ? `on ${s.bp.cause} · ` : ''}${fmtInt(totals.waits)} waits · ${fmtSec(totals.waitSeconds)} waited · ` +
        `peak ${totals.activeWaitersPeak}`,
      s.bp.activeCount > 0,
    );
    setTile(tiles.throughput, `${fmtCount(s.rowsPerSec)} rows/s`, `${fmtMiB(s.walMiBPerSec)} MiB/s appended to the WAL`);
    setTile(
      tiles.flushes,
      `${fmtInt(totals.flushes)} ok · ${fmtInt(totals.flushFailures)} failed`,
      s.ws.lastFlushMs > 0 ? `last flush ${s.ws.lastFlushMs.toFixed(0)} ms · ${fmtBytes(s.ws.flushBytes)} this open` : 'no flush yet',
      totals.flushFailures > 0,
    );
    const debtPct = s.debtBytes > 0 ? (s.cs.pendingBytes / s.debtBytes) * 100 : 0;
    setTile(
      tiles.debt,
      `${fmtBytes(s.cs.pendingBytes)} · ${debtPct.toFixed(0)}%`,
      `of ${fmtBytes(s.debtBytes)} bound · ${fmtInt(totals.l0Stalls)} level-0 stalls`,
      s.bp.cause === 'compaction',
    );
    setTile(
      tiles.compactions,
      `${fmtInt(totals.compactions)} ok · ${fmtInt(totals.compactionFailures)} failed`,
      `${s.cs.running ? 'running · ' : ''}${s.level0Files} + ${s.deeperFiles} files · ${fmtBytes(s.cs.tableBytes)} · ` +
        `space amp ${s.cs.spaceAmplification.toFixed(2)}`,
      totals.compactionFailures > 0,
    );
  }
}
