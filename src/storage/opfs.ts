// OpfsStorage: the default browser layout — WAL segments and table files in the origin private
// file system, written through sync access handles; the manifest in the "memwal" IndexedDB
// database. Dedicated workers only (that is where FileSystemSyncAccessHandle exists).

import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { checkRange, parseSegmentName, tableChunks } from './adapter.js';
import type { LockOptions, StorageAdapter, StorageEstimate, StoreHandle, WalSegmentInfo } from './adapter.js';
import { browserStorageEstimate, commitManifest, deleteStoreRecords, loadManifest, memwalDb, onDatabaseClosed } from './idb-db.js';
import { WriterSession } from './weblock.js';
import { checkEpoch, checkSegmentEpoch } from './fencing.js';
import { readTableRange, readWholeTable, TableReaders } from './opfs-readers.js';
import {
  appendToSegment,
  checkWritten,
  DEFAULT_SEGMENT_RETRY_MS,
  errorName,
  listNames,
  type OpfsDirectory,
  openSyncAccessHandle,
  opfsRoot,
  removeIfPresent,
  removeWhenLetGo,
  SYNC_OPEN_LIMIT_MS,
  type SyncAccessHandle,
  sleep,
  TABLES_DIR,
} from './opfs-files.js';

/**
 * What this adapter needs of a table writer thread (`TableWriterClient`, io-worker/table-writer.ts):
 * whether it serves yet, and the writes of a new, empty file, from bytes handed over (their
 * buffer taken) or from a table the thread built and keeps.
 */
export interface OpfsTableWriter {
  readonly usable: boolean;
  write(file: FileSystemFileHandle, bytes: Uint8Array): Promise<void>;
  writeKept(file: FileSystemFileHandle, table: number): Promise<void>;
}

/**
 * The OPFS layout (docs/format.md). Files: `memwal/{store}/wal/{epoch}-{firstPosition}` (WAL segments)
 * and `memwal/{store}/tables/{name}`; the manifest is the `manifests` record of the "memwal"
 * IndexedDB database. The writer holds the Web Lock `memwal:{store}` and a `readwrite` sync access
 * handle (exclusive across contexts) on every segment it lists or creates; it re-checks a
 * segment's epoch against the manifest after opening it, so that no stale append lands. Every
 * append is `write` + `flush()` (a real fdatasync). Dedicated workers only; elsewhere `openStore`
 * rejects `NotSupported`.
 */
export class OpfsStorage implements StorageAdapter {
  readonly layout = 'opfs';

  /** `tableWriter`: the port to a thread that writes table files handed over whole (`OpfsStoreHandle.tableWriteBytes`). */
  constructor(private readonly options: { tableWriter?: OpfsTableWriter } = {}) {}

  /**
   * Claims the writer lock (LockOptions: `Locked`, `Aborted`, `InvalidArgument`) and opens the
   * store's directories; segments are listed and opened by `walList`, after the caller's claim.
   * A segment still open elsewhere (a reloaded or stolen-from context closing its handles) is
   * retried with backoff for `timeoutMs` (undefined: 10 s; at least 10 s for a steal), then
   * `Locked`. `NotSupported` outside dedicated workers.
   */
  async openStore(name: string, options: LockOptions = {}): Promise<OpfsStoreHandle> {
    const root = await opfsRoot();
    let retryMs = options.timeoutMs ?? DEFAULT_SEGMENT_RETRY_MS;
    if (options.steal) retryMs = Math.max(retryMs, DEFAULT_SEGMENT_RETRY_MS);
    const session = await WriterSession.claim(name, options);
    try {
      const storeDir = await root.getDirectoryHandle(name, { create: true });
      const walDir = (await storeDir.getDirectoryHandle('wal', { create: true })) as OpfsDirectory;
      const tablesDir = (await storeDir.getDirectoryHandle(TABLES_DIR, { create: true })) as OpfsDirectory;
      await memwalDb();
      session.check();
      return new OpfsStoreHandle(session, walDir, tablesDir, retryMs, this.options.tableWriter);
    } catch (e) {
      await session.release();
      throw toMemWalError(e, `opening store "${name}"`);
    }
  }

