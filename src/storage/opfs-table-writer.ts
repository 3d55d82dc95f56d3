// A second thread for OPFS table files: the I/O worker builds a flushed memtable's (or a
// compaction's) table file and hands its bytes here, transferred, to be written and flushed
// through the file's own sync access handle, while the I/O worker goes on with WAL appends. On a
// machine with a core to spare, the two streams of every byte (the WAL's and the table's) are then
// written side by side instead of one after the other (docs/impl.md §3). The OPFS adapter keeps
// every decision (the file's name, fencing, removing a failed write's file); this thread only
// writes. Dedicated workers.

import { MemWalError, type WireError, errorFromWire, errorToWire } from '../util/errors.js';
import { checkWritten, openSyncAccessHandle } from './opfs.js';

/** One table file to write: `bytes` (its buffer transferred) into the new, empty `file`. */
export interface TableFileWrite {
  id: number;
  file: FileSystemFileHandle;
  bytes: Uint8Array;
}

/** Its outcome: written and flushed, its sync handle closed; or why not (the handle closed too). */
export type TableFileWritten = { id: number; error?: undefined } | { id: number; error: WireError };

/** The writer thread's side of a port: a worker's global, or a MessagePort. */
export interface TableWriterScope {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  postMessage(message: TableFileWritten, transfer: Transferable[]): void;
}

/** The I/O worker's side: the started worker. */
export interface TableWriterEndpoint {
  postMessage(message: TableFileWrite, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  addEventListener(type: 'error', listener: (ev: Event) => void): void;
}

const CHUNK = 1 << 20;

/** Writes one table file, start to end (its sync handle closed before it returns or throws). */
async function writeTableFile(file: FileSystemFileHandle, bytes: Uint8Array): Promise<void> {
  const sync = await openSyncAccessHandle(file);
  try {
    for (let at = 0; at < bytes.length; at += CHUNK) {
      const chunk = bytes.subarray(at, Math.min(bytes.length, at + CHUNK));
      checkWritten(sync.write(chunk, { at }), chunk.length, `table file ${file.name}`);
      sync.flush();
    }
    sync.flush();
  } finally {
    sync.close();
  }
}

/**
 * Serve table file writes on `scope`, one at a time in arrival order (each a few synchronous
 * calls: this thread answers nothing else).
 */
export function serveTableWriter(scope: TableWriterScope): void {
  let queue: Promise<void> = Promise.resolve();
  scope.addEventListener('message', (ev: MessageEvent) => {
    const job = ev.data as TableFileWrite;
    queue = queue.then(async () => {
      try {
        await writeTableFile(job.file, job.bytes);
        scope.postMessage({ id: job.id }, []);
      } catch (e) {
        scope.postMessage({ id: job.id, error: errorToWire(e, `writing table file ${job.file.name}`) }, []);
      }
    });
  });
}

/** A buffer that `bytes` covers whole, so it can be transferred; otherwise a copy of `bytes` that does. */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes;
  return bytes.slice();
}

/**
 * The I/O worker's client of a table writer thread. `write` resolves once the file is written,
 * flushed and closed; it rejects with the writer's error, or `IOError` when the thread could not
 * start or died (then `usable` is false for good).
 */
export class TableWriterClient {
  private endpoint: TableWriterEndpoint | undefined;
  private nextId = 1;
  private broken: MemWalError | undefined;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();

  constructor(private readonly start: () => TableWriterEndpoint) {}

  /** False once the thread failed to start or died: tables are then written by the caller's thread. */
  get usable(): boolean {
    return this.broken === undefined;
  }

  /** Write `bytes` (taken: their buffer is detached here when it covers them whole) into `file`. */
  write(file: FileSystemFileHandle, bytes: Uint8Array): Promise<void> {
    const endpoint = this.connect();
    if (!endpoint || this.broken) return Promise.reject(this.broken);
    const id = this.nextId++;
    const own = ownBuffer(bytes);
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      endpoint.postMessage({ id, file, bytes: own }, [own.buffer as ArrayBuffer]);
    });
  }

  /** Start the thread now (else on the first `write`); undefined when it cannot be started. */
  connect(): TableWriterEndpoint | undefined {
    if (this.endpoint || this.broken) return this.endpoint;
    let endpoint: TableWriterEndpoint;
    try {
      endpoint = this.start();
    } catch (e) {
      this.broken = new MemWalError('IOError', 'the table writer thread could not be started', { cause: e });
      return undefined;
    }
    endpoint.addEventListener('message', (ev: MessageEvent) => {
      const reply = ev.data as TableFileWritten;
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.error) p?.reject(errorFromWire(reply.error));
      else p?.resolve();
    });
    endpoint.addEventListener('error', () => {
      this.broken = new MemWalError('IOError', 'the table writer thread failed (it could not start, or it died)');
      for (const p of this.pending.values()) p.reject(this.broken);
      this.pending.clear();
    });
    this.endpoint = endpoint;
    return endpoint;
  }
}
