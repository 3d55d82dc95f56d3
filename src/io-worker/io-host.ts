// The I/O worker's side of RemoteStorage: serves one engine thread's storage calls on a real
// adapter (OPFS or IndexedDB), and runs its background jobs next to the files — building a
// flushed memtable's table file from the WAL payloads it appended (kept in memory until their
// flush; read back from the segments when it does not hold them all), and compaction outputs from
// the input files. Where the adapter has a table builder thread (OPFS: the table writer thread)
// a flush whose payloads are all kept is built there instead, and its bytes stay there. A built
// table stays kept (here or there) under an id until the engine names its file and has it
// written (or takes its bytes, for a wrapper handle that writes them itself), or releases it: its
// bytes never cross to the engine's thread. Commits stay the engine's. Browser workers.

import type { WalPayload } from '../format/wal/payload.js';
import { buildCompactionOutputs, buildFlushFromWal, type CompactJob } from '../lsm/jobs.js';
import { makeKeyEncoder } from '../data/keys.js';
import { decodeSchema, makeStoreSchema, type StoreSchema } from '../data/schema.js';
import { SchemaVersions } from '../format/schema-versions.js';
import { TableCache } from '../lsm/table-cache.js';
import { MemWalError, errorToWire } from '../util/errors.js';
import type { BuiltTable } from '../format/table/writer.js';
import { encodeFrameHeader, encodeFrameHeaderFromCrc, scanSegment } from '../format/wal/codec.js';
import { FRAME_HEADER_BYTES } from '../format/wal/format.js';
import { appendFrame, type StorageAdapter, type StoreHandle, writeTableBytes } from '../storage/adapter.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { StorageEstimate } from '../storage/adapter.js';
import {
  type IoEvent,
  type IoReply,
  type IoRequest,
  transferables,
  type WireBuiltTable,
  type WireFlushJob,
  type WireSchemaVersions,
  type WireStoreSchema,
} from './io-protocol.js';

/** Where the I/O worker listens and answers (its worker scope). */
export interface IoScope {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  postMessage(message: unknown, transfer: Transferable[]): void;
}

/** A flush table built and kept by a `TableBuilder`: its id there, and what the manifest records of it. */
export type KeptTable = Omit<BuiltTable, 'bytes'> & { table: number; length: number };

/**
 * A thread that builds flush tables from their WAL payloads and keeps the bytes (the OPFS table
 * writer thread, table-writer.ts), so that this worker's own thread stays free for WAL
 * appends. The handle that writes a kept table is the adapter's (`StoreHandle.tableWriteKept`).
 */
export interface TableBuilder {
  /** True once it serves (until then the I/O worker builds). */
  readonly usable: boolean;
  /** Build generation `generation`'s table from `entries` (taken over: their buffers may be transferred) and keep it. */
  buildFlush(schema: WireStoreSchema, versions: WireSchemaVersions, generation: number, entries: WalPayload[]): Promise<KeptTable>;
  /** The bytes of kept table `table`, no longer kept there. */
  take(table: number): Promise<Uint8Array>;
  /** Drop kept table `table` (nothing happens when it is not kept). */
  release(table: number): void;
}

/** A table write fed chunk by chunk. */
interface Stream {
  push(chunk: Uint8Array): void;
  end(): void;
  fail(e: unknown): void;
  done: Promise<void>;
}

function stream(handle: StoreHandle, name: string): Stream {
  const queue: Uint8Array[] = [];
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const next = (): Promise<void> => new Promise((r) => (wake = r));
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      if (failure !== undefined) throw failure;
      const c = queue.shift();
      if (c) {
        yield c;
        continue;
      }
      if (ended) return;
      await next();
    }
  }
  const poke = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const done = handle.tableWrite(name, chunks());
  done.catch(() => undefined);
  return {
    push: (c) => {
      queue.push(c);
      poke();
    },
    end: () => {
      ended = true;
      poke();
    },
    fail: (e) => {
      failure = e;
      poke();
    },
    done,
  };
}

/**
 * The I/O worker's API over `adapter`: every method a request may name, with its parameters and
 * result (io-protocol.ts derives the wire types from it, so RemoteStorage and this host cannot
 * drift). Every open handle, table-write stream and compaction is keyed by an id the engine
 * holds; `event` reports what happens unasked (a lost lock, a waiting open, a warning).
 */
