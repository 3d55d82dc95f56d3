// Opening a store, in named steps (LevelDB's DB::Open): take the writer lock → recover
// (recovery.ts: validate the WAL, claim the next epoch) → build the parts on the claimed manifest.
// MemWal.open then replays into memtables and wakes the background lanes. Nothing in storage
// changes before recovery's claim; a failure releases the lock.

import { ColumnView } from '../data/column-view.js';
import { makeKeyEncoder } from '../data/keys.js';
import { decodeSchema, makeStoreSchema } from '../data/schema.js';
import { claimIndexSet } from '../format/manifest/index-set.js';
import { cloneManifest, MANIFEST_FORMAT_VERSION, type Manifest, newIncarnationId, type StoreMode } from '../format/manifest/manifest.js';
import { orderedSectionId } from '../format/table/ordered-section.js';
import type { SectionId } from '../format/table/sections.js';
import { planSchema, recordedVersions, type SchemaChange, type SchemaPlan, SchemaVersions } from '../format/schema-versions.js';
import { type IoPlane, placementOf } from '../lsm/io-plane.js';
import type { StorageAdapter, StoreHandle } from '../storage/adapter.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import type { SchemaInfo } from './api.js';
import type { ClaimedContext, EngineContext } from './context.js';
import { BackgroundLanes } from './lane.js';
import { callLimitMs, settleWithin } from './limits.js';
import { ManifestLog } from './manifest-log.js';
import { MemtableTier } from './memtable-tier.js';
import { recover, type WalRecord } from './recovery.js';
import { Retention } from './retention.js';
import type { AsyncRwLock } from './rwlock.js';
import { retainedFrom, type Tier, WalOnlyTier } from './tier.js';
import { WalWriter } from './wal-writer.js';

/** The parts of a store just claimed and recovered, ready for MemWal. */
export interface OpenedStore {
  readonly ctx: ClaimedContext;
  readonly versions: SchemaVersions;
  readonly wal: WalWriter;
  readonly tier: Tier;
  readonly retention: Retention;
  /** The WAL entries recovery found; the tier replays those it needs. */
  readonly entries: WalRecord[];
  /** How this opener sees the store's columns (SPEC §9.1). */
  readonly view: ColumnView;
  /** What the claim changed in, or hid from, the store's schema (undefined: nothing). */
  readonly schemaChange: SchemaChange | undefined;
}

/**
 * Lock store `ctx.options.name` on `adapter`, recover it, and build its parts; the lock and the
 * recovery run under the write side of `statsLock`. Rejects as `MemWal.open` documents; the lock
 * is released (and the writer dead) when recovery fails.
 */
export async function openStore(ctx: EngineContext, adapter: StorageAdapter, statsLock: AsyncRwLock): Promise<OpenedStore> {
  const { life, options } = ctx;
  const mode: StoreMode = options.enableMemtable ? 'memtable' : 'wal-only';
  let handle: StoreHandle | undefined;
  let plane: IoPlane | undefined;
  const onLost = (reason: string): void => {
    if (life.closed) return;
    life.poison(new MemWalError('Fenced', `writer lock of ${options.name} lost (${reason}): another writer may own the store`));
    void handle?.release();
  };
  return statsLock.write(async () => {
    // 1. The writer lock (waiting, failing fast or stealing, as the options say), and the I/O
    // plane the store's bytes and background work go through, chosen here once (lsm/io-plane.ts).
    try {
      ({ handle, plane } = await placementOf(adapter).openStore(options.name, {
        timeoutMs: options.lockTimeoutMs,
        steal: options.steal,
        onWaiting: () => life.setState('waiting-for-lock'),
        logger: options.logger,
        onLost,
      }));
    } catch (e) {
      throw toMemWalError(e, `open ${options.name}`);
    }
    // 2. Recovery, then the parts on the claimed manifest.
    try {
      return await recoverAndBuild(ctx, adapter, handle, plane, mode);
    } catch (e) {
      life.dead = true;
      await releaseHandle(ctx, handle);
      throw toMemWalError(e, `open ${options.name}`);
    }
  });
}

