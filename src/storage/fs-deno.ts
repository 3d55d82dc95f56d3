// The FileSystemShim for Deno (Deno.open and friends), so FileStorage runs there unchanged. Deno
// only; imported by the memwal/deno entry point. Deno's file errors already carry errno `code`s.

import type { FileSystemShim, OpenFlags, ShimFile } from './fs.js';

/** The slice of the Deno namespace used here (declared locally: the build has no Deno types). */
interface DenoFsFile {
  read(into: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  seek(offset: number, whence: 0): Promise<number>;
  syncData(): Promise<void>;
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): void;
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
  stat(path: string): Promise<{ size: number }>;
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

function errorName(e: unknown): string {
  return typeof e === 'object' && e !== null ? String((e as { name?: unknown }).name) : '';
}

/**
 * Deno's file system for FileStorage. Needs `--allow-read` and `--allow-write` on the root, and
 * `--allow-run` (or read access to `/proc`) to see that a lock holder's process is dead; without
 * either a dead holder's lock is not taken over (steal it). No statfs: `estimate()` reports
 * `persisted` only. Directory fsync is skipped on Windows.
 */
export const denoFileSystem: FileSystemShim = {
  pid: Deno.pid,
  isProcessAlive(pid: number): boolean {
    try {
      Deno.kill(pid, 0);
      return true;
    } catch (e) {
      if (errorName(e) === 'NotFound') return false; // ESRCH
      if (errorName(e) !== 'NotCapable' && errorName(e) !== 'PermissionDenied') return true;
    }
    try {
      Deno.statSync(`/proc/${pid}`);
      return true;
    } catch (e) {
      return errorName(e) !== 'NotFound';
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
  async stat(path: string): Promise<{ size: number }> {
    return { size: (await Deno.stat(path)).size };
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
