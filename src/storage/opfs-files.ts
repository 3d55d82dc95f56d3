// The OPFS layout's file-system primitives: sync access handles (opened with a time limit, kept
// reachable while they open), the store directories, appends and writes checked for a full
// disk, and removals that wait for another context to let go of a file. Used by the adapter
// (opfs.ts), its kept table readers (opfs-readers.ts), the table writer thread and the engine
// thread's read-only handles (io-worker/). Dedicated workers only.

import { MemWalError, toMemWalError } from '../util/errors.js';
import { checkAppendOffset } from './adapter.js';

/** `FileSystemSyncAccessHandle` (WebWorker lib; declared here so the DOM lib type-checks). */
export interface SyncAccessHandle {
  read(buffer: Uint8Array, options?: { at?: number }): number;
  write(buffer: Uint8Array, options?: { at?: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

/** `'readwrite'` is exclusive across contexts; `'read-only'` handles can coexist (Chromium 121+; ignored elsewhere). */
export type SyncAccessMode = 'readwrite' | 'read-only';

export interface OpfsFile extends FileSystemFileHandle {
  createSyncAccessHandle(options?: { mode?: SyncAccessMode }): Promise<SyncAccessHandle>;
}

export interface OpfsDirectory extends FileSystemDirectoryHandle {
  keys(): AsyncIterable<string>;
}

/** The root directory of every store: `memwal/` in the origin private file system. */
const ROOT_DIR = 'memwal';
/** A store's table files: `memwal/{store}/tables/`. */
export const TABLES_DIR = 'tables';
/** How long a store retries a segment still open elsewhere when `timeoutMs` is undefined. */
export const DEFAULT_SEGMENT_RETRY_MS = 10_000;
/**
 * How long opening a sync access handle may take before the call fails `IOError`. A healthy open
 * takes 1–40 ms here; a handle that arrives after the limit is closed at once, so an abandoned
 * open never holds a file's lock.
 */
export const SYNC_OPEN_LIMIT_MS = 10_000;

/** True where this context can use the OPFS layout: sync access handles and `getDirectory`. */
export function opfsSyncHandlesAvailable(): boolean {
  return (
    typeof (globalThis as { FileSystemSyncAccessHandle?: unknown }).FileSystemSyncAccessHandle === 'function' &&
    typeof (globalThis as { navigator?: Navigator }).navigator?.storage?.getDirectory === 'function'
  );
}

/**
 * True where this context can open sync access handles that honour `mode: 'read-only'` (Chromium
 * 121+: the handle has a `mode`). Elsewhere the option is ignored and the handle is exclusive, so
 * a second context must not keep one on a file that its store's owner reads and removes.
 */
export function readOnlySyncHandlesAvailable(): boolean {
  const handle = (globalThis as { FileSystemSyncAccessHandle?: { prototype: object } }).FileSystemSyncAccessHandle;
  return opfsSyncHandlesAvailable() && handle !== undefined && 'mode' in handle.prototype;
}

/**
 * Opens read-only sync access handles on store `store`'s table files, from a context other than
 * the one that holds the store (the engine's thread of a store served by an I/O worker, docs/impl.md
 * §11). Creates nothing; rejects with the platform's error (`NotFoundError` for a missing file or
 * directory), `NotSupported` outside dedicated workers.
 */
export function opfsTableOpener(store: string): (name: string) => Promise<SyncAccessHandle> {
  let tables: Promise<FileSystemDirectoryHandle> | undefined;
  return async (name) => {
    tables ??= opfsRoot().then(async (root) => (await root.getDirectoryHandle(store)).getDirectoryHandle(TABLES_DIR));
    return openSyncAccessHandle(await (await tables).getFileHandle(name), 'read-only');
  };
}

/** `memwal/` in OPFS; `NotSupported` where this context has no sync access handles. */
export async function opfsRoot(): Promise<OpfsDirectory> {
  if (!opfsSyncHandlesAvailable()) {
    throw new MemWalError('NotSupported', 'the OPFS layout needs FileSystemSyncAccessHandle, which exists only in dedicated workers');
  }
  try {
    const origin = await navigator.storage.getDirectory();
    return (await origin.getDirectoryHandle(ROOT_DIR, { create: true })) as OpfsDirectory;
  } catch (e) {
    throw toMemWalError(e, 'opening the origin private file system');
  }
}

/**
 * File handles whose `createSyncAccessHandle()` has not settled yet. Chromium continues that call
 * through a weak reference to the handle (its storage-access check, `file_system_file_handle.cc`):
 * if the handle is garbage-collected before the check answers, the promise never settles. A caller
 * that keeps the handle only in a local it no longer uses loses it to the first GC once V8 has
 * optimized the caller — the OPFS flush stall of docs/impl.md. Holding it here until the call
 * settles closes that window.
 */
const opening = new Set<{ file: FileSystemFileHandle }>();

/**
 * Opens a sync access handle on `file` (default mode `readwrite`, exclusive across contexts),
 * keeping `file` reachable until the call settles. Rejects with the platform's error, or `IOError`
 * after `limitMs`; a handle that arrives after the limit is closed at once. Dedicated workers.
 */
export function openSyncAccessHandle(
  file: FileSystemFileHandle,
  mode: SyncAccessMode = 'readwrite',
  limitMs = SYNC_OPEN_LIMIT_MS,
): Promise<SyncAccessHandle> {
  const pin = { file };
  opening.add(pin);
  const open = (file as OpfsFile).createSyncAccessHandle(mode === 'readwrite' ? undefined : { mode }).finally(() => opening.delete(pin));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void open.then(
        (late) => late.close(),
        () => undefined,
      );
      reject(new MemWalError('IOError', `opening a sync access handle on ${file.name} did not finish within ${limitMs} ms`));
    }, limitMs);
  });
  return Promise.race([open, limit]).finally(() => clearTimeout(timer));
}

