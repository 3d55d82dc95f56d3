// The flush of one frozen memtable (SPEC §4.3): write its table file, make it durable, commit the
// manifest edit, publish. Never deletes a file that a commit of unknown outcome may name: such a
// commit is resolved by content before the next attempt (docs/impl.md, "Manifest commits").

import { type RecordBatch, Table, tableToIPC } from 'apache-arrow';
import { type MemWalError, toMemWalError } from '../errors.js';
import type { TableFileEntry } from '../manifest/manifest.js';
import type { ResolvedOptions } from '../options.js';
import type { StoreHandle } from '../storage/adapter.js';
import { nowMs, yieldToEventLoop } from '../util/schedule.js';
import { crc32c } from '../wal/crc32c.js';
import { keyString, keyToHex } from './keys.js';
import type { Lifecycle } from './lifecycle.js';
import { settleWithin } from './limits.js';
import type { ManifestLog } from './manifest-log.js';
import type { MemTable } from './memtable.js';
import type { MemtableTier } from './memtables.js';
import { concatRows } from './rows.js';
import type { StoreSchema } from './schema.js';
import type { WriteStats } from './stats.js';

/** Table files are handed to the adapter in chunks of this size, with a yield between. */
export const TABLE_WRITE_CHUNK_BYTES = 1024 * 1024;

/** What one flush attempt ended with. */
export type FlushOutcome = 'committed' | 'failed' | 'fatal';

