// Closing an in-process writer (`MemWal.close`), in named steps: every accepted put durable,
// every frozen memtable flushed, the WAL checkpointed, the lanes settled, the lock released.

import type { StoreHandle } from '../storage/adapter.js';
import { MemWalError } from '../util/errors.js';
import type { ClaimedContext } from './context.js';
import { releaseHandle } from './open.js';
import type { Retention } from './retention.js';
import type { AsyncRwLock } from './rwlock.js';
import type { StatsSource } from './stats-source.js';
import type { Tier } from './tier.js';
import type { WalWriter } from './wal-writer.js';

/** The parts of a writer its close touches. */
export interface ClosingWriter {
  ctx: ClaimedContext;
  wal: WalWriter;
  tier: Tier;
  retention: Retention;
  statsLock: AsyncRwLock;
  handle: StoreHandle;
  statsSource: StatsSource;
}

/**
 * Close the writer `parts` make up (`MemWal.close` documents the outcome): on a flush failure it
 * still releases everything and rejects with that error; cut short by `abort()` it rejects `Closed`.
 */
export async function closeWriter(parts: ClosingWriter): Promise<void> {
  const { ctx, wal, tier, retention, statsLock, handle, statsSource } = parts;
  const life = ctx.life;
  statsSource.endSubscriptions();
  if (life.closed) return;
  life.stopping = true;
  ctx.backpressure.wake();
  life.progress.notify(); // a flush lane waiting for compaction flushes anyway now
  let failure: MemWalError | undefined;
  if (!life.poisonError && !life.dead) {
    // 1. Every accepted put durable (the WAL writer's limits bound this wait).
    tier.freezeForClose();
    wal.closeOpen();
    wal.kick();
    while (!life.poisonError && !life.dead && wal.queue.length > 0) await life.progress.wait();
    // 2. Every frozen memtable flushed, one more try each (MemTable mode).
    const flushFailure = await tier.flushForClose();
    // 3. A failure while closing (a WAL append past walRetry, a failed last flush) is reported;
    //    so is an abort that cut the close short.
    failure = flushFailure ?? life.poisonError;
    const unfinished = wal.queue.length > 0 || tier.hasUnflushed();
    // 4. Checkpoint: every WAL segment the store no longer needs goes, the last one too, so the
    //    next open has nothing to read or replay.
    if (!failure && !unfinished && !life.dead) {
      wal.endAppends();
      await retention.settleConsumers(); // a consumer cursor committed meanwhile is seen by the pass
      await retention.run();
    }
    if (!failure && life.closed && unfinished) {
      failure = new MemWalError(
        'Closed',
        `store ${ctx.options.name} was aborted while closing; the outcome of puts not yet durable is unknown`,
      );
    }
  }
  life.stopping = true;
  // 5. The background lanes whose I/O must not outlive the handle end (WAL retention); the
  //    others (appends, flushes, compactions) stop at the shutdown below.
  await ctx.lanes.settle();
  await statsLock.write(async () => {
    life.shutdown(new MemWalError('Closed', `store ${ctx.options.name} is closed`));
    await releaseHandle(ctx, handle);
  });
  if (failure) throw failure;
}
