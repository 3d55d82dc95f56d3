// Recovery (LevelDB's DB::Recover): read the WAL as open finds it, validate all of it (pure:
// `analyzeWal` changes nothing), claim the next writer epoch, sweep orphans, cut torn tails, and
// hand the entries after the replay cursor to replay. Numbered guarantees in docs/impl.md §7.

import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { parseSegmentName, type StoreHandle } from '../storage/adapter.js';
import { scanSegment } from '../format/wal/codec.js';
import type { Table } from 'apache-arrow';
import { decodePayload, type SchemaCheck, type WalPayload } from '../format/wal/payload.js';
import { settleWithin } from './limits.js';
import { isClaimConflict, type ManifestLog } from './manifest-log.js';
import type { Segment } from './wal-writer.js';

/**
 * One durable WAL entry found at open; `table`: its payload as validation decoded it (from a
 * compact copy), kept when recovery decodes for replay so that replay does not decode it again.
 */
export type WalRecord = WalPayload & { table?: Table };

/** A listed WAL segment with its bytes. */
export interface ReadSegment {
  name: string;
  epoch: number;
  firstPosition: number;
  bytes: Uint8Array;
}

/** What open learns from the WAL: the segments as tracked, the entries, the torn tails to cut. */
export interface WalAnalysis {
  segments: Segment[];
  entries: WalRecord[];
  torn: { name: string; validEnd: number; cut: number; position: number }[];
  /** The highest position present (0 when the WAL is empty). */
  lastPosition: number;
}

/** What the manifest says the WAL must hold. */
export interface WalExpectations {
  /** Entries after this position must all be present (replay, or an unconsumed tail). */
  mustKeepAfter: number;
  /** Positions up to this one were durable at a commit (`positionHint`): never a torn tail. */
  durableUpTo: number;
}

/**
 * Validate the WAL as open finds it. Pure: changes nothing, and throws `Corruption` (naming the
 * segment, offset and rule) for:
 * 1. an invalid entry that is not a torn tail — a torn tail is an invalid entry with only zeros
 *    after it, in the last segment of its epoch, at a position above `durableUpTo`; anything at
 *    or beyond the first position of a newer epoch's segment is superseded and ignored;
 * 2. a frame whose epoch or position does not fit its segment;
 * 3. a gap in positions, a missing entry after `mustKeepAfter`, or a log that ends below
 *    `durableUpTo` (positions the manifest records as durable are missing: a cut never leaves
 *    a gap).
 */
export function analyzeWal(listed: ReadSegment[], expect: WalExpectations): WalAnalysis {
  const lastOfEpoch = new Map<number, string>();
  for (const s of listed) lastOfEpoch.set(s.epoch, s.name);
  const entries: WalRecord[] = [];
  const segments: Segment[] = [];
  const torn: WalAnalysis['torn'] = [];
  for (const s of listed) {
    let limit = Number.POSITIVE_INFINITY;
    for (const t of listed) if (t.epoch > s.epoch) limit = Math.min(limit, t.firstPosition);
    const scan = scanSegment(s.bytes, 0);
    let length = s.bytes.length;
    let expected = s.firstPosition;
    let last = s.firstPosition - 1;
    for (const f of scan.frames) {
      if (f.epoch !== s.epoch || f.position !== expected) {
        throw new MemWalError(
          'Corruption',
          `WAL segment ${s.name}: entry at byte ${f.offset} has epoch ${f.epoch} position ${f.position}, expected epoch ${s.epoch} position ${expected}; nothing was changed`,
        );
      }
      expected += 1;
      if (f.position >= limit) continue;
      last = f.position;
      entries.push({ position: f.position, epoch: f.epoch, payload: f.payload });
    }
    if (scan.status !== 'clean' && expected < limit) {
      const why = `WAL segment ${s.name}: invalid entry at byte ${scan.validEnd} (${scan.reason ?? scan.status})`;
      if (scan.status !== 'torn' || lastOfEpoch.get(s.epoch) !== s.name) throw new MemWalError('Corruption', `${why}; nothing was changed`);
      if (expected <= expect.durableUpTo) {
        throw new MemWalError(
          'Corruption',
          `${why}: position ${expected} was recorded as durable (up to ${expect.durableUpTo}), so this is not a torn tail; nothing was changed`,
        );
      }
      torn.push({ name: s.name, validEnd: scan.validEnd, cut: s.bytes.length - scan.validEnd, position: expected });
      length = scan.validEnd;
    }
    segments.push({ name: s.name, epoch: s.epoch, firstPosition: s.firstPosition, bytes: length, lastPosition: last });
  }
  entries.sort((a, b) => a.position - b.position);
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.position !== entries[i - 1]!.position + 1) {
      throw new MemWalError(
        'Corruption',
        `WAL is missing entries between positions ${entries[i - 1]!.position} and ${entries[i]!.position}`,
      );
    }
  }
  const firstAfter = entries.find((e) => e.position > expect.mustKeepAfter);
  if (firstAfter && firstAfter.position !== expect.mustKeepAfter + 1) {
    throw new MemWalError('Corruption', `WAL entries ${expect.mustKeepAfter + 1}..${firstAfter.position - 1} are missing`);
  }
  const lastPosition = entries.length > 0 ? entries[entries.length - 1]!.position : 0;
  // Retention removes whole segments oldest first and never beyond durableUpTo, so a log that still
  // holds entries ends at or above it (only an empty log may end below: everything was covered).
  if ((entries.length > 0 || expect.durableUpTo > expect.mustKeepAfter) && lastPosition < expect.durableUpTo) {
    throw new MemWalError(
      'Corruption',
      `WAL ends at position ${lastPosition}, but positions up to ${expect.durableUpTo} were recorded as durable; nothing was changed`,
    );
  }
  return { segments, entries, torn, lastPosition };
}

