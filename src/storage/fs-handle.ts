// FileStorage's open store (fs.ts): the holder of a store's LOCK and the WAL, table and manifest
// operations on its files, fenced by the epoch of the newest manifest it committed. Written
// against the shim of fs-shim.ts. Imports no runtime module.

import { MemWalError, toMemWalError } from '../util/errors.js';
import { checkManifest } from '../format/manifest/manifest.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { checkAppendOffset, checkInside, checkRange, parseSegmentName } from './adapter.js';
import type { StoreHandle, WalSegmentInfo } from './adapter.js';
import {
  checkEpoch,
  checkManifestSuccessor,
  checkSegmentEpoch,
  commitRefusal,
  decideManifestCommit,
  type StoredVersion,
} from './fencing.js';
import { type HeldLock, type LockFile, liveLocks } from './fs-lock.js';
import {
  checkComponent,
  type FileSystemShim,
  isErrno,
  listDir,
  readFrom,
  type ShimFile,
  tempName,
  unlinkIfPresent,
  writeNewFile,
} from './fs-shim.js';

/**
 * One open store: the holder of its LOCK (kept open: every `lockWatchMs` it refreshes the LOCK's
 * modification time and checks the LOCK still holds its token), with the segment files it
 * appends to kept open.
 */
export class FileStoreHandle implements StoreHandle {
  private state: 'open' | 'released' | 'lost' = 'open';
  private readonly token: string;
  private readonly lockFile: ShimFile;
  private readonly segments = new Map<string, { file: ShimFile; length: number }>();
  /** Manifest files never change once linked, so one (version, epoch) pair can be remembered. */
  private known = { version: 0, epoch: 0 };
  /** The writer epoch of the newest manifest this handle committed (0: none yet); fences mutations. */
  private epoch = 0;
  private readonly watch: ReturnType<typeof setInterval>;
  private watching = false;

  constructor(
    private readonly fs: FileSystemShim,
    private readonly dir: string,
    private readonly lock: LockFile,
    held: HeldLock,
    private readonly onLost: ((reason: string) => void) | undefined,
    lockWatchMs: number,
    private readonly manifestVersionsKept: number,
  ) {
    this.token = held.token;
    this.lockFile = held.file;
    liveLocks.set(this.token, { lost: (reason) => this.lose(reason) });
    this.watch = setInterval(() => void this.checkLock(), lockWatchMs);
    fs.unrefTimer(this.watch);
  }

  manifestLoad(): Promise<Manifest | undefined> {
    return this.op('manifest load', async () => {
      const latest = await this.latestVersion();
      return latest === 0 ? undefined : await this.readManifest(latest);
    });
  }

  manifestCommit(expectedVersion: number, next: Manifest): Promise<void> {
    return this.op('manifest commit', async () => {
      checkManifestSuccessor(expectedVersion, next);
      const versions = await this.versions();
      decideManifestCommit(expectedVersion, next, await this.stored(versions.at(-1) ?? 0));
      for (const v of versions) {
        if (v > next.version - this.manifestVersionsKept) break;
        await unlinkIfPresent(this.fs, this.manifestPath(v));
      }
      const temp = `${this.dir}/manifest/${tempName(this.fs, '', 'tmp')}`;
      await writeNewFile(this.fs, temp, new TextEncoder().encode(JSON.stringify(next)), true);
      try {
        await this.fs.link(temp, this.manifestPath(next.version));
      } catch (e) {
        if (isErrno(e, 'EEXIST')) throw commitRefusal(expectedVersion, next.writerEpoch, await this.stored(next.version));
        throw e;
      } finally {
        await unlinkIfPresent(this.fs, temp);
      }
      await this.fs.syncDir(`${this.dir}/manifest`);
      this.known = { version: next.version, epoch: next.writerEpoch };
      // Linking succeeds where a newer writer already pruned this version: then it is not the
      // newest, never loaded, and must not be acknowledged.
      const newest = await this.latestVersion();
      if (newest !== next.version) throw commitRefusal(expectedVersion, next.writerEpoch, await this.stored(newest));
      this.epoch = next.writerEpoch;
    });
  }

