// How a drain reaches its sink over HTTP (docs/scale-out.md §4): the drain resource's URL and the
// store id it names, and the transport that asks the applied position and ships runs as Arrow IPC
// over fetch, each request under a time limit, with the endpoint's answers turned into errors
// that say whether a retry can help. Runtime-agnostic (fetch only).

import type { WalEntry } from '../engine/api.js';
import { MemWalError } from '../util/errors.js';
import { clearTimer, setTimer, type Timer } from '../util/schedule.js';
import { DRAIN_HEADERS, STORE_ID_PATTERN, drainRequestHeaders, encodeDrainBatch } from './wire.js';

/** How a drain talks to its sink: ask the applied position, ship a run. */
export interface Transport {
  /** `incarnation`: the store's (`walStats().incarnation`), undefined if it keeps none. */
  applied(signal: AbortSignal, incarnation: string | undefined): Promise<number>;
  ship(
    entries: readonly WalEntry[],
    signal: AbortSignal,
    incarnation: string | undefined,
  ): Promise<{ appliedPosition: number; bytes: number }>;
}

/** What the HTTP transport takes from DrainOptions (each documented there). */
export interface HttpOptions {
  token?: string;
  headers?: Record<string, string>;
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  requestTimeoutMs: number;
  quoteEndpointMessages: boolean;
}

/** Most bytes of an answer's body a drain reads (a memwal sink's answers are a few hundred). */
export const MAX_ANSWER_BYTES = 4096;

/**
 * The transport to the drain resource at `endpoint` (docs/scale-out.md §4): `GET` answers the
 * applied position, `POST` applies a run encoded by wire.ts. A request that takes longer than
 * `requestTimeoutMs`, answers 5xx, 408 or 429, or does not arrive is `IOError` (retried); any
 * other 4xx is a refusal (`InvalidArgument`, the drain ends), and so is a redirect: the drain
 * never follows one (`redirect: 'manual'`), so an endpoint that was checked (an allowlist) is the
 * only place its requests and token go. Of an answer's body it reads at most
 * {@link MAX_ANSWER_BYTES}.
 */
export function httpTransport(endpoint: string, o: HttpOptions): Transport {
  const doFetch = o.fetch ?? ((input: string, init: RequestInit) => fetch(input, init));
  const auth: Record<string, string> = o.token !== undefined ? { authorization: `Bearer ${o.token}` } : {};
  const timeoutMs = o.requestTimeoutMs;
  /** The response and its body text, within the time limit; `IOError` when it runs out or the network fails. */
  const exchange = async (init: RequestInit): Promise<{ res: Response; text: string }> => {
    // Aborted by the drain's stop or by the time limit, whichever comes first. The race also
    // covers a `fetch` that ignores its signal, and the body (a server that dies mid-answer).
    const stop = init.signal;
    const request = new AbortController();
    const onStop = (): void => request.abort();
    let timer: Timer | undefined;
    const late = new MemWalError('IOError', `drain endpoint ${endpoint} did not answer within ${timeoutMs} ms`);
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimer(() => {
        reject(late);
        request.abort();
      }, timeoutMs);
      request.signal.addEventListener('abort', () => reject(new MemWalError('Aborted', 'drain: stopped')), { once: true });
    });
    stop?.addEventListener('abort', onStop, { once: true });
    if (stop?.aborted) request.abort();
    const fail = (e: unknown): never => {
      if (e === late) throw e;
      if (stop?.aborted) throw new MemWalError('Aborted', 'drain: stopped');
      throw new MemWalError('IOError', `drain endpoint ${endpoint} unreachable: ${(e as Error)?.message ?? e}`, { cause: e });
    };
    try {
      const res = await Promise.race([doFetch(endpoint, { ...init, redirect: 'manual', signal: request.signal }), deadline]).catch(fail);
      const text = await Promise.race([readAnswer(res), deadline]).catch(fail);
      return { res, text };
    } finally {
      if (timer !== undefined) clearTimer(timer);
      stop?.removeEventListener('abort', onStop);
    }
  };
  const call = async (init: RequestInit): Promise<{ appliedPosition: number }> => {
    const { res, text } = await exchange(init);
    let body: { appliedPosition?: unknown; code?: unknown; message?: unknown } = {};
    try {
      body = (JSON.parse(text) ?? {}) as typeof body;
    } catch {
      // a proxy's HTML error page: reported by status below
    }
    if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
      // A browser's fetch hides the status of a redirect it did not follow (type opaqueredirect, status 0).
      const status = res.status >= 300 ? `${res.status} ` : '';
      throw new MemWalError(
        'InvalidArgument',
        `drain endpoint answered ${status}with a redirect, which a drain does not follow: configure the URL it redirects to as the endpoint`,
      );
    }
    if (!res.ok) {
      // The sink refused this request: repeating it cannot succeed. Anything else may pass later.
      const refused = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
      throw new MemWalError(refused ? 'InvalidArgument' : 'IOError', describeAnswer(res.status, body, o.quoteEndpointMessages));
    }
    if (typeof body.appliedPosition !== 'number' || !Number.isSafeInteger(body.appliedPosition) || body.appliedPosition < 0) {
      throw new MemWalError('IOError', `drain endpoint answered ${res.status} without an appliedPosition (not a memwal drain endpoint?)`);
    }
    return { appliedPosition: body.appliedPosition };
  };
  return {
    applied: async (signal, incarnation) => {
      const headers = { ...o.headers, ...auth, ...(incarnation !== undefined ? { [DRAIN_HEADERS.incarnation]: incarnation } : {}) };
      return (await call({ method: 'GET', headers, signal })).appliedPosition;
    },
    ship: async (entries, signal, incarnation) => {
      const batch = encodeDrainBatch(entries);
      const result = await call({
        method: 'POST',
        headers: { ...o.headers, ...auth, ...drainRequestHeaders({ ...batch, incarnation }) },
        body: batch.body,
        signal,
      });
      return { ...result, bytes: batch.body.byteLength };
    },
  };
}

