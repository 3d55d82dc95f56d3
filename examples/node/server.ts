// A small Node service over memwal: one store in local files, served over HTTP by the fetch
// handler in api.ts (the same API as the Cloudflare example). Run: npm start -- [dataDir] [port]
// (Node 20+: `node --import tsx server.ts`). SIGINT/SIGTERM close the store cleanly.

import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { MemWal } from 'memwal';
import { NodeFileStorage } from 'memwal/node';
import { errorResponse, handle, schema } from './api.js';

const dir = process.argv[2] ?? './memwal-data';
const port = Number(process.argv[3] ?? 8790);

const wal = await MemWal.open({ name: 'events', schema, primaryKey: ['id'], storage: new NodeFileStorage(dir) });

/**
 * The body of a Node request as a web stream, read as the handler pulls. Once `ignored.rest` is
 * set, what the handler did not read is thrown away as it arrives.
 */
function bodyOf(req: IncomingMessage, ignored: { rest: boolean }): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.pause();
      req.on('data', (chunk: Buffer) => {
        if (ignored.rest) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.on('end', () => ignored.rest || controller.close());
      req.on('error', (e) => ignored.rest || controller.error(e));
    },
    pull() {
      req.resume();
    },
    cancel() {
      ignored.rest = true;
      req.resume();
    },
  });
}

/** The fetch Request for a Node request (its body streamed, not buffered). */
function toRequest(req: IncomingMessage, ignored: { rest: boolean }): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
    method: req.method,
    headers,
    body: hasBody ? bodyOf(req, ignored) : undefined,
    duplex: 'half', // Node's fetch needs it for a streamed body
  } as RequestInit);
}

/** Writes `response` to `res`, its body streamed with backpressure. */
async function send(response: Response, res: ServerResponse): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  await pipeline(Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>), res);
}

const server = createServer((req, res) => {
  void (async () => {
    const ignored = { rest: false };
    let response: Response;
    try {
      response = await handle(wal, toRequest(req, ignored));
    } catch (e) {
      response = errorResponse(e);
    }
    await send(response, res).catch(() => res.destroy()); // the client went away, or the body failed mid-way
    // A body the handler did not read to its end (a 413) is read and thrown away, so the client
    // gets its answer and the connection stays usable.
    ignored.rest = true;
    req.resume();
  })();
});

server.listen(port, '127.0.0.1', () => console.log(`memwal example on http://127.0.0.1:${port} (data in ${dir})`));
const stop = async (): Promise<void> => {
  server.close();
  await wal.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
