// The writer's side of the manifest: the committed state it holds, and the commit protocol —
// serialized compare-and-set commits of typed edits, each with a commit id, so that a commit whose
// outcome is unknown is resolved by content (docs/impl.md, "Manifest commits").
// Invariants: `manifest` is the newest version this writer knows to be stored; at most one commit
// is in doubt, and none starts until it is resolved.

import { MemWalError, toMemWalError } from '../util/errors.js';
import { applyEdit, type ManifestEdit } from '../format/manifest/edit.js';
import { MANIFEST_FORMAT_VERSION, type Manifest } from '../format/manifest/manifest.js';
import type { StoreHandle } from '../storage/adapter.js';
import { isTimeout, settleWithin } from './limits.js';

/** A random commit id (128 bits, hex). */
export function newCommitId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID().replace(/-/g, '');
  let s = '';
  for (let i = 0; i < 32; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}

/** Claim errors after which the stored manifest was found moved: another writer committed. */
const claimConflicts = new WeakSet<MemWalError>();

/**
 * Whether `e` is a claim that did not land because another writer committed meanwhile (a
 * predecessor still running), rather than a failure of storage itself.
 */
export function isClaimConflict(e: unknown): boolean {
  return e instanceof MemWalError && claimConflicts.has(e);
}

/**
 * The outcome of a commit that may have been applied: `landed` (the manifest now is `manifest`),
 * `lost` (it was not applied and never will be). Any other outcome is thrown.
 */
export type DoubtOutcome = { landed: true; manifest: Manifest } | { landed: false };

/**
 * What the writer knows of its store's manifest, and how it changes it.
 *
 * Protocol (numbered guarantees, relied on by the flusher, compaction and recovery):
 * 1. Commits are serialized, each a compare-and-set from the version this writer holds.
 * 2. Every commit carries a fresh `commitId`. A commit that fails other than by `Fenced` is
 *    resolved at once by re-reading the manifest: our id there means it landed (and is treated as
 *    a success); another id means it did not.
 * 3. If that re-read fails too, the commit is **in doubt**: the caller gets an `IOError` whose
 *    outcome is unknown, must not delete anything the commit may name, and the next commit (or
 *    `resolveDoubt`) resolves it first.
 * 4. A newer writer epoch found at any step is `Fenced`. A commit that does not settle within the
 *    limit is thrown as a timeout (the writer poisons: the call may still land).
 */
export class ManifestLog {
  /** The newest manifest this writer knows to be stored. Set by `claim`. */
  manifest!: Manifest;
  /** This writer's epoch. Set by `claim`. */
  epoch = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private doubt: Manifest | undefined;
  /**
   * Set when a commit call did not settle within the limit: it may still land at any time, so no
   * re-read can resolve it. The writer must poison; the next open reads what happened.
   */
  unresolvable = false;

  constructor(
    private readonly handle: StoreHandle,
    private readonly storeName: string,
    private readonly limitMs: number,
  ) {}

  /** The log's invariants, checked (cheap; for tests). Throws an Error naming the broken one. */
  checkInvariants(): void {
    const m = this.manifest;
    if (m.writerEpoch !== this.epoch) throw new Error(`manifest of epoch ${m.writerEpoch} held by the writer of epoch ${this.epoch}`);
    if (m.replayCursor > m.positionHint) throw new Error(`replayCursor ${m.replayCursor} above positionHint ${m.positionHint}`);
    if (this.unresolvable && !this.doubt) throw new Error('a commit that did not settle is not in doubt');
    if (this.doubt && this.doubt.version !== m.version + 1)
      throw new Error(`the commit in doubt (version ${this.doubt.version}) does not follow version ${m.version}`);
  }

  /** True while a commit's outcome is unknown. */
  get inDoubt(): boolean {
    return this.doubt !== undefined;
  }

