// FileStorage: the StorageAdapter over a local file system (docs/format.md), written against the
// shim of fs-shim.ts so that Node (fs-node.ts) and Deno share one protocol; its writer lock is the
// LOCK file of fs-lock.ts. Imports no runtime module.

import { MemWalError, toMemWalError } from '../util/errors.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle } from './adapter.js';
import { LockFile, liveLocks } from './fs-lock.js';
import { FileStoreHandle } from './fs-handle.js';
import { checkComponent, type FileSystemShim, isErrno, listDir, sweepTemps, unlinkIfPresent } from './fs-shim.js';

/** Timings and retention of FileStorage; the defaults suit a server disk. */
export interface FileStorageOptions {
  /** How often a waiting `openStore` retries a held lock, in ms. Default 50. */
  lockPollMs?: number;
  /**
   * How often a holder checks that its LOCK file still holds its token and refreshes the LOCK's
   * modification time (its heartbeat), in ms. Default 250.
   */
  lockWatchMs?: number;
  /**
   * A LOCK whose holder's liveness this process cannot check (Deno without `--allow-run`, and a
   * holder without an OS file lock: a Node process) counts as abandoned once its heartbeat is
   * older than this, in ms. Larger than `lockWatchMs`. A live holder stalled for
   * longer (its event loop blocked) then loses the lock and is fenced: it writes nothing more.
   * Default: 10 000, or 4 × `lockWatchMs` if that is longer.
   */
  lockLeaseMs?: number;
  /** Manifest versions kept on disk, the newest included (at least 2). Default 4. */
  manifestVersionsKept?: number;
}

/**
 * Stores under a root directory, one directory per store:
 *
 * ```
 * {root}/{store}/LOCK                    the writer lock: {"pid":…,"token":…}
 * {root}/{store}/wal/{epoch}-{first}     WAL segments, appended in place
 * {root}/{store}/tables/{name}           table files, written once
 * {root}/{store}/manifest/{version}.json manifest versions, created exclusively
 * ```
 *
 * Every mutation of data is fsynced (files and, after a create or delete, their directory)
 * before its promise resolves. A manifest commit writes a temporary file, syncs it, and
 * hard-links it to `{version}.json`: the link fails if that version exists, so the commit is a
 * compare-and-set (a rename would silently replace). A WAL append reads the newest manifest's
 * epoch before writing (a fenced append writes nothing) and again after its fdatasync; it is
 * acknowledged only if neither is newer than the segment's epoch. The writer lock is a LOCK
 * file created exclusively; a LOCK whose process is dead is taken over, so a crash never leaves a
 * store locked: at once where the holder's `flock` (Deno) or its pid (Node; Deno with
 * `--allow-run`) shows it, else once its heartbeat is `lockLeaseMs` old. `steal` replaces it,
 * and the old holder notices within `lockWatchMs` (at once in this process), rejects every later
 * operation `Fenced` and gets `onLost('stolen')`. A waiting open warns through
 * `LockOptions.logger` every few seconds, saying what it knows about the holder.
 *
 * Layout `'node-fs'` in every runtime (Node, Deno): the files are the same. For local file
 * systems only: liveness of the lock holder is checked on this machine. Errors are
 * MemWalErrors mapped with `toMemWalError` (`ENOSPC` → `QuotaExceeded`, most others `IOError`).
 */
export class FileStorage implements StorageAdapter {
  readonly layout = 'node-fs';
  private readonly root: string;
  private readonly lockPollMs: number;
  private readonly lockWatchMs: number;
  private readonly lockLeaseMs: number;
  private readonly manifestVersionsKept: number;

  /**
   * `root`: the directory holding the stores (created when missing). Throws `InvalidArgument`
   * for a bad option.
   */
  constructor(
    private readonly fs: FileSystemShim,
    root: string,
    options: FileStorageOptions = {},
  ) {
    this.root = root.length > 1 ? root.replace(/\/+$/, '') : root;
    this.lockPollMs = options.lockPollMs ?? 50;
    this.lockWatchMs = options.lockWatchMs ?? 250;
    this.lockLeaseMs = options.lockLeaseMs ?? Math.max(10_000, 4 * this.lockWatchMs);
    this.manifestVersionsKept = options.manifestVersionsKept ?? 4;
    if (!(this.lockPollMs > 0) || !(this.lockWatchMs > 0)) {
      throw new MemWalError('InvalidArgument', 'lockPollMs and lockWatchMs must be positive');
    }
    if (!(this.lockLeaseMs > this.lockWatchMs)) {
      throw new MemWalError(
        'InvalidArgument',
        `lockLeaseMs must be greater than lockWatchMs (${this.lockWatchMs}), got ${this.lockLeaseMs}`,
      );
    }
    if (!Number.isSafeInteger(this.manifestVersionsKept) || this.manifestVersionsKept < 2) {
      throw new MemWalError('InvalidArgument', `manifestVersionsKept must be an integer >= 2, got ${this.manifestVersionsKept}`);
    }
  }