/** The first {@link MAX_ANSWER_BYTES} of an answer's body as text (the rest is not read: the stream is cancelled). */
async function readAnswer(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const bytes = new Uint8Array(MAX_ANSWER_BYTES);
  let length = 0;
  try {
    while (length < MAX_ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.byteLength, MAX_ANSWER_BYTES - length);
      bytes.set(value.subarray(0, take), length);
      length += take;
    }
  } catch {
    // a body cut short: what arrived is reported (or, not being JSON, only the status)
  } finally {
    reader.cancel().catch(() => undefined);
  }
  return new TextDecoder().decode(bytes.subarray(0, length));
}

/** What a status means to a drain, for the statuses the wire format gives (docs/scale-out.md §4). */
const STATUS_MEANING: Record<number, string> = {
  400: 'the sink refused the shipment as invalid',
  401: 'the bearer token is missing or unknown',
  403: 'the token is not for this store',
  404: 'no drain resource at this URL',
  413: 'the shipment is larger than the endpoint takes: lower batchBytes',
  429: 'too many requests',
  500: 'the sink failed',
  502: 'a proxy could not reach the sink',
  503: 'the sink is unavailable',
  504: 'a proxy timed out waiting for the sink',
};

/**
 * The error message for an answer other than 2xx: the status, the answer's `code` when it is a
 * plain name, what the status means to a drain, and with `quote` the answer's `message` cut to
 * printable characters and 160 of them. Nothing else of the body, whatever the endpoint sends.
 */
function describeAnswer(status: number, body: { code?: unknown; message?: unknown }, quote: boolean): string {
  const code = typeof body.code === 'string' && /^[A-Za-z][A-Za-z0-9_]{0,39}$/.test(body.code) ? ` ${body.code}` : '';
  const meaning = STATUS_MEANING[status] ?? (status >= 500 ? 'the endpoint failed' : 'the endpoint refused the request');
  let quoted = '';
  if (quote && typeof body.message === 'string') {
    const printable = body.message.replace(/[\p{C}]+/gu, ' ').trim();
    if (printable !== '') quoted = `: ${printable.length > 160 ? `${printable.slice(0, 159)}…` : printable}`;
  }
  return `drain endpoint answered ${status}${code} (${meaning})${quoted}`;
}

/** `endpoint` parsed; `InvalidArgument` naming what is wrong with it (not a URL, not http(s), credentials in it). */
export function endpointUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new MemWalError('InvalidArgument', `drain: endpoint is not a URL: ${String(endpoint).slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MemWalError(
      'InvalidArgument',
      `drain: endpoint must be an http: or https: URL, got ${url.protocol} (${url.href.slice(0, 200)})`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new MemWalError(
      'InvalidArgument',
      'drain: endpoint must not hold credentials (user:password@); pass the bearer token as `token`',
    );
  }
  return url;
}

/** The store id an endpoint names: its last path segment (`…/drain/events` → `events`); `InvalidArgument` naming the path otherwise. */
export function storeIdOf(url: URL): string {
  const expected = 'expected …/drain/<storeId>, or pass storeId';
  const parts = url.pathname.split('/').filter((p) => p !== '');
  if (parts.length === 0)
    throw new MemWalError('InvalidArgument', `drain: endpoint ${url.href.slice(0, 200)} names no store in its path (${expected})`);
  let last: string;
  try {
    last = decodeURIComponent(parts[parts.length - 1]!);
  } catch {
    last = parts[parts.length - 1]!;
  }
  if (!STORE_ID_PATTERN.test(last)) {
    throw new MemWalError(
      'InvalidArgument',
      `drain: the last path segment of endpoint ${url.href.slice(0, 200)} is not a store id (1-200 characters of A-Z a-z 0-9 . _ -; ${expected})`,
    );
  }
  return last;
}