/**
 * Check that every entry after `after` decodes as Arrow IPC in a schema `known` accepts. Throws
 * `Corruption` naming the position. `keep`: decode from a compact copy of each payload and keep
 * the table on its record (`WalRecord.table`), for replay; else the payload is viewed, not copied,
 * and nothing is kept.
 */
export function validatePayloads(entries: WalRecord[], after: number, known: SchemaCheck, keep = false): void {
  for (const e of entries) {
    if (e.position <= after) continue;
    const table = decodePayload(e, known, keep);
    if (keep) e.table = table;
  }
}

/** Every WAL segment of the store with its bytes; unchanged ones are taken from `cache`. */
export async function readSegments(handle: StoreHandle, limitMs: number, cache: ReadSegment[] = []): Promise<ReadSegment[]> {
  const known = new Map(cache.map((c) => [c.name, c]));
  const list = () => settleWithin(handle.walList(), limitMs, 'WAL list');
  for (let attempt = 1; ; attempt++) {
    const out: ReadSegment[] = [];
    let vanished = false;
    for (const info of await list()) {
      const parsed = parseSegmentName(info.name);
      if (!parsed) continue;
      const hit = known.get(info.name);
      let bytes: Uint8Array;
      try {
        bytes =
          hit && hit.bytes.length === info.bytes
            ? hit.bytes
            : await settleWithin(handle.walRead(info.name, 0), limitMs, `read of ${info.name}`);
      } catch (e) {
        // Removed since the listing (a predecessor still running, after a steal, ran retention,
        // which removes oldest first): list and read again, so that no segment read before is
        // older than one that is gone.
        if (attempt >= 3 || (await list()).some((s) => s.name === info.name)) throw e;
        vanished = true;
        break;
      }
      const seg = { name: info.name, epoch: parsed.epoch, firstPosition: parsed.firstPosition, bytes };
      known.set(info.name, seg);
      out.push(seg);
    }
    if (!vanished) return out.sort((a, b) => a.firstPosition - b.firstPosition || a.epoch - b.epoch);
  }
}

/** What `recover` hands to the writer. */
export interface Recovered {
  analysis: WalAnalysis;
  /** The first position this writer assigns. */
  nextPosition: number;
  tornTailBytes: number;
}

/** What `recover` needs from the writer. */
export interface RecoveryContext {
  handle: StoreHandle;
  log: ManifestLog;
  /** Reads are limited to this long each. */
  limitMs: number;
  /** Check a stored manifest against the options (throws before anything is claimed). */
  check(stored: Manifest | undefined): void;
  /** The claim: the manifest to commit over `stored` (epoch + 1, or a new store). */
  claimOf(stored: Manifest | undefined): Manifest;
  /** What the WAL must hold under manifest `m`. */
  expectations(m: Manifest): WalExpectations;
  /** The schemas payloads may be in, under the stored manifest (the versions it records). */
  schemasOf(stored: Manifest | undefined): SchemaCheck;
  /** Keep the decoded payloads for replay (`validatePayloads`): the entries it validates are those replay reads. */
  keepDecoded: boolean;
  logger: { warn(message: string, ...details: unknown[]): void };
}

/**
 * A store without a manifest has no WAL of its own (its first claim comes before its first
 * append): segments found are what a destroy cut short left of an earlier store. They are
 * removed, never replayed (their rows were destroyed, and their epochs would supersede the new
 * store's entries). Removals are fenced: once another opener has claimed, they fail `Fenced`.
 */
async function removeLeftoverWal(ctx: RecoveryContext): Promise<void> {
  for (const info of await settleWithin(ctx.handle.walList(), ctx.limitMs, 'WAL list')) {
    if (!parseSegmentName(info.name)) continue;
    ctx.logger.warn(`memwal: WAL segment ${info.name} belongs to no manifest (left by a destroy cut short); removing it`);
    await settleWithin(ctx.handle.walRemove(info.name), ctx.limitMs, `removal of leftover ${info.name}`);
  }
}