  /**
   * Claim the store: commit `next` (built by the caller from `stored`, with `writerEpoch`
   * bumped) over `stored`. Resolves the new manifest; throws `Fenced`, or the commit's error
   * ({@link isClaimConflict} when the stored manifest moved past `stored` meanwhile).
   */
  async claim(stored: Manifest | undefined, next: Manifest): Promise<Manifest> {
    const claimed: Manifest = { ...next, formatVersion: MANIFEST_FORMAT_VERSION, commitId: newCommitId() };
    try {
      await this.call(this.handle.manifestCommit(stored?.version ?? 0, claimed), `claim of ${this.storeName}`);
    } catch (raw) {
      const err = toMemWalError(raw, `claim of ${this.storeName}`);
      if (err.code === 'Fenced' || isTimeout(err)) throw err;
      const now = await this.call(this.handle.manifestLoad(), 'manifest load');
      if (now?.commitId !== claimed.commitId) {
        if ((now?.version ?? 0) !== (stored?.version ?? 0)) claimConflicts.add(err);
        throw err;
      }
    }
    this.manifest = claimed;
    this.epoch = claimed.writerEpoch;
    return claimed;
  }

  /**
   * Commit `edit` (serialized after earlier commits; an earlier doubt is resolved first). Resolves
   * the committed manifest. `durablePosition` raises `positionHint`. Throws `Fenced`, a timeout
   * (poison), `IOError` with an unknown outcome (see 3.), or the commit's own error (not applied).
   */
  commit(edit: ManifestEdit, durablePosition: number): Promise<Manifest> {
    const run = async (): Promise<Manifest> => {
      if (this.doubt) await this.resolveNow();
      const cur = this.manifest;
      const next: Manifest = {
        ...applyEdit(cur, edit),
        formatVersion: MANIFEST_FORMAT_VERSION,
        version: cur.version + 1,
        writerEpoch: this.epoch,
        commitId: newCommitId(),
        // Only durable positions: one assigned to an entry not yet appended may be reused after a
        // crash (it never reached storage), and reserving it would leave a gap in the WAL.
        positionHint: Math.max(cur.positionHint, durablePosition),
      };
      try {
        await this.call(this.handle.manifestCommit(cur.version, next), 'manifest commit');
      } catch (raw) {
        const err = toMemWalError(raw, 'manifest commit');
        if (err.code === 'Fenced') throw err;
        this.doubt = next;
        if (isTimeout(err)) {
          this.unresolvable = true;
          throw err;
        }
        const outcome = await this.resolveNow(err);
        if (!outcome.landed) throw err;
      }
      this.manifest = next;
      return next;
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /**
   * Resolve a commit in doubt by reading the manifest (serialized with commits). `{ landed:
   * false }` when nothing was in doubt. Throws as `commit` does when the read fails again.
   */
  resolveDoubt(): Promise<DoubtOutcome> {
    const run = (): Promise<DoubtOutcome> => (this.doubt ? this.resolveNow() : Promise.resolve({ landed: false }));
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async resolveNow(cause?: MemWalError): Promise<DoubtOutcome> {
    const doubt = this.doubt!;
    if (this.unresolvable) {
      throw new MemWalError(
        'IOError',
        `manifest commit of version ${doubt.version} did not settle; its outcome is unknown until the store is reopened`,
      );
    }
    let stored: Manifest | undefined;
    try {
      stored = await this.call(this.handle.manifestLoad(), 'manifest load');
    } catch (e) {
      const why = cause ? `${cause.message}; ` : '';
      throw new MemWalError(
        'IOError',
        `manifest commit of version ${doubt.version}: ${why}re-reading the manifest failed too (${toMemWalError(e, 'manifest load').message}); its outcome is unknown until the next commit resolves it`,
        { cause: e },
      );
    }
    this.doubt = undefined;
    if (stored && stored.writerEpoch > this.epoch) {
      throw new MemWalError('Fenced', `manifest commit: store ${this.storeName} was claimed by writer epoch ${stored.writerEpoch}`);
    }
    if (stored?.commitId === doubt.commitId) {
      this.manifest = doubt;
      return { landed: true, manifest: doubt };
    }
    if (!stored || stored.commitId !== this.manifest.commitId || stored.version !== this.manifest.version) {
      throw new MemWalError(
        'Corruption',
        `manifest of ${this.storeName} changed under writer epoch ${this.epoch}: version ${stored?.version ?? 'none'} is not one this writer committed`,
      );
    }
    return { landed: false };
  }

  private call<T>(p: Promise<T>, what: string): Promise<T> {
    return settleWithin(p, this.limitMs, what);
  }
}
