// A thread of its own for OPFS table files: the I/O worker builds a flushed memtable's (or a
// compaction's) table file and hands its bytes here, transferred, to be written and flushed
// through the file's own sync access handle, while the I/O worker goes on with WAL appends. On a
// machine with a core to spare, the two streams of every byte (the WAL's and the table's) are then
// written side by side instead of one after the other (docs/impl.md §11). The OPFS adapter keeps
// every decision (the file's name, fencing, removing a failed write's file); this thread only
// writes. The two talk over a MessagePort the engine's thread connects when it starts both
// workers (io-worker/browser.ts). Dedicated workers.

import { type WireError, errorFromWire, errorToWire } from '../util/errors.js';
import { checkWritten, openSyncAccessHandle } from './opfs.js';

/** One table file to write: `bytes` (its buffer transferred) into the new, empty `file`. */
export interface TableFileWrite {
  id: number;
  file: FileSystemFileHandle;
  bytes: Uint8Array;
}

/**
 * What the writer thread sends: `ready` once, when it serves; then each write's outcome (written
 * and flushed, its sync handle closed; or why not, the handle closed too).
 */
export type TableWriterMessage = { ready: true } | { id: number; error?: WireError };

/** Either end of the port between the I/O worker and its table writer thread (a MessagePort). */
export interface TableWriterPort {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  postMessage(message: unknown, transfer: Transferable[]): void;
  start?(): void;
}

/** Each table file is written (and flushed) in steps of this size. */
const WRITE_STEP_BYTES = 1 << 20;

/** Writes one table file, start to end (its sync handle closed before it returns or throws). */
async function writeTableFile(file: FileSystemFileHandle, bytes: Uint8Array): Promise<void> {
  const sync = await openSyncAccessHandle(file);
  try {
    // 1 MiB steps, each flushed: one write of a whole table measured about 1.8 times slower
    // (docs/benchmarks.md, "Ingest: table files on a thread of their own").
    for (let at = 0; at < bytes.length; at += WRITE_STEP_BYTES) {
      const step = bytes.subarray(at, Math.min(bytes.length, at + WRITE_STEP_BYTES));
      checkWritten(sync.write(step, { at }), step.length, `table file ${file.name}`);
      sync.flush();
    }
    sync.flush();
  } finally {
    sync.close();
  }
}

/**
 * Serve table file writes on `port`, one at a time in arrival order (each a few synchronous
 * calls: this thread answers nothing else), after saying it is ready.
 */
export function serveTableWriter(port: TableWriterPort): void {
  let queue: Promise<void> = Promise.resolve();
  port.addEventListener('message', (ev: MessageEvent) => {
    const job = ev.data as TableFileWrite;
    queue = queue.then(async () => {
      let reply: TableWriterMessage = { id: job.id };
      try {
        await writeTableFile(job.file, job.bytes);
      } catch (e) {
        reply = { id: job.id, error: errorToWire(e, `writing table file ${job.file.name}`) };
      }
      port.postMessage(reply, []);
    });
  });
  port.start?.();
  port.postMessage({ ready: true } satisfies TableWriterMessage, []);
}

/** A buffer that `bytes` covers whole, so it can be transferred; otherwise a copy of `bytes` that does. */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes;
  return bytes.slice();
}

/**
 * The I/O worker's end of the port to its table writer thread. `usable` once the thread said it
 * is ready (until then, and for good if it never does, the adapter writes tables itself).
 * `write` resolves once the file is written, flushed and closed, or rejects with the thread's
 * error. The thread's death is the engine's to see: it treats it as the I/O worker's
 * (io-worker/browser.ts).
 */
export class TableWriterClient {
  private ready = false;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();

  constructor(private readonly port: TableWriterPort) {
    port.addEventListener('message', (ev: MessageEvent) => {
      const m = ev.data as TableWriterMessage;
      if ('ready' in m) {
        this.ready = true;
        return;
      }
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error) p?.reject(errorFromWire(m.error));
      else p?.resolve();
    });
    port.start?.();
  }

  /** True once the thread serves. */
  get usable(): boolean {
    return this.ready;
  }

  /** Write `bytes` (taken: their buffer is detached here when it covers them whole) into `file`. */
  write(file: FileSystemFileHandle, bytes: Uint8Array): Promise<void> {
    const id = this.nextId++;
    const own = ownBuffer(bytes);
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.port.postMessage({ id, file, bytes: own } satisfies TableFileWrite, [own.buffer as ArrayBuffer]);
    });
  }
}
