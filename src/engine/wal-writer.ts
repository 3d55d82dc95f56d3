// The WAL writer (LevelDB's log::Writer plus the group commit of DBImpl::Write): WAL entries being
// built, appended leader-style in position order, made durable, and the segments they live in.
// Invariants: durablePosition < nextPosition; entries in `queue` have consecutive positions from
// durablePosition + 1; pendingBytes/pendingBatches are the sums over `queue`; only closed entries
// are appended; an entry's puts resolve only once it and every entry before it is durable.

import { type RecordBatch, type Schema, Table, tableToIPC } from 'apache-arrow';
import { type MemWalError, toMemWalError } from '../util/errors.js';
import { segmentName } from '../storage/adapter.js';
import { backoffMs, clearTimer, EventLoopTurns, nowMs, setTimer, sleep, type Timer, yieldToEventLoop } from '../util/schedule.js';
import { crc32c } from '../util/crc32c.js';
import { FRAME_HEADER_BYTES } from '../format/wal/format.js';
import type { ClaimedContext } from './context.js';
import type { BackgroundLane, LaneStep } from './lane.js';
import { isTimeout, settleWithin } from './limits.js';
import type { MemTable } from '../lsm/memtable.js';
import type { WalStats } from '../metrics/stats.js';

/** A segment grows to about this size before the writer starts the next one (retention unit). */
export const WAL_SEGMENT_TARGET_BYTES = 8 * 1024 * 1024;

/** A WAL entry being built or waiting for its append. */
export interface PendingEntry {
  position: number;
  /** The memtable its batches belong to (MemTable mode). */
  memtable: MemTable | undefined;
  batches: RecordBatch[];
  bytes: number;
  rows: number;
  /** The memtable's batch count after this entry's last batch. */
  batchEnd: number;
  /** Closed entries take no more puts; only closed entries are appended. */
  closed: boolean;
  done: Promise<void>;
  resolve: () => void;
  reject: (e: MemWalError) => void;
}

/** A WAL segment as the writer tracks it. */
export interface Segment {
  name: string;
  epoch: number;
  firstPosition: number;
  bytes: number;
  /** Last position it holds that replay honours (firstPosition - 1 when none). */
  lastPosition: number;
  /** Set while retention removes it (a `tail` reading it then finds it gone). */
  removing?: boolean;
}

/** Where recovery left the WAL (recovery.ts): the writer appends after it. */
export interface RecoveredWal {
  /** This writer's epoch (its claim). */
  epoch: number;
  segments: Segment[];
  /** The last position any entry holds or the manifest records; appends start after it. */
  lastPosition: number;
  tornTailBytes: number;
}

/** What the WAL writer tells its owner. */
export interface WalWriterEvents {
  /** An entry is durable (called in position order, synchronously, before its puts resolve). */
  onDurable(e: PendingEntry): void;
  /** The append loop failed for good (poisons the writer). */
  onFailure(err: MemWalError): void;
}

/** Group commit of WAL entries into segments of one writer epoch. */
export class WalWriter {
  readonly queue: PendingEntry[] = [];
  nextPosition = 1;
  durablePosition = 0;
  /** Retained segments, in position order; the last may be `current`. */
  segments: Segment[] = [];
  private current: Segment | undefined;
  pendingBytes = 0;
  pendingBatches = 0;
  durableBatchCount = 0;
  bytesWritten = 0;
  entriesWritten = 0;
  tornTailBytes = 0;
  private timer: Timer | undefined;
  private readonly epoch: number;
  private readonly schema: Schema;
  /** The append loop, leader-style (the `wal append` lane). */
  private readonly lane: BackgroundLane;
  /**
   * A turn of the event loop now and then for appends that take none: a small payload is
   * checksummed where it was encoded, and an adapter may answer through microtasks only.
   */
  private readonly turns = new EventLoopTurns();

