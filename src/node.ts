// memwal/node: the Node entry point. NodeFileStorage keeps stores in local files (docs/format.md,
// "Node/Deno files"). Node 20+ only; the only entry point besides tests that imports node:*.

import { resolve } from 'node:path';
import { FileStorage } from './storage/fs.js';
import type { FileStorageOptions } from './storage/fs.js';
import { nodeFileSystem } from './storage/fs-node.js';

export type { FileStorageOptions } from './storage/fs.js';

/**
 * A StorageAdapter over the local file system under `rootDir` (resolved against the current
 * directory once, here), layout `'node-fs'`: one directory per store with its WAL segments,
 * table files, versioned manifest files and LOCK file. Every operation is fsynced before it
 * resolves; a process that dies never leaves a store locked. Pass it as `storage` to
 * `MemWal.open`. Throws `InvalidArgument` for bad options. Node only (local file systems).
 */
export class NodeFileStorage extends FileStorage {
  constructor(rootDir: string, options?: FileStorageOptions) {
    super(nodeFileSystem, resolve(rootDir), options);
  }
}
