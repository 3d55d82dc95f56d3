// The HTTP API of memwal's examples, written once as a fetch handler (Request → Response) so
// that the Node server and the Cloudflare Durable Object answer exactly alike. This file is the
// same in examples/node and examples/cloudflare (a test checks it), so either example can be
// copied out of the repository alone. Any runtime with fetch's Request and Response.
//
//   POST /put      a JSON row or array of rows {id, value?, note?}  → {rows, position, durable}
//   GET  /scan     ?limit=1..10000 (default 1000) &cursor=<last id> → {rows, cursor}, streamed
//   GET  /stats    {memtable, backpressure, wal, write, storage}
//   GET  /metrics  Prometheus text
//
// Errors answer {code, message}: 400 InvalidArgument (bad JSON, a bad row, a bad parameter),
// 404, 405 (with Allow), 413 (body over MAX_BODY_BYTES), 503 when it is worth retrying later
// (BackpressureTimeout, Locked, Closed), 507 QuotaExceeded, 500 otherwise — for a put, 5xx
// means the outcome is unknown.

import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import type { RecordBatch } from 'apache-arrow';
import { MemWalError } from 'memwal';
import type { MemWal } from 'memwal';

/** Rows are `{ id, value?, note? }`; `id` is the primary key, so a put of a known id replaces it. */
export const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('note', new Utf8(), true),
]);

/** Largest request body, in bytes: a bigger `/put` answers 413 before it is read further. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Rows per `/scan` page: the default and the largest `limit`. */
export const DEFAULT_PAGE_ROWS = 1000;
export const MAX_PAGE_ROWS = 10_000;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A request the client got wrong: answered with `status` and `code`, never retried as is. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const invalid = (message: string): HttpError => new HttpError(400, 'InvalidArgument', message);

/** JSON text in which 64-bit integers (bigint) are decimal strings, so they stay exact. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(toJson(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** The response for a failure: the client's mistake, retry later, or outcome unknown. */
export function errorResponse(e: unknown): Response {
  if (e instanceof HttpError) return json({ code: e.code, message: e.message }, e.status, e.headers);
  if (!(e instanceof MemWalError)) return json({ code: 'Internal', message: String(e) }, 500);
  const status =
    e.code === 'InvalidArgument' || e.code === 'NotSupported'
      ? 400
      : e.code === 'BackpressureTimeout' || e.code === 'Locked' || e.code === 'Closed'
        ? 503
        : e.code === 'QuotaExceeded'
          ? 507
          : 500;
  return json({ code: e.code, message: e.message }, status, status === 503 ? { 'retry-after': '1' } : {});
}

/** The body as text; 413 past `MAX_BODY_BYTES` (by Content-Length, or while reading). */
async function readBody(request: Request): Promise<string> {
  const tooLarge = (): HttpError => new HttpError(413, 'InvalidArgument', `request body: larger than ${MAX_BODY_BYTES} bytes`);
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    if (bytes > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(bytes);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}

/**
 * An `id` as the Int64 it names: a safe-integer number, or a decimal string for any 64-bit
 * value (JSON numbers beyond 2^53 are already rounded when parsed, so they are refused).
 */
function parseId(id: unknown, row: number): bigint {
  if (typeof id === 'number') {
    if (Number.isSafeInteger(id)) return BigInt(id);
    throw invalid(`row ${row}: id ${id} is not an exact integer (send ids beyond ±(2^53 - 1) as decimal strings)`);
  }
  const n = typeof id === 'string' ? int64FromDecimal(id) : undefined;
  if (n !== undefined) return n;
  throw invalid(`row ${row}: id must be an integer or a decimal string of a 64-bit integer, got ${JSON.stringify(id)}`);
}

/** The 64-bit integer a decimal string names, or undefined. */
function int64FromDecimal(s: string): bigint | undefined {
  if (!/^-?\d{1,19}$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= INT64_MIN && n <= INT64_MAX ? n : undefined;
}

/** The rows of a `/put` body: a JSON object or a non-empty array of objects, ids made exact. */
function parseRows(text: string): Record<string, unknown>[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw invalid(`body is not JSON: ${(e as Error).message}`);
  }
  const rows = Array.isArray(body) ? body : [body];
  if (rows.length === 0) throw invalid('body: an empty array has no rows');
  return rows.map((row: unknown, i) => {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) throw invalid(`row ${i}: expected an object`);
    const r = row as Record<string, unknown>;
    return 'id' in r ? { ...r, id: parseId(r.id, i) } : r;
  });
}

