// The HTTP side of a drain (docs/scale-out.md "Wire format"): a Node `http` request handler for
// `GET|POST /drain/:store` in front of a LanceSink, with a pluggable bearer-token check, a body
// limit and CORS for browser stores; answers carry the sink's refusals in plain words and never
// the details of the server's own failures (those go to the log). Node only.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DRAIN_HEADERS, STORE_ID_PATTERN, parseDrainHeaders, parseIncarnation } from '../drain/wire.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { DEFAULT_MAX_PENDING_PER_STORE, type LanceSink } from './sink.js';

/** What an authorizer decides: go on, 401 (no or unknown credential), 403 (not for this store). */
export type DrainAuthorization = 'allow' | 'unauthenticated' | 'forbidden';

/**
 * Decides whether `token` (the bearer token, undefined without one) may drain into `storeId`.
 * Called before the body is read; must not throw for a bad token (answer `'unauthenticated'`).
 */
export type DrainAuthorizer = (token: string | undefined, storeId: string) => DrainAuthorization | Promise<DrainAuthorization>;

/** Options of {@link createDrainRequestHandler}. */
export interface DrainRequestHandlerOptions {
  sink: LanceSink;
  /** The credential check (see {@link tokenAuthorizer}). Required: a drain endpoint is never open. */
  authorize: DrainAuthorizer;
  /**
   * Largest body accepted; a larger one is answered 413 without being buffered. Default 8 MiB:
   * a drain's default run (1 MiB of entries) or one WAL entry (2 MiB at most by default) fits.
   */
  maxBodyBytes?: number;
  /** `Access-Control-Allow-Origin` for browser stores on another origin (`'*'` or an origin); default none. */
  allowOrigin?: string;
  /** URL path prefix; default `/drain/`. */
  prefix?: string;
  /** Where the details of 5xx answers go (the answer itself says only what happened); default `console`. */
  logger?: Logger;
  /**
   * POSTs of one store received or applied at once; more are answered 503 (`Locked`, retry)
   * before their bodies are read, so one store cannot make the server buffer and check bodies
   * without limit. Default {@link DEFAULT_MAX_PENDING_PER_STORE}, the sink's default queue.
   */
  maxRequestsPerStore?: number;
}

/** Default {@link DrainRequestHandlerOptions.maxBodyBytes}. */
export const DEFAULT_MAX_DRAIN_BODY_BYTES = 8 * 1024 * 1024;

/** The bearer token of a request (`authorization: Bearer <token>`), or undefined. */
export function bearerToken(req: IncomingMessage): string | undefined {
  return /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
}

/** Whether `token` is `expected`, compared as SHA-256 digests in constant time. */
export function sameToken(token: string | undefined, expected: string): boolean {
  return token !== undefined && token !== '' && timingSafeEqual(sha256(token), sha256(expected));
}

/**
 * An authorizer over a fixed table `token → store id(s)`: an unknown or missing token is
 * `'unauthenticated'`, a known token for another store `'forbidden'`. Tokens are kept and looked
 * up as SHA-256 digests and compared in constant time.
 */
export function tokenAuthorizer(tokens: Record<string, string | readonly string[]>): DrainAuthorizer {
  const table = new Map<string, { digest: Buffer; stores: Set<string> }>();
  for (const [token, stores] of Object.entries(tokens)) {
    const digest = sha256(token);
    table.set(digest.toString('hex'), { digest, stores: new Set(typeof stores === 'string' ? [stores] : stores) });
  }
  return (token, storeId) => {
    if (token === undefined || token === '') return 'unauthenticated';
    const digest = sha256(token);
    const entry = table.get(digest.toString('hex'));
    if (!entry || !timingSafeEqual(entry.digest, digest)) return 'unauthenticated';
    return entry.stores.has(storeId) ? 'allow' : 'forbidden';
  };
}

/**
 * A Node `http` handler for the drain routes: `GET {prefix}:store` answers
 * `{ storeId, appliedPosition }`, `POST {prefix}:store` applies a drain request and answers
 * `{ storeId, appliedPosition, epoch, rows, duplicate }`. Errors answer `{ code, message }` with
 * 401/403 (credential), 404, 405, 413 (body limit), 400 (`InvalidArgument`: nothing changed;
 * the message says what was wrong), 503 (`Locked`: the store has too many requests in flight;
 * retry) or 500 (the server's own failure, e.g. Lance's: retry; the answer says no more, the
 * details go to `logger`). Resolves `false` for a URL outside `prefix`, so the caller can serve
 * other routes.
 */
