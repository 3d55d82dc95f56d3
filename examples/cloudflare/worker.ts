// A Cloudflare Worker that routes each store (`?store=NAME`, default "default") to its own
// SQLite-backed Durable Object, which hosts that one memwal store and answers the HTTP API of
// api.ts (the same API as the Node example), plus the drain's admin routes (docs/scale-out.md):
// POST /drain (drain the store into a Lance server on the allowlist) and GET /drain (its
// drainStats), both with the admin token. Every route needs a credential: /drain, /stats and
// /metrics the admin token, the others the store's (authorizeStore, MEMWAL_STORE_TOKENS). While the drain has lag an alarm is set, so an object
// evicted meanwhile comes back and resumes draining without a request.

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
    setAlarm(scheduledTime: number): Promise<void>;
  };
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
}

interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(request: Request): Promise<Response> };
}

interface Env {
  MEMWAL: DurableObjectNamespaceLike;
  /**
   * The credential of the drain's admin routes (`authorization: Bearer <token>`): a secret
   * (`wrangler secret put MEMWAL_ADMIN_TOKEN`). Unset or empty: those routes answer 403.
   */
  MEMWAL_ADMIN_TOKEN?: string | null;
  /**
   * Where a drain may point: comma-separated URL prefixes (`https://lance.example/drain/`); an
   * endpoint must have a prefix's origin and a path at or under the prefix's. Unset: nowhere.
   */
  MEMWAL_DRAIN_ALLOWLIST?: string | null;
  /**
   * Who may use a store's routes (`/put`, `/scan`, …): a secret holding JSON
   * `{ "<token>": "<store>" | ["<store>", …] | "*" }` (`"*"`: every store), checked by
   * {@link authorizeStore} against `authorization: Bearer <token>`. Unset or empty: those routes
   * answer 403. Replace `authorizeStore` to use your app's own auth instead.
   */
  MEMWAL_STORE_TOKENS?: string | null;
}

/** Store names memwal accepts; checked by the Worker before it routes. */
const STORE_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** Where the object drains to: kept in its storage, so a restarted object resumes the drain. */
interface DrainConfig {
  endpoint: string;
  token: string;
}

/** While the drain has lag, an alarm is set this far ahead: it brings an evicted object back. */
const DRAIN_ALARM_MS = 10_000;
/** How long one alarm keeps the object busy, waiting for the drain to catch up. */
const DRAIN_ALARM_HOLD_MS = 60_000;

/**
 * One memwal store per Durable Object, named after the object (`ctx.id.name`), so its metrics
 * carry `store="<name>"`. Opened (WAL replayed) before the first request.
 */
export class MemWalObject {
  private db!: MemWal;
  private openError: unknown;
  private drain: DrainHandle | undefined;
  /** Why the stored drain configuration was not started (its endpoint left the allowlist). */
  private drainRefused: string | undefined;
  /** An alarm is set (as far as this instance knows). */
  private alarmSet = false;

