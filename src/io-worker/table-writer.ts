// A thread of its own for OPFS table files: the I/O worker hands each flushed memtable's kept WAL
// payloads here (transferred) and this thread builds its table file, keeps the bytes and writes
// them when the adapter names the file; a compaction's outputs, built in the I/O worker, are
// handed over as bytes to be written. Either way every file is written and flushed here through
// its own sync access handle, while the I/O worker goes on with WAL appends: on a machine with a
// core to spare, the WAL's stream and the tables' (build and write) run side by side instead of
// one after the other (docs/impl.md §11). The OPFS adapter keeps every decision (the file's name,
// fencing, removing a failed write's file); this thread only builds and writes. The two talk over
// a MessagePort the engine's thread connects when it starts both workers (io-worker/browser.ts).
// Dedicated workers.

import { SchemaVersions } from '../format/schema-versions.js';
import type { WalPayload } from '../format/wal/payload.js';
import type { BuiltTable } from '../format/table/writer.js';
import { buildFlushFromWal } from '../lsm/jobs.js';
import { type KeptTable, storeSchemaCache, type TableBuilder } from './io-host.js';
import type { WireSchemaVersions, WireStoreSchema } from './io-protocol.js';
import { MemWalError, type WireError, errorFromWire, errorToWire } from '../util/errors.js';
import type { OpfsTableWriter } from '../storage/opfs.js';
import { checkWritten, openSyncAccessHandle, type SyncAccessHandle } from '../storage/opfs-files.js';

/**
 * What the I/O worker asks of the writer thread, each answered by `id` (but `release`), in
 * arrival order: write into the new, empty `file` either `bytes` (their buffer transferred) or
 * the table kept here under `table` (no longer kept, whatever the outcome); build a flush's table
 * from its WAL `entries` (their buffers transferred) and keep it under the request's `id`; drop
 * a kept table.
 */
export type TableWriterRequest =
  | { op: 'write'; id: number; file: FileSystemFileHandle; bytes: Uint8Array }
  | { op: 'write'; id: number; file: FileSystemFileHandle; table: number }
  | { op: 'build'; id: number; schema: WireStoreSchema; versions: WireSchemaVersions; generation: number; entries: WalPayload[] }
  | { op: 'release'; table: number };

/**
 * What the writer thread sends: `ready` once, when it serves; then each request's outcome (a
 * write: written and flushed, its sync handle closed; a build: the kept table's meta; a take: its
 * bytes), or why it failed.
 */
export type TableWriterMessage = { ready: true } | { id: number; value?: unknown; error?: WireError };

/** Either end of the port between the I/O worker and its table writer thread (a MessagePort). */
export interface TableWriterPort {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  postMessage(message: unknown, transfer: Transferable[]): void;
  start?(): void;
}

/** Each table file is written (and flushed) in steps of this size. */
const WRITE_STEP_BYTES = 1 << 20;