export function createDrainRequestHandler(
  options: DrainRequestHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const prefix = options.prefix ?? '/drain/';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_DRAIN_BODY_BYTES;
  const maxRequestsPerStore = options.maxRequestsPerStore ?? DEFAULT_MAX_PENDING_PER_STORE;
  if (!Number.isSafeInteger(maxRequestsPerStore) || maxRequestsPerStore < 1) {
    throw new MemWalError('InvalidArgument', `maxRequestsPerStore must be an integer >= 1, got ${maxRequestsPerStore}`);
  }
  /** POSTs per store being received or applied. */
  const inFlight = new Map<string, number>();
  const cors: Record<string, string> = options.allowOrigin
    ? {
        'access-control-allow-origin': options.allowOrigin,
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': `authorization, content-type, ${Object.values(DRAIN_HEADERS).join(', ')}`,
        'access-control-max-age': '600',
      }
    : {};
  const reply = (res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...cors, ...extra }).end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, code: string, message: string): void => reply(res, status, { code, message });

  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (!path.startsWith(prefix)) return false;
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return true;
    }
    let storeId: string;
    try {
      storeId = decodeURIComponent(path.slice(prefix.length));
    } catch {
      storeId = '';
    }
    if (!STORE_ID_PATTERN.test(storeId)) {
      discard(req);
      fail(res, 404, 'NotFound', 'no such store id (1-200 characters of A-Z a-z 0-9 . _ -)');
      return true;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      discard(req);
      fail(res, 405, 'MethodNotAllowed', `${req.method} ${prefix}:store`);
      return true;
    }
    const verdict = await options.authorize(bearerToken(req), storeId);
    if (verdict !== 'allow') {
      discard(req);
      if (verdict === 'forbidden') fail(res, 403, 'Forbidden', `this credential may not drain into store ${storeId}`);
      else fail(res, 401, 'Unauthorized', 'a bearer token for this store is required');
      return true;
    }
    let counted = false;
    try {
      if (req.method === 'GET') {
        const incarnation = parseIncarnation(single(req.headers[DRAIN_HEADERS.incarnation]));
        reply(res, 200, { storeId, appliedPosition: await options.sink.appliedPosition(storeId, incarnation) });
        return true;
      }
      const pending = inFlight.get(storeId) ?? 0;
      if (pending >= maxRequestsPerStore) {
        throw new MemWalError('Locked', `${maxRequestsPerStore} requests of ${storeId} are already in flight; retry later`);
      }
      inFlight.set(storeId, pending + 1);
      counted = true;
      const meta = parseDrainHeaders((name) => single(req.headers[name]));
      const body = await readBody(req, maxBodyBytes);
      if (body === undefined) {
        fail(res, 413, 'PayloadTooLarge', `body above ${maxBodyBytes} bytes`);
        return true;
      }
      reply(res, 200, await options.sink.applyEncoded(storeId, meta, body));
    } catch (e) {
      const err = toMemWalError(e, `drain into ${storeId}`);
      discard(req);
      if (err.code === 'InvalidArgument' || err.code === 'NotSupported') fail(res, 400, err.code, err.message);
      else if (err.code === 'Locked') reply(res, 503, { code: err.code, message: err.message }, { 'retry-after': '1' });
      else {
        (options.logger ?? console).warn(`memwal: ${req.method} ${prefix}${storeId} failed (answered 500)`, err);
        fail(res, 500, err.code, 'the sink could not apply this request (its log says why); retrying is safe');
      }
    } finally {
      if (counted) {
        const left = inFlight.get(storeId)! - 1;
        if (left === 0) inFlight.delete(storeId);
        else inFlight.set(storeId, left);
      }
    }
    return true;
  };
}

/** The body, or undefined once it passes `limit` (the rest is read and dropped, not buffered). */
async function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    discard(req);
    return undefined;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength;
      if (bytes > limit) {
        discard(req);
        return undefined;
      }
      chunks.push(chunk);
    }
  } catch (e) {
    throw new MemWalError('IOError', `reading the request body: ${(e as Error).message}`);
  }
  const body = Buffer.concat(chunks, bytes);
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

/** Read and drop whatever is left of the request, so the response can be sent. */
function discard(req: IncomingMessage): void {
  if (!req.readableEnded) req.resume();
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
