// Prometheus rendering: exact samples, label escaping, WAL-only mode, and Prometheus' own checker.

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { escapeLabelValue, renderMetrics, type MetricsSnapshot } from './prometheus.js';
import type { WriterState } from './stats.js';

function snapshot(overrides: Partial<MetricsSnapshot> = {}): MetricsSnapshot {
  return {
    takenAt: 1_700_000_000_000,
    store: 'orders',
    mode: 'memtable',
    unflushedBytes: 5120,
    indexes: [],
    memtable: {
      rowCount: 120,
      batchCount: 3,
      estimatedBytes: 4096,
      generation: 7,
      frozenCount: 2,
      frozenBytes: 1024,
      graceBytes: 512,
      durableBatchCount: 40,
      pendingWalBatchCount: 1,
      pendingWalBytes: 256,
    },
    backpressure: {
      totalCount: 5,
      totalWaitMs: 1250,
      activeCount: 1,
      activeWaitMs: 30,
      abortedCount: 2,
      abortedWaitMs: 500,
      cause: 'memtable',
      maxWaitMsSinceLast: 30,
      longestActiveWaitMs: 30,
      startedCount: 8,
    },
    wal: { nextPosition: 41, oldestPosition: 12, retainedBytes: 65536, bytesWritten: 90000, entriesWritten: 40, tornTailBytes: 0 },
    write: {
      putCount: 40,
      putRows: 1200,
      putTimeMs: 80,
      walAppendCount: 40,
      walAppendTimeMs: 200,
      walAppendRetries: 1,
      flushCount: 3,
      flushRows: 1080,
      flushBytes: 300000,
      flushTimeMs: 450,
      flushFailureCount: 1,
      lastFlushMs: 120,
      replayedEntries: 4,
      replayedRows: 100,
      replayTimeMs: 15,
    },
    storage: {
      usageBytes: 1_000_000,
      quotaBytes: 2_000_000_000,
      persisted: true,
      tableFileCount: 3,
      tableFileBytes: 300000,
      storeBytes: 365536,
    },
    budgetBytes: 64 * 1024 * 1024,
    state: 'open',
    ...overrides,
  };
}

/** Sample lines (comments dropped) of a rendering. */
const samples = (text: string) => text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

/** Names of the families a rendering declares with `# TYPE`. */
const families = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('# TYPE '))
    .map((l) => l.split(' ')[2]);