  /** Appends for the claimed epoch after what recovery found (`recovered`). */
  constructor(
    private readonly ctx: ClaimedContext,
    recovered: RecoveredWal,
    private readonly events: WalWriterEvents,
  ) {
    this.schema = ctx.schema.internal;
    this.epoch = recovered.epoch;
    this.segments = recovered.segments;
    this.nextPosition = recovered.lastPosition + 1;
    this.durablePosition = recovered.lastPosition;
    this.tornTailBytes = recovered.tornTailBytes;
    this.lane = ctx.lanes.add('wal append', () => this.appendPass(), { atClose: 'stop' });
    ctx.life.onTerminal((err) => this.rejectAll(err));
  }

  /** Add a put to the open entry, or open a new one (one memtable per entry; size cap). */
  join(m: MemTable | undefined, batches: RecordBatch[], bytes: number, rows: number, batchEnd: number): PendingEntry {
    let e = this.queue[this.queue.length - 1];
    if (!e || e.closed || e.memtable !== m || e.bytes + bytes > this.ctx.options.maxWalBufferBytes) {
      if (e) e.closed = true;
      e = this.newEntry(m);
      this.queue.push(e);
    }
    for (const b of batches) e.batches.push(b);
    e.bytes += bytes;
    e.rows += rows;
    e.batchEnd = batchEnd;
    this.pendingBytes += bytes;
    this.pendingBatches += batches.length;
    if (m) {
      if (m.firstPosition === 0) m.firstPosition = e.position;
      m.lastPosition = e.position;
    }
    if (e.bytes >= this.ctx.options.maxWalBufferBytes) e.closed = true;
    return e;
  }

  /** After a join: append now (durable writes, a full entry) or within maxWalFlushIntervalMs. */
  schedule(e: PendingEntry): void {
    if (this.ctx.options.durableWrite || e.bytes >= this.ctx.options.maxWalBufferBytes) this.kick();
    else this.armTimer();
  }

  /** Close the entry being built (a freeze, sync, close or a blocked put). */
  closeOpen(): void {
    const tail = this.queue[this.queue.length - 1];
    if (tail) tail.closed = true;
  }

  /** Close the entry being built if it belongs to `m` (an entry never spans two memtables). */
  closeFor(m: MemTable): void {
    const tail = this.queue[this.queue.length - 1];
    if (tail && tail.memtable === m) tail.closed = true;
  }

  /** Start the append lane if it is idle: it appends the closed entries (or, when durable, any entry) that wait. */
  kick(): void {
    this.lane.wake();
  }

  /**
   * Everything accepted so far durable: resolves with the last durable position. Rejects with
   * the latched error if the writer poisons first.
   */
  async sync(): Promise<number> {
    const last = this.queue[this.queue.length - 1];
    if (last) {
      this.closeOpen();
      this.kick();
      await last.done;
    }
    return this.durablePosition;
  }

  /** The segments wholly at or below `cursor`, except the one being appended to. */
  removable(cursor: number): Segment[] {
    return this.segments.filter((s) => s !== this.current && s.lastPosition <= cursor);
  }

  /**
   * Close: no entry follows, so the segment appended to last is no longer protected from
   * retention (once its entries are flushed, a clean close leaves no WAL to read at the next open).
   */
  endAppends(): void {
    this.current = undefined;
  }

  forget(s: Segment): void {
    this.segments = this.segments.filter((x) => x !== s);
  }

  /** The oldest position still in storage (or the next one when none is retained). */
  oldestRetained(): number {
    let oldest = this.nextPosition;
    for (const s of this.segments) if (s.lastPosition >= s.firstPosition) oldest = Math.min(oldest, s.firstPosition);
    return Math.min(oldest, this.durablePosition + 1);
  }

  snapshot(): WalStats {
    let retainedBytes = 0;
    for (const s of this.segments) retainedBytes += s.bytes;
    return {
      nextPosition: this.nextPosition,
      oldestPosition: this.oldestRetained(),
      retainedBytes,
      bytesWritten: this.bytesWritten,
      entriesWritten: this.entriesWritten,
      tornTailBytes: this.tornTailBytes,
    };
  }