  walList(): Promise<WalSegmentInfo[]> {
    return this.op('WAL list', async () => {
      const list: WalSegmentInfo[] = [];
      for (const name of await listDir(this.fs, `${this.dir}/wal`)) {
        const parsed = parseSegmentName(name);
        if (!parsed) continue;
        try {
          const { size } = await this.fs.stat(this.walPath(name));
          list.push({ name, ...parsed, bytes: size });
        } catch (e) {
          if (!isErrno(e, 'ENOENT')) throw e;
        }
      }
      return list;
    });
  }

  walRead(name: string, offset = 0): Promise<Uint8Array> {
    return this.op(`WAL read of ${name}`, async () => {
      checkComponent(name, 'WAL segment');
      return await this.readExisting(this.walPath(name), offset, `WAL segment ${name}`);
    });
  }

  walAppend(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.op(`WAL append to ${name}`, async () => {
      const parsed = parseSegmentName(name);
      if (!parsed) throw new MemWalError('InvalidArgument', `"${name}" is not a WAL segment name`);
      await this.checkSegmentEpoch(parsed.epoch, name);
      const seg = this.segments.get(name) ?? (await this.openSegment(name, offset === 0));
      checkAppendOffset(name, offset, seg.length);
      try {
        await seg.file.write(bytes, offset);
        await seg.file.datasync();
      } catch (e) {
        // The length on disk is unknown now: the next operation reopens the file.
        this.segments.delete(name);
        await seg.file.close().catch(() => undefined);
        throw e;
      }
      seg.length = offset + bytes.length;
      await this.checkSegmentEpoch(parsed.epoch, name);
    });
  }

  walTruncate(name: string, length: number): Promise<void> {
    return this.op(`WAL truncate of ${name}`, async () => {
      checkComponent(name, 'WAL segment');
      await this.fence(`WAL truncate of ${name}`);
      const seg = this.segments.get(name) ?? (await this.openSegment(name, false));
      if (!(Number.isSafeInteger(length) && length >= 0 && length <= seg.length)) {
        throw new MemWalError('InvalidArgument', `WAL segment ${name}: cannot truncate ${seg.length} bytes to ${length}`);
      }
      await seg.file.truncate(length);
      await seg.file.sync();
      seg.length = length;
    });
  }

  walRemove(name: string): Promise<void> {
    return this.op(`WAL remove of ${name}`, async () => {
      checkComponent(name, 'WAL segment');
      await this.fence(`WAL remove of ${name}`);
      await this.closeSegment(name);
      await unlinkIfPresent(this.fs, this.walPath(name));
      await this.fs.syncDir(`${this.dir}/wal`);
    });
  }

  tableWrite(name: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    return this.op(`table write of ${name}`, async () => {
      checkComponent(name, 'table file');
      await this.fence(`table write of ${name}`);
      const path = this.tablePath(name);
      let file: ShimFile;
      try {
        file = await this.fs.open(path, 'wx');
      } catch (e) {
        if (isErrno(e, 'EEXIST')) throw new MemWalError('IOError', `table file ${name} already exists`, { cause: e });
        throw e;
      }
      let open = true;
      try {
        let at = 0;
        for await (const chunk of chunks) {
          await file.write(chunk, at);
          at += chunk.length;
        }
        await file.sync();
        open = false;
        await file.close();
        await this.fs.syncDir(`${this.dir}/tables`);
        // A newer writer that claimed meanwhile never names this file; leave nothing behind.
        await this.fence(`table write of ${name}`);
      } catch (e) {
        if (open) await file.close().catch(() => undefined);
        await unlinkIfPresent(this.fs, path).catch(() => undefined);
        throw e;
      }
    });
  }

