// The FileSystemShim for Node (node:fs/promises): what FileStorage needs, with Node's errno
// errors passed through unchanged. Node only; imported by the memwal/node entry point.

import { link, mkdir, open, readdir, rename, rm, stat, statfs, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { FileSystemShim, OpenFlags, ShimFile } from './fs-shim.js';

class NodeFile implements ShimFile {
  constructor(private readonly handle: FileHandle) {}

  async read(into: Uint8Array, position: number): Promise<number> {
    return (await this.handle.read(into, 0, into.length, position)).bytesRead;
  }

  async write(bytes: Uint8Array, position: number): Promise<void> {
    let at = 0;
    while (at < bytes.length) {
      at += (await this.handle.write(bytes, at, bytes.length - at, position + at)).bytesWritten;
    }
  }

  datasync(): Promise<void> {
    return this.handle.datasync();
  }

  sync(): Promise<void> {
    return this.handle.sync();
  }

  truncate(length: number): Promise<void> {
    return this.handle.truncate(length);
  }

  async size(): Promise<number> {
    return (await this.handle.stat()).size;
  }

  async modifiedMs(): Promise<number> {
    return (await this.handle.stat()).mtimeMs;
  }

  touch(): Promise<void> {
    const now = new Date();
    return this.handle.utimes(now, now);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/**
 * Node's file system for FileStorage (Node 18.15+, for `statfs`). Directory fsync is skipped on
 * Windows, where directories cannot be opened for it; process liveness is `process.kill(pid, 0)`.
 * No `tryLock`: Node has no `flock`.
 */
export const nodeFileSystem: FileSystemShim = {
  pid: process.pid,
  isProcessAlive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      // EPERM: it exists but belongs to another user.
      return (e as NodeJS.ErrnoException).code !== 'ESRCH';
    }
  },
  unrefTimer(timer: unknown): void {
    (timer as { unref?: () => void }).unref?.();
  },
  async open(path: string, flags: OpenFlags): Promise<ShimFile> {
    return new NodeFile(await open(path, flags));
  },
  readdir: (path) => readdir(path),
  async mkdir(path: string): Promise<void> {
    await mkdir(path, { recursive: true });
  },
  unlink: (path) => unlink(path),
  link: (existingPath, newPath) => link(existingPath, newPath),
  rename: (oldPath, newPath) => rename(oldPath, newPath),
  rm: (path) => rm(path, { recursive: true, force: true }),
  async stat(path: string): Promise<{ size: number; mtimeMs: number }> {
    const s = await stat(path);
    return { size: s.size, mtimeMs: s.mtimeMs };
  },
  async syncDir(path: string): Promise<void> {
    if (process.platform === 'win32') return;
    const dir = await open(path, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  },
  async statfs(path: string) {
    const s = await statfs(path);
    return { totalBytes: s.blocks * s.bsize, freeBytes: s.bfree * s.bsize, availableBytes: s.bavail * s.bsize };
  },
};