  /** The invariants of the file header, checked (cheap; for tests). Throws an Error naming the broken one. */
  checkInvariants(): void {
    if (!(this.durablePosition < this.nextPosition))
      throw new Error(`durablePosition ${this.durablePosition} >= nextPosition ${this.nextPosition}`);
    let bytes = 0;
    let batches = 0;
    this.queue.forEach((e, i) => {
      if (e.position !== this.durablePosition + 1 + i)
        throw new Error(`queued entry ${i} has position ${e.position}, expected ${this.durablePosition + 1 + i}`);
      bytes += e.bytes;
      batches += e.batches.length;
    });
    if (bytes !== this.pendingBytes) throw new Error(`pendingBytes ${this.pendingBytes} != ${bytes} queued`);
    if (batches !== this.pendingBatches) throw new Error(`pendingBatches ${this.pendingBatches} != ${batches} queued`);
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearTimer(this.timer);
    this.timer = undefined;
  }

  private rejectAll(err: MemWalError): void {
    this.stopTimer();
    for (const e of this.queue) e.reject(err);
  }

  private newEntry(m: MemTable | undefined): PendingEntry {
    let resolve!: () => void;
    let reject!: (e: MemWalError) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    done.catch(() => undefined); // non-durable puts do not await it; poison reports the failure
    return {
      position: this.nextPosition++,
      memtable: m,
      batches: [],
      bytes: 0,
      rows: 0,
      batchEnd: 0,
      closed: false,
      done,
      resolve,
      reject,
    };
  }

  private armTimer(): void {
    if (this.timer !== undefined || this.ctx.life.dead) return;
    this.timer = setTimer(() => {
      this.timer = undefined;
      this.closeOpen();
      this.kick();
    }, this.ctx.options.maxWalFlushIntervalMs);
  }

  /**
   * One pass of the append lane (leader-style group commit): the oldest entry; puts arriving
   * meanwhile ride the next. Synchronous while it finds nothing to append.
   */
  private appendPass(): LaneStep | Promise<LaneStep> {
    const { life, options } = this.ctx;
    // 0. A dead writer appends nothing.
    if (life.dead) return 'stop';
    // 1. Nothing queued: the lane rests until the next put.
    const e = this.queue[0];
    if (!e) return 'idle';
    // 2. The oldest entry still takes puts: durable writes append it now; otherwise its timer (or
    //    a freeze, sync, close or a blocked put) closes it.
    if (!e.closed) {
      if (!options.durableWrite) {
        this.armTimer();
        return 'idle';
      }
      e.closed = true;
    }
    return this.appendStep(e);
  }

  private async appendStep(e: PendingEntry): Promise<LaneStep> {
    const { life } = this.ctx;
    // 3. Append it; a failure past walRetry (or Fenced, or a call past its limit) poisons the writer.
    try {
      await this.append(e);
    } catch (err) {
      this.events.onFailure(toMemWalError(err, 'WAL append'));
      return 'stop';
    }
    if (life.dead) return 'stop';
    // 4. Durable, in position order: the owner publishes it before its puts resolve.
    this.queue.shift();
    this.durablePosition = e.position;
    this.pendingBytes -= e.bytes;
    this.pendingBatches -= e.batches.length;
    this.durableBatchCount += e.batches.length;
    this.events.onDurable(e);
    e.resolve();
    return 'more';
  }

  /**
   * The payload's CRC-32C: a small one's in this task (after a turn of the event loop only when a
   * run of appends has had none for a slice, so a loop of awaited puts on an adapter that answers
   * through microtasks still lets timers and messages in), a large one's in slices.
   */
  private checksum(payload: Uint8Array): number | Promise<number> {
    if (payload.length > WAL_CRC_SAME_TASK_BYTES) return crc32cSliced(payload);
    const turn = this.turns.turn();
    return turn ? turn.then(() => crc32c(payload)) : crc32c(payload);
  }