  tableRead(name: string): Promise<Uint8Array> {
    return this.op(`table read of ${name}`, async () => {
      checkComponent(name, 'table file');
      return await this.readExisting(this.tablePath(name), 0, `table file ${name}`);
    });
  }

  tableReadRange(name: string, offset: number, length: number): Promise<Uint8Array> {
    return this.op(`table read of ${name} at ${offset}`, async () => {
      checkComponent(name, 'table file');
      checkRange(name, offset, length);
      let file: ShimFile;
      try {
        file = await this.fs.open(this.tablePath(name), 'r');
      } catch (e) {
        if (isErrno(e, 'ENOENT')) throw new MemWalError('IOError', `table file ${name} does not exist`, { cause: e });
        throw e;
      }
      try {
        checkInside(name, offset, length, await file.size());
        const out = new Uint8Array(length);
        let at = 0;
        while (at < length) {
          const n = await file.read(out.subarray(at), offset + at);
          if (n === 0) throw new MemWalError('IOError', `table file ${name}: read ${at} of ${length} bytes at ${offset}`);
          at += n;
        }
        return out;
      } finally {
        await file.close();
      }
    });
  }

  tableList(): Promise<string[]> {
    return this.op('table list', () => listDir(this.fs, `${this.dir}/tables`));
  }

  tableRemove(name: string): Promise<void> {
    return this.op(`table remove of ${name}`, async () => {
      checkComponent(name, 'table file');
      await this.fence(`table remove of ${name}`);
      await unlinkIfPresent(this.fs, this.tablePath(name));
      await this.fs.syncDir(`${this.dir}/tables`);
    });
  }

  async release(): Promise<void> {
    if (this.state === 'released') return;
    const held = this.state === 'open';
    if (held) this.state = 'released';
    clearInterval(this.watch);
    await this.closeSegments();
    if (held) await this.lock.removeIf(this.token).catch(() => undefined);
    liveLocks.delete(this.token);
    // Only now: closing gives up our flock, which tells waiters of other processes we are gone.
    await this.lockFile.close().catch(() => undefined);
  }

  /** The lock was stolen: stop writing at once (every later operation rejects `Fenced`). */
  private lose(reason: string): void {
    if (this.state !== 'open') return;
    this.state = 'lost';
    clearInterval(this.watch);
    liveLocks.delete(this.token);
    void this.closeSegments();
    void this.lockFile.close().catch(() => undefined);
    const onLost = this.onLost;
    if (onLost) queueMicrotask(() => onLost(reason));
  }

  /** The watch: the heartbeat, then another token in the LOCK file means the lock was stolen. */
  private async checkLock(): Promise<void> {
    if (this.watching || this.state !== 'open') return;
    this.watching = true;
    try {
      await this.lockFile.touch().catch(() => undefined);
      const holder = await this.lock.read();
      if (typeof holder === 'object' && holder.token !== this.token) this.lose('stolen');
    } catch {
      // A failed look is retried at the next tick; it changes nothing.
    } finally {
      this.watching = false;
    }
  }

  /** Rejects `Fenced` if the newest manifest's epoch is newer than `epoch` (a segment's). */
  private async checkSegmentEpoch(epoch: number, name: string): Promise<void> {
    checkSegmentEpoch(name, epoch, await this.newestEpoch());
  }

  /**
   * Rejects `Fenced` if the newest manifest's epoch is newer than this handle's. Called before
   * every mutation other than an append (which checks its segment's epoch before and after).
   * Between the check and the mutation another process may claim: the engine's recovery never
   * depends on an older writer's segment staying as it read it (docs/impl.md, "Fencing").
   */
  private async fence(what: string): Promise<void> {
    checkEpoch(what, this.epoch, await this.newestEpoch());
  }

  /** The writer epoch of the newest manifest (0: none yet). */
  private async newestEpoch(): Promise<number> {
    const latest = await this.latestVersion();
    return latest === 0 ? 0 : this.epochOf(latest);
  }