/** Chromium's `base::File::FILE_ERROR_NO_SPACE`. */
const FILE_ERROR_NO_SPACE = -8;

/**
 * Append the bytes of `parts`, in order, at `offset` of a segment's sync handle (which must be
 * its length), each part written where it lands, then one flush. On any failure the segment is
 * cut back to `offset` (as it was, so the append can be retried there) and the error rethrown.
 */
export function appendToSegment(sync: SyncAccessHandle, name: string, offset: number, parts: readonly Uint8Array[]): void {
  checkAppendOffset(name, offset, sync.getSize());
  try {
    let at = offset;
    for (const part of parts) {
      checkWritten(sync.write(part, { at }), part.length, `WAL segment ${name}`);
      at += part.length;
    }
    sync.flush();
  } catch (e) {
    try {
      sync.truncate(offset);
      sync.flush();
    } catch {
      // The append's own error is the one to report; the engine truncates before retrying.
    }
    throw e;
  }
}

/**
 * Checks a sync handle `write()` result. Chromium's in-memory OPFS (incognito and Playwright's
 * default off-the-record contexts) does not throw QuotaExceededError when full: `write()` returns
 * a negative `base::File::Error` wrapped to an unsigned 32-bit count (2^32 - 8 for NO_SPACE).
 */
export function checkWritten(written: number, expected: number, context: string): void {
  if (written === expected) return;
  const fileError = written > expected ? written - 2 ** 32 : 0;
  if (fileError === FILE_ERROR_NO_SPACE) {
    throw new MemWalError('QuotaExceeded', `${context}: no space available (write returned file error ${fileError})`);
  }
  throw new MemWalError('IOError', `${context}: wrote ${fileError < 0 ? `file error ${fileError}` : written} of ${expected} bytes`);
}

export const errorName = (e: unknown): string => (e as { name?: string } | null)?.name ?? '';
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `dir.removeEntry(name, options)`; a missing entry is not an error. */
export async function removeIfPresent(dir: FileSystemDirectoryHandle, name: string, context: string, recursive = false): Promise<void> {
  try {
    await dir.removeEntry(name, { recursive });
  } catch (e) {
    if (errorName(e) !== 'NotFoundError') throw toMemWalError(e, context);
  }
}

/**
 * `removeIfPresent`, retried with backoff for `retryMs` while the entry (or, `recursive`, a file
 * in it) is still open in another context (`NoModificationAllowedError`): a table file a
 * predecessor's table writer thread is still writing after its writer lost the lock or its
 * worker ended (docs/impl.md §11). `check` runs before each attempt.
 */
export async function removeWhenLetGo(
  dir: FileSystemDirectoryHandle,
  name: string,
  context: string,
  retryMs: number,
  recursive = false,
  check: () => void = () => undefined,
): Promise<void> {
  const deadline = Date.now() + retryMs;
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 500)) {
    check();
    try {
      return await removeIfPresent(dir, name, context, recursive);
    } catch (e) {
      const cause = (e as { cause?: unknown }).cause;
      if (errorName(cause) !== 'NoModificationAllowedError' || Date.now() + delayMs > deadline) throw e;
      await sleep(delayMs);
    }
  }
}

/** `dir`'s entry names (`IOError` on failure). */
export async function listNames(dir: OpfsDirectory, context: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const name of dir.keys()) names.push(name);
  } catch (e) {
    throw toMemWalError(e, context);
  }
  return names;
}
