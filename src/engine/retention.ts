// WAL retention and the consumer cursor (docs/impl.md §4): segments wholly at or below the retention
// cursor are removed; `markConsumed` moves the consumer cursor durably; `tail` reads durable
// entries back. Invariant: no entry after `tier.retainedFrom(manifest)` is ever removed, and
// retention never runs after the store handle is released (close waits for it).

import { type RecordBatch, Table, tableFromIPC } from 'apache-arrow';
import { MemWalError, toMemWalError } from '../util/errors.js';
import { scanSegment } from '../format/wal/codec.js';
import type { ClaimedContext } from './context.js';
import type { BackgroundLane, LaneStep } from './lane.js';
import { callLimitMs, settleWithin } from './limits.js';
import type { WalEntry } from './api.js';
import type { Tier } from './tier.js';
import type { WalWriter } from './wal-writer.js';

/** Removes WAL segments nobody needs, and reads the log back for `tail`. */
export class Retention {
  /** Removal passes, one at a time (the `wal retention` lane); close waits for it before releasing. */
  private readonly lane: BackgroundLane;
  /** `markConsumed` commits in flight: close's checkpoint waits for them ({@link settleConsumers}). */
  private readonly consuming = new Set<Promise<unknown>>();

  constructor(
    private readonly ctx: ClaimedContext,
    private readonly parts: {
      wal: WalWriter;
      /** Says which entries the store's mode still needs (`retentionCursor`). */
      tier: Pick<Tier, 'retentionCursor'>;
      /** The batches of WAL entry `position`, written by writer `epoch` in any recorded schema version, in the current one. */
      project(t: Table, epoch: number, position: number): RecordBatch[];
    },
  ) {
    this.lane = ctx.lanes.add('wal retention', () => this.pass(), { atClose: 'finish' });
  }

  /**
   * Schedule a removal pass (after a flush commit or `markConsumed`); passes never overlap.
   * Resolves once no pass runs any more. Never rejects.
   */
  run(): Promise<void> {
    this.lane.wake();
    return this.lane.settled();
  }

  /** One removal pass: every segment wholly at or below the retention cursor but the one being appended to. */
  private async pass(): Promise<LaneStep> {
    const { handle, life, log, options } = this.ctx;
    const cursor = this.parts.tier.retentionCursor(log.manifest);
    for (const s of this.parts.wal.removable(cursor)) {
      if (life.dead) return 'stop';
      try {
        s.removing = true;
        await settleWithin(handle.walRemove(s.name), callLimitMs(options.walRetry.timeoutMs), `removal of WAL segment ${s.name}`);
        this.parts.wal.forget(s);
      } catch (e) {
        s.removing = false;
        if (!life.dead) options.logger.warn(`memwal: could not remove WAL segment ${s.name} (retried after the next flush)`, e);
        return 'idle';
      }
    }
    return 'idle';
  }

  /**
   * Record that a consumer is done with every entry up to `position` (durably, in the manifest).
   * WAL entries are removed only at or below the consumer cursor once it is set.
   */
  async markConsumed(position: number): Promise<void> {
    const durable = this.parts.wal.durablePosition;
    if (!Number.isSafeInteger(position) || position < 0 || position > durable) {
      throw new MemWalError('InvalidArgument', `markConsumed: position must be an integer in [0, ${durable}], got ${position}`);
    }
    const current = this.ctx.log.manifest.consumerCursor;
    if (current !== null && position <= current) return;
    const commit = this.ctx.log.commit({ consumerCursor: Math.max(current ?? 0, position) }, durable);
    this.consuming.add(commit);
    try {
      await commit;
    } catch (raw) {
      const err = toMemWalError(raw, 'markConsumed');
      if (err.code === 'Fenced' || this.ctx.log.unresolvable) this.ctx.life.poison(err);
      throw err;
    } finally {
      this.consuming.delete(commit);
    }
    await this.run();
  }

  /**
   * Resolves once every `markConsumed` commit in flight has settled (each is bounded by the
   * manifest's time limit). Close waits for it before its checkpoint pass: a consumer cursor
   * committed while the store closes would otherwise land after the pass read the cursor, and
   * its segments would stay until the next open.
   */
  async settleConsumers(): Promise<void> {
    while (this.consuming.size > 0) await Promise.allSettled([...this.consuming]);
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
      if (this.ctx.life.poisonError) throw this.ctx.life.poisonError;
      const oldest = this.parts.wal.oldestRetained();
      if (pos < oldest) {
        throw new MemWalError('Truncated', `tail: entry ${pos} was removed by retention (oldest retained: ${oldest})`);
      }
      const durable = this.parts.wal.durablePosition;
      if (pos <= durable) {
        const seg = [...this.parts.wal.segments].reverse().find((s) => s.firstPosition <= pos && pos <= s.lastPosition);
        if (!seg) throw new MemWalError('Truncated', `tail: entry ${pos} is not in any retained WAL segment`);
        // Frames up to `last` are durable: appends past them (a retried one may be truncated
        // away) start at or beyond the end of the last frame consumed, so that offset stays valid.
        const last = Math.min(durable, seg.lastPosition);
        const offset = read?.segment === seg.name ? read.offset : 0;
        let bytes: Uint8Array;
        try {
          bytes = await settleWithin(
            this.ctx.handle.walRead(seg.name, offset),
            this.ctx.options.flushRetry.stallMs,
            `tail read of ${seg.name}`,
          );
        } catch (e) {
          // Retention removed the segment while we read it (or a removal reported failed had landed):
          // its entries are gone, not unreadable.
          const removable = seg.lastPosition <= this.parts.tier.retentionCursor(this.ctx.log.manifest);
          if (seg.removing || removable || !this.parts.wal.segments.includes(seg)) {
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
          const batches = this.parts.project(decoded, f.epoch, f.position);
          const data = batches.length > 0 ? new Table(batches) : decoded;
          yield { position: f.position, epoch: f.epoch, data };
          pos = f.position + 1;
          progressed = true;
        }
        if (!progressed) throw new MemWalError('Corruption', `tail: entry ${pos} could not be read from WAL segment ${seg.name}`);
        continue;
      }
      if (!opts.follow || this.ctx.life.closed || this.ctx.life.dead || opts.signal?.aborted) return;
      await this.ctx.life.progress.wait(opts.signal);
    }
  }
}