/** Flushes frozen memtables, one attempt at a time (the background loop schedules them). */
export class Flusher {
  /** What the flush is doing (for diagnosing a slow or stuck flush). */
  stage = 'idle';
  /** A failure while closing (reported by close). */
  closeError: MemWalError | undefined;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly ss: StoreSchema,
    private readonly handle: StoreHandle,
    private readonly life: Lifecycle,
    private readonly log: ManifestLog,
    private readonly tier: MemtableTier,
    private readonly ws: WriteStats,
    private readonly durablePosition: () => number,
    /** Called after a commit is published (tables changed). */
    private readonly onCommitted: () => void,
  ) {}

  /**
   * One attempt for `m` (the oldest uncommitted frozen memtable, fully WAL-durable). `fatal` when
   * the writer was poisoned (fenced, a commit past its limit).
   */
  async flushOnce(m: MemTable): Promise<FlushOutcome> {
    const start = nowMs();
    let name: string | undefined;
    let phase: 'resolve' | 'write' | 'commit' = 'resolve';
    try {
      if (m.pendingTable) {
        // An earlier attempt's commit may have landed: find out by content before anything else.
        if (this.log.inDoubt) await this.log.resolveDoubt();
        if (this.log.manifest.tables.some((t) => t.name === m.pendingTable!.name)) {
          this.publish(m, m.pendingTable, start);
          return 'committed';
        }
        await this.removeFile(m.pendingTable.name);
        m.pendingTable = undefined;
      }
      phase = 'write';
      m.flushAttempts += 1;
      name = `${m.generation}-${this.log.epoch}-${m.flushAttempts}.arrow`;
      this.setStage(m, 'selecting rows');
      const { batches, rows, minKey, maxKey } = this.content(m);
      await yieldToEventLoop();
      this.setStage(m, 'encoding');
      const bytes = tableToIPC(new Table(this.ss.internal, batches), 'file');
      await yieldToEventLoop();
      const crc = { value: 0 };
      this.setStage(m, 'writing the table file');
      await settleWithin(this.handle.tableWrite(name, chunked(bytes, crc)), this.o.flushRetry.stallMs, `table write of ${name}`);
      const entry: TableFileEntry = {
        generation: m.generation,
        name,
        bytes: bytes.length,
        rows,
        checksum: crc.value.toString(16).padStart(8, '0'),
      };
      if (minKey !== undefined && maxKey !== undefined) {
        entry.minKey = keyToHex(minKey);
        entry.maxKey = keyToHex(maxKey);
      }
      this.setStage(m, 'committing the manifest');
      phase = 'commit';
      m.pendingTable = entry; // from here on the commit may land even if it reports a failure
      await this.log.commit({ addTables: [entry], nextGeneration: m.generation + 1, replayCursor: m.lastPosition }, this.durablePosition());
      this.publish(m, entry, start);
      return 'committed';
    } catch (raw) {
      const err = toMemWalError(raw, `flush of generation ${m.generation}`);
      this.ws.flushFailureCount += 1;
      if (err.code === 'Fenced' || err.code === 'Corruption' || err.code === 'InvalidArgument' || this.log.unresolvable) {
        this.life.poison(err);
        return 'fatal';
      }
      // A file no commit can name any more is removed; one a commit in doubt may name is kept.
      if (phase === 'commit' && !this.log.inDoubt && !this.log.manifest.tables.some((t) => t.name === name)) m.pendingTable = undefined;
      if (name !== undefined && m.pendingTable?.name !== name && !this.life.dead) await this.removeFile(name);
      if (this.life.stopping) this.closeError ??= err;
      else this.o.logger.warn(`memwal: ${err.message}; retrying in place`);
      this.life.progress.notify();
      return 'failed';
    }
  }

  private setStage(m: MemTable, s: string): void {
    this.stage = `generation ${m.generation} attempt ${m.flushAttempts}: ${s}`;
  }

  /** The synchronous publish step of a committed flush (SPEC §4.4). */
  private publish(m: MemTable, entry: TableFileEntry, start: number): void {
    m.pendingTable = undefined;
    this.tier.committed(m);
    const ms = nowMs() - start;
    this.ws.flushCount += 1;
    this.ws.flushRows += entry.rows;
    this.ws.flushBytes += entry.bytes;
    this.ws.flushTimeMs += ms;
    this.ws.lastFlushMs = ms;
    this.stage = 'idle';
    this.onCommitted();
  }

  private async removeFile(name: string): Promise<void> {
    try {
      await settleWithin(this.handle.tableRemove(name), this.o.flushRetry.stallMs, `removal of ${name}`);
    } catch (r) {
      if (!this.life.dead) this.o.logger.warn(`memwal: could not remove table file ${name} (swept at next open)`, r);
    }
  }

  /** The rows a memtable flushes: the newest visible version of each key (tombstones kept). */
  private content(m: MemTable): { batches: RecordBatch[]; rows: number; minKey?: string; maxKey?: string } {
    if (!m.keyIndex) {
      let rows = 0;
      for (const b of m.batches) rows += b.numRows;
      return {
        batches: concatRows(
          m.batches.map((batch) => ({ batch, rows: 'all' as const })),
          this.ss.internal,
        ),
        rows,
      };
    }
    const perBatch: number[][] = m.batches.map(() => []);
    // Bounds: numbers compare as numbers, strings as strings; the two are merged at the end.
    let minNum = Number.POSITIVE_INFINITY;
    let maxNum = Number.NEGATIVE_INFINITY;
    let minStr: string | undefined;
    let maxStr: string | undefined;
    for (const [k, loc] of m.keyIndex) {
      const { batch, row } = m.ordinals.locate(loc);
      perBatch[batch]!.push(row);
      if (typeof k === 'number') {
        if (k < minNum) minNum = k;
        if (k > maxNum) maxNum = k;
      } else {
        if (minStr === undefined || k < minStr) minStr = k;
        if (maxStr === undefined || k > maxStr) maxStr = k;
      }
    }
    const bound = (num: number, str: string | undefined, pick: (a: string, b: string) => string): string | undefined => {
      const n = Number.isFinite(num) ? keyString(num, this.ss) : undefined;
      return n === undefined ? str : str === undefined ? n : pick(n, str);
    };
    const minKey = bound(minNum, minStr, (a, b) => (a < b ? a : b));
    const maxKey = bound(maxNum, maxStr, (a, b) => (a > b ? a : b));
    let rows = 0;
    const parts = m.batches.map((batch, i) => {
      const sel = perBatch[i]!.sort((a, b) => a - b);
      rows += sel.length;
      return { batch, rows: sel.length === batch.numRows ? ('all' as const) : sel };
    });
    return {
      batches: concatRows(
        parts.filter((p) => p.rows === 'all' || p.rows.length > 0),
        this.ss.internal,
      ),
      rows,
      minKey,
      maxKey,
    };
  }
}

/**
 * Split bytes into chunks, yielding to the event loop between them (stats stay responsive), and
 * fold each chunk into `crc.value` (CRC-32C of everything yielded so far).
 */
async function* chunked(bytes: Uint8Array, crc: { value: number }): AsyncGenerator<Uint8Array> {
  for (let off = 0; off < bytes.length; off += TABLE_WRITE_CHUNK_BYTES) {
    if (off > 0) await yieldToEventLoop();
    const chunk = bytes.subarray(off, Math.min(bytes.length, off + TABLE_WRITE_CHUNK_BYTES));
    crc.value = crc32c(chunk, crc.value);
    yield chunk;
  }
}
