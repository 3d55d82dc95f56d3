// The FileSystemShim for Deno (Deno.open and friends), so FileStorage runs there unchanged. Deno
// only; imported by the memwal/deno entry point. Deno's file errors already carry errno `code`s.

import type { FileSystemShim, OpenFlags, ShimFile } from './fs-shim.js';

/** The slice of the Deno namespace used here (declared locally: the build has no Deno types). */
interface DenoFsFile {
  read(into: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  seek(offset: number, whence: 0): Promise<number>;
  syncData(): Promise<void>;
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<DenoFileInfo>;
  utime(atime: Date, mtime: Date): Promise<void>;
  tryLock(exclusive: boolean): Promise<boolean>;
  close(): void;
}
interface DenoFileInfo {
  size: number;
  mtime: Date | null;
}
declare const Deno: {
  readonly pid: number;
  readonly build: { os: string };
  kill(pid: number, signal: unknown): void;
  unrefTimer(id: number): void;
  open(path: string, options: { read?: boolean; write?: boolean; createNew?: boolean }): Promise<DenoFsFile>;
  readDir(path: string): AsyncIterable<{ name: string }>;
  mkdir(path: string, options: { recursive: boolean }): Promise<void>;
  remove(path: string, options?: { recursive: boolean }): Promise<void>;
  link(existingPath: string, newPath: string): Promise<void>;
  rename(oldPath: string, newPath: string): Promise<void>;
  stat(path: string): Promise<DenoFileInfo>;
  statSync(path: string): unknown;
};

const SEEK_START = 0;

/** A Deno file with positional reads and writes: seek + read/write, one operation at a time. */
class DenoFile implements ShimFile {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly file: DenoFsFile) {}

  read(into: Uint8Array, position: number): Promise<number> {
    return this.serial(async () => {
      await this.file.seek(position, SEEK_START);
      return (await this.file.read(into)) ?? 0;
    });
  }

  write(bytes: Uint8Array, position: number): Promise<void> {
    return this.serial(async () => {
      await this.file.seek(position, SEEK_START);
      for (let at = 0; at < bytes.length; ) at += await this.file.write(bytes.subarray(at));
    });
  }

  datasync(): Promise<void> {
    return this.serial(() => this.file.syncData());
  }

  sync(): Promise<void> {
    return this.serial(() => this.file.sync());
  }

  truncate(length: number): Promise<void> {
    return this.serial(() => this.file.truncate(length));
  }

  size(): Promise<number> {
    return this.serial(async () => (await this.file.stat()).size);
  }

  modifiedMs(): Promise<number> {
    return this.serial(async () => mtimeMs(await this.file.stat()));
  }

  touch(): Promise<void> {
    const now = new Date();
    return this.serial(() => this.file.utime(now, now));
  }

  /** `flock(LOCK_EX | LOCK_NB)`: needs no permission beyond the open file. */
  tryLock(): Promise<boolean> {
    return this.serial(() => this.file.tryLock(true));
  }

  close(): Promise<void> {
    return this.serial(async () => this.file.close());
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

const OPEN_OPTIONS: Record<OpenFlags, { read?: boolean; write?: boolean; createNew?: boolean }> = {
  r: { read: true },
  'r+': { read: true, write: true },
  wx: { read: true, write: true, createNew: true },
};

function mtimeMs(info: DenoFileInfo): number {
  return info.mtime ? info.mtime.getTime() : Number.NaN;
}

function errorName(e: unknown): string {
  return typeof e === 'object' && e !== null ? String((e as { name?: unknown }).name) : '';
}

const denied = (e: unknown): boolean => errorName(e) === 'NotCapable' || errorName(e) === 'PermissionDenied';

/**
 * Deno's file system for FileStorage. Needs only `--allow-read` and `--allow-write` on the root:
 * a Deno holder's death shows at once through its `flock` on the LOCK file (`FsFile.tryLock`,
 * which needs no other permission). A Node holder's pid can be checked only with `--allow-run`
 * (or all access to `/proc`); without it, its lock is taken over once its heartbeat is
 * `lockLeaseMs` old. No statfs: `estimate()` reports the store's bytes and `persisted`, no quota.
 * Directory fsync is skipped on Windows.
 */
export const denoFileSystem: FileSystemShim = {
  pid: Deno.pid,
  isProcessAlive(pid: number): boolean | undefined {
    try {
      Deno.kill(pid, 0);
      return true;
    } catch (e) {
      if (errorName(e) === 'NotFound') return false; // ESRCH
      if (!denied(e)) return true;
    }
    try {
      Deno.statSync(`/proc/${pid}`);
      return true;
    } catch (e) {
      if (errorName(e) === 'NotFound') return false;
      return denied(e) ? undefined : true;
    }
  },
  unrefTimer(timer: unknown): void {
    Deno.unrefTimer(timer as number);
  },
  async open(path: string, flags: OpenFlags): Promise<ShimFile> {
    return new DenoFile(await Deno.open(path, OPEN_OPTIONS[flags]));
  },
  async readdir(path: string): Promise<string[]> {
    const names: string[] = [];
    for await (const entry of Deno.readDir(path)) names.push(entry.name);
    return names;
  },
  mkdir: (path) => Deno.mkdir(path, { recursive: true }),
  unlink: (path) => Deno.remove(path),
  link: (existingPath, newPath) => Deno.link(existingPath, newPath),
  rename: (oldPath, newPath) => Deno.rename(oldPath, newPath),
  async rm(path: string): Promise<void> {
    try {
      await Deno.remove(path, { recursive: true });
    } catch (e) {
      if (errorName(e) !== 'NotFound') throw e;
    }
  },
  async stat(path: string): Promise<{ size: number; mtimeMs: number }> {
    const info = await Deno.stat(path);
    return { size: info.size, mtimeMs: mtimeMs(info) };
  },
  async syncDir(path: string): Promise<void> {
    if (Deno.build.os === 'windows') return;
    const dir = await Deno.open(path, { read: true });
    try {
      await dir.sync();
    } finally {
      dir.close();
    }
  },
};