/** A non-negative integer query parameter within `max`, or `fallback` when absent. */
function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < min || Number(raw) > max) throw invalid(`${name}: expected an integer in ${min}..${max}`);
  return Number(raw);
}

/**
 * One page of `/scan`: up to `limit` rows in id order, from the start or after the id `cursor`,
 * streamed batch by batch as `{"rows":[…],"cursor":"…"}`; `cursor` (the page's last id) is null
 * on the last page. The scan starts at the cursor (`scanBatches({ after })` reads no table block
 * before it), so a deep page costs what the first does. Each page is its own snapshot: a row
 * written between two pages shows if its id is past the cursor. Memory: about one batch. A
 * failure before the first batch answers with its status; a later one aborts the body.
 */
async function scanPage(db: MemWal, url: URL): Promise<Response> {
  const limit = intParam(url, 'limit', DEFAULT_PAGE_ROWS, 1, MAX_PAGE_ROWS);
  const raw = url.searchParams.get('cursor');
  const after = raw === null ? undefined : { id: parseCursor(raw) };
  // One row more than the page, to know whether another page follows.
  const batches = db.scanBatches({ limit: limit + 1, ...(after ? { after } : {}) })[Symbol.asyncIterator]();
  // The first batch before the response: an error there (a poisoned store) gets its status.
  let first: IteratorResult<RecordBatch> | undefined = await batches.next();
  const encoder = new TextEncoder();
  let sent = 0;
  let lastId: unknown;
  let more = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"rows":['));
    },
    // Every pull enqueues something: a stream does not pull again after an empty pull.
    async pull(controller) {
      while (!more) {
        const next = first ?? (await batches.next());
        first = undefined;
        if (next.done) break;
        const batch = next.value;
        const rows: string[] = [];
        for (let i = 0; i < batch.numRows && !more; i++) {
          if (sent + rows.length === limit) more = true;
          else {
            const row = batch.get(i)!.toJSON();
            lastId = row.id;
            rows.push(toJson(row));
          }
        }
        if (rows.length > 0) {
          controller.enqueue(encoder.encode((sent > 0 ? ',' : '') + rows.join(',')));
          sent += rows.length;
          if (!more) return;
        }
      }
      controller.enqueue(encoder.encode(`],"cursor":${more ? `"${String(lastId)}"` : 'null'}}`));
      controller.close();
      await batches.return?.();
    },
    async cancel() {
      await batches.return?.();
    },
  });
  return new Response(body, { headers: { 'content-type': 'application/json' } });
}

/** A `/scan` cursor: the decimal id of the last row of the previous page. */
function parseCursor(raw: string): bigint {
  const n = int64FromDecimal(raw);
  if (n !== undefined) return n;
  throw invalid(`cursor: expected the decimal id a previous page returned, got ${JSON.stringify(raw.slice(0, 40))}`);
}

const ROUTES: Record<string, string> = { '/put': 'POST', '/scan': 'GET', '/stats': 'GET', '/metrics': 'GET' };

/** Answers one request against `db` (see the routes at the top of this file). Never rejects. */
export async function handle(db: MemWal, request: Request): Promise<Response> {
  const url = new URL(request.url);
  try {
    const method = ROUTES[url.pathname];
    if (!method) throw new HttpError(404, 'NotFound', `no route ${url.pathname}`);
    if (request.method !== method) {
      throw new HttpError(405, 'MethodNotAllowed', `${url.pathname} answers ${method} only`, { allow: method });
    }
    switch (url.pathname) {
      case '/put':
        return json(await db.put(parseRows(await readBody(request))));
      case '/scan':
        return await scanPage(db, url);
      case '/stats': {
        const [memtable, backpressure, wal, write, storage] = await Promise.all([
          db.memtableStats(),
          db.backpressureStats(),
          db.walStats(),
          db.writeStats(),
          db.storageStats(),
        ]);
        return json({ memtable, backpressure, wal, write, storage });
      }
      default:
        return new Response(await db.metrics(), { headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' } });
    }
  } catch (e) {
    return errorResponse(e);
  }
}