/** Writes one table file, start to end (its sync handle closed before it returns or throws). */
async function writeTableFile(
  file: FileSystemFileHandle,
  bytes: Uint8Array,
  open: (file: FileSystemFileHandle) => Promise<SyncAccessHandle>,
): Promise<void> {
  const sync = await open(file);
  try {
    // 1 MiB steps, each flushed: one write of a whole table measured about 1.8 times slower
    // (bench/results/HISTORY.md, "Ingest: table files on a thread of their own").
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

/** What a kept table's build answers: its meta, the bytes staying on the writer thread. */
export type KeptTableMeta = Omit<BuiltTable, 'bytes'> & { length: number };

/**
 * Serve `port`: builds, writes, takes and releases one at a time in arrival order (a build runs in
 * slices, but nothing else starts meanwhile), after saying it is ready. `open` opens a file's sync
 * handle (tests hand a fake). Returns how many built tables it keeps (tests).
 */
export function serveTableWriter(
  port: TableWriterPort,
  open: (file: FileSystemFileHandle) => Promise<SyncAccessHandle> = openSyncAccessHandle,
): { kept(): number } {
  const kept = new Map<number, Uint8Array>();
  const schemaOf = storeSchemaCache();
  const takeKept = (table: number): Uint8Array => {
    const bytes = kept.get(table);
    kept.delete(table);
    if (!bytes) throw new MemWalError('IOError', `built table ${table} is not kept on the table writer thread`);
    return bytes;
  };
  const run = async (job: Exclude<TableWriterRequest, { op: 'release' }>): Promise<[unknown, Transferable[]]> => {
    switch (job.op) {
      case 'write':
        await writeTableFile(job.file, 'bytes' in job ? job.bytes : takeKept(job.table), open);
        return [undefined, []];
      case 'build': {
        const storeSchema = schemaOf(job.schema);
        const versions = new SchemaVersions(storeSchema, job.versions.currentVersion, job.versions.versions);
        const { bytes, ...meta } = await buildFlushFromWal(storeSchema, versions, job.entries, job.generation);
        kept.set(job.id, bytes);
        return [{ ...meta, length: bytes.length } satisfies KeptTableMeta, []];
      }
    }
  };
  let queue: Promise<void> = Promise.resolve();
  port.addEventListener('message', (ev: MessageEvent) => {
    const job = ev.data as TableWriterRequest;
    queue = queue.then(async () => {
      if (job.op === 'release') {
        kept.delete(job.table);
        return;
      }
      let reply: TableWriterMessage;
      let transfer: Transferable[] = [];
      try {
        const [value, t] = await run(job);
        reply = { id: job.id, value };
        transfer = t;
      } catch (e) {
        const what = job.op === 'write' ? `writing table file ${job.file.name}` : `table writer thread ${job.op}`;
        reply = { id: job.id, error: errorToWire(e, what) };
      }
      port.postMessage(reply, transfer);
    });
  });
  port.start?.();
  port.postMessage({ ready: true } satisfies TableWriterMessage, []);
  return { kept: () => kept.size };
}

/** A buffer that `bytes` covers whole, so it can be transferred; otherwise a copy of `bytes` that does. */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes;
  return bytes.slice();
}

/** The distinct ArrayBuffers under `entries`' payloads (transferred with them; others are copied). */
function payloadBuffers(entries: readonly WalPayload[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const e of entries) if (e.payload.buffer instanceof ArrayBuffer) out.add(e.payload.buffer);
  return [...out];
}

/**
 * The I/O worker's end of the port to its table writer thread. `usable` once the thread said it
 * is ready (until then, and for good if it never does, the adapter writes tables and the I/O
 * worker builds them itself). Each request resolves with the thread's answer or rejects with its
 * error. The thread's death is the engine's to see: it treats it as the I/O worker's
 * (io-worker/browser.ts). As the I/O worker's `TableBuilder` (io-host.ts) it builds flush tables
 * and keeps them; the OPFS plane writes a kept one (`KeptPlane.writeKept`, opfs-plane.ts).
 */
export class TableWriterClient implements TableBuilder, OpfsTableWriter {
  private ready = false;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (e: Error) => void }>();

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
      else p?.resolve(m.value);
    });
    port.start?.();
  }

  /** True once the thread serves. */
  get usable(): boolean {
    return this.ready;
  }

  private ask<T>(request: (id: number) => TableWriterRequest, transfer: Transferable[]): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.port.postMessage(request(id), transfer);
    });
  }

  /** Write `bytes` (taken: their buffer is detached here when it covers them whole) into `file`. */
  write(file: FileSystemFileHandle, bytes: Uint8Array): Promise<void> {
    const own = ownBuffer(bytes);
    return this.ask((id) => ({ op: 'write', id, file, bytes: own }), [own.buffer as ArrayBuffer]);
  }

  /** Write the table kept under `table` into `file`; it is no longer kept, whatever the outcome. */
  writeKept(file: FileSystemFileHandle, table: number): Promise<void> {
    return this.ask((id) => ({ op: 'write', id, file, table }), []);
  }

  /**
   * Build a flush's table from its WAL `entries` (taken: their payloads' buffers are detached
   * here) and keep it there; resolves its id and meta.
   */
  async buildFlush(schema: WireStoreSchema, versions: WireSchemaVersions, generation: number, entries: WalPayload[]): Promise<KeptTable> {
    let table = 0;
    const meta = await this.ask<KeptTableMeta>((id) => {
      table = id;
      return { op: 'build', id, schema, versions, generation, entries };
    }, payloadBuffers(entries));
    return { table, ...meta };
  }

  /** Drop kept table `table` (nothing happens when it is not kept). */
  release(table: number): void {
    this.port.postMessage({ op: 'release', table } satisfies TableWriterRequest, []);
  }
}
