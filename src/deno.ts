// memwal/deno: the Deno entry point. DenoFileStorage keeps stores in local files with the same
// protocol and layout as memwal/node (docs/format.md). Deno 2+ only.

import { FileStorage } from './storage/fs.js';
import type { FileStorageOptions } from './storage/fs.js';
import { denoFileSystem } from './storage/fs-deno.js';

export type { FileStorageOptions } from './storage/fs.js';

/**
 * A StorageAdapter over the local file system under `rootDir`, layout `'node-fs'` (a store
 * written by Node opens in Deno and back). Every operation is fsynced before it resolves.
 * Permissions: read and write on `rootDir`; `--allow-run` so that a dead process's lock is
 * taken over. Throws `InvalidArgument` for bad options. Deno only (local file systems).
 */
export class DenoFileStorage extends FileStorage {
  constructor(rootDir: string, options?: FileStorageOptions) {
    super(denoFileSystem, rootDir, options);
  }
}
