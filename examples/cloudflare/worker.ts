// Example: a Cloudflare Worker that routes each store to its own SQLite-backed Durable Object,
// which hosts one memwal store: POST /put (JSON rows), GET /scan, GET /stats, GET /metrics
// (Prometheus text), POST /drain (start draining into a Lance server, docs/scale-out.md) and
// GET /drain (its drainStats). `?store=NAME` picks the Durable Object (default "default").

import { Field, Float64, Schema, Utf8 } from 'apache-arrow';
import { type DrainHandle, MemWal, MemWalError, drain } from 'memwal';
import { DURABLE_OBJECT_DEFAULTS, DurableObjectStorageAdapter } from 'memwal/cloudflare';
import type { DurableObjectStorageLike } from 'memwal/cloudflare';

/** The part of `DurableObjectState` used here (`@cloudflare/workers-types` has the full type). */
interface DurableObjectStateLike {
  storage: DurableObjectStorageLike & {
    get<T>(key: string): Promise<T | undefined>;
    put(key: string, value: unknown): Promise<void>;
  };
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
}

interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(request: Request): Promise<Response> };
}

interface Env {
  MEMWAL: DurableObjectNamespaceLike;
}

/** Rows are `{ id, value?, note? }`; `id` is the primary key, so a put of a known id replaces it. */
const schema = new Schema([
  new Field('id', new Utf8(), false),
  new Field('value', new Float64(), true),
  new Field('note', new Utf8(), true),
]);

/** JSON that tolerates the BigInts Arrow returns for 64-bit integer columns. */
function json(body: unknown, status = 200): Response {
  const text = JSON.stringify(body, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return new Response(text, { status, headers: { 'content-type': 'application/json' } });
}

/** HTTP status for a failed call: the caller's fault, try later, or outcome unknown. */
function errorResponse(e: unknown): Response {
  if (!(e instanceof MemWalError)) return json({ code: 'Internal', message: String(e) }, 500);
  const status =
    e.code === 'InvalidArgument' || e.code === 'NotSupported' ? 400 : e.code === 'BackpressureTimeout' || e.code === 'Locked' ? 503 : 500;
  return json({ code: e.code, message: e.message }, status);
}

/** Where the object drains to: kept in its storage, so a restarted object resumes the drain. */
interface DrainConfig {
  endpoint: string;
  token: string;
}

/** One memwal store per Durable Object; opened (WAL replayed) before the first request. */
export class MemWalObject {
  private db!: MemWal;
  private drain: DrainHandle | undefined;

  constructor(private readonly ctx: DurableObjectStateLike) {
    void ctx.blockConcurrencyWhile(async () => {
      this.db = await MemWal.open({
        name: 'events',
        schema,
        primaryKey: ['id'],
        storage: new DurableObjectStorageAdapter(ctx.storage),
        ...DURABLE_OBJECT_DEFAULTS,
        // A request should not wait for ever behind a slow flush: shed load with 503 instead.
        backpressureTimeoutMs: 10_000,
      });
      const config = await ctx.storage.get<DrainConfig>('memwal-drain');
      if (config) this.startDrain(config);
    });
  }

  /** Drain the store into a Lance server (examples/lance-server) until the object goes away. */
  private startDrain(config: DrainConfig): void {
    this.drain = drain(this.db, { endpoint: config.endpoint, token: config.token });
    this.drain.done.catch((e: unknown) => console.warn('memwal: the drain stopped', e));
  }

  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    try {
      if (request.method === 'POST' && pathname === '/put') {
        const body: unknown = await request.json().catch(() => undefined);
        if (typeof body !== 'object' || body === null) return json({ code: 'InvalidArgument', message: 'body: expected JSON rows' }, 400);
        const rows = Array.isArray(body) ? body : [body];
        return json(await this.db.put(rows as Record<string, unknown>[]));
      }
      if (request.method === 'GET' && pathname === '/scan') {
        const table = await this.db.scan();
        return json(table.toArray().map((row) => (row as { toJSON(): unknown }).toJSON()));
      }
      if (request.method === 'GET' && pathname === '/stats') {
        const db = this.db;
        const [memtable, backpressure, wal, write, storage] = await Promise.all([
          db.memtableStats(),
          db.backpressureStats(),
          db.walStats(),
          db.writeStats(),
          db.storageStats(),
        ]);
        return json({ memtable, backpressure, wal, write, storage });
      }
      if (request.method === 'GET' && pathname === '/metrics') {
        const text = (await this.db.metrics()) + ((await this.drain?.metrics()) ?? '');
        return new Response(text, { headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' } });
      }
      if (request.method === 'POST' && pathname === '/drain') {
        const body = (await request.json().catch(() => undefined)) as Partial<DrainConfig> | undefined;
        if (typeof body?.endpoint !== 'string' || typeof body.token !== 'string') {
          return json({ code: 'InvalidArgument', message: 'body: expected { endpoint, token }' }, 400);
        }
        const config = { endpoint: body.endpoint, token: body.token };
        await this.drain?.stop();
        this.startDrain(config); // throws InvalidArgument for a bad endpoint before it is kept
        await this.ctx.storage.put('memwal-drain', config);
        return json({ draining: config.endpoint });
      }
      if (request.method === 'GET' && pathname === '/drain') {
        if (!this.drain) return json({ code: 'NotFound', message: 'not draining (POST /drain first)' }, 404);
        return json(await this.drain.drainStats());
      }
      return json({ code: 'NotFound', message: `${request.method} ${pathname}` }, 404);
    } catch (e) {
      return errorResponse(e);
    }
  }
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    const store = new URL(request.url).searchParams.get('store') ?? 'default';
    return env.MEMWAL.get(env.MEMWAL.idFromName(store)).fetch(request);
  },
};
