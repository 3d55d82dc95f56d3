// Renders one stats snapshot as Prometheus text exposition format 0.0.4 (docs/impl.md §6).
// Pure string building; runs in every runtime.

import type { StatsSnapshot, WriterState } from './stats.js';

/**
 * What `renderMetrics` renders: a store's stats snapshot (`stats()`, metrics/stats.ts), so that
 * `metrics()` is a view of the same snapshot as every stats accessor.
 */
export type MetricsSnapshot = StatsSnapshot;

type MetricType = 'gauge' | 'counter';

/** One family: a value that is undefined or not finite omits the whole family. */
interface Family {
  name: string;
  type: MetricType;
  value: (s: MetricsSnapshot) => number | undefined;
  help: string;
}

type Value = Family['value'];
const gauge = (name: string, value: Value, help: string): Family => ({ name, type: 'gauge', value, help });
const counter = (name: string, value: Value, help: string): Family => ({ name, type: 'counter', value, help });
const seconds = (ms: number): number => ms / 1000;

// In exposition order. Counters count from this open (docs/impl.md §6).
const FAMILIES: readonly Family[] = [
  // Memory and backpressure: the budget and what is held against it.
  gauge(
    'wal_unflushed_bytes',
    (s) => s.unflushedBytes,
    'Estimated bytes not yet flushed: active memtable plus frozen memtables whose flush has not ' +
      'committed (WAL-only: bytes not yet appended).',
  ),
  gauge('wal_unflushed_budget_bytes', (s) => s.budgetBytes, 'Budget for unflushed bytes (maxUnflushedMemtableBytes).'),
  gauge(
    'wal_sealed_memtables',
    (s) => s.memtable?.frozenCount ?? 0,
    'Frozen memtables still held: waiting, retrying a failed flush, or in the grace period.',
  ),
  gauge('wal_memtable_bytes', (s) => s.memtable?.estimatedBytes, 'Estimated bytes of the active memtable.'),
  gauge(
    'wal_frozen_bytes',
    (s) => s.memtable?.frozenBytes,
    'Estimated bytes of frozen memtables whose flush has not committed, failed flushes included.',
  ),
  gauge('wal_grace_bytes', (s) => s.memtable?.graceBytes, 'Estimated bytes of committed memtables still held for the grace period.'),
  gauge('wal_memtable_rows', (s) => s.memtable?.rowCount, 'Rows in the active memtable.'),
  gauge('wal_memtable_batches', (s) => s.memtable?.batchCount, 'Record batches in the active memtable.'),
  gauge('wal_memtable_generation', (s) => s.memtable?.generation, 'Generation the active memtable will carry when flushed.'),
  counter('wal_durable_batches_total', (s) => s.memtable?.durableBatchCount, 'Batches whose WAL append is durable.'),
  gauge('wal_pending_wal_batches', (s) => s.memtable?.pendingWalBatchCount, 'Batches accepted but not yet WAL-durable.'),
  gauge('wal_pending_wal_bytes', (s) => s.memtable?.pendingWalBytes, 'Estimated bytes of batches accepted but not yet WAL-durable.'),
  counter('wal_backpressure_waits_total', (s) => s.backpressure.totalCount, 'Backpressure waits that completed with the put admitted.'),
  counter(
    'wal_backpressure_wait_seconds_total',
    (s) => seconds(s.backpressure.totalWaitMs),
    'Summed duration of completed backpressure waits.',
  ),
  gauge('wal_backpressure_active_waiters', (s) => s.backpressure.activeCount, 'Puts waiting on backpressure right now.'),
  gauge(
    'wal_backpressure_active_wait_seconds',
    (s) => seconds(s.backpressure.activeWaitMs),
    'Summed elapsed time of the backpressure waits in progress.',
  ),
  counter(
    'wal_backpressure_aborted_total',
    (s) => s.backpressure.abortedCount,
    'Backpressure waits that ended without admission: abort, timeout, poison or close.',
  ),
  counter(
    'wal_backpressure_aborted_wait_seconds_total',
    (s) => seconds(s.backpressure.abortedWaitMs),
    'Summed duration of backpressure waits that ended without admission.',
  ),
  // Writes, flushes and replay.
  counter('wal_puts_total', (s) => s.write.putCount, 'Puts admitted.'),
  counter('wal_put_rows_total', (s) => s.write.putRows, 'Rows admitted by puts.'),
  counter(
    'wal_put_seconds_total',
    (s) => seconds(s.write.putTimeMs),
    'Time inside put from admission to insert, excluding backpressure and durability waits.',
  ),
  counter('wal_flushes_total', (s) => s.write.flushCount, 'Memtable flushes committed.'),
  counter('wal_flush_failures_total', (s) => s.write.flushFailureCount, 'Memtable flush attempts that failed.'),
  counter('wal_flush_seconds_total', (s) => seconds(s.write.flushTimeMs), 'Summed duration of committed flushes.'),
  counter('wal_flush_rows_total', (s) => s.write.flushRows, 'Rows written by committed flushes.'),
  counter('wal_flush_bytes_total', (s) => s.write.flushBytes, 'Bytes written by committed flushes.'),
  gauge('wal_last_flush_seconds', (s) => seconds(s.write.lastFlushMs), 'Duration of the last committed flush (0 before the first).'),
  counter('wal_replayed_entries_total', (s) => s.write.replayedEntries, 'WAL entries replayed at open.'),
  counter('wal_replayed_rows_total', (s) => s.write.replayedRows, 'Rows replayed from the WAL at open.'),
  gauge('wal_replay_seconds', (s) => seconds(s.write.replayTimeMs), 'Time open spent replaying the WAL.'),
  // The WAL itself.
  counter('wal_appends_total', (s) => s.write.walAppendCount, 'WAL appends that succeeded.'),
  counter('wal_append_seconds_total', (s) => seconds(s.write.walAppendTimeMs), 'Summed duration of WAL appends.'),
  counter('wal_append_retries_total', (s) => s.write.walAppendRetries, 'WAL append attempts retried after a failure.'),
  counter('wal_entries_written_total', (s) => s.wal.entriesWritten, 'WAL entries appended.'),
  counter('wal_written_bytes_total', (s) => s.wal.bytesWritten, 'WAL bytes appended, frames included.'),
  gauge('wal_retained_bytes', (s) => s.wal.retainedBytes, 'Bytes of WAL segments still in storage.'),
  gauge('wal_next_position', (s) => s.wal.nextPosition, 'Position the next WAL entry will get.'),
  gauge('wal_oldest_position', (s) => s.wal.oldestPosition, 'Oldest WAL position still retained in storage.'),
  gauge('wal_torn_tail_bytes', (s) => s.wal.tornTailBytes, 'Bytes cut from torn WAL tails at this open.'),
  // Storage, where the runtime says.
  gauge(
    'wal_storage_usage_bytes',
    (s) => s.storage.usageBytes,
    "Bytes this store keeps in storage (WAL, table files, manifest); in a browser, the whole origin's usage.",
  ),
  gauge(
    'wal_storage_quota_bytes',
    (s) => s.storage.quotaBytes,
    "This store's bytes plus the space still available to it (files), or the origin's quota (browser).",
  ),
  gauge(
    'wal_storage_persisted',
    (s) => (s.storage.persisted === undefined ? undefined : Number(s.storage.persisted)),
    '1 when storage is persistent (not evictable), 0 when best-effort.',
  ),
  gauge(
    'wal_store_bytes',
    (s) => s.storage.storeBytes,
    "Bytes of this store's table files and retained WAL segments, as the engine accounts for them (never the origin's).",
  ),
  gauge('wal_table_files', (s) => s.storage.tableFileCount, 'Table files in the manifest.'),
  gauge('wal_table_bytes', (s) => s.storage.tableFileBytes, 'Total bytes of the table files in the manifest.'),
  gauge(
    'wal_table_file_bytes',
    (s) => s.storage.tableFileBytes,
    'Total bytes of the table files in the manifest (the name of wal_table_bytes before 0.2).',
  ),
  // Compaction (the LSM's shape and debt).
  gauge(
    'wal_compaction_pending_bytes',
    (s) => s.compaction?.pendingBytes,
    'Bytes the next compaction would read (0 when none is due): the compaction debt.',
  ),
  gauge('wal_compaction_running', (s) => (s.compaction ? Number(s.compaction.running) : undefined), '1 while a compaction runs.'),
  counter('wal_compactions_total', (s) => s.compaction?.completedCount, 'Compactions committed.'),
  counter('wal_compaction_failures_total', (s) => s.compaction?.failureCount, 'Compactions that failed (retried later).'),
  counter('wal_compaction_bytes_read_total', (s) => s.compaction?.bytesRead, 'Table bytes read by committed compactions.'),
  counter('wal_compaction_bytes_written_total', (s) => s.compaction?.bytesWritten, 'Table bytes written by committed compactions.'),
  counter(
    'wal_l0_stalls_total',
    (s) => s.compaction?.l0StallCount,
    'Times flushes had to wait for compaction (level-0 files or pending bytes at their bound): rises before puts block.',
  ),
  gauge(
    'wal_space_amplification',
    (s) => s.compaction?.spaceAmplification,
    'Live table bytes over the bytes of the newest versions of every row (an estimate).',
  ),
  // Reads.
  counter('wal_gets_total', (s) => s.read?.gets, 'get calls.'),
  counter(
    'wal_get_table_files_consulted_total',
    (s) => s.read?.tableFilesConsulted,
    'Table files a get read a block of (its key range and Bloom filter admitted the key).',
  ),
  counter('wal_bloom_negatives_total', (s) => s.read?.bloomNegatives, 'Table files a get skipped on their Bloom filter.'),
  counter('wal_bloom_positives_total', (s) => s.read?.bloomPositives, 'Bloom filters that admitted a key.'),
  counter(
    'wal_bloom_false_positives_total',
    (s) => s.read?.bloomFalsePositives,
    'Bloom filters that admitted a key the file did not hold.',
  ),
  counter('wal_block_reads_total', (s) => s.read?.blockReads, 'Table-file blocks read from storage.'),
  counter('wal_block_cache_hits_total', (s) => s.read?.blockCacheHits, 'Table-file blocks served from the block cache.'),
  gauge('wal_block_cache_bytes', (s) => s.read?.blockCacheBytes, 'Bytes held by the block cache.'),
];

