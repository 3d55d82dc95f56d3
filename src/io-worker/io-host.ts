// The I/O worker's side of RemoteStorage: serves one engine thread's storage calls on a real
// adapter (OPFS or IndexedDB), and runs its background jobs next to the files — building a
// flushed memtable's table file from the WAL payloads it appended (kept in memory until their
// flush; read back from the segments when it does not hold them all), and compaction outputs from
// the input files. Each store it opens is one session (its handle, its I/O plane, what it keeps),
// dropped whole on release. Where the adapter has a table builder thread (OPFS: the table writer
// thread) a flush whose payloads are all kept is built there instead, and its bytes stay there. A
// built table stays kept (here or there) under an id until the engine names its file and has it
// written, or releases it: its bytes never cross to the engine's thread. Commits stay the
// engine's. Browser workers.

import type { WalPayload } from '../format/wal/payload.js';
import { buildCompactionOutputs, buildFlushFromWal, type CompactJob } from '../lsm/jobs.js';
import { type IoPlane, placementOf } from '../lsm/io-plane.js';
import { makeKeyEncoder } from '../data/keys.js';
import { decodeSchema, makeStoreSchema, type StoreSchema } from '../data/schema.js';
import { SchemaVersions } from '../format/schema-versions.js';
import { TableCache } from '../lsm/table-cache.js';
import { MemWalError, errorToWire } from '../util/errors.js';
import type { BuiltTable } from '../format/table/writer.js';
import { scanSegment } from '../format/wal/codec.js';
import type { LockOptions, StorageAdapter, StoreHandle } from '../storage/adapter.js';
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
 * writer thread, table-writer.ts), so that this worker's own thread stays free for WAL appends.
 * A kept table is written by the plane of its store (`KeptPlane.writeKept`).
 */
export interface TableBuilder {
  /** True once it serves (until then the I/O worker builds). */
  readonly usable: boolean;
  /** Build generation `generation`'s table from `entries` (taken over: their buffers may be transferred) and keep it. */
  buildFlush(schema: WireStoreSchema, versions: WireSchemaVersions, generation: number, entries: WalPayload[]): Promise<KeptTable>;
  /** Drop kept table `table` (nothing happens when it is not kept). */
  release(table: number): void;
}

/** The plane of a store whose adapter writes the tables a `TableBuilder` keeps (OPFS with its table writer thread). */
export interface KeptPlane extends IoPlane {
  /** `writeTable` of the table the builder keeps under `table`, written where it is; the builder drops it whatever the outcome. */
  writeKept(name: string, table: number): Promise<void>;
}