export function makeIoHost(adapter: StorageAdapter, event: (e: IoEvent) => void, builder?: TableBuilder) {
  const handles = new Map<number, StoreHandle>();
  const streams = new Map<number, Stream>();
  const compactions = new Map<number, { handle: number; outputs: AsyncIterator<BuiltTable> }>();
  /**
   * Tables built and not yet written or released, by id, with the handle of their store: their
   * bytes here, or the id they are kept under by `builder` (`remote`).
   */
  const built = new Map<number, Built>();
  const opening = new Map<number, AbortController>();
  /** Per handle that runs flushes here: the payloads appended and not yet built into a table, by position. */
  const kept = new Map<number, Map<number, WalPayload>>();
  let nextId = 1;

  const schemaOf = storeSchemaCache();
  const need = (handle: number): StoreHandle => {
    const h = handles.get(handle);
    if (!h) throw new MemWalError('Closed', 'store handle was released');
    return h;
  };
  /** Keep `table` for `handle`'s store; what the engine gets of it. */
  const keep = (handle: number, table: BuiltTable): WireBuiltTable => {
    const id = nextId++;
    const { bytes, ...meta } = table;
    built.set(id, { handle, bytes });
    return { id, length: bytes.length, ...meta };
  };
  /** Record `table`, kept by `builder`, for `handle`'s store; what the engine gets of it. */
  const keepRemote = (handle: number, { table, ...meta }: KeptTable): WireBuiltTable => {
    const id = nextId++;
    built.set(id, { handle, remote: table });
    return { id, ...meta };
  };
  /** Built table `id` of `handle`'s store, no longer kept here. */
  const take = (handle: number, id: number): Built => {
    const t = built.get(id);
    if (!t || t.handle !== handle)
      throw new MemWalError('IOError', `built table ${id} is not kept here (written, released, or its store released)`);
    built.delete(id);
    return t;
  };
  /** The bytes of `t`, from `builder` when it keeps them. */
  const bytesOf = async (t: Built): Promise<Uint8Array> => ('bytes' in t ? t.bytes : (builder as TableBuilder).take(t.remote));
  /** Drop `t` (on `builder` when it keeps it). */
  const drop = (t: Built): void => {
    if ('remote' in t) builder?.release(t.remote);
  };
  const streamOf = (id: number): Stream => {
    const s = streams.get(id);
    if (!s) throw new Error(`no table write ${id}`);
    return s;
  };

  return {
    /** Claim store `name`'s writer lock; `open` names this claim in 'waiting' events and `abortOpen`. Resolves the handle id. */
    async openStore(open: number, name: string, options: { timeoutMs?: number; steal?: boolean }): Promise<number> {
      const controller = new AbortController();
      opening.set(open, controller);
      let handle = 0;
      try {
        const h = await adapter.openStore(name, {
          ...options,
          signal: controller.signal,
          onWaiting: () => event({ event: 'waiting', open }),
          onLost: (reason) => event({ event: 'lost', handle, reason }),
          logger: { warn: (message: string) => event({ event: 'warn', message }) },
        });
        handle = nextId++;
        handles.set(handle, h);
        return handle;
      } finally {
        opening.delete(open);
      }
    },
    async abortOpen(open: number): Promise<void> {
      opening.get(open)?.abort();
    },
    destroyStore: (name: string): Promise<void> => adapter.destroyStore(name),
    estimate: async (name: string): Promise<StorageEstimate> => (adapter.estimate ? adapter.estimate(name) : {}),
    manifestLoad: (handle: number) => need(handle).manifestLoad(),
    manifestCommit: (handle: number, expectedVersion: number, next: Manifest) => need(handle).manifestCommit(expectedVersion, next),
    walList: (handle: number) => need(handle).walList(),
    walRead: (handle: number, name: string, offset?: number) => need(handle).walRead(name, offset),
    walAppend: (handle: number, name: string, offset: number, bytes: Uint8Array) => need(handle).walAppend(name, offset, bytes),
    /**
     * Frame the entry here and append it: header and payload as two parts when the handle takes
     * parts, else joined; resolves the frame's length. The header's CRC-32C combines the header
     * fields' with `payloadCrc` (the payload's, from the engine) where given, else is a pass over
     * the payload.
     */
    async walAppendEntry(
      handle: number,
      name: string,
      offset: number,
      epoch: number,
      position: number,
      payload: Uint8Array,
      payloadCrc?: number,
    ): Promise<number> {
      const header =
        payloadCrc === undefined
          ? encodeFrameHeader(epoch, position, payload)
          : encodeFrameHeaderFromCrc(epoch, position, payload.length, payloadCrc);
      await appendFrame(need(handle), name, offset, header, payload);
      kept.get(handle)?.set(position, { position, epoch, payload });
      return FRAME_HEADER_BYTES + payload.length;
    },
    /**
     * From now on keep the payloads appended on `handle` until a flush builds them (its store's
     * memtables are flushed here): at most the store's unflushed memtable bytes.
     */
    async keepPayloads(handle: number): Promise<void> {
      need(handle);
      if (!kept.has(handle)) kept.set(handle, new Map());
    },
    walTruncate: (handle: number, name: string, length: number) => need(handle).walTruncate(name, length),
    walRemove: (handle: number, name: string) => need(handle).walRemove(name),
    /** Start writing table file `name`; resolves the stream id its chunks go to. */
    async tableWriteOpen(handle: number, name: string): Promise<number> {
      const id = nextId++;
      streams.set(id, stream(need(handle), name));
      return id;
    },
    async tableWriteChunk(stream: number, chunk: Uint8Array): Promise<void> {
      streamOf(stream).push(chunk);
    },
    async tableWriteClose(stream: number): Promise<void> {
      const s = streamOf(stream);
      streams.delete(stream);
      s.end();
      await s.done;
    },
    async tableWriteAbort(stream: number): Promise<void> {
      const s = streams.get(stream);
      streams.delete(stream);
      s?.fail(new Error('table write abandoned by the engine'));
      await s?.done.catch(() => undefined);
    },
    /**
     * Write built table `table` as new table file `name` of `handle`'s store, through its handle
     * (fenced, time-limited by the engine; a failed write leaves no file), in chunks with a turn
     * of the event loop between them. The table is no longer kept, whatever the outcome.
     */
    async tableWriteBuilt(handle: number, table: number, name: string): Promise<void> {
      const h = need(handle);
      const t = take(handle, table);
      if ('bytes' in t) return writeTableBytes(h, name, t.bytes);
      try {
        // Where the builder keeps it: written there by a handle that can (OPFS), else its bytes fetched.
        if (h.tableWriteKept) await h.tableWriteKept(name, t.remote);
        else await writeTableBytes(h, name, await bytesOf(t));
      } finally {
        drop(t); // a write that failed before it reached the builder left it kept there
      }
    },
    /** The bytes of built table `table` (transferred), no longer kept: for a wrapper handle that writes them itself. */
    async builtTake(handle: number, table: number): Promise<Uint8Array> {
      need(handle);
      return bytesOf(take(handle, table));
    },
    /** Drop built table `table` unwritten (nothing happens when it is not kept). */
    async builtRelease(table: number): Promise<void> {
      const t = built.get(table);
      built.delete(table);
      if (t) drop(t);
    },
    /** How many built tables are kept for the engine, here or on the table builder (tests, diagnostics). */
    async builtKept(): Promise<number> {
      return built.size;
    },
    tableRead: (handle: number, name: string) => need(handle).tableRead(name),
    tableReadRange: (handle: number, name: string, offset: number, length: number) => need(handle).tableReadRange(name, offset, length),
    tableList: (handle: number) => need(handle).tableList(),
    tableRemove: (handle: number, name: string) => need(handle).tableRemove(name),
    async release(handle: number): Promise<void> {
      const h = handles.get(handle);
      handles.delete(handle);
      kept.delete(handle);
      for (const [id, t] of built) {
        if (t.handle !== handle) continue;
        built.delete(id);
        drop(t);
      }
      await h?.release();
    },

    /**
     * The table file of a generation, from its WAL entries: the payloads kept since their append
     * when this worker holds every one (then dropped, with any older ones), else read back from the
     * segments (entries replayed at open, or a retry after they were dropped). Built by `builder`
     * (and kept there) when it is usable and every payload was kept (handed over), else here.
     */
    async buildFlush(handle: number, schema: WireStoreSchema, job: WireFlushJob, wv: WireSchemaVersions): Promise<WireBuiltTable> {
      const storeSchema = schemaOf(schema);
      const h = need(handle);
      const payloads = takeKept(kept.get(handle), job);
      if (payloads && builder?.usable) {
        const table = await builder.buildFlush(schema, wv, job.generation, payloads);
        if (!handles.has(handle)) builder.release(table.table); // released meanwhile: keep nothing
        need(handle);
        return keepRemote(handle, table);
      }
      const versions = new SchemaVersions(storeSchema, wv.currentVersion, wv.versions);
      const entries = payloads ?? (await readEntries(h, job));
      const table = await buildFlushFromWal(storeSchema, versions, entries, job.generation);
      need(handle); // released meanwhile: keep nothing
      return keep(handle, table);
    },
    /** Open a compaction's inputs here; resolves the id `compactNext` pulls its outputs from. */
    async compactOpen(handle: number, schema: WireStoreSchema, job: CompactJob, wv: WireSchemaVersions): Promise<number> {
      const storeSchema = schemaOf(schema);
      const versions = new SchemaVersions(storeSchema, wv.currentVersion, wv.versions);
      const h = need(handle);
      const keyEncoder = storeSchema.primaryKey.length > 0 ? makeKeyEncoder(storeSchema) : undefined;
      const cache = new TableCache(
        storeSchema,
        storeSchema.internal,
        keyEncoder,
        { range: (n, o, l) => h.tableReadRange(n, o, l), whole: (n) => h.tableRead(n) },
        0,
        versions,
      );
      const tables = await Promise.all(job.inputs.map((t) => cache.open(t)));
      const id = nextId++;
      compactions.set(id, {
        handle,
        outputs: buildCompactionOutputs(storeSchema, keyEncoder, job, tables, undefined)[Symbol.asyncIterator](),
      });
      return id;
    },
    /** The next output of compaction `compaction` (kept here), or null when there is none. */
    async compactNext(compaction: number): Promise<WireBuiltTable | null> {
      const c = compactions.get(compaction);
      if (!c) throw new Error(`no compaction ${compaction}`);
      const r = await c.outputs.next();
      if (r.done) return null;
      need(c.handle);
      return keep(c.handle, r.value);
    },
    async compactClose(compaction: number): Promise<void> {
      const c = compactions.get(compaction);
      compactions.delete(compaction);
      await c?.outputs.return?.();
    },
  };
}

