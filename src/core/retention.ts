// WAL retention and the consumer cursor (docs/impl.md §4): segments wholly at or below the retention
// cursor are removed; `markConsumed` moves the consumer cursor durably; `tail` reads durable
// entries back. Invariant: no entry after `tier.retainedFrom(manifest)` is ever removed, and
// retention never runs after the store handle is released (close waits for it).

import { type RecordBatch, Table, tableFromIPC } from 'apache-arrow';
import { MemWalError, toMemWalError } from '../errors.js';
import type { ResolvedOptions } from '../options.js';
import type { StoreHandle } from '../storage/adapter.js';
import { scanSegment } from '../wal/codec.js';
import type { Lifecycle } from './lifecycle.js';
import { callLimitMs, settleWithin } from './limits.js';
import type { ManifestLog } from './manifest-log.js';
import type { WalEntry } from './stats.js';
import type { Tier } from './tier.js';
import type { WalWriter } from './wal-writer.js';

/** Removes WAL segments nobody needs, and reads the log back for `tail`. */
export class Retention {
  /** The removal pass in progress (one at a time); close waits for it before releasing. */
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly o: ResolvedOptions,
    private readonly handle: StoreHandle,
    private readonly life: Lifecycle,
    private readonly log: ManifestLog,
    private readonly wal: WalWriter,
    private readonly tier: Tier,
    /** The batches of WAL entry `position`, written by writer `epoch` in any recorded schema version, in the current one. */
    private readonly project: (t: Table, epoch: number, position: number) => RecordBatch[],
  ) {}

  /**
   * Schedule a removal pass (after a flush commit or `markConsumed`); passes never overlap.
   * Resolves when the pass that covers this call has ended. Never rejects.
   */
  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.settle();
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again && !this.life.dead && !this.life.stopping) {
        this.again = false;
        void this.run();
      }
    });
    return this.running;
  }

  /** Resolves once no removal pass is running or scheduled. */
  async settle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async pass(): Promise<void> {
    const cursor = this.tier.retentionCursor(this.log.manifest);
    for (const s of this.wal.removable(cursor)) {
      if (this.life.dead) return;
      try {
        s.removing = true;
        await settleWithin(this.handle.walRemove(s.name), callLimitMs(this.o.walRetry.timeoutMs), `removal of WAL segment ${s.name}`);
        this.wal.forget(s);
      } catch (e) {
        s.removing = false;
        if (!this.life.dead) this.o.logger.warn(`memwal: could not remove WAL segment ${s.name} (retried after the next flush)`, e);
        return;
      }
    }
  }

  /**
   * Record that a consumer is done with every entry up to `position` (durably, in the manifest).
   * WAL entries are removed only at or below the consumer cursor once it is set.
   */
  async markConsumed(position: number): Promise<void> {
    const durable = this.wal.durablePosition;
    if (!Number.isSafeInteger(position) || position < 0 || position > durable) {
      throw new MemWalError('InvalidArgument', `markConsumed: position must be an integer in [0, ${durable}], got ${position}`);
    }
    const current = this.log.manifest.consumerCursor;
    if (current !== null && position <= current) return;
    try {
      await this.log.commit({ consumerCursor: Math.max(current ?? 0, position) }, durable);
    } catch (raw) {
      const err = toMemWalError(raw, 'markConsumed');
      if (err.code === 'Fenced' || this.log.unresolvable) this.life.poison(err);
      throw err;
    }
    await this.run();
  }

  /**
   * Durable WAL entries from `fromPosition` in order; ends at the end of the log, or with `follow`
   * waits for more (until close, poison or `signal`). Rejects `Truncated` below the oldest
   * retained entry. Each segment is read once from where the previous read of it ended (the end
   * of the last frame consumed), so a wake-up reads the new entries, never the segment again; the
   * generator holds one read buffer, and each entry owns a copy of its payload, so a consumer
   * that keeps entries does not keep the buffers they came from.
   */
  async *tail(fromPosition: number, opts: { follow?: boolean; signal?: AbortSignal }): AsyncGenerator<WalEntry> {
    let pos = fromPosition;
    /** The segment last read and the offset just past the last frame consumed from it. */
    let read: { segment: string; offset: number } | undefined;
    for (;;) {
      if (this.life.poisonError) throw this.life.poisonError;
      const oldest = this.wal.oldestRetained();
      if (pos < oldest) {
        throw new MemWalError('Truncated', `tail: entry ${pos} was removed by retention (oldest retained: ${oldest})`);
      }
      const durable = this.wal.durablePosition;
      if (pos <= durable) {
        const seg = [...this.wal.segments].reverse().find((s) => s.firstPosition <= pos && pos <= s.lastPosition);
        if (!seg) throw new MemWalError('Truncated', `tail: entry ${pos} is not in any retained WAL segment`);
        // Frames up to `last` are durable: appends past them (a retried one may be truncated
        // away) start at or beyond the end of the last frame consumed, so that offset stays valid.
        const last = Math.min(durable, seg.lastPosition);
        const offset = read?.segment === seg.name ? read.offset : 0;
        let bytes: Uint8Array;
        try {
          bytes = await settleWithin(this.handle.walRead(seg.name, offset), this.o.flushRetry.stallMs, `tail read of ${seg.name}`);
        } catch (e) {
          // Retention removed the segment while we read it (or a removal reported failed had landed):
          // its entries are gone, not unreadable.
          const removable = seg.lastPosition <= this.tier.retentionCursor(this.log.manifest);
          if (seg.removing || removable || !this.wal.segments.includes(seg)) {
            throw new MemWalError('Truncated', `tail: entry ${pos} was removed by retention while it was read`);
          }
          throw toMemWalError(e, `tail read of ${seg.name}`);
        }
        let progressed = false;
        for (const f of scanSegment(bytes, offset).frames) {
          if (f.position > last) break;
          read = { segment: seg.name, offset: f.offset + f.frameBytes };
          if (f.position < pos) continue;
          const decoded = tableFromIPC(f.payload.slice()) as Table;
          const batches = this.project(decoded, f.epoch, f.position);
          const data = batches.length > 0 ? new Table(batches) : decoded;
          yield { position: f.position, epoch: f.epoch, data };
          pos = f.position + 1;
          progressed = true;
        }
        if (!progressed) throw new MemWalError('Corruption', `tail: entry ${pos} could not be read from WAL segment ${seg.name}`);
        continue;
      }
      if (!opts.follow || this.life.closed || this.life.dead || opts.signal?.aborted) return;
      await this.life.progress.wait(opts.signal);
    }
  }
}
