// FileStorage: the StorageAdapter over a local file system (docs/format.md), written
// against the small FileSystemShim below so that Node (fs-node.ts) and Deno share one protocol.
// Imports no runtime module: the shim brings the file system, the process id and timers.

import { MemWalError, toMemWalError } from '../errors.js';
import { checkManifest } from '../manifest/manifest.js';
import type { Manifest } from '../manifest/manifest.js';
import { checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import { warnWhileWaiting } from './lock-wait.js';

/** Node-style open flags: read only, read-write of an existing file, exclusive create for writing. */
export type OpenFlags = 'r' | 'r+' | 'wx';

/** An open file. Positions and lengths are in bytes. */
export interface ShimFile {
  /** Read up to `into.length` bytes at `position`; resolves the count read (0 at the end). */
  read(into: Uint8Array, position: number): Promise<number>;
  /** Write all of `bytes` at `position`. */
  write(bytes: Uint8Array, position: number): Promise<void>;
  /** fdatasync: the file's data and the metadata needed to read it back (its size). */
  datasync(): Promise<void>;
  /** fsync: data and all metadata. */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  /** Modification time in ms since the epoch; `NaN` where the runtime does not report it. */
  modifiedMs(): Promise<number>;
  /** Set the modification time to now (the LOCK heartbeat). */
  touch(): Promise<void>;
  /**
   * Take an exclusive advisory lock on the file (`flock`) without waiting: true when taken, false
   * when another open file holds it. Held until `close()` or the process's death. Absent where
   * the runtime has none (Node).
   */
  tryLock?(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Everything FileStorage needs from a runtime. Paths use `/`. Failures are thrown as errors whose
 * `code` is the POSIX errno name (`EEXIST`, `ENOENT`, `ENOSPC`, ...), as Node's are; a shim for
 * another runtime maps its errors to those codes.
 */
export interface FileSystemShim {
  /** This process's id, recorded in lock files. */
  readonly pid: number;
  /**
   * False only when no process `pid` exists on this machine (kill(pid, 0) fails with ESRCH);
   * `undefined` when this process may not tell (Deno without `--allow-run`).
   */
  isProcessAlive(pid: number): boolean | undefined;
  /** Let the process exit although `timer` (from setInterval) is pending. */
  unrefTimer(timer: unknown): void;
  /** Open `path`; `'wx'` fails with EEXIST when it exists. */
  open(path: string, flags: OpenFlags): Promise<ShimFile>;
  /** The entry names of directory `path`. */
  readdir(path: string): Promise<string[]>;
  /** Create directory `path` and its missing parents; an existing directory is fine. */
  mkdir(path: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Hard link: fails with EEXIST when `newPath` exists, atomically (the compare-and-set). */
  link(existingPath: string, newPath: string): Promise<void>;
  /** Rename, replacing `newPath` atomically if it exists. */
  rename(oldPath: string, newPath: string): Promise<void>;
  /** Remove `path` and everything below it; a missing path is fine. */
  rm(path: string): Promise<void>;
  /** Size in bytes of file `path`, and its modification time (ms since the epoch; `NaN` if unknown). */
  stat(path: string): Promise<{ size: number; mtimeMs: number }>;
  /** Make the entries of directory `path` durable (fsync of the directory). */
  syncDir(path: string): Promise<void>;
  /** The file system holding `path`, in bytes; absent where the runtime cannot tell. */
  statfs?(path: string): Promise<{ totalBytes: number; freeBytes: number; availableBytes: number }>;
}

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

/** The contents of a LOCK file. `flock`: its holder keeps an exclusive `flock` on it while it lives. */
interface LockRecord {
  pid: number;
  token: string;
  flock?: true;
}

/** A lock file as read: its record, `'missing'`, or `'corrupt'` (not a record: foreign or damaged). */
type LockState = LockRecord | 'missing' | 'corrupt';

/** A LOCK as a waiting opener sees it: the record, its heartbeat, and whether its `flock` is free. */
interface LockView {
  state: LockState;
  /** Modification time (ms since the epoch; `NaN` if unknown): the holder's last heartbeat. */
  modifiedMs: number;
  /** Set for a record with `flock` where this runtime can probe it: true when no process holds it. */
  flockFree?: boolean;
}

/** A claimed writer lock: our token, and the LOCK file kept open (its heartbeat and its `flock`). */
interface HeldLock {
  token: string;
  file: ShimFile;
}

/**
 * The lock tokens this process holds (or is linking into place right now), shared by every copy
 * of this module in the process, with the callback that tells the holder it was stolen. A LOCK
 * file with our pid and a token not in here is stale: left by an earlier process with our pid.
 */
const liveLocks: Map<string, { lost?: (reason: string) => void }> = ((globalThis as Record<symbol, unknown>)[
  Symbol.for('memwal.fileStorage.liveLocks')
] ??= new Map()) as Map<string, { lost?: (reason: string) => void }>;

/** A store name, table name or segment name becomes one path component, never more. */
function checkComponent(name: string, what: string): void {
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(name) || name === '.' || name === '..') {
    throw new MemWalError('InvalidArgument', `${what} "${name}" is not a valid file name (use [A-Za-z0-9._-])`);
  }
}

function isErrno(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/** Resolves after `ms`; rejects `Aborted` as soon as `signal` aborts. */
function delay(ms: number, signal: AbortSignal | undefined, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new MemWalError('Aborted', `${what} was aborted`));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
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

/** Reads the whole of `path` from `offset`; `IOError` when `offset` is past its end. */
async function readFrom(fs: FileSystemShim, path: string, offset: number): Promise<Uint8Array> {
  const file = await fs.open(path, 'r');
  try {
    return await readOpen(file, path, offset);
  } finally {
    await file.close();
  }
}

/** Reads the whole of open file `file` (at `path`) from `offset`. */
async function readOpen(file: ShimFile, path: string, offset: number): Promise<Uint8Array> {
  const size = await file.size();
  if (!(Number.isSafeInteger(offset) && offset >= 0 && offset <= size)) {
    throw new MemWalError('IOError', `${path}: read offset ${offset} is outside 0..${size}`);
  }
  const out = new Uint8Array(size - offset);
  let at = 0;
  while (at < out.length) {
    const n = await file.read(out.subarray(at), offset + at);
    if (n === 0) break;
    at += n;
  }
  return at === out.length ? out : out.slice(0, at);
}

/** Creates `path` exclusively with `bytes`, fsynced if `sync`. */
async function writeNewFile(fs: FileSystemShim, path: string, bytes: Uint8Array, sync: boolean): Promise<void> {
  const file = await fs.open(path, 'wx');
  try {
    await file.write(bytes, 0);
    if (sync) await file.sync();
  } finally {
    await file.close();
  }
}

/** Entry names of `dir`; a missing directory has none. */
async function listDir(fs: FileSystemShim, dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return [];
    throw e;
  }
}

async function unlinkIfPresent(fs: FileSystemShim, path: string): Promise<void> {
  try {
    await fs.unlink(path);
  } catch (e) {
    if (!isErrno(e, 'ENOENT')) throw e;
  }
}

/**
 * Deletes the temporary files in `dir` (matched by `pattern`, group 1 = pid) of dead processes;
 * where liveness cannot be checked, those not modified for `leaseMs`.
 */
async function sweepTemps(fs: FileSystemShim, dir: string, pattern: RegExp, leaseMs: number): Promise<void> {
  for (const entry of await listDir(fs, dir)) {
    const m = pattern.exec(entry);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === fs.pid) continue;
    const path = `${dir}/${entry}`;
    let alive = fs.isProcessAlive(pid);
    if (alive === undefined) {
      try {
        alive = !(Date.now() - (await fs.stat(path)).mtimeMs > leaseMs);
      } catch (e) {
        if (isErrno(e, 'ENOENT')) continue;
        throw e;
      }
    }
    if (!alive) await unlinkIfPresent(fs, path);
  }
}

/** A temporary file name carrying our pid, so a later open can sweep it if we die. */
function tempName(fs: FileSystemShim, prefix: string, suffix: string): string {
  return `${prefix}.${fs.pid}.${crypto.randomUUID()}.${suffix}`;
}

/**
 * The LOCK file of one store directory. Every change to it is atomic: a create hard-links a
 * complete temporary file (EEXIST if held), a steal renames one over it, and a conditional
 * delete first renames it aside, so it never deletes a lock it did not inspect.
 *
 * Whether a holder is gone, in this order: a record of this process is stale when no handle of
 * ours holds its token; a record with `flock` (its holder keeps an exclusive `flock` on the file,
 * taken before the file was linked into place) is stale when this runtime can take that lock,
 * which the OS releases when the holder dies; otherwise its pid is checked; and where this
 * process may not check pids (Deno without `--allow-run`), the LOCK is stale once its
 * modification time, which its holder refreshes every `lockWatchMs`, is older than `leaseMs`.
 */
class LockFile {
  readonly path: string;

  constructor(
    private readonly fs: FileSystemShim,
    private readonly dir: string,
    private readonly leaseMs: number,
  ) {
    this.path = `${dir}/LOCK`;
  }

  /**
   * Claims the lock as `openStore` documents; resolves our token, already in `liveLocks`, and the
   * LOCK file, open (close it to give up its `flock`). LOCK files are not fsynced: a lock means
   * nothing once its process is gone, and after a power loss an empty or missing LOCK is as good
   * as a stale one.
   */
  async acquire(name: string, options: LockOptions, pollMs: number): Promise<HeldLock> {
    const { timeoutMs, steal, onWaiting, signal } = options;
    const token = crypto.randomUUID();
    const temp = `${this.dir}/${tempName(this.fs, 'LOCK', 'tmp')}`;
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    const ours: { file?: ShimFile } = {};
    liveLocks.set(token, {});
    let claimed = false;
    let stopWarning: (() => void) | undefined;
    try {
      await this.fs.mkdir(this.dir);
      if (steal) {
        const old = await this.read();
        ours.file = await this.createRecord(temp, token);
        await this.fs.rename(temp, this.path);
        claimed = true;
        if (typeof old === 'object') liveLocks.get(old.token)?.lost?.('stolen');
        return { token, file: ours.file };
      }
      let holder: LockView | undefined;
      for (;;) {
        if (signal?.aborted) throw new MemWalError('Aborted', `opening store "${name}" was aborted`);
        holder = await this.tryClaim(temp, token, ours);
        if (!holder) {
          claimed = true;
          return { token, file: ours.file! };
        }
        const left = deadline - Date.now();
        if (timeoutMs === 0 || left <= 0) {
          throw new MemWalError('Locked', `store "${name}" is locked by another writer${timeoutMs ? ` (waited ${timeoutMs} ms)` : ''}`);
        }
        if (!stopWarning) {
          stopWarning = warnWhileWaiting(name, options, () => this.describe(holder!));
          try {
            onWaiting?.();
          } catch (e) {
            throw toMemWalError(e, 'onWaiting callback');
          }
        }
        await delay(Math.min(pollMs, left), signal, `opening store "${name}"`);
      }
    } catch (e) {
      throw toMemWalError(e, `locking store "${name}"`);
    } finally {
      stopWarning?.();
      if (!claimed) {
        liveLocks.delete(token);
        await ours.file?.close().catch(() => undefined);
      }
      await unlinkIfPresent(this.fs, temp).catch(() => undefined);
    }
  }

  /**
   * One attempt: the LOCK's view while a live holder has it; else link our record into place
   * (`temp`, created on first need and kept open in `ours.file`), taking over a stale lock, and
   * resolve undefined.
   */
  private async tryClaim(temp: string, token: string, ours: { file?: ShimFile }): Promise<LockView | undefined> {
    for (;;) {
      const holder = await this.inspect();
      if (holder.state !== 'missing') {
        if (!this.isStale(holder)) return holder;
        await this.removeIf(tokenOf(holder.state));
      }
      ours.file ??= await this.createRecord(temp, token);
      try {
        await this.fs.link(temp, this.path);
        return undefined;
      } catch (e) {
        if (!isErrno(e, 'ENOENT')) {
          if (isErrno(e, 'EEXIST')) continue;
          throw e;
        }
        // Our temporary file is gone: the store was destroyed meanwhile. Write it again.
        await ours.file.close().catch(() => undefined);
        ours.file = undefined;
        await this.fs.mkdir(this.dir);
        await unlinkIfPresent(this.fs, temp);
      }
    }
  }

  /** Creates our record at `temp`, under our `flock` where the runtime has one, and keeps it open. */
  private async createRecord(temp: string, token: string): Promise<ShimFile> {
    const file = await this.fs.open(temp, 'wx');
    try {
      const record: LockRecord = { pid: this.fs.pid, token };
      if ((await file.tryLock?.()) === true) record.flock = true;
      await file.write(new TextEncoder().encode(JSON.stringify(record)), 0);
      return file;
    } catch (e) {
      await file.close().catch(() => undefined);
      await unlinkIfPresent(this.fs, temp).catch(() => undefined);
      throw e;
    }
  }

  /** Whether the holder of `view` is gone (see the class comment). */
  private isStale(view: LockView): boolean {
    const holder = view.state;
    if (holder === 'corrupt') return true;
    if (holder === 'missing') return false;
    if (holder.pid === this.fs.pid) return !liveLocks.has(holder.token);
    if (view.flockFree !== undefined) return view.flockFree;
    const alive = this.fs.isProcessAlive(holder.pid);
    if (alive !== undefined) return !alive;
    return Date.now() - view.modifiedMs > this.leaseMs;
  }

  /** What a waiting open knows about the holder of `view`, for its warnings. */
  private describe(view: LockView): string {
    const holder = view.state;
    if (typeof holder !== 'object') return 'LOCK file changing';
    if (holder.pid === this.fs.pid) return `another open of this process (pid ${holder.pid}) holds it`;
    if (view.flockFree === false) return `process ${holder.pid} holds it (its OS file lock is held)`;
    if (this.fs.isProcessAlive(holder.pid)) return `process ${holder.pid} holds it and is alive (steal: true takes it over)`;
    const age = Math.round((Date.now() - view.modifiedMs) / 1000);
    return (
      `this process may not check whether process ${holder.pid} is alive (Deno: --allow-run), so its lock is taken over ` +
      `once its heartbeat is ${this.leaseMs / 1000} s old (it is ${Number.isNaN(age) ? 'unknown' : `${age} s`})`
    );
  }

  /** The LOCK as it is now, read through one open file: record, heartbeat, and `flock` probe. */
  private async inspect(): Promise<LockView> {
    let file: ShimFile;
    try {
      file = await this.fs.open(this.path, 'r');
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return { state: 'missing', modifiedMs: Number.NaN };
      throw e;
    }
    try {
      const view: LockView = { state: parseLock(await readOpen(file, this.path, 0)), modifiedMs: await file.modifiedMs() };
      if (typeof view.state === 'object' && view.state.flock && file.tryLock) view.flockFree = await file.tryLock();
      return view;
    } finally {
      await file.close();
    }
  }

  async read(path = this.path): Promise<LockState> {
    try {
      return parseLock(await readFrom(this.fs, path, 0));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return 'missing';
      throw e;
    }
  }

  /**
   * Deletes the LOCK if its token is `token` ('corrupt' for an unreadable one). It is renamed
   * aside first and inspected there; another holder's lock is linked back (unless a newer one
   * appeared meanwhile, whose holder then wins and the other notices through its watch).
   */
  async removeIf(token: string): Promise<void> {
    const aside = `${this.dir}/${tempName(this.fs, 'LOCK', 'aside')}`;
    try {
      await this.fs.rename(this.path, aside);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return;
      throw e;
    }
    try {
      if (tokenOf(await this.read(aside)) !== token) {
        try {
          await this.fs.link(aside, this.path);
        } catch (e) {
          if (!isErrno(e, 'EEXIST')) throw e;
        }
      }
    } finally {
      await this.fs.unlink(aside);
    }
  }
}

/** A LOCK file's bytes as a record, or 'corrupt'. */
function parseLock(bytes: Uint8Array): LockState {
  try {
    const r = JSON.parse(new TextDecoder().decode(bytes)) as Partial<LockRecord>;
    if (Number.isSafeInteger(r.pid) && typeof r.token === 'string') {
      return r.flock === true ? { pid: r.pid!, token: r.token, flock: true } : { pid: r.pid!, token: r.token };
    }
  } catch {
    // Not JSON: reported as 'corrupt' below.
  }
  return 'corrupt';
}

function tokenOf(state: LockState): string {
  return typeof state === 'object' ? state.token : state;
}

/**
 * One open store: the holder of its LOCK (kept open: every `lockWatchMs` it refreshes the LOCK's
 * modification time and checks the LOCK still holds its token), with the segment files it
 * appends to kept open.
 */
class FileStoreHandle implements StoreHandle {
  private state: 'open' | 'released' | 'lost' = 'open';
  private readonly token: string;
  private readonly lockFile: ShimFile;
  private readonly segments = new Map<string, { file: ShimFile; length: number }>();
  /** Manifest files never change once linked, so one (version, epoch) pair can be remembered. */
  private known = { version: 0, epoch: 0 };
  /** The writer epoch of the newest manifest this handle committed (0: none yet); fences mutations. */
  private epoch = 0;
  private readonly watch: ReturnType<typeof setInterval>;
  private watching = false;

  constructor(
    private readonly fs: FileSystemShim,
    private readonly dir: string,
    private readonly lock: LockFile,
    held: HeldLock,
    private readonly onLost: ((reason: string) => void) | undefined,
    lockWatchMs: number,
    private readonly manifestVersionsKept: number,
  ) {
    this.token = held.token;
    this.lockFile = held.file;
    liveLocks.set(this.token, { lost: (reason) => this.lose(reason) });
    this.watch = setInterval(() => void this.checkLock(), lockWatchMs);
    fs.unrefTimer(this.watch);
  }

  manifestLoad(): Promise<Manifest | undefined> {
    return this.op('manifest load', async () => {
      const latest = await this.latestVersion();
      return latest === 0 ? undefined : await this.readManifest(latest);
    });
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    return this.op('manifest commit', async () => {
      if (next.version !== expectedVersion + 1) {
        throw new MemWalError('InvalidArgument', `manifest version ${next.version} does not follow expected version ${expectedVersion}`);
      }
      const versions = await this.versions();
      const latest = versions.at(-1) ?? 0;
      if (latest !== expectedVersion || (latest !== 0 && (await this.epochOf(latest)) > next.writerEpoch)) {
        throw await this.conflict(latest, expectedVersion, next.writerEpoch);
      }
      for (const v of versions) {
        if (v > next.version - this.manifestVersionsKept) break;
        await unlinkIfPresent(this.fs, this.manifestPath(v));
      }
      const temp = `${this.dir}/manifest/${tempName(this.fs, '', 'tmp')}`;
      await writeNewFile(this.fs, temp, new TextEncoder().encode(JSON.stringify(next)), true);
      try {
        await this.fs.link(temp, this.manifestPath(next.version));
      } catch (e) {
        if (isErrno(e, 'EEXIST')) throw await this.conflict(next.version, expectedVersion, next.writerEpoch);
        throw e;
      } finally {
        await unlinkIfPresent(this.fs, temp);
      }
      await this.fs.syncDir(`${this.dir}/manifest`);
      this.known = { version: next.version, epoch: next.writerEpoch };
      // Linking succeeds where a newer writer already pruned this version: then it is not the
      // newest, never loaded, and must not be acknowledged.
      const newest = await this.latestVersion();
      if (newest !== next.version) throw await this.conflict(newest, expectedVersion, next.writerEpoch);
      this.epoch = next.writerEpoch;
    });
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.op('WAL list', async () => {
      const list: WalSegmentInfo[] = [];
      for (const name of await listDir(this.fs, `${this.dir}/wal`)) {
        const parsed = parseSegmentName(name);
        if (!parsed) continue;
        try {
          const { size } = await this.fs.stat(this.walPath(name));
          list.push({ name, ...parsed, bytes: size });
        } catch (e) {
          if (!isErrno(e, 'ENOENT')) throw e;
        }
      }
      return list;
    });
  }

  walRead(name: string, offset = 0): Promise<Uint8Array> {
    return this.op(`WAL read of ${name}`, async () => {
      checkComponent(name, 'WAL segment');
      return await this.readExisting(this.walPath(name), offset, `WAL segment ${name}`);
    });
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.op(`WAL append to ${name}`, async () => {
      const parsed = parseSegmentName(name);
      if (!parsed) throw new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`);
      await this.checkEpoch(parsed.epoch, name);
      const seg = this.segments.get(name) ?? (await this.openSegment(name, offset === 0));
      if (offset !== seg.length) {
        throw new MemWalError('IOError', `WAL segment ${name}: append at offset ${offset}, but its length is ${seg.length}`);
      }
      try {
        await seg.file.write(bytes, offset);
        await seg.file.datasync();
      } catch (e) {
        // The length on disk is unknown now: the next operation reopens the file.
        this.segments.delete(name);
        await seg.file.close().catch(() => undefined);
        throw e;
      }
      seg.length = offset + bytes.length;
      await this.checkEpoch(parsed.epoch, name);
    });
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.op(`WAL truncate of ${name}`, async () => {
      checkComponent(name, 'WAL segment');
      await this.fence();
      const seg = this.segments.get(name) ?? (await this.openSegment(name, false));
      if (!(Number.isSafeInteger(length) && length >= 0 && length <= seg.length)) {
        throw new MemWalError('InvalidArgument', `WAL segment ${name}: cannot truncate ${seg.length} bytes to ${length}`);
      }
      await seg.file.truncate(length);
      await seg.file.sync();
      seg.length = length;
    });
  }

  walRemove(name: string): Promise<void> {
    return this.op(`WAL remove of ${name}`, async () => {
      checkComponent(name, 'WAL segment');
      await this.fence();
      await this.closeSegment(name);
      await unlinkIfPresent(this.fs, this.walPath(name));
      await this.fs.syncDir(`${this.dir}/wal`);
    });
  }

  tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    return this.op(`table write of ${name}`, async () => {
      checkComponent(name, 'table file');
      await this.fence();
      const path = this.tablePath(name);
      let file: ShimFile;
      try {
        file = await this.fs.open(path, 'wx');
      } catch (e) {
        if (isErrno(e, 'EEXIST')) throw new MemWalError('IOError', `table file ${name} already exists`, { cause: e });
        throw e;
      }
      let open = true;
      try {
        let at = 0;
        for await (const chunk of chunks) {
          await file.write(chunk, at);
          at += chunk.length;
        }
        await file.sync();
        open = false;
        await file.close();
        await this.fs.syncDir(`${this.dir}/tables`);
        // A newer writer that claimed meanwhile never names this file; leave nothing behind.
        await this.fence();
      } catch (e) {
        if (open) await file.close().catch(() => undefined);
        await unlinkIfPresent(this.fs, path).catch(() => undefined);
        throw e;
      }
    });
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.op(`table read of ${name}`, async () => {
      checkComponent(name, 'table file');
      return await this.readExisting(this.tablePath(name), 0, `table file ${name}`);
    });
  }

  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    return this.op(`table read of ${name} at ${offset}`, async () => {
      checkComponent(name, 'table file');
      checkRange(name, offset, length);
      let file: ShimFile;
      try {
        file = await this.fs.open(this.tablePath(name), 'r');
      } catch (e) {
        if (isErrno(e, 'ENOENT')) throw new MemWalError('IOError', `table file ${name} does not exist`, { cause: e });
        throw e;
      }
      try {
        checkInside(name, offset, length, await file.size());
        const out = new Uint8Array(length);
        let at = 0;
        while (at < length) {
          const n = await file.read(out.subarray(at), offset + at);
          if (n === 0) throw new MemWalError('IOError', `table file ${name}: read ${at} of ${length} bytes at ${offset}`);
          at += n;
        }
        return out;
      } finally {
        await file.close();
      }
    });
  }

  tableList(): Promise<string[]> {
    return this.op('table list', () => listDir(this.fs, `${this.dir}/tables`));
  }

  tableRemove(name: string): Promise<void> {
    return this.op(`table remove of ${name}`, async () => {
      checkComponent(name, 'table file');
      await this.fence();
      await unlinkIfPresent(this.fs, this.tablePath(name));
      await this.fs.syncDir(`${this.dir}/tables`);
    });
  }

  async release(): Promise<void> {
    if (this.state === 'released') return;
    const held = this.state === 'open';
    if (held) this.state = 'released';
    clearInterval(this.watch);
    await this.closeSegments();
    if (held) await this.lock.removeIf(this.token).catch(() => undefined);
    liveLocks.delete(this.token);
    // Only now: closing gives up our flock, which tells waiters of other processes we are gone.
    await this.lockFile.close().catch(() => undefined);
  }

  /** The lock was stolen: stop writing at once (every later operation rejects `Fenced`). */
  private lose(reason: string): void {
    if (this.state !== 'open') return;
    this.state = 'lost';
    clearInterval(this.watch);
    liveLocks.delete(this.token);
    void this.closeSegments();
    void this.lockFile.close().catch(() => undefined);
    const onLost = this.onLost;
    if (onLost) queueMicrotask(() => onLost(reason));
  }

  /** The watch: the heartbeat, then another token in the LOCK file means the lock was stolen. */
  private async checkLock(): Promise<void> {
    if (this.watching || this.state !== 'open') return;
    this.watching = true;
    try {
      await this.lockFile.touch().catch(() => undefined);
      const holder = await this.lock.read();
      if (typeof holder === 'object' && holder.token !== this.token) this.lose('stolen');
    } catch {
      // A failed look is retried at the next tick; it changes nothing.
    } finally {
      this.watching = false;
    }
  }

  /** Rejects `Fenced` if the newest manifest's epoch is newer than `epoch` (a segment's). */
  private async checkEpoch(epoch: number, name: string): Promise<void> {
    const latest = await this.latestVersion();
    if (latest === 0) return;
    const stored = await this.epochOf(latest);
    if (stored > epoch) {
      throw new MemWalError('Fenced', `WAL segment ${name} belongs to epoch ${epoch}, fenced by epoch ${stored}`);
    }
  }

  /**
   * Rejects `Fenced` if the newest manifest's epoch is newer than this handle's. Called before
   * every mutation other than an append (which checks its segment's epoch before and after).
   * Between the check and the mutation another process may claim: the engine's recovery never
   * depends on an older writer's segment staying as it read it (docs/impl.md, "Fencing").
   */
  private async fence(): Promise<void> {
    const latest = await this.latestVersion();
    if (latest === 0) return;
    const stored = await this.epochOf(latest);
    if (stored > this.epoch) throw new MemWalError('Fenced', `writer epoch ${this.epoch} is fenced by epoch ${stored}`);
  }

  /** The error of a commit that found version `found` instead of `expected`. */
  private async conflict(found: number, expected: number, epoch: number): Promise<MemWalError> {
    const stored = found === 0 ? 0 : await this.epochOf(found);
    if (stored > epoch) return new MemWalError('Fenced', `writer epoch ${epoch} is fenced by epoch ${stored}`);
    return new MemWalError('IOError', `manifest commit conflict: expected version ${expected}, stored ${found}`);
  }

  private async epochOf(version: number): Promise<number> {
    if (this.known.version !== version) {
      this.known = { version, epoch: (await this.readManifest(version)).writerEpoch };
    }
    return this.known.epoch;
  }

  private async readManifest(version: number): Promise<Manifest> {
    const bytes = await readFrom(this.fs, this.manifestPath(version), 0);
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      throw new MemWalError('Corruption', `manifest version ${version} is not JSON`, { cause: e });
    }
    const m = checkManifest(value);
    if (m.version !== version) throw new MemWalError('Corruption', `manifest file ${version}.json holds version ${m.version}`);
    return m;
  }

  /** Stored manifest versions, ascending. */
  private async versions(): Promise<number[]> {
    const versions: number[] = [];
    for (const entry of await listDir(this.fs, `${this.dir}/manifest`)) {
      const m = /^(\d+)\.json$/.exec(entry);
      if (m) versions.push(Number(m[1]));
    }
    return versions.sort((a, b) => a - b);
  }

  private async latestVersion(): Promise<number> {
    return (await this.versions()).at(-1) ?? 0;
  }

  /** Opens segment `name` for writing (creating it if `create` and missing) and caches it. */
  private async openSegment(name: string, create: boolean): Promise<{ file: ShimFile; length: number }> {
    const path = this.walPath(name);
    let file: ShimFile;
    try {
      file = await this.fs.open(path, 'r+');
    } catch (e) {
      if (!isErrno(e, 'ENOENT')) throw e;
      if (!create) throw new MemWalError('IOError', `WAL segment ${name} does not exist`, { cause: e });
      // A writer appends to its newest segment only: older ones need no open file any more.
      await this.closeSegments();
      file = await this.fs.open(path, 'wx');
      await this.fs.syncDir(`${this.dir}/wal`);
    }
    const seg = { file, length: await file.size() };
    this.segments.set(name, seg);
    return seg;
  }

  private async closeSegment(name: string): Promise<void> {
    const seg = this.segments.get(name);
    this.segments.delete(name);
    await seg?.file.close();
  }

  /** Closes every cached segment file; errors do not matter (nothing is written by a close). */
  private async closeSegments(): Promise<void> {
    const files = [...this.segments.values()].map((s) => s.file);
    this.segments.clear();
    await Promise.all(files.map((f) => f.close().catch(() => undefined)));
  }

  private async readExisting(path: string, offset: number, what: string): Promise<Uint8Array> {
    try {
      return await readFrom(this.fs, path, offset);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) throw new MemWalError('IOError', `${what} does not exist`, { cause: e });
      throw e;
    }
  }

  private walPath(name: string): string {
    return `${this.dir}/wal/${name}`;
  }

  private tablePath(name: string): string {
    return `${this.dir}/tables/${name}`;
  }

  private manifestPath(version: number): string {
    return `${this.dir}/manifest/${version}.json`;
  }

  /** Runs `work` if this handle still holds the lock (`Closed` after release, `Fenced` once lost). */
  private async op<T>(context: string, work: () => Promise<T>): Promise<T> {
    if (this.state === 'released') throw new MemWalError('Closed', 'store handle was released');
    if (this.state === 'lost') throw new MemWalError('Fenced', 'store handle lost its writer lock to a newer writer');
    try {
      return await work();
    } catch (e) {
      throw this.failure(e, context);
    }
  }

  /** The error of a failed operation; losing the lock closes the files under one in flight: a fence. */
  private failure(e: unknown, context: string): MemWalError {
    if (this.state === 'lost' && !(e instanceof MemWalError)) {
      return new MemWalError('Fenced', `${context}: store handle lost its writer lock to a newer writer`, { cause: e });
    }
    return toMemWalError(e, context);
  }
}
