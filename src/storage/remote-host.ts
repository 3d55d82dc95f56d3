// The I/O worker's side of RemoteStorage: serves one engine thread's storage calls on a real
// adapter (OPFS or IndexedDB), and runs its background jobs next to the files — building a
// flushed memtable's table file from the WAL entries it wrote, and compaction outputs from the
// input files — handing back built bytes. Writes and commits stay the engine's. Browser workers.

import { decodePayload } from '../core/recovery.js';
import { buildCompactionOutputs, buildFlushTable, type CompactJob } from '../core/jobs.js';
import { makeKeyEncoder } from '../core/keys.js';
import { decodeSchema, makeStoreSchema, type StoreSchema } from '../core/schema.js';
import { SchemaVersions } from '../core/schema-versions.js';
import { TableCache } from '../core/tables.js';
import { MemWalError } from '../errors.js';
import type { BuiltTable } from '../table/writer.js';
import { encodeFrame, scanSegment } from '../wal/codec.js';
import type { StorageAdapter, StoreHandle } from './adapter.js';
import {
  errorToWire,
  type IoEvent,
  type IoReply,
  type IoRequest,
  transferables,
  type WireBuiltTable,
  type WireSchemaVersions,
} from './remote-protocol.js';

/** Where the I/O worker listens and answers (its worker scope). */
export interface IoScope {
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  postMessage(message: unknown, transfer: Transferable[]): void;
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

function toWire(b: BuiltTable): WireBuiltTable {
  const w: WireBuiltTable = { bytes: b.bytes, rows: b.rows, blocks: b.blocks };
  if (b.minKey !== undefined) w.minKey = b.minKey;
  if (b.maxKey !== undefined) w.maxKey = b.maxKey;
  return w;
}

/**
 * Serve `scope` (the I/O worker's global scope) with `adapter`. Call once, in the I/O worker.
 * Every open handle, table-write stream and compaction job is keyed by an id the engine holds.
 */
export function serveStorage(scope: IoScope, adapter: StorageAdapter): void {
  const handles = new Map<number, StoreHandle>();
  const streams = new Map<number, Stream>();
  const compactions = new Map<number, AsyncIterator<BuiltTable>>();
  const opening = new Map<number, AbortController>();
  const schemas = new Map<string, StoreSchema>();
  let nextId = 1;

  const event = (e: IoEvent): void => scope.postMessage(e, []);
  const schemaOf = (b64: string, pk: string[]): StoreSchema => {
    const key = `${b64}|${pk.join('\u0000')}`;
    let ss = schemas.get(key);
    if (!ss) {
      ss = makeStoreSchema(decodeSchema(b64), pk);
      schemas.set(key, ss);
    }
    return ss;
  };
  const need = (id: number | undefined): StoreHandle => {
    const h = id === undefined ? undefined : handles.get(id);
    if (!h) throw new MemWalError('Closed', 'store handle was released');
    return h;
  };

  const ops: Record<string, (req: IoRequest) => Promise<unknown>> = {
    async openStore({ id, args: [name, o] }) {
      const options = o as { timeoutMs?: number; steal?: boolean };
      const controller = new AbortController();
      opening.set(id, controller);
      let hid = 0;
      try {
        const h = await adapter.openStore(name as string, {
          ...options,
          signal: controller.signal,
          onWaiting: () => event({ event: 'waiting', request: id }),
          onLost: (reason) => event({ event: 'lost', handle: hid, reason }),
          logger: { warn: (message: string) => event({ event: 'warn', message }) },
        });
        hid = nextId++;
        handles.set(hid, h);
        return hid;
      } finally {
        opening.delete(id);
      }
    },
    async abortOpen({ args: [request] }) {
      opening.get(request as number)?.abort();
    },
    destroyStore: ({ args: [name] }) => adapter.destroyStore(name as string),
    estimate: async ({ args: [name] }) => (adapter.estimate ? adapter.estimate(name as string) : {}),
    manifestLoad: (r) => need(r.handle).manifestLoad(),
    manifestCommit: (r) => need(r.handle).manifestCommit(r.args[0] as number, r.args[1] as never),
    walList: (r) => need(r.handle).walList(),
    walRead: (r) => need(r.handle).walRead(r.args[0] as string, r.args[1] as number | undefined),
    walAppend: (r) => need(r.handle).walAppend(r.args[0] as string, r.args[1] as number, r.args[2] as Uint8Array),
    async walAppendEntry(r) {
      const [name, offset, epoch, position, payload] = r.args as [string, number, number, number, Uint8Array];
      const frame = encodeFrame(epoch, position, payload);
      await need(r.handle).walAppend(name, offset, frame);
      return frame.length;
    },
    walTruncate: (r) => need(r.handle).walTruncate(r.args[0] as string, r.args[1] as number),
    walRemove: (r) => need(r.handle).walRemove(r.args[0] as string),
    async tableWriteOpen(r) {
      const id = nextId++;
      streams.set(id, stream(need(r.handle), r.args[0] as string));
      return id;
    },
    async tableWriteChunk({ args: [id, chunk] }) {
      const s = streams.get(id as number);
      if (!s) throw new Error(`no table write ${id}`);
      s.push(chunk as Uint8Array);
    },
    async tableWriteClose({ args: [id] }) {
      const s = streams.get(id as number);
      streams.delete(id as number);
      if (!s) throw new Error(`no table write ${id}`);
      s.end();
      await s.done;
    },
    async tableWriteAbort({ args: [id] }) {
      const s = streams.get(id as number);
      streams.delete(id as number);
      s?.fail(new Error('table write abandoned by the engine'));
      await s?.done.catch(() => undefined);
    },
    tableRead: (r) => need(r.handle).tableRead(r.args[0] as string),
    tableReadRange: (r) => need(r.handle).tableReadRange(r.args[0] as string, r.args[1] as number, r.args[2] as number),
    tableList: (r) => need(r.handle).tableList(),
    tableRemove: (r) => need(r.handle).tableRemove(r.args[0] as string),
    async release(r) {
      const h = handles.get(r.handle!);
      handles.delete(r.handle!);
      await h?.release();
    },

    /** The table file of a generation, from its WAL entries (read here, where the segments are). */
    async buildFlush(r) {
      const [b64, pk, job, wv] = r.args as [
        string,
        string[],
        { generation: number; firstPosition: number; lastPosition: number; segments: { name: string }[] },
        WireSchemaVersions,
      ];
      const ss = schemaOf(b64, pk);
      const versions = new SchemaVersions(ss, wv.currentVersion, wv.versions);
      const h = need(r.handle);
      const batches = [];
      for (const seg of job.segments) {
        for (const f of scanSegment(await h.walRead(seg.name, 0), 0).frames) {
          if (f.position < job.firstPosition || f.position > job.lastPosition) continue;
          const t = decodePayload(f, (s, epoch) => versions.versionOfEntry(s, epoch) !== undefined, false);
          batches.push(...versions.projectEntry(t, f.epoch, f.position));
        }
      }
      const keyEncoder = ss.primaryKey.length > 0 ? makeKeyEncoder(ss) : undefined;
      return toWire(buildFlushTable(ss, keyEncoder, batches, job.generation));
    },
    async compactOpen(r) {
      const [b64, pk, job, wv] = r.args as [string, string[], CompactJob, WireSchemaVersions];
      const ss = schemaOf(b64, pk);
      const versions = new SchemaVersions(ss, wv.currentVersion, wv.versions);
      const h = need(r.handle);
      const keyEncoder = ss.primaryKey.length > 0 ? makeKeyEncoder(ss) : undefined;
      const cache = new TableCache(
        ss,
        ss.internal,
        keyEncoder,
        { range: (n, o, l) => h.tableReadRange(n, o, l), whole: (n) => h.tableRead(n) },
        0,
        versions,
      );
      const tables = await Promise.all(job.inputs.map((t) => cache.open(t)));
      const id = nextId++;
      compactions.set(id, buildCompactionOutputs(ss, keyEncoder, job, tables, undefined)[Symbol.asyncIterator]());
      return id;
    },
    async compactNext({ args: [id] }) {
      const it = compactions.get(id as number);
      if (!it) throw new Error(`no compaction ${id}`);
      const r = await it.next();
      return r.done ? null : toWire(r.value);
    },
    async compactClose({ args: [id] }) {
      const it = compactions.get(id as number);
      compactions.delete(id as number);
      await it?.return?.();
    },
  };

  scope.addEventListener('message', (ev: MessageEvent) => {
    const req = ev.data as IoRequest;
    const op = ops[req.op];
    const reply = (r: IoReply, transfer: Transferable[] = []): void => scope.postMessage(r, transfer);
    if (!op) {
      reply({ id: req.id, ok: false, error: { code: 'InvalidArgument', message: `unknown I/O request ${req.op}` } });
      return;
    }
    Promise.resolve()
      .then(() => op(req))
      .then(
        (value) => {
          const bytes =
            value instanceof Uint8Array
              ? [value]
              : value && typeof value === 'object' && 'bytes' in value
                ? [(value as WireBuiltTable).bytes]
                : [];
          reply({ id: req.id, ok: true, value }, transferables(bytes));
        },
        (e: unknown) => reply({ id: req.id, ok: false, error: errorToWire(e, `I/O worker ${req.op}`) }),
      );
  });
}