  constructor(
    private readonly ctx: DurableObjectStateLike,
    private readonly env: Env,
  ) {
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
        if (config) {
          try {
            this.startDrain(config);
          } catch (e) {
            this.drainRefused = (e as Error).message;
            console.warn(`memwal: the stored drain of ${name} was not started: ${this.drainRefused}`);
          }
        }
      } catch (e) {
        this.openError = e; // answered to every request; the next instance tries again
      }
    });
  }

  async fetch(request: Request): Promise<Response> {
    if (this.openError !== undefined) return errorResponse(this.openError);
    const { pathname } = new URL(request.url);
    if (pathname === '/drain') {
      const refused = await checkAdmin(request, this.env.MEMWAL_ADMIN_TOKEN);
      if (refused) return refused;
      try {
        if (request.method === 'POST') return await this.configureDrain(request);
        if (request.method === 'GET') {
          if (!this.drain) {
            const why = this.drainRefused ?? 'POST /drain { endpoint, token } first';
            return errorResponse(new MemWalError('InvalidArgument', `not draining: ${why}`));
          }
          return Response.json(await this.drain.drainStats());
        }
        return answer(405, 'MethodNotAllowed', '/drain answers GET and POST', { allow: 'GET, POST' });
      } catch (e) {
        return errorResponse(e);
      }
    }
    const response = await handle(this.db, request);
    if (this.drain) await this.keepAlarm();
    if (pathname !== '/metrics' || !this.drain || !response.ok) return response;
    return new Response((await response.text()) + (await this.drain.metrics()), response);
  }

  /**
   * The alarm set while the drain has lag. The constructor has (re)started the drain by the
   * time it runs; it keeps the object busy while the drain catches up (at most
   * DRAIN_ALARM_HOLD_MS), and sets the next alarm if lag remains.
   */
  async alarm(): Promise<void> {
    this.alarmSet = false;
    const d = this.drain;
    if (this.openError !== undefined || !d) return;
    try {
      const head = (await this.db.walStats()).nextPosition - 1;
      await d.waitForApplied(head, { signal: AbortSignal.timeout(DRAIN_ALARM_HOLD_MS) }).catch(() => undefined);
      const stats = await d.drainStats();
      if (stats.lagEntries > 0 && stats.state !== 'failed' && stats.state !== 'stopped') await this.keepAlarm();
    } catch (e) {
      console.warn('memwal: the drain alarm failed', e);
      await this.keepAlarm();
    }
  }

  /** Set the alarm unless one is set: while draining, after every request (which may add lag). */
  private async keepAlarm(): Promise<void> {
    if (this.alarmSet) return;
    this.alarmSet = true;
    try {
      await this.ctx.storage.setAlarm(Date.now() + DRAIN_ALARM_MS);
    } catch (e) {
      this.alarmSet = false; // the next request tries again
      throw e;
    }
  }

  /** POST /drain `{ endpoint, token }`: (re)start the drain and keep its settings. */
  private async configureDrain(request: Request): Promise<Response> {
    const body = (await request.json().catch(() => undefined)) as Partial<DrainConfig> | undefined;
    if (typeof body?.endpoint !== 'string' || typeof body.token !== 'string') {
      throw new MemWalError('InvalidArgument', 'body: expected { endpoint, token }');
    }
    const config = { endpoint: body.endpoint, token: body.token };
    checkAllowed(config.endpoint, this.env); // before anything changes
    await this.drain?.stop();
    this.drain = undefined;
    try {
      this.startDrain(config); // throws InvalidArgument for a malformed endpoint, before it is kept
    } catch (e) {
      this.drainRefused = (e as Error).message;
      throw e;
    }
    this.drainRefused = undefined;
    await this.ctx.storage.put('memwal-drain', config);
    await this.keepAlarm();
    return Response.json({ draining: config.endpoint });
  }

  /**
   * Drain the store into a Lance server (examples/lance-server) until the object goes away.
   * Throws `InvalidArgument` for an endpoint that is not on MEMWAL_DRAIN_ALLOWLIST. The
   * endpoint's answers are not quoted in the stats (GET /drain), only their status.
   */
  private startDrain(config: DrainConfig): void {
    checkAllowed(config.endpoint, this.env);
    this.drain = drain(this.db, { endpoint: config.endpoint, token: config.token, quoteEndpointMessages: false });
    this.drain.done.catch((e: unknown) => console.warn(`memwal: the drain stopped: ${(e as Error).message}`));
  }
}

/** A JSON error answer `{ code, message }`. */
function answer(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ code, message }, { status, headers });
}

/**
 * The refusal for a request without the admin token (401), or for every request when no admin
 * token is configured (403); undefined when it carries the token. Compares SHA-256 digests in
 * constant time.
 */
async function checkAdmin(request: Request, adminToken: string | null | undefined): Promise<Response | undefined> {
  if (!adminToken) return answer(403, 'Forbidden', 'administration is off: set the MEMWAL_ADMIN_TOKEN secret');
  const given = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? '';
  return (await sameSecret(given, adminToken))
    ? undefined
    : answer(401, 'Unauthorized', 'this route needs authorization: Bearer <MEMWAL_ADMIN_TOKEN>');
}