describe('renderMetrics', () => {
  it('renders the exact samples of a known snapshot', () => {
    const text = renderMetrics(snapshot());
    expect(samples(text)).toEqual([
      'wal_unflushed_bytes{store="orders"} 5120',
      'wal_unflushed_budget_bytes{store="orders"} 67108864',
      'wal_sealed_memtables{store="orders"} 2',
      'wal_memtable_bytes{store="orders"} 4096',
      'wal_frozen_bytes{store="orders"} 1024',
      'wal_grace_bytes{store="orders"} 512',
      'wal_memtable_rows{store="orders"} 120',
      'wal_memtable_batches{store="orders"} 3',
      'wal_memtable_generation{store="orders"} 7',
      'wal_durable_batches_total{store="orders"} 40',
      'wal_pending_wal_batches{store="orders"} 1',
      'wal_pending_wal_bytes{store="orders"} 256',
      'wal_backpressure_waits_total{store="orders"} 5',
      'wal_backpressure_wait_seconds_total{store="orders"} 1.25',
      'wal_backpressure_active_waiters{store="orders"} 1',
      'wal_backpressure_active_wait_seconds{store="orders"} 0.03',
      'wal_backpressure_aborted_total{store="orders"} 2',
      'wal_backpressure_aborted_wait_seconds_total{store="orders"} 0.5',
      'wal_puts_total{store="orders"} 40',
      'wal_put_rows_total{store="orders"} 1200',
      'wal_put_seconds_total{store="orders"} 0.08',
      'wal_flushes_total{store="orders"} 3',
      'wal_flush_failures_total{store="orders"} 1',
      'wal_flush_seconds_total{store="orders"} 0.45',
      'wal_flush_rows_total{store="orders"} 1080',
      'wal_flush_bytes_total{store="orders"} 300000',
      'wal_last_flush_seconds{store="orders"} 0.12',
      'wal_replayed_entries_total{store="orders"} 4',
      'wal_replayed_rows_total{store="orders"} 100',
      'wal_replay_seconds{store="orders"} 0.015',
      'wal_appends_total{store="orders"} 40',
      'wal_append_seconds_total{store="orders"} 0.2',
      'wal_append_retries_total{store="orders"} 1',
      'wal_entries_written_total{store="orders"} 40',
      'wal_written_bytes_total{store="orders"} 90000',
      'wal_retained_bytes{store="orders"} 65536',
      'wal_next_position{store="orders"} 41',
      'wal_oldest_position{store="orders"} 12',
      'wal_torn_tail_bytes{store="orders"} 0',
      'wal_storage_usage_bytes{store="orders"} 1000000',
      'wal_storage_quota_bytes{store="orders"} 2000000000',
      'wal_storage_persisted{store="orders"} 1',
      'wal_store_bytes{store="orders"} 365536',
      'wal_table_files{store="orders"} 3',
      'wal_table_bytes{store="orders"} 300000',
      'wal_table_file_bytes{store="orders"} 300000',
      'wal_backpressure_cause{store="orders",cause="memtable"} 1',
      'wal_backpressure_cause{store="orders",cause="compaction"} 0',
      'wal_writer_state{store="orders",state="waiting-for-lock"} 0',
      'wal_writer_state{store="orders",state="open"} 1',
      'wal_writer_state{store="orders",state="fenced"} 0',
      'wal_writer_state{store="orders",state="poisoned"} 0',
      'wal_writer_state{store="orders",state="closed"} 0',
    ]);
  });

  it('gives every family a HELP and a TYPE line right before its samples, and ends with a newline', () => {
    const text = renderMetrics(snapshot());
    expect(text.endsWith('\n')).toBe(true);
    expect(text).not.toContain('\n\n');
    const lines = text.slice(0, -1).split('\n');
    let current = '';
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.startsWith('# HELP ')) {
        current = line.split(' ')[2]!;
        expect(lines[i + 1]).toMatch(new RegExp(`^# TYPE ${current} (gauge|counter)$`));
      } else if (!line.startsWith('# TYPE ')) {
        expect(line.startsWith(`${current}{store="orders"`)).toBe(true);
      }
    }
  });

  it('escapes backslash, double quote and newline in the store label', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const text = renderMetrics(snapshot({ store: 'we"ird\\na\nme' }));
    expect(samples(text)[0]).toBe('wal_unflushed_bytes{store="we\\"ird\\\\na\\nme"} 5120');
    expect(samples(text)).toHaveLength(53); // the raw newline did not split a sample
  });

  it('renders a WAL-only snapshot with unappended bytes as unflushed and no memtable families', () => {
    const text = renderMetrics(snapshot({ mode: 'wal-only', memtable: undefined, unflushedBytes: 777 }));
    expect(samples(text)).toContain('wal_unflushed_bytes{store="orders"} 777');
    expect(samples(text)).toContain('wal_sealed_memtables{store="orders"} 0');
    const names = families(text);
    for (const memtableOnly of [
      'wal_memtable_bytes',
      'wal_frozen_bytes',
      'wal_grace_bytes',
      'wal_memtable_rows',
      'wal_memtable_generation',
      'wal_pending_wal_bytes',
      'wal_durable_batches_total',
    ]) {
      expect(names).not.toContain(memtableOnly);
    }
    expect(names).toContain('wal_backpressure_waits_total');
  });

  it('omits storage families the runtime does not report', () => {
    const text = renderMetrics(snapshot({ storage: { tableFileCount: 0, tableFileBytes: 0, storeBytes: 0 } }));
    const names = families(text);
    expect(names).not.toContain('wal_storage_usage_bytes');
    expect(names).not.toContain('wal_storage_quota_bytes');
    expect(names).not.toContain('wal_storage_persisted');
    expect(names).toContain('wal_table_files');
    expect(renderMetrics(snapshot({ storage: { persisted: false, tableFileCount: 0, tableFileBytes: 0, storeBytes: 0 } }))).toContain(
      'wal_storage_persisted{store="orders"} 0\n',
    );
  });

  it('never emits NaN or Inf, omitting the family instead', () => {
    const s = snapshot();
    s.backpressure.totalWaitMs = Number.NaN;
    s.storage.usageBytes = Number.POSITIVE_INFINITY;
    const text = renderMetrics(s);
    expect(text).not.toMatch(/NaN|Inf/);
    expect(families(text)).not.toContain('wal_backpressure_wait_seconds_total');
    expect(families(text)).not.toContain('wal_storage_usage_bytes');
  });

  it('adds a sample for a writer state outside the known five', () => {
    const text = renderMetrics(snapshot({ state: 'closing' as WriterState }));
    const stateLines = samples(text).filter((l) => l.startsWith('wal_writer_state'));
    expect(stateLines.filter((l) => l.endsWith(' 1'))).toEqual(['wal_writer_state{store="orders",state="closing"} 1']);
    expect(stateLines).toHaveLength(6);
  });
});

