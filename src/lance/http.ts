// The HTTP side of a drain (docs/scale-out.md "Wire format"): a Node `http` request handler for
// `GET|POST /drain/:store` in front of a LanceSink, with a pluggable bearer-token check, a body
// limit, budgets per store, per token and for the server (each checked before a body is read),
// and CORS for browser stores; answers carry the sink's refusals in plain words and never the
// details of the server's own failures (those go to the log). Node only.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DRAIN_HEADERS, STORE_ID_PATTERN, parseDrainHeaders, parseIncarnation } from '../drain/wire.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { FairBodyBytes } from './body-budget.js';
import { DEFAULT_MAX_PENDING_PER_STORE, type LanceSink } from './sink.js';

/** What an authorizer decides: go on, 401 (no or unknown credential), 403 (not for this store). */
export type DrainAuthorization = 'allow' | 'unauthenticated' | 'forbidden';

/**
 * Decides whether `token` (the bearer token, undefined without one) may drain into `storeId`.
 * Called before the body is read; must not throw for a bad token (answer `'unauthenticated'`).
 */
export type DrainAuthorizer = (token: string | undefined, storeId: string) => DrainAuthorization | Promise<DrainAuthorization>;

/** Options of {@link createDrainRequestHandler}. Every budget is checked before a body is read. */
export interface DrainRequestHandlerOptions {
  sink: LanceSink;
  /** The credential check (see {@link tokenAuthorizer}). Required: a drain endpoint is never open. */
  authorize: DrainAuthorizer;
  /**
   * Largest body accepted; a larger one is answered 413 without being read. Default 8 MiB:
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
   * POSTs of one store received, checked or applied at once; more are answered 503 (`Locked`,
   * retry) before their bodies are read. Default {@link DEFAULT_MAX_PENDING_PER_STORE}, the
   * sink's default queue.
   */
  maxRequestsPerStore?: number;
  /**
   * Requests (GET and POST) of one bearer token in flight at once, over all its store ids; more
   * are answered 503 before their bodies are read, so a token mapped to many store ids holds no
   * more than this. Default {@link DEFAULT_MAX_REQUESTS_PER_TOKEN}.
   */
  maxRequestsPerToken?: number;
  /** Requests in flight on the whole handler, every token together; more are 503. Default {@link DEFAULT_MAX_REQUESTS_IN_FLIGHT}. */
  maxRequestsInFlight?: number;
  /**
   * Body bytes the handler may hold at once, every request together: a POST reserves its
   * `content-length` (or `maxBodyBytes` without one) before its body is read, and is answered
   * 503 when the reservation does not fit. Shared fairly between tokens (src/lance/body-budget.ts):
   * a token holding bodies takes no more than the budget over the tokens holding bytes, and a
   * body within its token's share takes back, when the server is full, bodies still arriving
   * from tokens above theirs (each answered 503 unread). Default {@link DEFAULT_MAX_BYTES_IN_FLIGHT}.
   */
  maxBytesInFlight?: number;
  /** The most of that budget one bearer token holds, however few others hold any. Default {@link DEFAULT_MAX_BYTES_PER_TOKEN}. */
  maxBytesPerToken?: number;
  /**
   * Longest a POST's body may take to arrive, from its headers; a slower one is answered 408 and
   * its connection closed. Default {@link DEFAULT_BODY_TIMEOUT_MS}.
   */
  bodyTimeoutMs?: number;
  /**
   * After a request of a token is refused 400 (a client mistake: it changed nothing, and a drain
   * stops on it), that token may have only one request in flight for this long, or twice as long
   * as the refused request took, whichever is longer; its other POSTs meanwhile are answered 503
   * unread. So a token cannot keep the server checking many bodies it will refuse at once, and a
   * client that sends one request at a time is not hindered. Default
   * {@link DEFAULT_REFUSAL_COOLDOWN_MS}; 0: off.
   */
  refusalCooldownMs?: number;
}

/** Default {@link DrainRequestHandlerOptions.maxBodyBytes}. */
export const DEFAULT_MAX_DRAIN_BODY_BYTES = 8 * 1024 * 1024;
/** Default {@link DrainRequestHandlerOptions.maxRequestsPerToken}. */
export const DEFAULT_MAX_REQUESTS_PER_TOKEN = 8;
/** Default {@link DrainRequestHandlerOptions.maxRequestsInFlight}. */
export const DEFAULT_MAX_REQUESTS_IN_FLIGHT = 64;
/**
 * Default {@link DrainRequestHandlerOptions.maxBytesInFlight}: 4 bodies of the default largest.
 * Checking a body takes up to about 8 times its size (a keyed body of 400,000 rows, 6 MiB: the
 * newest row of each key), so this keeps the example server under 512 MiB (docs/scale-out.md §5).
 */
