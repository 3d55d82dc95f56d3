// Example: the server side of memwal's scale-out. memwal stores anywhere (browser tabs, Durable
// Objects, Node) drain into one Lance table through POST /drain/:store; GET /drain/:store answers
// the applied position, GET /stats (admin token only) the sink's counters and every store's position.
// Run: npm start   (settings: README.md beside this file)

import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { LanceSink, bearerToken, closeUnread, createDrainRequestHandler, sameToken, tokenAuthorizer } from 'memwal/lance';

const env = process.env;
const uri = env.LANCE_URI ?? './lance-data';
const table = env.LANCE_TABLE ?? 'events';
const list = (value: string | undefined): string[] => (value ?? '').split(',').filter((k) => k !== '');
const primaryKey = list(env.LANCE_PRIMARY_KEY ?? 'id');
const port = Number(env.PORT ?? 8791);
const tokens = JSON.parse(env.DRAIN_TOKENS_FILE ? readFileSync(env.DRAIN_TOKENS_FILE, 'utf8') : (env.DRAIN_TOKENS ?? '{}')) as Record<
  string,
  string | string[]
>;
const adminToken = env.ADMIN_TOKEN;
if (Object.keys(tokens).length === 0) {
  console.error(
    'lance-server: no tokens (set DRAIN_TOKENS=\'{"<token>": "<store id>"}\' or DRAIN_TOKENS_FILE); every drain would be refused',
  );
}
if (adminToken !== undefined && adminToken in tokens) {
  console.error('lance-server: ADMIN_TOKEN must differ from every drain token');
  process.exit(1);
}

const sink = new LanceSink({
  uri,
  table,
  ...(primaryKey.length > 0 ? { primaryKey } : {}),
  ...(env.LANCE_ALLOW_COLUMNS ? { allowColumns: list(env.LANCE_ALLOW_COLUMNS) } : {}),
  ...(env.LANCE_MAX_COLUMNS ? { maxColumns: Number(env.LANCE_MAX_COLUMNS) } : {}),
  ...(env.LANCE_MAX_ROWS_PER_COMMIT ? { maxRowsPerCommit: Number(env.LANCE_MAX_ROWS_PER_COMMIT) } : {}),
  ...(env.LANCE_OPTIMIZE_EVERY ? { optimizeEvery: Number(env.LANCE_OPTIMIZE_EVERY) } : {}),
  ...(env.LANCE_STORAGE_OPTIONS ? { storageOptions: JSON.parse(env.LANCE_STORAGE_OPTIONS) as Record<string, string> } : {}),
});
const optional = (name: string): number | undefined => (env[name] ? Number(env[name]) : undefined);
const handleDrain = createDrainRequestHandler({
  sink,
  authorize: tokenAuthorizer(tokens),
  ...(env.ALLOW_ORIGIN ? { allowOrigin: env.ALLOW_ORIGIN } : {}),
  // Budgets (README.md "Budgets"); each is checked before a body is read.
  maxBodyBytes: optional('MAX_BODY_BYTES'),
  maxRequestsPerStore: optional('MAX_REQUESTS_PER_STORE'),
  maxRequestsPerToken: optional('MAX_REQUESTS_PER_TOKEN'),
  maxRequestsInFlight: optional('MAX_REQUESTS_IN_FLIGHT'),
  maxBytesInFlight: optional('MAX_BYTES_IN_FLIGHT'),
  maxBytesPerToken: optional('MAX_BYTES_PER_TOKEN'),
  bodyTimeoutMs: optional('BODY_TIMEOUT_MS'),
  refusalCooldownMs: optional('REFUSAL_COOLDOWN_MS'),
});

/** A JSON answer; one given before the request's body wholly arrived closes the connection (nothing more is read). */
const json = (req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void => {
  const early = !req.complete;
  res.writeHead(status, { 'content-type': 'application/json', ...(early ? { connection: 'close' } : {}) }).end(JSON.stringify(body));
  if (early) closeUnread(req, res);
};

// Connections: a cap, and short timeouts for headers and whole requests, so idle or half-open
// connections cannot use up the process's open files (Lance needs them too). Node checks the
// timeouts every connectionsCheckingInterval.
const server = createServer(
  {
    headersTimeout: optional('HEADERS_TIMEOUT_MS') ?? 10_000,
    requestTimeout: optional('REQUEST_TIMEOUT_MS') ?? 60_000,
    keepAliveTimeout: optional('KEEP_ALIVE_TIMEOUT_MS') ?? 5_000,
    connectionsCheckingInterval: 1_000,
  },
  async (req, res) => {
    try {
      if (await handleDrain(req, res)) return;
      if (req.method === 'GET' && req.url === '/stats') {
        // Store ids, positions and the dataset's location are for the operator only.
        if (adminToken === undefined || !sameToken(bearerToken(req), adminToken)) {
          json(req, res, 401, { code: 'Unauthorized', message: 'GET /stats needs the admin token (ADMIN_TOKEN)' });
          return;
        }
        json(req, res, 200, { table, uri, sink: sink.stats(), stores: await sink.positions() });
        return;
      }
      json(req, res, 404, { code: 'NotFound', message: 'no such route' });
    } catch (e) {
      console.error('lance-server: request failed', e);
      if (!res.headersSent) json(req, res, 500, { code: 'Internal', message: 'the server failed (its log says why)' });
      else res.end();
    }
  },
);
server.maxConnections = optional('MAX_CONNECTIONS') ?? 512; // beyond it, a new connection is closed at once

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