/** `InvalidArgument` unless `endpoint` is on the deployment's MEMWAL_DRAIN_ALLOWLIST. */
function checkAllowed(endpoint: string, env: Env): void {
  if (!allowed(endpoint, env.MEMWAL_DRAIN_ALLOWLIST ?? '')) {
    throw new MemWalError('InvalidArgument', "endpoint: not on this deployment's drain allowlist (MEMWAL_DRAIN_ALLOWLIST)");
  }
}

/**
 * Whether `endpoint` is under one of `allowlist`'s comma-separated URL prefixes: the same origin,
 * and a path equal to the prefix's or under it (paths compared after URL parsing resolved any
 * `..`). An endpoint with credentials, a query or a fragment is never allowed.
 */
function allowed(endpoint: string, allowlist: string): boolean {
  const parse = (text: string): URL | undefined => {
    try {
      return new URL(text);
    } catch {
      return undefined;
    }
  };
  const url = parse(endpoint);
  if (!url || url.username || url.password || url.search || url.hash) return false;
  return allowlist
    .split(',')
    .map((entry) => parse(entry.trim()))
    .some((prefix) => {
      if (!prefix || prefix.origin !== url.origin) return false;
      const dir = prefix.pathname.endsWith('/') ? prefix.pathname : `${prefix.pathname}/`;
      return url.pathname === prefix.pathname || url.pathname.startsWith(dir);
    });
}

/** SHA-256 digests of `a` and `b` compared in constant time. */
async function sameSecret(a: string, b: string): Promise<boolean> {
  const digest = async (text: string) => new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  const [x, y] = await Promise.all([digest(a), digest(b)]);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/**
 * The app's auth hook for a store's routes: undefined lets `request` use `store`, a Response
 * refuses it. This one takes `authorization: Bearer <token>` with a token that
 * MEMWAL_STORE_TOKENS maps to `store` (401 without a known token, 403 for another store's, 403
 * for everyone while MEMWAL_STORE_TOKENS is unset). Replace it with your own (a session, a JWT):
 * it runs in the Worker, before the request reaches the store's Durable Object.
 */
async function authorizeStore(request: Request, store: string, env: Env): Promise<Response | undefined> {
  let table: Record<string, string | string[]>;
  try {
    table = JSON.parse(env.MEMWAL_STORE_TOKENS || 'null') as Record<string, string | string[]>;
  } catch {
    table = {};
    console.warn('memwal: MEMWAL_STORE_TOKENS is not JSON; every store route is refused');
  }
  if (table === null || typeof table !== 'object' || Object.keys(table).length === 0) {
    return answer(403, 'Forbidden', 'store access is off: set the MEMWAL_STORE_TOKENS secret');
  }
  const given = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  if (given !== undefined) {
    for (const [token, stores] of Object.entries(table)) {
      if (!(await sameSecret(given, token))) continue;
      const list = typeof stores === 'string' ? [stores] : Array.isArray(stores) ? stores : [];
      if (list.includes('*') || list.includes(store)) return undefined;
      return answer(403, 'Forbidden', `this credential may not use store ${store}`);
    }
  }
  return answer(401, 'Unauthorized', 'this route needs authorization: Bearer <a token of this store>');
}

/** Routes of one store that answer for the whole deployment's operator: the admin token only. */
const ADMIN_ROUTES = new Set(['/stats', '/metrics']);

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const store = url.searchParams.get('store') ?? 'default';
    if (!STORE_NAME.test(store)) {
      return errorResponse(new MemWalError('InvalidArgument', 'store: 1-200 characters of A-Z a-z 0-9 . _ -'));
    }
    // Every route needs a credential before it reaches the object: /drain the admin token (checked
    // by the object), /stats and /metrics the admin token, every other route the store's.
    if (ADMIN_ROUTES.has(url.pathname)) {
      const refused = await checkAdmin(request, env.MEMWAL_ADMIN_TOKEN);
      if (refused) return refused;
    } else if (url.pathname !== '/drain') {
      const refused = await authorizeStore(request, store, env);
      if (refused) return refused;
    }
    return env.MEMWAL.get(env.MEMWAL.idFromName(store)).fetch(request);
  },
};
