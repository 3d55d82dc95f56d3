// OpfsStorage: the default browser layout — WAL segments and table files in the origin private
// file system, written through sync access handles; the manifest in the "memwal" IndexedDB
// database. Dedicated workers only (that is where FileSystemSyncAccessHandle exists).

import { MemWalError, toMemWalError } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import { checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import {
  browserStorageEstimate,
  checkNotFenced,
  commitManifest,
  deleteStoreRecords,
  loadManifest,
  memwalDb,
  onDatabaseClosed,
} from './idb-db.js';
import { WriterSession } from './weblock.js';

/** `FileSystemSyncAccessHandle` (WebWorker lib; declared here so the DOM lib type-checks). */
interface SyncAccessHandle {
  read(buffer: Uint8Array, options?: { at?: number }): number;
  write(buffer: Uint8Array, options?: { at?: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

interface OpfsFile extends FileSystemFileHandle {
  createSyncAccessHandle(): Promise<SyncAccessHandle>;
}

interface OpfsDirectory extends FileSystemDirectoryHandle {
  keys(): AsyncIterable<string>;
}

/** The root directory of every store: `memwal/` in the origin private file system. */
const ROOT_DIR = 'memwal';
/** How long openStore retries a segment still open elsewhere when `timeoutMs` is undefined. */
const DEFAULT_SEGMENT_RETRY_MS = 10_000;

/** True where this context can use the OPFS layout: sync access handles and `getDirectory`. */
export function opfsSyncHandlesAvailable(): boolean {
  return (
    typeof (globalThis as { FileSystemSyncAccessHandle?: unknown }).FileSystemSyncAccessHandle === 'function' &&
    typeof (globalThis as { navigator?: Navigator }).navigator?.storage?.getDirectory === 'function'
  );
}

/** `memwal/` in OPFS; `NotSupported` where this context has no sync access handles. */
async function opfsRoot(): Promise<OpfsDirectory> {
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

/** Chromium's `base::File::FILE_ERROR_NO_SPACE`. */
const FILE_ERROR_NO_SPACE = -8;

/**
 * Checks a sync handle `write()` result. Chromium's in-memory OPFS (incognito and Playwright's
 * default off-the-record contexts) does not throw QuotaExceededError when full: `write()` returns
 * a negative `base::File::Error` wrapped to an unsigned 32-bit count (2^32 - 8 for NO_SPACE).
 */
function checkWritten(written: number, expected: number, context: string): void {
  if (written === expected) return;
  const fileError = written > expected ? written - 2 ** 32 : 0;
  if (fileError === FILE_ERROR_NO_SPACE) {
    throw new MemWalError('QuotaExceeded', `${context}: no space available (write returned file error ${fileError})`);
  }
  throw new MemWalError('IOError', `${context}: wrote ${fileError < 0 ? `file error ${fileError}` : written} of ${expected} bytes`);
}

const errorName = (e: unknown): string => (e as { name?: string } | null)?.name ?? '';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `dir.removeEntry(name, options)`; a missing entry is not an error. */
async function removeIfPresent(dir: FileSystemDirectoryHandle, name: string, context: string, recursive = false): Promise<void> {
  try {
    await dir.removeEntry(name, { recursive });
  } catch (e) {
    if (errorName(e) !== 'NotFoundError') throw toMemWalError(e, context);
  }
}

/**
 * The OPFS layout (SPEC §5). Files: `memwal/{store}/wal/{epoch}-{firstPosition}` (WAL segments)
 * and `memwal/{store}/tables/{name}`; the manifest is the `manifests` record of the "memwal"
 * IndexedDB database. The writer holds the Web Lock `memwal:{store}` and a `readwrite` sync access
 * handle (exclusive across contexts) on every segment: those opened at `openStore`, and each one it
 * creates, whose epoch it re-checks against the manifest after opening so that no stale append
 * lands. Every append is `write` + `flush()` (a real fdatasync). Dedicated workers only; elsewhere
 * `openStore` rejects `NotSupported`.
 */
export class OpfsStorage implements StorageAdapter {
  readonly layout = 'opfs';

  /**
   * Claims the writer lock (LockOptions: `Locked`, `Aborted`, `InvalidArgument`), then opens a
   * sync access handle on every existing segment, retrying `NoModificationAllowedError` (a
   * reloaded or stolen-from context still closing its handles) with backoff for `timeoutMs`
   * (undefined: 10 s; at least 10 s for a steal), then `Locked`. `NotSupported` outside dedicated workers.
   */
  async openStore(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const root = await opfsRoot();
    const started = Date.now();
    const session = await WriterSession.claim(name, options);
    const handle = new OpfsStoreHandle(session);
    try {
      const storeDir = await root.getDirectoryHandle(name, { create: true });
      const walDir = (await storeDir.getDirectoryHandle('wal', { create: true })) as OpfsDirectory;
      const tablesDir = (await storeDir.getDirectoryHandle('tables', { create: true })) as OpfsDirectory;
      await memwalDb();
      let retryMs = options.timeoutMs ?? DEFAULT_SEGMENT_RETRY_MS;
      if (options.steal) retryMs = Math.max(retryMs, DEFAULT_SEGMENT_RETRY_MS);
      await handle.open(walDir, tablesDir, started + retryMs, options.signal);
      return handle;
    } catch (e) {
      await handle.release();
      throw toMemWalError(e, `opening store "${name}"`);
    }
  }

  /** Deletes `memwal/{name}` and the store's manifest. Rejects `Locked` while a writer holds it. */
  async destroyStore(name: string): Promise<void> {
    const root = await opfsRoot();
    const session = await WriterSession.claim(name, { timeoutMs: 0 });
    try {
      await removeIfPresent(root, name, `destroying store "${name}"`, true);
      await deleteStoreRecords(name);
    } finally {
      await session.release();
    }
  }

  /** The origin's `navigator.storage` usage, quota and persistence. */
  estimate(): Promise<StorageEstimate> {
    return browserStorageEstimate();
  }
}

/** An open WAL segment: its exclusive sync handle, and whether its epoch was checked this session. */
interface Segment {
  sync: SyncAccessHandle;
  epochChecked: boolean;
}

class OpfsStoreHandle implements StoreHandle {
  private readonly store: string;
  private walDir!: OpfsDirectory;
  private tablesDir!: OpfsDirectory;
  /** Every segment this handle holds open, by name (a pending promise while one is being created). */
  private readonly segments = new Map<string, Promise<Segment>>();
  /** Segments this handle closed (removed): never reopened for writing in this session. */
  private readonly closedSegments = new Set<string>();
  /** Every sync handle open now, closed at once when the session ends or is lost. */
  private readonly openHandles = new Set<SyncAccessHandle>();
  /** The newest writer epoch this handle has seen in the manifest (load or commit). */
  private knownEpoch = 0;

  constructor(private readonly session: WriterSession) {
    this.store = session.store;
    session.onEnd(onDatabaseClosed((reason) => session.lose(reason)));
    session.onEnd(() => {
      for (const sync of this.openHandles) sync.close();
      this.openHandles.clear();
    });
  }

  /** Opens every existing segment exclusively, retrying handles still open elsewhere until `deadline`. */
  async open(walDir: OpfsDirectory, tablesDir: OpfsDirectory, deadline: number, signal?: AbortSignal): Promise<void> {
    this.walDir = walDir;
    this.tablesDir = tablesDir;
    for await (const name of walDir.keys()) {
      if (!parseSegmentName(name)) continue;
      const file = (await walDir.getFileHandle(name)) as OpfsFile;
      for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 500)) {
        this.session.check();
        if (signal?.aborted) throw new MemWalError('Aborted', `opening store "${this.store}" was aborted`);
        try {
          const sync = await this.track(file.createSyncAccessHandle());
          this.segments.set(name, Promise.resolve({ sync, epochChecked: false }));
          break;
        } catch (e) {
          if (errorName(e) !== 'NoModificationAllowedError') throw e;
          if (Date.now() + delayMs > deadline) {
            throw toMemWalError(e, `WAL segment ${name} is still open in another context (a writer that has not let go)`);
          }
          await sleep(delayMs);
        }
      }
    }
  }

  async manifestLoad(): Promise<Manifest | undefined> {
    this.session.check();
    const manifest = await loadManifest(this.store);
    this.knownEpoch = Math.max(this.knownEpoch, manifest?.writerEpoch ?? 0);
    return manifest;
  }

  async manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    this.session.check();
    await commitManifest(this.store, expectedVersion, next);
    this.knownEpoch = Math.max(this.knownEpoch, next.writerEpoch);
  }

  async walList(): Promise<WalSegmentInfo[]> {
    this.session.check();
    const list: WalSegmentInfo[] = [];
    for (const [name, pending] of this.segments) {
      const segment = await pending.catch(() => undefined);
      const parsed = parseSegmentName(name);
      if (segment && parsed && this.segments.get(name) === pending) {
        list.push({ name, ...parsed, bytes: segment.sync.getSize() });
      }
    }
    this.session.check();
    return list;
  }

  async walRead(name: string, offset = 0): Promise<Uint8Array> {
    const { sync } = await this.segment(name);
    return this.io(`reading WAL segment ${name}`, () => {
      const length = sync.getSize();
      if (!(offset >= 0 && offset <= length)) {
        throw new MemWalError('IOError', `WAL segment ${name}: read offset ${offset} is outside 0..${length}`);
      }
      const bytes = new Uint8Array(length - offset);
      const read = sync.read(bytes, { at: offset });
      if (read !== bytes.length) throw new MemWalError('IOError', `WAL segment ${name}: read ${read} of ${bytes.length} bytes`);
      return bytes;
    });
  }

  async walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    const parsed = parseSegmentName(name);
    if (!parsed) throw new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`);
    this.session.check();
    checkNotFenced(this.knownEpoch, name, parsed.epoch);
    let pending = this.segments.get(name);
    if (!pending) {
      if (offset !== 0)
        throw new MemWalError('IOError', `WAL segment ${name}: append at offset ${offset}, but its length is none (missing)`);
      if (this.closedSegments.has(name)) {
        throw new MemWalError('IOError', `WAL segment ${name} was closed in this session; a writer never reopens a segment`);
      }
      pending = this.createSegment(name);
      this.segments.set(name, pending);
      pending.catch(() => this.segments.get(name) === pending && this.segments.delete(name));
    }
    const segment = await pending;
    this.session.check();
    if (!segment.epochChecked) {
      // The handle is exclusive: once the epoch is still ours after opening it, no newer writer
      // can have read this segment, and none can open it until we close it.
      const stored = await loadManifest(this.store);
      this.session.check();
      try {
        checkNotFenced(stored?.writerEpoch, name, parsed.epoch);
      } catch (e) {
        if (segment.sync.getSize() === 0) await this.walRemove(name);
        throw e;
      }
      segment.epochChecked = true;
    }
    const { sync } = segment;
    this.io(`WAL append to ${name}`, () => {
      const length = sync.getSize();
      if (offset !== length) {
        throw new MemWalError('IOError', `WAL segment ${name}: append at offset ${offset}, but its length is ${length}`);
      }
      try {
        checkWritten(sync.write(bytes, { at: offset }), bytes.length, `WAL segment ${name}`);
        sync.flush();
      } catch (e) {
        // Leave the segment as it was, so the append can be retried at the same offset.
        try {
          sync.truncate(offset);
          sync.flush();
        } catch {
          // The append's own error is the one to report; the engine truncates before retrying.
        }
        throw e;
      }
    });
  }

  async walTruncate(name: string, length: number): Promise<void> {
    const { sync } = await this.segment(name);
    this.io(`truncating WAL segment ${name}`, () => {
      const current = sync.getSize();
      if (!(Number.isSafeInteger(length) && length >= 0 && length <= current)) {
        throw new MemWalError('InvalidArgument', `WAL segment ${name}: cannot truncate ${current} bytes to ${length}`);
      }
      sync.truncate(length);
      sync.flush();
    });
  }

  async walRemove(name: string): Promise<void> {
    this.session.check();
    const pending = this.segments.get(name);
    this.segments.delete(name);
    this.closedSegments.add(name);
    const segment = await pending?.catch(() => undefined);
    if (segment) {
      this.openHandles.delete(segment.sync);
      segment.sync.close();
    }
    this.session.check();
    await removeIfPresent(this.walDir, name, `removing WAL segment ${name}`);
  }

  /** Writes through a sync handle, flushes and closes it; on failure removes the partial file. */
  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    this.session.check();
    const context = `writing table file ${name}`;
    try {
      await this.tablesDir.getFileHandle(name);
      throw new MemWalError('IOError', `table file ${name} already exists`);
    } catch (e) {
      if (errorName(e) !== 'NotFoundError') throw toMemWalError(e, context);
    }
    let sync: SyncAccessHandle | undefined;
    try {
      const file = (await this.tablesDir.getFileHandle(name, { create: true })) as OpfsFile;
      sync = await this.track(file.createSyncAccessHandle());
      let at = 0;
      for await (const chunk of chunks) {
        this.session.check();
        checkWritten(sync.write(chunk, { at }), chunk.length, `table file ${name}`);
        // Flush per chunk: each sync slice stays short (stats keep answering), and sequential
        // 1 MiB flushes cost about what one flush at the end does (docs/benchmarks.md).
        sync.flush();
        at += chunk.length;
      }
      this.session.check();
      sync.flush();
    } catch (e) {
      this.untrack(sync);
      sync = undefined;
      if (this.session.live) await removeIfPresent(this.tablesDir, name, context).catch(() => undefined);
      throw toMemWalError(e, context);
    } finally {
      this.untrack(sync);
    }
  }

  async tableRead(name: string): Promise<Uint8Array> {
    this.session.check();
    try {
      const file = await (await this.tablesDir.getFileHandle(name)).getFile();
      return new Uint8Array(await file.arrayBuffer());
    } catch (e) {
      if (errorName(e) === 'NotFoundError') throw new MemWalError('IOError', `table file ${name} does not exist`, { cause: e });
      throw toMemWalError(e, `reading table file ${name}`);
    }
  }

  /** A ranged read (for now the whole file is read and sliced). */
  async tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    checkRange(name, offset, length);
    const whole = await this.tableRead(name);
    checkInside(name, offset, length, whole.length);
    return whole.slice(offset, offset + length);
  }

  async tableList(): Promise<string[]> {
    this.session.check();
    const names: string[] = [];
    try {
      for await (const name of this.tablesDir.keys()) names.push(name);
    } catch (e) {
      throw toMemWalError(e, 'listing table files');
    }
    return names;
  }

  async tableRemove(name: string): Promise<void> {
    this.session.check();
    await removeIfPresent(this.tablesDir, name, `removing table file ${name}`);
  }

  release(): Promise<void> {
    return this.session.release();
  }

  /** Creates segment `name`, opens it exclusively and checks its epoch against the manifest. */
  private async createSegment(name: string): Promise<Segment> {
    const context = `creating WAL segment ${name}`;
    let sync: SyncAccessHandle;
    try {
      const file = (await this.walDir.getFileHandle(name, { create: true })) as OpfsFile;
      sync = await this.track(file.createSyncAccessHandle());
    } catch (e) {
      throw toMemWalError(e, context);
    }
    return { sync, epochChecked: false };
  }

  /** The open segment `name`; `IOError` when this store has no such segment. */
  private async segment(name: string): Promise<Segment> {
    this.session.check();
    const pending = this.segments.get(name);
    if (!pending) throw new MemWalError('IOError', `WAL segment ${name} does not exist`);
    const segment = await pending;
    this.session.check();
    return segment;
  }

  /** Registers a sync handle being opened, so that loss or release closes it; `Fenced`/`Closed` if already ended. */
  private async track(opening: Promise<SyncAccessHandle>): Promise<SyncAccessHandle> {
    const sync = await opening;
    if (!this.session.live) {
      sync.close();
      this.session.check();
    }
    this.openHandles.add(sync);
    return sync;
  }

  private untrack(sync: SyncAccessHandle | undefined): void {
    if (sync && this.openHandles.delete(sync)) sync.close();
  }

  /** Runs synchronous handle I/O with the session checked and errors mapped. */
  private io<T>(context: string, work: () => T): T {
    this.session.check();
    try {
      return work();
    } catch (e) {
      throw toMemWalError(e, context);
    }
  }
}