/**
 * A store schema per wire schema, decoded once (every flush and compaction names its store's):
 * the I/O worker's and the table writer thread's.
 */
export function storeSchemaCache(): (wire: WireStoreSchema) => StoreSchema {
  const schemas = new Map<string, StoreSchema>();
  return ({ schema, primaryKey, indexes }) => {
    const key = `${schema}|${primaryKey.join('\u0000')}|${indexes ? JSON.stringify(indexes) : ''}`;
    let storeSchema = schemas.get(key);
    if (!storeSchema) {
      storeSchema = makeStoreSchema(decodeSchema(schema), primaryKey);
      if (indexes && indexes.length > 0) storeSchema = { ...storeSchema, indexes };
      schemas.set(key, storeSchema);
    }
    return storeSchema;
  };
}

/** A built table kept for a store: its bytes, or the id `TableBuilder` keeps it under. */
type Built = { handle: number; bytes: Uint8Array } | { handle: number; remote: number };

/**
 * The payloads of positions `job.firstPosition..job.lastPosition` from `kept`, in position order,
 * when it holds every one; those and every older one are dropped from `kept` either way (a flush
 * job only ever asks for the oldest unflushed positions, and a retry reads the segments).
 */
function takeKept(kept: Map<number, WalPayload> | undefined, job: WireFlushJob): WalPayload[] | undefined {
  if (!kept) return undefined;
  const out: WalPayload[] = [];
  for (let p = job.firstPosition; p <= job.lastPosition; p++) {
    const e = kept.get(p);
    if (e) out.push(e);
  }
  for (const p of kept.keys()) if (p <= job.lastPosition) kept.delete(p);
  return out.length === job.lastPosition - job.firstPosition + 1 ? out : undefined;
}

