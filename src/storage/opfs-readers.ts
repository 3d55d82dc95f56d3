// Kept read-only sync access handles on a store's table files (docs/impl.md §10, "Ranged reads"):
// one per file read, least recently used closed first, every one closed on demand. Used by the
// OPFS adapter in the context that holds the store, and by the engine's thread that reads its
// blocks itself (docs/impl.md §11). Dedicated workers.

import { MemWalError } from '../util/errors.js';
import { checkInside } from './adapter.js';
import type { SyncAccessHandle } from './opfs-files.js';

/**
 * Sync access handles kept open for reading table files (least recently used closed first). A
 * kept handle answers a 4–64 KiB ranged read in about 0.01–0.1 ms, against 1–3 ms for any async
 * path (docs/impl.md, "Ranged reads"); each costs one file descriptor. 128 covers about 1 GiB of
 * keyed tables (8 MiB compaction outputs): at 32, a 4M-row store's 39 files made random gets
 * reopen a handle for about one in five block reads, and its gets/s halved (bench/results/HISTORY.md,
 * "Keyed blocks of 16 KiB, 128 kept handles").
 */
export const MAX_TABLE_READERS = 128;

/**
 * Read-only handles on table files, opened on first read and kept. Once `closeAll` ran, every
 * handle is closed (one still opening is closed when it arrives) and every read rejects.
 */
export class TableReaders {
  /** The kept handles by file name (a pending promise while one opens), least recently used first. */
  private readonly readers = new Map<string, Promise<SyncAccessHandle>>();
  /** Every handle open now. */
  private readonly open = new Set<SyncAccessHandle>();
  private ended = false;

  /**
   * `openReader` opens a read-only handle on table file `name` (its errors are the reads' own);
   * `check` throws when reads must stop (called before each step, and for a handle that arrives
   * after `closeAll`).
   */
  constructor(
    private readonly openReader: (name: string) => Promise<SyncAccessHandle>,
    private readonly check: () => void = () => undefined,
    private readonly max = MAX_TABLE_READERS,
  ) {}

  /**
   * Runs `read` on the kept handle of `name`, opening one if there is none. `read` runs in the
   * same synchronous step that found the handle open, so it never sees a closed handle: one
   * closed (evicted, `close`) while this call waited for it is opened again.
   */
  async read<T>(name: string, read: (sync: SyncAccessHandle) => T): Promise<T> {
    for (;;) {
      this.stopIfEnded();
      let reader = this.readers.get(name);
      if (reader) {
        this.readers.delete(name); // re-inserted below: most recently used last
      } else {
        reader = this.openReader(name).then((sync) => this.keep(sync));
        reader.catch(() => this.readers.get(name) === reader && this.readers.delete(name));
      }
      this.readers.set(name, reader);
      this.evict();
      const sync = await reader;
      if (!this.open.has(sync)) continue;
      return read(sync);
    }
  }

  /** Closes the kept handle of `name`, if any (waiting for one still opening). */
  async close(name: string): Promise<void> {
    const reader = this.readers.get(name);
    this.readers.delete(name);
    const sync = await reader?.catch(() => undefined);
    if (sync && this.open.delete(sync)) sync.close();
  }

  /** Closes every handle now, and any still opening when it arrives; every later read rejects. */
  closeAll(): void {
    this.ended = true;
    for (const sync of this.open) sync.close();
    this.open.clear();
    this.readers.clear();
  }

  /** How many handles are open now. */
  get size(): number {
    return this.open.size;
  }

  private keep(sync: SyncAccessHandle): SyncAccessHandle {
    if (this.ended) {
      sync.close();
      this.stopIfEnded();
    }
    this.open.add(sync);
    return sync;
  }

  private stopIfEnded(): void {
    this.check();
    if (this.ended) throw new MemWalError('Closed', 'the table file readers were closed');
  }

  /** Closes the least recently used handles beyond `max`. */
  private evict(): void {
    for (const [name] of this.readers) {
      if (this.readers.size <= this.max) return;
      void this.close(name);
    }
  }
}

/** The whole of table file `name` through `sync`. */
export function readWholeTable(sync: SyncAccessHandle, name: string): Uint8Array {
  const bytes = new Uint8Array(sync.getSize());
  const read = sync.read(bytes, { at: 0 });
  if (read !== bytes.length) throw new MemWalError('IOError', `table file ${name}: read ${read} of ${bytes.length} bytes`);
  return bytes;
}

/** `length` bytes at `offset` of table file `name` through `sync` (the range checked with `checkRange` first). */
export function readTableRange(sync: SyncAccessHandle, name: string, offset: number, length: number): Uint8Array {
  checkInside(name, offset, length, sync.getSize());
  const bytes = new Uint8Array(length);
  const read = sync.read(bytes, { at: offset });
  if (read !== length) throw new MemWalError('IOError', `table file ${name}: read ${read} of ${length} bytes at ${offset}`);
  return bytes;
}
