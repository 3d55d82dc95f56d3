// The individual stats accessors as views of one StatsSnapshot (SPEC §15.3): the in-process writer
// and the page's client both answer `memtableStats()`, `backpressureStats()`, ... through these,
// so an accessor can never disagree with `stats()`. Pure; any runtime.

import { MemWalError } from '../util/errors.js';
import type {
  BackpressureStats,
  CompactionStats,
  MemTableStats,
  ReadStats,
  StatsSnapshot,
  StorageStats,
  WalStats,
  WriteStats,
} from './stats.js';

const walOnly = (op: string): MemWalError => new MemWalError('NotSupported', `${op} is not available in WAL-only mode`);

/** Each accessor's part of a snapshot; the memtable, compaction and read parts reject `NotSupported` in WAL-only mode. */
export const statsView = {
  memtable(s: StatsSnapshot): MemTableStats {
    if (!s.memtable) throw walOnly('memtableStats');
    return s.memtable;
  },
  /** The seed's `BackpressureStats`, without the snapshot's interval figures. */
  backpressure(s: StatsSnapshot): BackpressureStats {
    const { maxWaitMsSinceLast: _max, longestActiveWaitMs: _longest, startedCount: _started, ...seed } = s.backpressure;
    return seed;
  },
  compaction(s: StatsSnapshot): CompactionStats {
    if (!s.compaction) throw walOnly('compactionStats');
    return s.compaction;
  },
  read(s: StatsSnapshot): ReadStats {
    if (!s.read) throw walOnly('readStats');
    return s.read;
  },
  wal(s: StatsSnapshot): WalStats {
    return s.wal;
  },
  write(s: StatsSnapshot): WriteStats {
    return s.write;
  },
  storage(s: StatsSnapshot): StorageStats {
    return s.storage;
  },
} as const;

/** Default `onStats` interval, ms. */
export const DEFAULT_STATS_INTERVAL_MS = 1000;

/** `onStats`'s `intervalMs`, checked: a finite number ≥ 1 (default 1000), else `InvalidArgument`. */
export function checkStatsInterval(intervalMs: unknown): number {
  if (intervalMs === undefined) return DEFAULT_STATS_INTERVAL_MS;
  if (typeof intervalMs !== 'number' || !Number.isFinite(intervalMs) || intervalMs < 1) {
    throw new MemWalError('InvalidArgument', `onStats: intervalMs must be a finite number >= 1, got ${String(intervalMs)}`);
  }
  return intervalMs;
}