const CAUSES = ['memtable', 'compaction'] as const;

const WRITER_STATES: readonly string[] = ['waiting-for-lock', 'open', 'fenced', 'poisoned', 'closed'] satisfies WriterState[];

/**
 * Escape a label value for the text format: backslash, double quote and line feed.
 * Pure; any runtime.
 */
export function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/**
 * Render `s` as Prometheus text exposition format 0.0.4 (`text/plain; version=0.0.4`), ending
 * with a newline. Every family has `# HELP` and `# TYPE` and every sample a `store` label. A
 * figure that is unknown (storage usage, quota, persistence; memtable figures in WAL-only mode)
 * or not finite omits its family rather than emitting NaN or Inf. `wal_writer_state` has one
 * sample per writer state, 1 for the current one (plus one for an unknown current state).
 * Values print as JS prints numbers: integers plain below 1e21, seconds as decimals (Go's
 * float parser, which Prometheus uses, accepts every finite JS number string). Never throws;
 * any runtime.
 */
export function renderMetrics(s: MetricsSnapshot): string {
  const store = `store="${escapeLabelValue(s.store)}"`;
  const lines: string[] = [];
  const header = (name: string, type: MetricType, help: string) => lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);

  for (const { name, type, value, help } of FAMILIES) {
    const v = value(s);
    if (v === undefined || !Number.isFinite(v)) continue;
    header(name, type, help);
    lines.push(`${name}{${store}} ${v}`);
  }

  if (s.compaction && s.compaction.levels.length > 0) {
    header('wal_level_files', 'gauge', 'Table files per LSM level (0: flushed memtables, 1: the compacted run).');
    for (const l of s.compaction.levels) lines.push(`wal_level_files{${store},level="${l.level}"} ${l.files}`);
    header('wal_level_bytes', 'gauge', 'Table bytes per LSM level.');
    for (const l of s.compaction.levels) lines.push(`wal_level_bytes{${store},level="${l.level}"} ${l.bytes}`);
  }
  const building = s.indexes.filter((ix) => ix.filesBuilt !== undefined);
  if (building.length > 0) {
    header('wal_index_files_built', 'gauge', 'Table files holding the ordered index section as the index is defined now.');
    for (const ix of building) lines.push(`wal_index_files_built{${store},index="${escapeLabelValue(ix.name)}"} ${ix.filesBuilt}`);
    header(
      'wal_index_files_pending',
      'gauge',
      'Table files the background index build has yet to give the section (queries read their rows meanwhile).',
    );
    for (const ix of building) lines.push(`wal_index_files_pending{${store},index="${escapeLabelValue(ix.name)}"} ${ix.filesPending ?? 0}`);
  }
  header('wal_backpressure_cause', 'gauge', 'Why puts wait right now: 1 for the cause of the current waits, 0 otherwise.');
  for (const cause of CAUSES) lines.push(`wal_backpressure_cause{${store},cause="${cause}"} ${s.backpressure.cause === cause ? 1 : 0}`);

  header('wal_writer_state', 'gauge', 'Writer state: 1 for the current state, 0 for the others.');
  const states = WRITER_STATES.includes(s.state) ? WRITER_STATES : [...WRITER_STATES, s.state];
  for (const state of states) {
    lines.push(`wal_writer_state{${store},state="${escapeLabelValue(state)}"} ${state === s.state ? 1 : 0}`);
  }
  return `${lines.join('\n')}\n`;
}