/** A builder thread and the placement whose planes write what it keeps: how the I/O worker opens its stores then. */
export interface TableThread {
  builder: TableBuilder;
  placement: { openStore(name: string, options: LockOptions): Promise<{ handle: StoreHandle; plane: KeptPlane }> };
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

/** A built table kept for a store: its bytes here, or the id its store's builder keeps it under. */
type Built = { bytes: Uint8Array } | { remote: number };

/**
 * One store open in the I/O worker, with everything kept for it: dropped whole on release.
 */
interface Session {
  readonly handle: StoreHandle;
  readonly plane: IoPlane;
  /** The builder thread and the writes of what it keeps, where the store has one. */
  readonly tables: { builder: TableBuilder; writeKept(name: string, table: number): Promise<void> } | undefined;
  /** From `keepPayloads` on: the payloads appended and not yet built into a table, by position. */
  payloads: Map<number, WalPayload> | undefined;
  /** Tables built and not yet written or released, by id. */
  readonly built: Map<number, Built>;
  /** Table writes fed chunk by chunk, by id. */
  readonly streams: Map<number, Stream>;
  /** Compactions open, by id: their outputs. */
  readonly compactions: Map<number, AsyncIterator<BuiltTable>>;
}

/**
 * The I/O worker's API over `adapter`: every method a request may name, with its parameters and
 * result (io-protocol.ts derives the wire types from it, so RemoteStorage and this host cannot
 * drift). Every open store is a session under the handle id the engine holds; its table-write
 * streams, compactions and built tables are named by ids of that session. Stores open through
 * `tables.placement` where a table builder thread is given, else through the adapter's own
 * placement (lsm/io-plane.ts). `event` reports what happens unasked (a lost lock, a waiting open,
 * a warning).
 */
export function makeIoHost(adapter: StorageAdapter, event: (e: IoEvent) => void, tables?: TableThread) {
  const sessions = new Map<number, Session>();
  const opening = new Map<number, AbortController>();
  let nextId = 1;

  const schemaOf = storeSchemaCache();
  const need = (handle: number): Session => {
    const s = sessions.get(handle);
    if (!s) throw new MemWalError('Closed', 'store handle was released');
    return s;
  };
  /** Keep `built` for `s`'s store; what the engine gets of it. */
  const keep = (s: Session, built: Built, meta: Omit<WireBuiltTable, 'id'>): WireBuiltTable => {
    const id = nextId++;
    s.built.set(id, built);
    return { id, ...meta };
  };
  /** Built table `id` of `s`'s store, no longer kept here. */
  const take = (s: Session, id: number): Built => {
    const t = s.built.get(id);
    if (!t) throw new MemWalError('IOError', `built table ${id} is not kept here (written, released, or its store released)`);
    s.built.delete(id);
    return t;
  };
  /** Drop `t` (on `s`'s builder when it keeps it). */
  const drop = (s: Session, t: Built): void => {
    if ('remote' in t) s.tables?.builder.release(t.remote);
  };
  const streamOf = (s: Session, id: number): Stream => {
    const st = s.streams.get(id);
    if (!st) throw new Error(`no table write ${id}`);
    return st;
  };
  /** Opens a store onto its plane, chosen here once: the builder thread's placement where there is one, else the adapter's. */
  const openPlaced = async (name: string, options: LockOptions): Promise<Pick<Session, 'handle' | 'plane' | 'tables'>> => {
    if (!tables) return { ...(await placementOf(adapter).openStore(name, options)), tables: undefined };
    const { handle, plane } = await tables.placement.openStore(name, options);
    return { handle, plane, tables: { builder: tables.builder, writeKept: (n, t) => plane.writeKept(n, t) } };
  };
  return {
    /** Claim store `name`'s writer lock; `open` names this claim in 'waiting' events and `abortOpen`. Resolves the handle id. */
    async openStore(open: number, name: string, options: { timeoutMs?: number; steal?: boolean }): Promise<number> {
      const controller = new AbortController();
      opening.set(open, controller);
      let handle = 0;
      try {
        const placed = await openPlaced(name, {
          ...options,
          signal: controller.signal,
          onWaiting: () => event({ event: 'waiting', open }),
          onLost: (reason) => event({ event: 'lost', handle, reason }),
          logger: { warn: (message: string) => event({ event: 'warn', message }) },
        });
        handle = nextId++;
        sessions.set(handle, {
          ...placed,
          payloads: undefined,
          built: new Map(),
          streams: new Map(),
          compactions: new Map(),
        });
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
    manifestLoad: (handle: number) => need(handle).handle.manifestLoad(),
    manifestCommit: (handle: number, expectedVersion: number, next: Manifest) => need(handle).handle.manifestCommit(expectedVersion, next),
    walList: (handle: number) => need(handle).handle.walList(),
    walRead: (handle: number, name: string, offset?: number) => need(handle).handle.walRead(name, offset),
    walAppend: (handle: number, name: string, offset: number, bytes: Uint8Array) => need(handle).handle.walAppend(name, offset, bytes),
    /**
     * Frame the entry here and append it through the store's plane; resolves the frame's length.
     * The header's CRC-32C combines the header fields' with `payloadCrc` (the payload's, from the
     * engine) where given, else is a pass over the payload. Kept for a flush once appended.
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
      const s = need(handle);
      const length = await s.plane.appendEntry(name, offset, epoch, position, payload, payloadCrc);
      s.payloads?.set(position, { position, epoch, payload });
      return length;
    },
    /**
     * From now on keep the payloads appended on `handle` until a flush builds them (its store's
     * memtables are flushed here): at most the store's unflushed memtable bytes.
     */
    async keepPayloads(handle: number): Promise<void> {
      const s = need(handle);
      s.payloads ??= new Map();
    },
    walTruncate: (handle: number, name: string, length: number) => need(handle).handle.walTruncate(name, length),
    walRemove: (handle: number, name: string) => need(handle).handle.walRemove(name),
    /** Start writing table file `name`; resolves the stream id its chunks go to. */
    async tableWriteOpen(handle: number, name: string): Promise<number> {
      const s = need(handle);
      const id = nextId++;
      s.streams.set(id, stream(s.handle, name));
      return id;
    },
    async tableWriteChunk(handle: number, stream: number, chunk: Uint8Array): Promise<void> {
      streamOf(need(handle), stream).push(chunk);
    },
    async tableWriteClose(handle: number, stream: number): Promise<void> {
      const s = need(handle);
      const st = streamOf(s, stream);
      s.streams.delete(stream);
      st.end();
      await st.done;
    },
    async tableWriteAbort(handle: number, stream: number): Promise<void> {
      const s = sessions.get(handle);
      const st = s?.streams.get(stream);
      s?.streams.delete(stream);
      st?.fail(new Error('table write abandoned by the engine'));
      await st?.done.catch(() => undefined);
    },
    /**
     * Write built table `table` as new table file `name` of `handle`'s store, through its plane
     * (fenced, time-limited by the engine; a failed write leaves no file): bytes kept here are
     * handed over whole, a table its builder keeps is written there. The table is no longer kept,
     * whatever the outcome.
     */
    async tableWriteBuilt(handle: number, table: number, name: string): Promise<void> {
      const s = need(handle);
      const t = take(s, table);
      if ('bytes' in t) return s.plane.writeTable(name, t.bytes);
      try {
        if (!s.tables) throw new MemWalError('IOError', `table file ${name}: no table builder keeps built table ${t.remote}`);
        await s.tables.writeKept(name, t.remote);
      } finally {
        drop(s, t); // a write that failed before it reached the builder left it kept there
      }
    },
    /** Drop built table `table` of `handle`'s store unwritten (nothing happens when it is not kept). */
    async builtRelease(handle: number, table: number): Promise<void> {
      const s = sessions.get(handle);
      const t = s?.built.get(table);
      if (!s || !t) return;
      s.built.delete(table);
      drop(s, t);
    },
    /** How many built tables are kept for the engine, here or on the table builder (tests, diagnostics). */
    async builtKept(): Promise<number> {
      let n = 0;
      for (const s of sessions.values()) n += s.built.size;
      return n;
    },
    tableRead: (handle: number, name: string) => need(handle).handle.tableRead(name),
    tableReadRange: (handle: number, name: string, offset: number, length: number) =>
      need(handle).handle.tableReadRange(name, offset, length),
    tableList: (handle: number) => need(handle).handle.tableList(),
    tableRemove: (handle: number, name: string) => need(handle).handle.tableRemove(name),
    /** Release the store's handle and drop its session whole: kept payloads, built tables (on its builder too), writes, compactions. */
    async release(handle: number): Promise<void> {
      const s = sessions.get(handle);
      if (!s) return;
      sessions.delete(handle);
      for (const t of s.built.values()) drop(s, t);
      for (const st of s.streams.values()) st.fail(new MemWalError('Closed', 'store handle was released'));
      for (const c of s.compactions.values()) void c.return?.()?.catch(() => undefined);
      await s.handle.release();
    },

    /**
     * The table file of a generation, from its WAL entries: the payloads kept since their append
     * when this worker holds every one (then dropped, with any older ones), else read back from the
     * segments (entries replayed at open, or a retry after they were dropped). Built by the store's
     * builder (and kept there) when it is usable and every payload was kept (handed over), else here.
     */
    async buildFlush(handle: number, schema: WireStoreSchema, job: WireFlushJob, wv: WireSchemaVersions): Promise<WireBuiltTable> {
      const storeSchema = schemaOf(schema);
      const s = need(handle);
      const payloads = takeKept(s.payloads, job);
      const builder = s.tables?.builder;
      if (payloads && builder?.usable) {
        const { table, ...meta } = await builder.buildFlush(schema, wv, job.generation, payloads);
        if (!sessions.has(handle)) builder.release(table); // released meanwhile: keep nothing
        return keep(need(handle), { remote: table }, meta);
      }
      const versions = new SchemaVersions(storeSchema, wv.currentVersion, wv.versions);
      const entries = payloads ?? (await readEntries(s.handle, job));
      const { bytes, ...meta } = await buildFlushFromWal(storeSchema, versions, entries, job.generation);
      return keep(need(handle), { bytes }, { length: bytes.length, ...meta }); // released meanwhile: keep nothing
    },
    /** Open a compaction's inputs here; resolves the id `compactNext` pulls its outputs from. */
    async compactOpen(handle: number, schema: WireStoreSchema, job: CompactJob, wv: WireSchemaVersions): Promise<number> {
      const storeSchema = schemaOf(schema);
      const versions = new SchemaVersions(storeSchema, wv.currentVersion, wv.versions);
      const s = need(handle);
      const h = s.handle;
      const keyEncoder = storeSchema.primaryKey.length > 0 ? makeKeyEncoder(storeSchema) : undefined;
      const cache = new TableCache(
        storeSchema,
        storeSchema.internal,
        keyEncoder,
        { range: (n, o, l) => h.tableReadRange(n, o, l), whole: (n) => h.tableRead(n) },
        0,
        versions,
      );
      const inputs = await Promise.all(job.inputs.map((t) => cache.open(t)));
      const id = nextId++;
      need(handle).compactions.set(id, buildCompactionOutputs(storeSchema, keyEncoder, job, inputs, undefined)[Symbol.asyncIterator]());
      return id;
    },
    /** The next output of compaction `compaction` of `handle`'s store (kept here), or null when there is none. */
    async compactNext(handle: number, compaction: number): Promise<WireBuiltTable | null> {
      const s = need(handle);
      const c = s.compactions.get(compaction);
      if (!c) throw new Error(`no compaction ${compaction}`);
      const r = await c.next();
      if (r.done) return null;
      const { bytes, ...meta } = r.value;
      return keep(need(handle), { bytes }, { length: bytes.length, ...meta });
    },
    async compactClose(handle: number, compaction: number): Promise<void> {
      const s = sessions.get(handle);
      const c = s?.compactions.get(compaction);
      s?.compactions.delete(compaction);
      await c?.return?.();
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

/** The bytes of a result that are transferred rather than copied: a read. */
function resultBytes(value: unknown): Uint8Array[] {
  return value instanceof Uint8Array ? [value] : [];
}

/**
 * Serve `scope` (the I/O worker's global scope) with `adapter`: each request runs the method of
 * `makeIoHost` it names, flush tables built on `tables`' builder thread where it can. Call once, in the I/O worker.
 */
export function serveStorage(scope: IoScope, adapter: StorageAdapter, tables?: TableThread): void {
  const api = makeIoHost(adapter, (e) => scope.postMessage(e, []), tables);
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
