// A Cloudflare Worker that routes each store (`?store=NAME`, default "default") to its own
// SQLite-backed Durable Object, which hosts that one memwal store and answers the HTTP API of
// api.ts (the same API as the Node example), plus POST /drain (start draining the store into a
// Lance server, docs/scale-out.md) and GET /drain (its drainStats).

import { type DrainHandle, MemWal, MemWalError, drain } from 'memwal';
import { DURABLE_OBJECT_DEFAULTS, DurableObjectStorageAdapter } from 'memwal/cloudflare';
import type { DurableObjectStorageLike } from 'memwal/cloudflare';
import { errorResponse, handle, schema } from './api.js';

/** The part of `DurableObjectState` used here (`@cloudflare/workers-types` has the full type). */
interface DurableObjectStateLike {
  /** `name`: what `idFromName` was given (Cloudflare since 2026-03; workerd 1.20260315+). */
  id: { name?: string };
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

/** Store names memwal accepts; checked by the Worker before it routes. */
const STORE_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** Where the object drains to: kept in its storage, so a restarted object resumes the drain. */
interface DrainConfig {
  endpoint: string;
  token: string;
}

/**
 * One memwal store per Durable Object, named after the object (`ctx.id.name`), so its metrics
 * carry `store="<name>"`. Opened (WAL replayed) before the first request.
 */
export class MemWalObject {
  private db!: MemWal;
  private openError: unknown;
  private drain: DrainHandle | undefined;

  constructor(private readonly ctx: DurableObjectStateLike) {
    void ctx.blockConcurrencyWhile(async () => {
      try {
        const name = ctx.id.name;
        if (name === undefined) {
          throw new MemWalError(
            'NotSupported',
            'ctx.id.name is missing: reach this object through idFromName (and a runtime from 2026-03 on)',
          );
        }
        this.db = await MemWal.open({
          name,
          schema,
          primaryKey: ['id'],
          storage: new DurableObjectStorageAdapter(ctx.storage),
          ...DURABLE_OBJECT_DEFAULTS,
          // A request should not wait for ever behind a slow flush: shed load with 503 instead.
          backpressureTimeoutMs: 10_000,
        });
        const config = await ctx.storage.get<DrainConfig>('memwal-drain');
        if (config) this.startDrain(config);
      } catch (e) {
        this.openError = e; // answered to every request; the next instance tries again
      }
    });
  }

  async fetch(request: Request): Promise<Response> {
    if (this.openError !== undefined) return errorResponse(this.openError);
    const { pathname } = new URL(request.url);
    try {
      if (pathname === '/drain' && request.method === 'POST') return await this.configureDrain(request);
      if (pathname === '/drain' && request.method === 'GET') {
        if (!this.drain) return errorResponse(new MemWalError('InvalidArgument', 'not draining: POST /drain { endpoint, token } first'));
        return Response.json(await this.drain.drainStats());
      }
    } catch (e) {
      return errorResponse(e);
    }
    const response = await handle(this.db, request);
    if (pathname !== '/metrics' || !this.drain || !response.ok) return response;
    return new Response((await response.text()) + (await this.drain.metrics()), response);
  }

  /** POST /drain `{ endpoint, token }`: (re)start the drain and keep its settings. */
  private async configureDrain(request: Request): Promise<Response> {
    const body = (await request.json().catch(() => undefined)) as Partial<DrainConfig> | undefined;
    if (typeof body?.endpoint !== 'string' || typeof body.token !== 'string') {
      throw new MemWalError('InvalidArgument', 'body: expected { endpoint, token }');
    }
    const config = { endpoint: body.endpoint, token: body.token };
    await this.drain?.stop();
    this.startDrain(config); // throws InvalidArgument for a bad endpoint before it is kept
    await this.ctx.storage.put('memwal-drain', config);
    return Response.json({ draining: config.endpoint });
  }

  /** Drain the store into a Lance server (examples/lance-server) until the object goes away. */
  private startDrain(config: DrainConfig): void {
    this.drain = drain(this.db, { endpoint: config.endpoint, token: config.token });
    this.drain.done.catch((e: unknown) => console.warn('memwal: the drain stopped', e));
  }
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    const store = new URL(request.url).searchParams.get('store') ?? 'default';
    if (!STORE_NAME.test(store)) {
      return Promise.resolve(errorResponse(new MemWalError('InvalidArgument', 'store: 1-200 characters of A-Z a-z 0-9 . _ -')));
    }
    return env.MEMWAL.get(env.MEMWAL.idFromName(store)).fetch(request);
  },
};