  /**
   * Append one entry. A failed attempt is retried (after truncating the segment back to its last
   * good length) until walRetry.timeoutMs; then, or on `Fenced` or an attempt that never settles,
   * it throws. Each attempt is limited to walRetry.timeoutMs.
   */
  private async append(e: PendingEntry): Promise<void> {
    const encode = (): Uint8Array => tableToIPC(new Table(this.schema, e.batches), 'stream');
    let payload = encode();
    const handle = this.ctx.handle;
    // The payload's CRC-32C is taken here, over the bytes just encoded: a small payload's in this
    // task, a large one's a slice at a time (the first after a turn of the event loop: encoding
    // and checksum are separate slices; WAL_CRC_SAME_TASK_BYTES decides). The frame header is
    // built from it where the store's I/O plane frames the entry (here, or in the I/O worker),
    // with no second pass over the payload. The plane may take the payload over (transfer its
    // buffer): a retry encodes it again.
    let payloadCrc = await this.checksum(payload);
    const frameLength = FRAME_HEADER_BYTES + payload.length;
    let seg = this.current;
    if (!seg || seg.bytes >= (this.ctx.walSegmentTargetBytes ?? WAL_SEGMENT_TARGET_BYTES)) {
      seg = {
        name: segmentName(this.epoch, e.position),
        epoch: this.epoch,
        firstPosition: e.position,
        bytes: 0,
        lastPosition: e.position - 1,
      };
      this.current = seg;
      this.segments.push(seg);
    }
    const start = nowMs();
    const limitMs = this.ctx.options.walRetry.timeoutMs;
    let attempt = 0;
    for (;;) {
      try {
        const append = this.ctx.io.appendEntry(seg.name, seg.bytes, this.epoch, e.position, payload, payloadCrc);
        await settleWithin(append, limitMs, `WAL append of entry ${e.position}`);
        break;
      } catch (raw) {
        const err = toMemWalError(raw, `WAL append of entry ${e.position}`);
        if (err.code === 'Fenced' || isTimeout(err) || this.ctx.life.dead) throw err;
        attempt += 1;
        this.ctx.writeStats.walAppendRetries += 1;
        if (nowMs() - start >= limitMs) throw err;
        this.ctx.options.logger.warn(`memwal: ${err.message}; retry ${attempt}`);
        await sleep(backoffMs(attempt, this.ctx.options.walRetry.baseMs, this.ctx.options.walRetry.maxMs));
        if (this.ctx.life.dead) throw err;
        payload = encode();
        payloadCrc = await this.checksum(payload);
        try {
          await settleWithin(handle.walTruncate(seg.name, seg.bytes), limitMs, `WAL truncate of ${seg.name}`);
        } catch (t) {
          const terr = toMemWalError(t, `WAL truncate of ${seg.name}`);
          if (terr.code === 'Fenced' || isTimeout(terr)) throw terr;
          // A segment that was never created cannot be truncated; the next append recreates it.
        }
      }
    }
    seg.bytes += frameLength;
    seg.lastPosition = e.position;
    this.bytesWritten += frameLength;
    this.entriesWritten += 1;
    this.ctx.writeStats.walAppendCount += 1;
    this.ctx.writeStats.walAppendTimeMs += nowMs() - start;
  }
}

/** Payload bytes checksummed per slice of the event loop by {@link crc32cSliced} (0.5-1 ms). */
const WAL_CRC_SLICE_BYTES = 1024 * 1024;

/**
 * A payload at most this long is checksummed in the task that encoded it (encoding and checksum
 * of 256 KiB are well under a millisecond): a small put's append then takes no turn of the event
 * loop before it is sent, a turn that on a loaded machine costs as much as the write itself.
 */
export const WAL_CRC_SAME_TASK_BYTES = 256 * 1024;

/**
 * `crc32c(bytes)`, `WAL_CRC_SLICE_BYTES` at a time with a turn of the event loop before each
 * slice, so a large WAL payload's checksum is no long task on the engine's thread.
 */
async function crc32cSliced(bytes: Uint8Array): Promise<number> {
  let crc = 0;
  for (let at = 0; at < bytes.length; at += WAL_CRC_SLICE_BYTES) {
    await yieldToEventLoop();
    crc = crc32c(bytes.subarray(at, at + WAL_CRC_SLICE_BYTES), crc);
  }
  return crc;
}