/** The entries of positions `job.firstPosition..job.lastPosition`, read back from the job's segments. */
async function readEntries(h: StoreHandle, job: WireFlushJob): Promise<WalPayload[]> {
  const out: WalPayload[] = [];
  for (const seg of job.segments) {
    for (const f of scanSegment(await h.walRead(seg.name, 0), 0).frames) {
      if (f.position >= job.firstPosition && f.position <= job.lastPosition) out.push(f);
    }
  }
  return out;
}

/** The bytes of a result that are transferred rather than copied: a read, or a built table's bytes taken. */
function resultBytes(value: unknown): Uint8Array[] {
  return value instanceof Uint8Array ? [value] : [];
}

/**
 * Serve `scope` (the I/O worker's global scope) with `adapter`: each request runs the method of
 * `makeIoHost` it names, flush tables built by `builder` where it can. Call once, in the I/O worker.
 */
export function serveStorage(scope: IoScope, adapter: StorageAdapter, builder?: TableBuilder): void {
  const api = makeIoHost(adapter, (e) => scope.postMessage(e, []), builder);
  scope.addEventListener('message', (ev: MessageEvent) => {
    const req = ev.data as IoRequest; // what RemoteStorage posts (io-protocol.ts)
    const reply = (r: IoReply, transfer: Transferable[] = []): void => scope.postMessage(r, transfer);
    if (typeof req?.op !== 'string' || !Object.hasOwn(api, req.op)) {
      reply({ id: req?.id, ok: false, error: { code: 'InvalidArgument', message: `unknown I/O request ${String(req?.op)}` } });
      return;
    }
    const method = api[req.op] as (...args: unknown[]) => Promise<unknown>; // the request's op and args agree (IoRequest)
    Promise.resolve()
      .then(() => method(...req.args))
      .then(
        (value) => reply({ id: req.id, ok: true, value }, transferables(resultBytes(value))),
        (e: unknown) => reply({ id: req.id, ok: false, error: errorToWire(e, `I/O worker ${req.op}`) }),
      );
  });
}