  /**
   * Claim the LOCK of store `name`, creating the store's directories if needed. A free or stale
   * lock is taken at once. A held one: `steal` replaces it; `timeoutMs: 0` rejects `Locked`;
   * otherwise calls `onWaiting` once and retries every `lockPollMs` (warning through `logger`
   * every few seconds), rejecting `Locked` after
   * `timeoutMs` (undefined: never) or `Aborted` when `signal` aborts. `InvalidArgument` for a
   * negative `timeoutMs` or a name outside `[A-Za-z0-9._-]`; `IOError`/`QuotaExceeded` on I/O.
   */
  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const { timeoutMs, signal } = options;
    if (timeoutMs !== undefined && !(timeoutMs >= 0)) {
      throw new MemWalError('InvalidArgument', `timeoutMs must be >= 0, got ${timeoutMs}`);
    }
    checkComponent(name, 'store name');
    if (signal?.aborted) throw new MemWalError('Aborted', `opening store "${name}" was aborted`);
    const dir = `${this.root}/${name}`;
    const lock = new LockFile(this.fs, dir, this.lockLeaseMs);
    const held = await lock.acquire(name, options, this.lockPollMs);
    try {
      for (const sub of STORE_DIRS) await this.fs.mkdir(`${dir}/${sub}`);
      await this.fs.syncDir(dir);
      await this.fs.syncDir(this.root);
      await sweepTemps(this.fs, dir, /^LOCK\.(\d+)\.[^.]+\.(?:tmp|aside)$/, this.lockLeaseMs);
      await sweepTemps(this.fs, `${dir}/manifest`, /^\.(\d+)\.[^.]+\.tmp$/, this.lockLeaseMs);
    } catch (e) {
      liveLocks.delete(held.token);
      await lock.removeIf(held.token).catch(() => undefined);
      await held.file.close().catch(() => undefined);
      throw toMemWalError(e, `opening store "${name}"`);
    }
    return new FileStoreHandle(this.fs, dir, lock, held, options.onLost, this.lockWatchMs, this.manifestVersionsKept);
  }

  /**
   * Remove store `name`'s directory and everything in it; a missing store is fine. Rejects
   * `Locked` while a live process (this one included) holds its LOCK.
   */
  async destroyStore(name: string): Promise<void> {
    checkComponent(name, 'store name');
    const dir = `${this.root}/${name}`;
    try {
      await this.fs.stat(dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return;
      throw toMemWalError(e, `destroying store "${name}"`);
    }
    const held = await new LockFile(this.fs, dir, this.lockLeaseMs).acquire(name, { timeoutMs: 0 }, this.lockPollMs);
    try {
      // The manifest first, its newest version last: a destroy cut short leaves the whole store
      // or no manifest, and an open removes what a store without a manifest holds (docs/impl.md §7).
      const versions = (await listDir(this.fs, `${dir}/manifest`))
        .filter((entry) => /^\d+\.json$/.test(entry))
        .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10));
      for (const entry of versions) await unlinkIfPresent(this.fs, `${dir}/manifest/${entry}`);
      if (versions.length > 0) await this.fs.syncDir(`${dir}/manifest`);
      await this.fs.rm(dir);
      await this.fs.syncDir(this.root);
    } catch (e) {
      throw toMemWalError(e, `destroying store "${name}"`);
    } finally {
      liveLocks.delete(held.token);
      await held.file.close().catch(() => undefined);
    }
  }

  /**
   * Store `name`'s figures: `usageBytes` is the sum of the sizes of the files in its directory
   * (WAL segments, table files, manifest versions, LOCK; 0 when it does not exist), and, where
   * the shim has statfs, `quotaBytes` is that plus the bytes still available to this process on
   * the file system holding the root (shared with everything else there). `persisted` is always
   * true. Rejects `InvalidArgument` for a bad name, `IOError` on I/O.
   */
  async estimate(name: string): Promise<StorageEstimate> {
    checkComponent(name, 'store name');
    try {
      const usageBytes = await storeBytes(this.fs, `${this.root}/${name}`);
      if (!this.fs.statfs) return { usageBytes, persisted: true };
      let available: number;
      try {
        available = (await this.fs.statfs(this.root)).availableBytes;
      } catch (e) {
        if (isErrno(e, 'ENOENT')) return { usageBytes, persisted: true };
        throw e;
      }
      return { usageBytes, quotaBytes: usageBytes + available, persisted: true };
    } catch (e) {
      throw toMemWalError(e, `storage estimate of store "${name}"`);
    }
  }
}

/** The sub-directories of a store directory. */
const STORE_DIRS = ['wal', 'tables', 'manifest'];

/** Sum of the sizes of the files of the store directory `dir` (0 when it does not exist). */
async function storeBytes(fs: FileSystemShim, dir: string): Promise<number> {
  let bytes = 0;
  for (const sub of ['', ...STORE_DIRS]) {
    const path = sub ? `${dir}/${sub}` : dir;
    for (const entry of await listDir(fs, path)) {
      if (!sub && STORE_DIRS.includes(entry)) continue;
      try {
        bytes += (await fs.stat(`${path}/${entry}`)).size;
      } catch (e) {
        if (!isErrno(e, 'ENOENT')) throw e; // removed while we counted
      }
    }
  }
  return bytes;
}