async function recoverAndBuild(
  ctx: EngineContext,
  adapter: StorageAdapter,
  handle: StoreHandle,
  io: IoPlane,
  mode: StoreMode,
): Promise<OpenedStore> {
  const { life, options, schema } = ctx;
  const log = new ManifestLog(handle, options.name, callLimitMs(options.walRetry.timeoutMs));
  // The schema the claim leaves the store with (SPEC §9, §9.1), decided from the stored manifest.
  const plan = (stored: Manifest | undefined): SchemaPlan =>
    planSchema(stored, options.schema, schema.primaryKey, options, options.name, (stored?.writerEpoch ?? 0) + 1);
  let claimPlan: SchemaPlan | undefined;
  const r = await recover({
    handle,
    log,
    limitMs: options.flushRetry.stallMs,
    check: (stored) => checkStored(ctx, adapter.layout, mode, stored, plan),
    claimOf: (stored) => {
      claimPlan = plan(stored);
      return claimOf(adapter.layout, mode, schema.primaryKey, stored, claimPlan, options.indexes.map(orderedSectionId));
    },
    expectations: (m) => ({ mustKeepAfter: retainedFrom(mode, m), durableUpTo: m.positionHint }),
    schemasOf: (stored) => {
      if (!stored) return schema.internal;
      // The versions the claim records (or has recorded): the entries are read in them after it.
      const p = plan(stored);
      const known = new SchemaVersions(
        makeStoreSchema(p.stored, schema.primaryKey),
        p.manifest.schemaVersion ?? 1,
        recordedVersions(p.manifest),
      );
      return (s, epoch) => known.versionOfEntry(s, epoch) !== undefined;
    },
    // In memtable mode validation reads what replay reads: the entries after the replay cursor.
    keepDecoded: mode === 'memtable',
    logger: options.logger,
  });
  const m = log.manifest;
  // The store's full schema (hidden columns included) is what memtables, WAL entries and table
  // files hold; the opener sees it through the view.
  const full = makeStoreSchema(decodeSchema(m.schema), schema.primaryKey);
  const view = new ColumnView(full, (claimPlan ?? plan(m)).view);
  const versions = new SchemaVersions(full, m.schemaVersion ?? 1, recordedVersions(m));
  const claimed: ClaimedContext = {
    ...ctx,
    schema: full,
    keyEncoder: full.primaryKey.length > 0 ? makeKeyEncoder(full) : undefined,
    handle,
    io,
    log,
    lanes: new BackgroundLanes(life),
  };
  const wal = new WalWriter(
    claimed,
    { epoch: log.epoch, segments: r.analysis.segments, lastPosition: r.nextPosition - 1, tornTailBytes: r.tornTailBytes },
    {
      onDurable: (e) => {
        tier.onDurable(e);
        ctx.watches.committed({ position: e.position, batches: e.batches });
        life.progress.notify();
      },
      onFailure: (err) => life.poison(err),
    },
  );
  const tier: Tier =
    mode === 'memtable'
      ? new MemtableTier(claimed, { wal, versions, onFlushed: () => void retention.run() })
      : new WalOnlyTier(wal, ctx.backpressure);
  const retention = new Retention(claimed, {
    wal,
    tier,
    project: (t, epoch, position) => versions.projectEntry(t, epoch, position),
  });
  return { ctx: claimed, versions, wal, tier, retention, entries: r.analysis.entries, view, schemaChange: claimPlan?.change };
}

/** Refuse a stored manifest whose layout, mode, key or schema (`plan` throws) the options cannot take. */
function checkStored(
  { options, schema }: EngineContext,
  layout: string,
  mode: StoreMode,
  stored: Manifest | undefined,
  plan: (stored: Manifest) => SchemaPlan,
): void {
  if (!stored) return;
  const name = options.name;
  if (stored.layout !== layout) {
    throw new MemWalError(
      'NotSupported',
      `store ${name} was written with layout '${stored.layout}', which this storage ('${layout}') cannot read`,
    );
  }
  if (stored.mode !== mode) {
    throw new MemWalError('InvalidArgument', `option enableMemtable: store ${name} was created in ${stored.mode} mode`);
  }
  if (stored.primaryKey.join('\u0000') !== schema.primaryKey.join('\u0000')) {
    throw new MemWalError(
      'InvalidArgument',
      `option primaryKey: store ${name} has primary key [${stored.primaryKey.join(', ')}], not [${schema.primaryKey.join(', ')}]`,
    );
  }
  plan(stored);
}

/**
 * The manifest that claims the store: epoch + 1 over `stored` with the schema `plan` decided
 * (with an incarnation id if it had none, as manifests written before they were kept), or a new
 * store's first, a new incarnation. In MemTable mode it records the index set the opener declares
 * (`declared`, index-set.ts: added and redefined indexes get new ids, dropped ones leave the set;
 * the background index build then brings the table files up to it).
 */
function claimOf(
  layout: string,
  mode: StoreMode,
  primaryKey: string[],
  stored: Manifest | undefined,
  plan: SchemaPlan,
  declared: readonly SectionId[],
): Manifest {
  const indexes = mode === 'memtable' ? { indexes: claimIndexSet(stored, declared) } : {};
  if (stored) {
    return {
      ...cloneManifest(stored),
      ...plan.manifest,
      ...indexes,
      writerEpoch: stored.writerEpoch + 1,
      version: stored.version + 1,
      incarnation: stored.incarnation ?? newIncarnationId(),
    };
  }
  return {
    formatVersion: MANIFEST_FORMAT_VERSION,
    layout,
    mode,
    ...plan.manifest,
    schema: plan.manifest.schema,
    primaryKey: [...primaryKey],
    writerEpoch: 1,
    version: 1,
    nextGeneration: 1,
    replayCursor: 0,
    consumerCursor: null,
    positionHint: 0,
    incarnation: newIncarnationId(),
    ...indexes,
    tables: [],
  };
}

/** `schemaInfo()` of a store whose claimed manifest is `m`, as an opener seeing it through `view` sees it. Reads nothing. */
export function schemaInfoOf(m: Manifest, view: ColumnView): SchemaInfo {
  const versions = recordedVersions(m).map((v) => ({
    version: v.version,
    schema: decodeSchema(v.schema),
    ...(v.renamed ? { renamed: Object.fromEntries(Object.entries(v.renamed).map(([to, from]) => [from, to])) } : {}),
  }));
  return {
    version: m.schemaVersion ?? versions[versions.length - 1]!.version,
    schema: decodeSchema(m.schema),
    versions,
    hidden: [...view.hidden],
    aliases: view.aliases(),
  };
}

/** Release `handle` within a time limit (a release that never settles must not hang open or close); a failure is logged. */
export async function releaseHandle({ options }: EngineContext, handle: StoreHandle): Promise<void> {
  try {
    await settleWithin(handle.release(), callLimitMs(options.walRetry.timeoutMs), `release of ${options.name}`);
  } catch (e) {
    options.logger.warn(`memwal: ${toMemWalError(e, 'release').message}`);
  }
}

/** Call an app's hook; one that throws is logged (`memwal: <name> hook threw`) and changes nothing. */
export function callHook(logger: { warn(message: string, ...details: unknown[]): void }, name: string, call: () => void): void {
  try {
    call();
  } catch (hookError) {
    logger.warn(`memwal: ${name} hook threw`, hookError);
  }
}
