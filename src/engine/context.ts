// What the parts of one writer share, named once (docs/impl.md §1): each part takes the context
// (and the few parts it works with) instead of a list of positional arguments.

import type { KeyEncoder } from '../data/keys.js';
import type { StoreSchema } from '../data/schema.js';
import type { WriteStats } from '../metrics/stats.js';
import type { StoreHandle } from '../storage/adapter.js';
import type { IoPlane } from '../lsm/io-plane.js';
import type { Backpressure } from './backpressure.js';
import type { CompactionPolicy } from './compaction.js';
import type { BackgroundLanes } from './lane.js';
import type { Lifecycle } from './lifecycle.js';
import type { ManifestLog } from './manifest-log.js';
import type { ResolvedOptions } from './options.js';
import type { Watches } from './watch.js';

/** One writer's shared parts, from before its store is claimed. */
export interface EngineContext {
  /** The options, validated once (options.ts `resolveOptions`). */
  readonly options: ResolvedOptions;
  readonly schema: StoreSchema;
  /** Encodes a batch's primary keys; undefined for an append-only store. */
  readonly keyEncoder: KeyEncoder | undefined;
  readonly life: Lifecycle;
  readonly backpressure: Backpressure;
  /** The counters of `writeStats()`, updated in place by the parts that do the work. */
  readonly writeStats: WriteStats;
  readonly policy: CompactionPolicy;
  /** Where a WAL segment rolls over (OpenHooks.walSegmentTargetBytes; default WAL_SEGMENT_TARGET_BYTES). */
  readonly walSegmentTargetBytes?: number;
  /** The live reads (`watch`): told of every durable commit group. */
  readonly watches: Watches;
}

/**
 * The shared parts once the store is claimed: its handle, the I/O plane its WAL entries and table
 * files go through, the manifest this writer holds, its background lanes.
 */
export interface ClaimedContext extends EngineContext {
  readonly handle: StoreHandle;
  readonly io: IoPlane;
  readonly log: ManifestLog;
  readonly lanes: BackgroundLanes;
}