  /** Deletes `memwal/{name}` and the store's manifest. Rejects `Locked` while a writer holds it. */
  async destroyStore(name: string): Promise<void> {
    const root = await opfsRoot();
    await WriterSession.whileHeld(name, async () => {
      await removeWhenLetGo(root, name, `destroying store "${name}"`, DEFAULT_SEGMENT_RETRY_MS, true);
      await deleteStoreRecords(name);
    });
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

/**
 * Fencing in this layout (docs/impl.md, "Fencing"). This handle's epoch is that of the newest manifest it
 * committed. Why each check is enough:
 * - `manifestCommit` compares epochs inside the manifest's own IndexedDB transaction: atomic.
 * - WAL segments are held through `readwrite` sync handles, exclusive across contexts, and a newer
 *   writer reads a segment only after opening it the same way (`walList`, retried until we let go).
 *   So whatever this handle does to a segment it holds happens before any newer writer reads it.
 *   An append lands only after the segment's epoch was re-read unchanged with the handle held, so
 *   the successor lists and replays it; a truncate or remove is refused once the manifest shows a
 *   newer epoch, and one that races a claim still precedes the successor's first read of it.
 * - Table files are not exclusive. A write checks the epoch before it starts and again after its
 *   flush (and then deletes its file): a file written under a stale epoch is never named by a
 *   manifest (its commit is fenced) and is swept as an orphan. A remove checks first; the engine
 *   removes only files that no manifest at or after its own names, so a remove racing a claim
 *   cannot take a file the successor uses.
 * Beyond the contract it appends in parts (`walAppendParts`) and writes tables handed over whole or
 * kept on the table writer thread (`tableWriteBytes`, `tableWriteKept`): its I/O plane's paths
 * (io-worker/opfs-plane.ts).
 */
export class OpfsStoreHandle implements StoreHandle {
  private readonly store: string;
  /** Every segment this handle holds open, by name (a pending promise while one is being opened). */
  private readonly segments = new Map<string, Promise<Segment>>();
  /** Segments this handle removed: never reopened in this session. */
  private readonly closedSegments = new Set<string>();
  /** Read-only handles on table files. */
  private readonly readers: TableReaders;
  /** Table writes on the writer thread now (each holds its file's sync handle there). */
  private readonly writing = new Set<Promise<void>>();
  /** Every sync handle open now, closed at once when the session ends or is lost. */
  private readonly openHandles = new Set<SyncAccessHandle>();
  /** The newest writer epoch this handle has seen in the manifest (load or commit): appends below it are stale. */
  private knownEpoch = 0;
  /** The writer epoch of the newest manifest this handle committed (0: none yet); fences mutations. */
  private epoch = 0;

  constructor(
    private readonly session: WriterSession,
    private readonly walDir: OpfsDirectory,
    private readonly tablesDir: OpfsDirectory,
    private readonly segmentRetryMs: number,
    private readonly tableWriter: OpfsTableWriter | undefined,
  ) {
    this.store = session.store;
    this.readers = new TableReaders(
      async (name) => {
        try {
          return await openSyncAccessHandle(await this.tablesDir.getFileHandle(name), 'read-only');
        } catch (e) {
          if (errorName(e) === 'NotFoundError') throw new MemWalError('IOError', `table file ${name} does not exist`, { cause: e });
          throw toMemWalError(e, `reading table file ${name}`);
        }
      },
      () => this.session.check(),
    );
    session.onEnd(onDatabaseClosed((reason) => session.lose(reason)));
    session.onEnd(() => {
      for (const sync of this.openHandles) sync.close();
      this.openHandles.clear();
      this.readers.closeAll();
    });
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
    this.epoch = next.writerEpoch;
    this.knownEpoch = Math.max(this.knownEpoch, next.writerEpoch);
  }

  /**
   * Lists `wal/` now (docs/format.md) and opens every segment found that this
   * handle does not hold yet, retrying one still open elsewhere (`Locked` after the retry time).
   * A segment removed meanwhile is left out.
   */
  async walList(): Promise<WalSegmentInfo[]> {
    this.session.check();
    const names = (await listNames(this.walDir, 'listing WAL segments')).filter(
      (name) => parseSegmentName(name) && !this.closedSegments.has(name),
    );
    const held = await Promise.all(
      names.map((name) =>
        this.openSegment(name, false).then(
          (segment) => ({ name, segment }),
          (e: unknown) => {
            if (e instanceof MemWalError && e.cause && errorName(e.cause) === 'NotFoundError') return undefined;
            throw e;
          },
        ),
      ),
    );
    this.session.check();
    const list: WalSegmentInfo[] = [];
    for (const entry of held) {
      if (entry) list.push({ name: entry.name, ...parseSegmentName(entry.name)!, bytes: entry.segment.sync.getSize() });
    }
    return list;
  }

  async walRead(name: string, offset = 0): Promise<Uint8Array> {
    const { sync } = await this.openSegment(name, false);
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

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.walAppendParts(name, offset, [bytes]);
  }

  /** `walAppend` of the bytes of `parts` in order, each written at its offset: no joined copy. */
  async walAppendParts(name: string, offset: number, parts: readonly Uint8Array[]): Promise<void> {
    const parsed = parseSegmentName(name);
    if (!parsed) throw new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`);
    this.session.check();
    checkSegmentEpoch(name, parsed.epoch, this.knownEpoch);
    const segment = await this.openSegment(name, offset === 0);
    this.session.check();
    if (!segment.epochChecked) {
      // The handle is exclusive: once the epoch is still ours after opening it, no newer writer
      // can have read this segment, and none can open it until we close it.
      const stored = await loadManifest(this.store);
      this.session.check();
      try {
        checkSegmentEpoch(name, parsed.epoch, stored?.writerEpoch);
      } catch (e) {
        // A segment this call created: leave nothing behind.
        if (segment.sync.getSize() === 0) await this.dropSegment(name);
        throw e;
      }
      segment.epochChecked = true;
    }
    this.io(`WAL append to ${name}`, () => appendToSegment(segment.sync, name, offset, parts));
  }

  async walTruncate(name: string, length: number): Promise<void> {
    const { sync } = await this.openSegment(name, false);
    await this.fence(`WAL truncate of ${name}`);
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
    await this.fence(`WAL remove of ${name}`);
    await this.dropSegment(name);
  }

  /**
   * Writes through a sync handle, flushing each chunk, and closes it; on failure (or a newer
   * epoch seen after the flush: `Fenced`) removes the file.
   */
  async tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    await this.writeNewTable(name, async (file, context) => {
      let sync: SyncAccessHandle | undefined;
      try {
        sync = await this.track(openSyncAccessHandle(file));
        let at = 0;
        for await (const chunk of chunks) {
          this.session.check();
          checkWritten(sync.write(chunk, { at }), chunk.length, `table file ${name}`);
          // Flush per chunk: each sync slice stays short (stats keep answering), and sequential
          // 1 MiB flushes cost about what one flush at the end does (bench/results/HISTORY.md).
          sync.flush();
          at += chunk.length;
        }
        this.session.check();
        sync.flush();
      } catch (e) {
        throw toMemWalError(e, context);
      } finally {
        this.untrack(sync);
      }
    });
  }

  /**
   * `tableWrite` of bytes handed over whole: on the table writer thread when this adapter has one
   * that said it is ready (their buffer is then detached here), else as `tableWrite` in chunks.
   */
  async tableWriteBytes(name: string, bytes: Uint8Array): Promise<void> {
    const writer = this.tableWriter;
    if (!writer?.usable) return this.tableWrite(name, tableChunks(bytes));
    await this.writeOnWriter(name, (file) => writer.write(file, bytes));
  }

  /**
   * `tableWriteBytes` of the table the table writer thread built and keeps under `table`: written
   * there, under the same checks (`IOError` when this adapter has no writer thread).
   */
  async tableWriteKept(name: string, table: number): Promise<void> {
    const writer = this.tableWriter;
    if (!writer) throw new MemWalError('IOError', `table file ${name}: no table writer thread keeps built table ${table}`);
    await this.writeOnWriter(name, (file) => writer.writeKept(file, table));
  }

  /** Creates table file `name` (`writeNewTable`) and has the writer thread fill it with `write`, tracked for `release`. */
  private async writeOnWriter(name: string, write: (file: FileSystemFileHandle) => Promise<void>): Promise<void> {
    await this.writeNewTable(name, async (file, context) => {
      this.session.check();
      const written = write(file);
      this.writing.add(written);
      try {
        await written;
      } catch (e) {
        throw toMemWalError(e, context);
      } finally {
        this.writing.delete(written);
      }
      this.session.check();
    });
  }

  /**
   * Creates table file `name` (fenced before; `IOError` if it exists) and has `write` fill and
   * flush it; fenced again after. On failure (or a newer epoch seen after the flush: `Fenced`)
   * removes the file.
   */
  private async writeNewTable(name: string, write: (file: FileSystemFileHandle, context: string) => Promise<void>): Promise<void> {
    this.session.check();
    const context = `writing table file ${name}`;
    await this.fence(context);
    try {
      await this.tablesDir.getFileHandle(name);
      throw new MemWalError('IOError', `table file ${name} already exists`);
    } catch (e) {
      if (errorName(e) !== 'NotFoundError') throw toMemWalError(e, context);
    }
    try {
      const file = await this.tablesDir.getFileHandle(name, { create: true });
      await write(file, context);
      // A newer writer that claimed meanwhile never names this file; leave nothing behind.
      await this.fence(context);
    } catch (e) {
      if (this.session.live) await removeIfPresent(this.tablesDir, name, context).catch(() => undefined);
      throw toMemWalError(e, context);
    }
  }

  /** The whole table file, read through a kept read-only handle. */
  async tableRead(name: string): Promise<Uint8Array> {
    return this.readTable(name, (sync) => readWholeTable(sync, name));
  }

  /** `length` bytes at `offset` through a kept read-only handle: one synchronous read, no other I/O. */
  async tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    checkRange(name, offset, length);
    return this.readTable(name, (sync) => readTableRange(sync, name, offset, length));
  }

  async tableList(): Promise<string[]> {
    this.session.check();
    return listNames(this.tablesDir, 'listing table files');
  }

  async tableRemove(name: string): Promise<void> {
    this.session.check();
    const context = `removing table file ${name}`;
    await this.fence(context);
    await this.readers.close(name);
    await removeWhenLetGo(this.tablesDir, name, context, this.segmentRetryMs, false, () => this.session.check());
  }

  /**
   * Ends the session once no table write of this handle is still on the writer thread (its file
   * open there), or after `SYNC_OPEN_LIMIT_MS` of waiting for them (a successor removes such a
   * file with backoff).
   */
  async release(): Promise<void> {
    const until = Date.now() + SYNC_OPEN_LIMIT_MS;
    while (this.writing.size > 0 && Date.now() < until) {
      await Promise.race([Promise.allSettled([...this.writing]), sleep(Math.max(0, until - Date.now()))]);
    }
    return this.session.release();
  }

  /**
   * The open segment `name`, opening it exclusively if this handle does not hold it (`create`:
   * creating it if missing). One still open elsewhere is retried with backoff for the store's
   * retry time, then `Locked`; a missing one rejects `IOError` (its cause a `NotFoundError`).
   */
  private openSegment(name: string, create: boolean): Promise<Segment> {
    this.session.check();
    const held = this.segments.get(name);
    if (held) return held;
    if (this.closedSegments.has(name)) {
      return Promise.reject(
        new MemWalError('IOError', `WAL segment ${name} was removed in this session; a writer never reopens a segment`),
      );
    }
    const context = `opening WAL segment ${name}`;
    const pending = (async (): Promise<Segment> => {
      const deadline = Date.now() + this.segmentRetryMs;
      let file: FileSystemFileHandle;
      try {
        file = await this.walDir.getFileHandle(name, { create });
      } catch (e) {
        if (errorName(e) === 'NotFoundError') throw new MemWalError('IOError', `WAL segment ${name} does not exist`, { cause: e });
        throw toMemWalError(e, context);
      }
      for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 500)) {
        this.session.check();
        try {
          return { sync: await this.track(openSyncAccessHandle(file)), epochChecked: false };
        } catch (e) {
          if (errorName(e) !== 'NoModificationAllowedError' || Date.now() + delayMs > deadline) {
            throw toMemWalError(e, `${context} (still open in another context: a writer that has not let go?)`);
          }
          await sleep(delayMs);
        }
      }
    })();
    this.segments.set(name, pending);
    pending.catch(() => this.segments.get(name) === pending && this.segments.delete(name));
    return pending;
  }

  /** Closes segment `name` (never reopened in this session) and deletes its file. */
  private async dropSegment(name: string): Promise<void> {
    const pending = this.segments.get(name);
    this.segments.delete(name);
    this.closedSegments.add(name);
    this.untrack((await pending?.catch(() => undefined))?.sync);
    this.session.check();
    await removeIfPresent(this.walDir, name, `removing WAL segment ${name}`);
  }

  /** Runs `read` on a kept read-only handle of table file `name` (`IOError` when it is missing). */
  private readTable<T>(name: string, read: (sync: SyncAccessHandle) => T): Promise<T> {
    return this.readers.read(name, (sync) => this.io(`reading table file ${name}`, () => read(sync)));
  }

  /**
   * Rejects `Fenced` if the stored manifest's epoch is newer than the newest this handle
   * committed (see the class comment for why a check outside the mutation's I/O is enough here).
   */
  private async fence(what: string): Promise<void> {
    this.session.check();
    const stored = (await loadManifest(this.store))?.writerEpoch ?? 0;
    this.session.check();
    this.knownEpoch = Math.max(this.knownEpoch, stored);
    checkEpoch(what, this.epoch, stored);
  }

  /** Registers a sync handle being opened, so that loss or release closes it; `Fenced`/`Closed` if already ended. */
  private async track(open: Promise<SyncAccessHandle>): Promise<SyncAccessHandle> {
    const sync = await open;
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
