// The small file-system interface FileStorage is written against (fs.ts), so that Node
// (fs-node.ts) and Deno (fs-deno.ts) share one protocol, and the helpers over it: whole-file
// reads, exclusive creates, listings, temporary files of dead processes swept. Any runtime: the
// shim brings the file system, the process id and timers.

import { MemWalError } from '../util/errors.js';

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

/** A store name, table name or segment name becomes one path component, never more. */
export function checkComponent(name: string, what: string): void {
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(name) || name === '.' || name === '..') {
    throw new MemWalError('InvalidArgument', `${what} "${name}" is not a valid file name (use [A-Za-z0-9._-])`);
  }
}

export function isErrno(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/** Resolves after `ms`; rejects `Aborted` as soon as `signal` aborts. */
export function delay(ms: number, signal: AbortSignal | undefined, what: string): Promise<void> {
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

/** Reads the whole of `path` from `offset`; `IOError` when `offset` is past its end. */
export async function readFrom(fs: FileSystemShim, path: string, offset: number): Promise<Uint8Array> {
  const file = await fs.open(path, 'r');
  try {
    return await readOpen(file, path, offset);
  } finally {
    await file.close();
  }
}

/** Reads the whole of open file `file` (at `path`) from `offset`. */
export async function readOpen(file: ShimFile, path: string, offset: number): Promise<Uint8Array> {
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
export async function writeNewFile(fs: FileSystemShim, path: string, bytes: Uint8Array, sync: boolean): Promise<void> {
  const file = await fs.open(path, 'wx');
  try {
    await file.write(bytes, 0);
    if (sync) await file.sync();
  } finally {
    await file.close();
  }
}

/** Entry names of `dir`; a missing directory has none. */
export async function listDir(fs: FileSystemShim, dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return [];
    throw e;
  }
}

export async function unlinkIfPresent(fs: FileSystemShim, path: string): Promise<void> {
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
export async function sweepTemps(fs: FileSystemShim, dir: string, pattern: RegExp, leaseMs: number): Promise<void> {
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
export function tempName(fs: FileSystemShim, prefix: string, suffix: string): string {
  return `${prefix}.${fs.pid}.${crypto.randomUUID()}.${suffix}`;
}
