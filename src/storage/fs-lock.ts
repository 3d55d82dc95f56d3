// The writer lock of a file store: a LOCK file per store directory, created by an atomic hard
// link, stolen by an atomic rename, removed only after it was inspected aside, and taken over
// when its holder is gone (its `flock`, its pid, or its heartbeat say so). Any runtime, through
// the shim (fs-shim.ts).

import { MemWalError, toMemWalError } from '../util/errors.js';
import type { LockOptions } from './adapter.js';
import { delay, type FileSystemShim, isErrno, readFrom, readOpen, type ShimFile, tempName, unlinkIfPresent } from './fs-shim.js';
import { beginWait } from './lock-wait.js';

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
export interface HeldLock {
  token: string;
  file: ShimFile;
}

/**
 * The lock tokens this process holds (or is linking into place right now), shared by every copy
 * of this module in the process, with the callback that tells the holder it was stolen. A LOCK
 * file with our pid and a token not in here is stale: left by an earlier process with our pid.
 */
export const liveLocks: Map<string, { lost?: (reason: string) => void }> = ((globalThis as Record<symbol, unknown>)[
  Symbol.for('memwal.fileStorage.liveLocks')
] ??= new Map()) as Map<string, { lost?: (reason: string) => void }>;

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
export class LockFile {
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
    const { timeoutMs, steal, signal } = options;
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
          stopWarning = beginWait(name, options, () => this.describe(holder!));
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