export const DEFAULT_MAX_BYTES_IN_FLIGHT = 32 * 1024 * 1024;
/** Default {@link DrainRequestHandlerOptions.maxBytesPerToken}: half the server's. */
export const DEFAULT_MAX_BYTES_PER_TOKEN = 16 * 1024 * 1024;
/** Default {@link DrainRequestHandlerOptions.bodyTimeoutMs}. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
/** Default {@link DrainRequestHandlerOptions.refusalCooldownMs}. */
export const DEFAULT_REFUSAL_COOLDOWN_MS = 1_000;

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

/** Counts per key under one bound; a key at zero is forgotten. */
class Budget {
  private readonly counts = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Takes `n` for `key` if that stays within the limit. */
  take(key: string, n = 1): boolean {
    const now = this.counts.get(key) ?? 0;
    if (now + n > this.limit) return false;
    this.counts.set(key, now + n);
    return true;
  }

  /** What `key` holds now. */
  held(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  give(key: string, n = 1): void {
    const left = (this.counts.get(key) ?? 0) - n;
    if (left <= 0) this.counts.delete(key);
    else this.counts.set(key, left);
  }
}

/** A request over a budget: answered 503 with `retry-after` before its body is read. */
class OverBudget extends Error {
  constructor(
    message: string,
    readonly retryAfterS = 1,
  ) {
    super(message);
  }
}

/**
 * A Node `http` handler for the drain routes: `GET {prefix}:store` answers
 * `{ storeId, appliedPosition }`, `POST {prefix}:store` applies a drain request and answers
 * `{ storeId, appliedPosition, epoch, rows, duplicate }`. Errors answer `{ code, message }` with
 * 401/403 (credential), 404, 405, 408 (body too slow), 413 (body limit), 400 (`InvalidArgument`:
 * nothing changed; the message says what was wrong), 503 (`Locked`: a budget of the store, the
 * token or the server is used up, or the token's last request was refused a moment ago; retry
 * after `retry-after` seconds) or 500 (the server's own failure, e.g. Lance's: retry; the answer
 * says no more, the details go to `logger`). Every budget is checked before the body is read, and
 * an answer given before the whole body arrived closes the connection (`connection: close`):
 * nothing more of it is read. Resolves `false` for a URL outside `prefix`, so the caller can
 * serve other routes.
 */
export function createDrainRequestHandler(
  options: DrainRequestHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const prefix = options.prefix ?? '/drain/';
  const positive = (name: string, value: number | undefined, fallback: number, min = 1): number => {
    const v = value ?? fallback;
    if (!Number.isSafeInteger(v) || v < min) throw new MemWalError('InvalidArgument', `${name} must be an integer >= ${min}, got ${v}`);
    return v;
  };
  const maxBodyBytes = positive('maxBodyBytes', options.maxBodyBytes, DEFAULT_MAX_DRAIN_BODY_BYTES);
  const perStore = new Budget(positive('maxRequestsPerStore', options.maxRequestsPerStore, DEFAULT_MAX_PENDING_PER_STORE));
  const perToken = new Budget(positive('maxRequestsPerToken', options.maxRequestsPerToken, DEFAULT_MAX_REQUESTS_PER_TOKEN));
  const requests = new Budget(positive('maxRequestsInFlight', options.maxRequestsInFlight, DEFAULT_MAX_REQUESTS_IN_FLIGHT));
  const bytes = new FairBodyBytes(
    positive('maxBytesInFlight', options.maxBytesInFlight, DEFAULT_MAX_BYTES_IN_FLIGHT),
    positive('maxBytesPerToken', options.maxBytesPerToken, DEFAULT_MAX_BYTES_PER_TOKEN),
  );
  const bodyTimeoutMs = positive('bodyTimeoutMs', options.bodyTimeoutMs, DEFAULT_BODY_TIMEOUT_MS);
  const cooldownMs = positive('refusalCooldownMs', options.refusalCooldownMs, DEFAULT_REFUSAL_COOLDOWN_MS, 0);
  /** Until when each token's POSTs are turned away after a refusal (`Date.now()` ms). */
  const cooling = new Map<string, number>();
  const cors: Record<string, string> = options.allowOrigin
    ? {
        'access-control-allow-origin': options.allowOrigin,
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': `authorization, content-type, ${Object.values(DRAIN_HEADERS).join(', ')}`,
        'access-control-max-age': '600',
      }
    : {};
  /** Answers; a request whose body has not wholly arrived gets `connection: close`, and no more of it is read. */
  const reply = (req: IncomingMessage, res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void => {
    if (res.headersSent) return;
    const early = !req.complete;
    res
      .writeHead(status, { 'content-type': 'application/json', ...cors, ...extra, ...(early ? { connection: 'close' } : {}) })
      .end(JSON.stringify(body));
    if (early) closeUnread(req, res);
    else req.resume(); // a complete body's remainder is already here: drop it
  };
  const fail = (req: IncomingMessage, res: ServerResponse, status: number, code: string, message: string): void =>
    reply(req, res, status, { code, message });

  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (!path.startsWith(prefix)) return false;
    if (req.method === 'OPTIONS') {
      const early = !req.complete;
      res.writeHead(204, { ...cors, ...(early ? { connection: 'close' } : {}) }).end();
      if (early) closeUnread(req, res);
      return true;
    }
    let storeId: string;
    try {
      storeId = decodeURIComponent(path.slice(prefix.length));
    } catch {
      storeId = '';
    }
    if (!STORE_ID_PATTERN.test(storeId)) {
      fail(req, res, 404, 'NotFound', 'no such store id (1-200 characters of A-Z a-z 0-9 . _ -)');
      return true;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      fail(req, res, 405, 'MethodNotAllowed', `${req.method} ${prefix}:store`);
      return true;
    }
    const token = bearerToken(req);
    const verdict = await options.authorize(token, storeId);
    if (verdict !== 'allow') {
      if (verdict === 'forbidden') fail(req, res, 403, 'Forbidden', `this credential may not drain into store ${storeId}`);
      else fail(req, res, 401, 'Unauthorized', 'a bearer token for this store is required');
      return true;
    }
    const tokenKey = token!;
    const started = Date.now();
    const held: (() => void)[] = [];
    const hold = (budget: Budget, key: string, n: number, what: string): void => {
      if (!budget.take(key, n)) throw new OverBudget(what);
      held.push(() => budget.give(key, n));
    };
    try {
      hold(requests, '', 1, `the server has ${requests.limit} requests in flight; retry later`);
      hold(perToken, tokenKey, 1, `this credential has ${perToken.limit} requests in flight; retry later`);
      if (req.method === 'GET') {
        const incarnation = parseIncarnation(single(req.headers[DRAIN_HEADERS.incarnation]));
        reply(req, res, 200, { storeId, appliedPosition: await options.sink.appliedPosition(storeId, incarnation) });
        return true;
      }
      const until = cooling.get(tokenKey);
      if (until !== undefined && until <= Date.now()) cooling.delete(tokenKey);
      else if (until !== undefined && perToken.held(tokenKey) > 1) {
        throw new OverBudget(
          'this credential’s last request was refused a moment ago: one request at a time until then; retry later',
          Math.ceil((until - Date.now()) / 1000),
        );
      }
      hold(perStore, storeId, 1, `${perStore.limit} requests of ${storeId} are already in flight; retry later`);
      const declared = declaredLength(req);
      if (declared !== undefined && declared > maxBodyBytes) {
        fail(req, res, 413, 'PayloadTooLarge', `body above ${maxBodyBytes} bytes`);
        return true;
      }
      const takenBack = new AbortController();
      const bodyBytes = bytes.take(tokenKey, declared ?? maxBodyBytes, () => takenBack.abort());
      if (typeof bodyBytes === 'string') throw new OverBudget(bodyBytes);
      held.push(() => bodyBytes.release());
      const meta = parseDrainHeaders((name) => single(req.headers[name]));
      const body = await readBody(req, maxBodyBytes, bodyTimeoutMs, takenBack.signal);
      bodyBytes.arrived();
      if (body === 'taken-back') {
        throw new OverBudget('this credential held more than its share of the server’s body budget while another waited; retry later');
      }
      if (body === 'too-large') fail(req, res, 413, 'PayloadTooLarge', `body above ${maxBodyBytes} bytes`);
      else if (body === 'too-slow') fail(req, res, 408, 'RequestTimeout', `the body did not arrive within ${bodyTimeoutMs} ms`);
      else reply(req, res, 200, await options.sink.applyEncoded(storeId, meta, body));
    } catch (e) {
      if (e instanceof OverBudget) {
        reply(req, res, 503, { code: 'Locked', message: e.message }, { 'retry-after': String(Math.max(1, e.retryAfterS)) });
        return true;
      }
      const err = toMemWalError(e, `drain into ${storeId}`);
      if (err.code === 'InvalidArgument' || err.code === 'NotSupported') {
        if (cooldownMs > 0 && req.method === 'POST') cooling.set(tokenKey, Date.now() + Math.max(cooldownMs, 2 * (Date.now() - started)));
        fail(req, res, 400, err.code, err.message);
      } else if (err.code === 'Locked') reply(req, res, 503, { code: err.code, message: err.message }, { 'retry-after': '1' });
      else if (!req.complete && err.code === 'IOError')
        res.destroy(); // the client went away mid-body
      else {
        (options.logger ?? console).warn(`memwal: ${req.method} ${prefix}${storeId} failed (answered 500)`, err);
        fail(req, res, 500, err.code, 'the sink could not apply this request (its log says why); retrying is safe');
      }
    } finally {
      for (const give of held) give();
    }
    return true;
  };
}

/** How long a connection answered before its body arrived stays open after the answer (its FIN sent), ms. */
export const LINGER_MS = 500;

/**
 * For an answer (with `connection: close`) given before the request's body wholly arrived: no
 * more of the body is read (what the socket already buffered aside, at most a stream's high-water
 * mark), and the connection is destroyed {@link LINGER_MS} after the answer went out with its FIN
 * — not at once, which would reset the connection while the client may still be reading the
 * answer (an unread receive buffer closes with a reset). Call it right after `res.end()`.
 */
export function closeUnread(req: IncomingMessage, res: ServerResponse): void {
  req.pause();
  // Mark the body as being consumed (by no one), or Node drops the rest of it when the answer
  // finishes (`req._dump()`: it then reads the socket at full speed until LINGER_MS destroys it,
  // 100+ MiB on loopback). Only a read that reaches the stream's `_read` marks it, and `read(0)`
  // does not when the buffer already holds a high-water mark of body (an answer given after an
  // await, e.g. authorize, under load): read (and drop) what is buffered instead.
  req.read();
  const socket = req.socket;
  // Node's own close for `connection: close` half-closes the socket as soon as the answer is
  // written, and destroys it then: a client still uploading may then fail on the closed side
  // before it reads the answer. Lingering instead leaves the answer to be read while nothing more
  // is (the client, seeing `connection: close`, closes or is cut off after LINGER_MS).
  socket.destroySoon = () => undefined;
  res.once('finish', () => {
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}

/** The request's `content-length`, if it declares a valid one. */
function declaredLength(req: IncomingMessage): number | undefined {
  const text = req.headers['content-length'];
  if (text === undefined || !/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}

/**
 * The body; `'too-large'` once it passes `limit`, `'too-slow'` if it has not all arrived within
 * `timeoutMs`, `'taken-back'` once `takenBack` aborts (its bytes went to another token's body;
 * in each case nothing more is read: the caller's answer closes the connection).
 */
async function readBody(
  req: IncomingMessage,
  limit: number,
  timeoutMs: number,
  takenBack: AbortSignal,
): Promise<Uint8Array | 'too-large' | 'too-slow' | 'taken-back'> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  return new Promise((resolve, reject) => {
    const done = (outcome: Uint8Array | 'too-large' | 'too-slow' | 'taken-back' | Error): void => {
      clearTimeout(timer);
      takenBack.removeEventListener('abort', onTakenBack);
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
      if (typeof outcome !== 'string' && !(outcome instanceof Uint8Array)) reject(outcome);
      else {
        if (typeof outcome === 'string') req.pause();
        resolve(outcome);
      }
    };
    const timer = setTimeout(() => done('too-slow'), timeoutMs);
    const onData = (chunk: Buffer): void => {
      bytes += chunk.byteLength;
      if (bytes > limit) done('too-large');
      else chunks.push(chunk);
    };
    const onEnd = (): void => {
      const body = Buffer.concat(chunks, bytes);
      done(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
    };
    const onError = (e: Error): void => done(new MemWalError('IOError', `reading the request body: ${e.message}`));
    const onAborted = (): void => done(new MemWalError('IOError', 'reading the request body: the client went away'));
    const onTakenBack = (): void => done('taken-back');
    takenBack.addEventListener('abort', onTakenBack);
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
    if (takenBack.aborted) done('taken-back');
  });
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
