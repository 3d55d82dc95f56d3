// The fence every backend keeps (docs/impl.md, "Fencing"), written once: the compare-and-set
// decision of a manifest commit and the epoch checks of mutations. A backend reads what it stores
// and calls these in the same atomic step as its change, where it has one. Any runtime.

import type { Manifest } from '../format/manifest/manifest.js';
import { MemWalError } from '../util/errors.js';

/** The stored manifest as a commit decision needs it; `undefined`: the store has none yet. */
export type StoredVersion = Pick<Manifest, 'version' | 'writerEpoch'> | undefined;

/** `InvalidArgument` unless `next.version` is `expectedVersion + 1` (checked before anything is read). */
export function checkManifestSuccessor(expectedVersion: number, next: Pick<Manifest, 'version'>): void {
  if (next.version !== expectedVersion + 1) {
    throw new MemWalError('InvalidArgument', `manifest version ${next.version} does not follow expected version ${expectedVersion}`);
  }
}

/**
 * Why a commit from `expectedVersion` at writer epoch `epoch` is refused when it finds `stored`:
 * `Fenced` when `stored` carries a newer writer epoch, else a conflict (`IOError`).
 */
export function commitRefusal(expectedVersion: number, epoch: number, stored: StoredVersion): MemWalError {
  if (stored && stored.writerEpoch > epoch) {
    return new MemWalError('Fenced', `writer epoch ${epoch} is fenced by epoch ${stored.writerEpoch}`);
  }
  return new MemWalError('IOError', `manifest commit conflict: expected version ${expectedVersion}, stored ${stored?.version ?? 0}`);
}

/**
 * The compare-and-set decision of a manifest commit: it may write `next` only if `stored` is at
 * `expectedVersion` (0: none yet) and carries no newer writer epoch than `next`'s; otherwise it
 * throws the refusal (`commitRefusal`).
 */
export function decideManifestCommit(expectedVersion: number, next: Pick<Manifest, 'writerEpoch'>, stored: StoredVersion): void {
  if ((stored?.version ?? 0) !== expectedVersion || (stored?.writerEpoch ?? 0) > next.writerEpoch) {
    throw commitRefusal(expectedVersion, next.writerEpoch, stored);
  }
}

/**
 * `Fenced` if `stored` (the stored manifest's writer epoch; undefined: none) is newer than `epoch`,
 * the epoch of the newest manifest this handle committed: a mutation of a stale writer (`what`).
 */
export function checkEpoch(what: string, epoch: number, stored: number | undefined): void {
  if ((stored ?? 0) > epoch) throw new MemWalError('Fenced', `${what}: writer epoch ${epoch} is fenced by epoch ${stored}`);
}

/**
 * `Fenced` if `stored` (the stored manifest's writer epoch; undefined: none) is newer than the
 * epoch of WAL segment `segment`: an append of a stale writer never lands.
 */
export function checkSegmentEpoch(segment: string, segmentEpoch: number, stored: number | undefined): void {
  if ((stored ?? 0) > segmentEpoch) {
    throw new MemWalError('Fenced', `WAL segment ${segment} belongs to epoch ${segmentEpoch}, fenced by epoch ${stored}`);
  }
}
