// Example: the server side of memwal's scale-out. memwal stores anywhere (browser tabs, Durable
// Objects, Node) drain into one Lance table through POST /drain/:store; GET /drain/:store answers
// the applied position, GET /stats the sink's counters and every store's position.
// Run: node --import tsx examples/lance-server/server.ts   (settings: README.md beside this file)

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { LanceSink, createDrainRequestHandler, tokenAuthorizer } from '../../src/lance.js';

const env = process.env;
const uri = env.LANCE_URI ?? './lance-data';
const table = env.LANCE_TABLE ?? 'events';
const primaryKey = (env.LANCE_PRIMARY_KEY ?? 'id').split(',').filter((k) => k !== '');
const port = Number(env.PORT ?? 8791);
const tokens = JSON.parse(env.DRAIN_TOKENS_FILE ? readFileSync(env.DRAIN_TOKENS_FILE, 'utf8') : (env.DRAIN_TOKENS ?? '{}')) as Record<
  string,
  string | string[]
>;
if (Object.keys(tokens).length === 0) {
  console.error(
    'lance-server: no tokens (set DRAIN_TOKENS=\'{"<token>": "<store id>"}\' or DRAIN_TOKENS_FILE); every drain would be refused',
  );
}

const sink = new LanceSink({
  uri,
  table,
  ...(primaryKey.length > 0 ? { primaryKey } : {}),
  ...(env.LANCE_STORAGE_OPTIONS ? { storageOptions: JSON.parse(env.LANCE_STORAGE_OPTIONS) as Record<string, string> } : {}),
});
const handleDrain = createDrainRequestHandler({
  sink,
  authorize: tokenAuthorizer(tokens),
  ...(env.MAX_BODY_BYTES ? { maxBodyBytes: Number(env.MAX_BODY_BYTES) } : {}),
  ...(env.ALLOW_ORIGIN ? { allowOrigin: env.ALLOW_ORIGIN } : {}),
});

const server = createServer(async (req, res) => {
  try {
    if (await handleDrain(req, res)) return;
    if (req.method === 'GET' && req.url === '/stats') {
      const body = { table, uri, sink: sink.stats(), stores: await sink.positions() };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ code: 'NotFound', message: `${req.method} ${req.url}` }));
  } catch (e) {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ code: 'Internal', message: String(e) }));
  }
});

server.listen(port, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  console.log(`lance-server listening on http://127.0.0.1:${address.port} (table ${table} at ${uri})`);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close();
    void sink.close().then(() => process.exit(0));
  });
}