/** How often a claim that lost a race with a still-running predecessor is retried. */
const CLAIM_ATTEMPTS = 3;

/**
 * Open's recovery steps, in order; nothing of a store is changed before step 3:
 * 1. load the manifest and check it against the options (no manifest: no store; WAL segments
 *    left by a destroy cut short are removed, {@link removeLeftoverWal});
 * 2. read every segment and validate all of it (frames, positions, payloads, schema); a failure
 *    while a predecessor committed meanwhile (the manifest changed) makes us start over from 1;
 * 3. claim epoch + 1 (a compare-and-set; a predecessor that committed meanwhile makes us start
 *    over from 1, a few times at most);
 * 4. sweep table files the manifest does not name;
 * 5. re-read the segments a fenced predecessor may have appended to until the claim, validate
 *    again;
 * 6. cut torn tails (each logged) and return the entries after the cursor.
 */
export async function recover(ctx: RecoveryContext): Promise<Recovered> {
  let stored: Manifest | undefined;
  let before: ReadSegment[] = [];
  let checked: WalAnalysis | undefined;
  for (let attempt = 1; ; attempt++) {
    stored = await settleWithin(ctx.handle.manifestLoad(), ctx.limitMs, 'manifest load');
    ctx.check(stored);
    if (!stored) await removeLeftoverWal(ctx);
    before = await readSegments(ctx.handle, ctx.limitMs, before);
    const expect = stored ? ctx.expectations(stored) : { mustKeepAfter: 0, durableUpTo: 0 };
    try {
      checked = analyzeWal(before, expect);
      validatePayloads(checked.entries, expect.mustKeepAfter, ctx.schemasOf(stored), ctx.keepDecoded);
    } catch (e) {
      // A predecessor still running (a steal) may have committed a flush and removed the segments
      // it covers between our manifest load and our listing: judge the WAL by the newer manifest.
      const now = await settleWithin(ctx.handle.manifestLoad(), ctx.limitMs, 'manifest load');
      if (now?.version === stored?.version) throw e;
      if (attempt >= CLAIM_ATTEMPTS) {
        // Not Corruption: the store is whole, a writer still running keeps changing it.
        throw new MemWalError(
          'IOError',
          `open: the previous writer committed while the WAL was read, ${CLAIM_ATTEMPTS} times (manifest commit conflict); try again`,
          { cause: e },
        );
      }
      ctx.logger.warn('memwal: the previous writer committed while the WAL was read; reading the store again');
      continue;
    }
    try {
      await ctx.log.claim(stored, ctx.claimOf(stored));
      break;
    } catch (e) {
      const err = toMemWalError(e, 'claim');
      if (err.code !== 'IOError' || attempt >= CLAIM_ATTEMPTS) throw err;
      // Only a conflict means the previous writer committed; any other failure (a storage fault, a
      // crash, a re-read that failed so the claim's outcome is unknown) is named as what it is.
      ctx.logger.warn(
        isClaimConflict(err)
          ? `memwal: ${err.message}; the previous writer committed meanwhile, reading the store again`
          : `memwal: the claim failed (${err.message}); reading the store again`,
      );
    }
  }
  const m = ctx.log.manifest;
  const named = new Set(m.tables.map((t) => t.name));
  for (const name of await settleWithin(ctx.handle.tableList(), ctx.limitMs, 'table list')) {
    if (!named.has(name)) await settleWithin(ctx.handle.tableRemove(name), ctx.limitMs, `removal of orphan ${name}`);
  }
  const after = await readSegments(ctx.handle, ctx.limitMs, before);
  const unchanged = after.length === before.length && after.every((seg, i) => seg.bytes === before[i]!.bytes);
  const expect = ctx.expectations(m);
  let analysis = checked;
  if (!unchanged) {
    analysis = analyzeWal(after, expect);
    validatePayloads(analysis.entries, expect.mustKeepAfter, ctx.schemasOf(m), ctx.keepDecoded);
  }
  let tornTailBytes = 0;
  for (const t of analysis.torn) {
    ctx.logger.warn(
      `memwal: WAL segment ${t.name}: cut a torn tail of ${t.cut} bytes at byte ${t.validEnd} (an unfinished append of position ${t.position})`,
    );
    await settleWithin(ctx.handle.walTruncate(t.name, t.validEnd), ctx.limitMs, `truncate of ${t.name}`);
    tornTailBytes += t.cut;
  }
  const nextPosition = Math.max(analysis.lastPosition, m.replayCursor, m.consumerCursor ?? 0, m.positionHint) + 1;
  return { analysis, nextPosition, tornTailBytes };
}