  /** The manifest `version` as a commit decision needs it (undefined for 0: none). */
  private async stored(version: number): Promise<StoredVersion> {
    return version === 0 ? undefined : { version, writerEpoch: await this.epochOf(version) };
  }

  private async epochOf(version: number): Promise<number> {
    if (this.known.version !== version) {
      this.known = { version, epoch: (await this.readManifest(version)).writerEpoch };
    }
    return this.known.epoch;
  }

  private async readManifest(version: number): Promise<Manifest> {
    const bytes = await readFrom(this.fs, this.manifestPath(version), 0);
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      throw new MemWalError('Corruption', `manifest version ${version} is not JSON`, { cause: e });
    }
    const m = checkManifest(value);
    if (m.version !== version) throw new MemWalError('Corruption', `manifest file ${version}.json holds version ${m.version}`);
    return m;
  }

  /** Stored manifest versions, ascending. */
  private async versions(): Promise<number[]> {
    const versions: number[] = [];
    for (const entry of await listDir(this.fs, `${this.dir}/manifest`)) {
      const m = /^(\d+)\.json$/.exec(entry);
      if (m) versions.push(Number(m[1]));
    }
    return versions.sort((a, b) => a - b);
  }

  private async latestVersion(): Promise<number> {
    return (await this.versions()).at(-1) ?? 0;
  }

  /** Opens segment `name` for writing (creating it if `create` and missing) and caches it. */
  private async openSegment(name: string, create: boolean): Promise<{ file: ShimFile; length: number }> {
    const path = this.walPath(name);
    let file: ShimFile;
    try {
      file = await this.fs.open(path, 'r+');
    } catch (e) {
      if (!isErrno(e, 'ENOENT')) throw e;
      if (!create) throw new MemWalError('IOError', `WAL segment ${name} does not exist`, { cause: e });
      // A writer appends to its newest segment only: older ones need no open file any more.
      await this.closeSegments();
      file = await this.fs.open(path, 'wx');
      await this.fs.syncDir(`${this.dir}/wal`);
    }
    const seg = { file, length: await file.size() };
    this.segments.set(name, seg);
    return seg;
  }

  private async closeSegment(name: string): Promise<void> {
    const seg = this.segments.get(name);
    this.segments.delete(name);
    await seg?.file.close();
  }

  /** Closes every cached segment file; errors do not matter (nothing is written by a close). */
  private async closeSegments(): Promise<void> {
    const files = [...this.segments.values()].map((s) => s.file);
    this.segments.clear();
    await Promise.all(files.map((f) => f.close().catch(() => undefined)));
  }

  private async readExisting(path: string, offset: number, what: string): Promise<Uint8Array> {
    try {
      return await readFrom(this.fs, path, offset);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) throw new MemWalError('IOError', `${what} does not exist`, { cause: e });
      throw e;
    }
  }

  private walPath(name: string): string {
    return `${this.dir}/wal/${name}`;
  }

  private tablePath(name: string): string {
    return `${this.dir}/tables/${name}`;
  }

  private manifestPath(version: number): string {
    return `${this.dir}/manifest/${version}.json`;
  }

  /** Runs `work` if this handle still holds the lock (`Closed` after release, `Fenced` once lost). */
  private async op<T>(context: string, work: () => Promise<T>): Promise<T> {
    if (this.state === 'released') throw new MemWalError('Closed', 'store handle was released');
    if (this.state === 'lost') throw new MemWalError('Fenced', 'store handle lost its writer lock to a newer writer');
    try {
      return await work();
    } catch (e) {
      throw this.failure(e, context);
    }
  }

  /** The error of a failed operation; losing the lock closes the files under one in flight: a fence. */
  private failure(e: unknown, context: string): MemWalError {
    if (this.state === 'lost' && !(e instanceof MemWalError)) {
      return new MemWalError('Fenced', `${context}: store handle lost its writer lock to a newer writer`, { cause: e });
    }
    return toMemWalError(e, context);
  }
}
