// A Cloudflare Worker that routes each store (`?store=NAME`, default "default") to its own
// SQLite-backed Durable Object, which hosts that one memwal store and answers the HTTP API of
// api.ts (the same API as the Node example).

import { MemWal, MemWalError } from 'memwal';
import { DURABLE_OBJECT_DEFAULTS, DurableObjectStorageAdapter } from 'memwal/cloudflare';
import type { DurableObjectStorageLike } from 'memwal/cloudflare';
import { errorResponse, handle, schema } from './api.js';

/** The part of `DurableObjectState` used here (`@cloudflare/workers-types` has the full type). */
interface DurableObjectStateLike {
  /** `name`: what `idFromName` was given (Cloudflare since 2026-03; workerd 1.20260315+). */
  id: { name?: string };
  storage: DurableObjectStorageLike;
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

/**
 * One memwal store per Durable Object, named after the object (`ctx.id.name`), so its metrics
 * carry `store="<name>"`. Opened (WAL replayed) before the first request.
 */
export class MemWalObject {
  private db!: MemWal;
  private openError: unknown;

  constructor(ctx: DurableObjectStateLike) {
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
      } catch (e) {
        this.openError = e; // answered to every request; the next instance tries again
      }
    });
  }

  fetch(request: Request): Promise<Response> {
    if (this.openError !== undefined) return Promise.resolve(errorResponse(this.openError));
    return handle(this.db, request);
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