describe('index build metrics', () => {
  it('render each ordered index build progress with an escaped index label; indexes without one (text, vector) have none', () => {
    const text = renderMetrics(
      snapshot({
        indexes: [
          { name: 'by"Tag', kind: 'ordered', entries: 9, bytes: 900, filesBuilt: 2, filesPending: 3 },
          { name: 'body', kind: 'text', entries: 4, bytes: 100 },
        ],
      }),
    );
    const lines = samples(text).filter((l) => l.startsWith('wal_index_'));
    expect(lines).toEqual([
      'wal_index_files_built{store="orders",index="by\\"Tag"} 2',
      'wal_index_files_pending{store="orders",index="by\\"Tag"} 3',
    ]);
    expect(text).toContain('# TYPE wal_index_files_pending gauge');
    expect(samples(renderMetrics(snapshot())).some((l) => l.startsWith('wal_index_'))).toBe(false);
  });
});

describe('promtool check metrics', () => {
  const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  const available = promtool.error === undefined && promtool.status === 0;
  if (!available && !process.env.CI) {
    console.warn('promtool not found (Debian package `prometheus`); skipping the promtool checks outside CI.');
  }

  const check = (text: string) => {
    // In CI a missing promtool must fail, never skip.
    expect(available, 'promtool is required in CI: apt-get install -y prometheus').toBe(true);
    return spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 20_000 });
  };

  const cases: Array<[string, MetricsSnapshot]> = [
    ['a MemTable-mode snapshot', snapshot()],
    [
      'a snapshot with an index being built',
      snapshot({ indexes: [{ name: 'byTag', kind: 'ordered', entries: 1, bytes: 2, filesBuilt: 1, filesPending: 4 }] }),
    ],
    [
      'a WAL-only snapshot without storage figures',
      snapshot({
        mode: 'wal-only',
        memtable: undefined,
        unflushedBytes: 12,
        storage: { tableFileCount: 0, tableFileBytes: 0, storeBytes: 0 },
      }),
    ],
    [
      'a snapshot with compaction, levels and read figures',
      snapshot({
        compaction: {
          tableCount: 5,
          tableBytes: 40_000_000,
          levels: [
            { level: 0, files: 3, bytes: 12_000_000 },
            { level: 1, files: 2, bytes: 28_000_000 },
          ],
          pendingBytes: 40_000_000,
          running: true,
          completedCount: 7,
          failureCount: 1,
          bytesRead: 90_000_000,
          bytesWritten: 80_000_000,
          spaceAmplification: 1.42,
          l0StallCount: 2,
        },
        read: {
          gets: 1000,
          tableFilesConsulted: 1200,
          bloomNegatives: 3400,
          bloomPositives: 1150,
          bloomFalsePositives: 12,
          blockReads: 800,
          blockCacheHits: 400,
          blockCacheBytes: 6_000_000,
          blockCacheLimitBytes: 8_388_608,
          indexBytes: 120_000,
        },
      }),
    ],
    [
      'awkward values: escaped store name, tiny and huge numbers, unknown state',
      snapshot({
        store: 'a"b\\c\nd',
        state: 'closing' as WriterState,
        backpressure: {
          totalCount: 0,
          totalWaitMs: 1e-7,
          activeCount: 0,
          activeWaitMs: 0.1 + 0.2,
          abortedCount: 0,
          abortedWaitMs: -0,
          cause: null,
          maxWaitMsSinceLast: 0,
          longestActiveWaitMs: 0,
          startedCount: 0,
        },
        storage: { usageBytes: Number.MAX_SAFE_INTEGER, quotaBytes: 1e21, tableFileCount: 0, tableFileBytes: 0, storeBytes: 0 },
      }),
    ],
  ];

  it.skipIf(!available && !process.env.CI).each(cases)('accepts %s with no lint problems', (_, s) => {
    const result = check(renderMetrics(s));
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it.skipIf(!available && !process.env.CI)('reports a lint problem (so the checks above can fail)', () => {
    const result = check('# HELP bad_ms x\n# TYPE bad_ms counter\nbad_ms 1\n');
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/_total/);
  });
});
