// A small Node service over memwal: POST /put (JSON rows), GET /scan, GET /stats, GET /metrics
// (Prometheus text). Run: node --import tsx examples/node/server.ts [dataDir] [port]

import { createServer } from 'node:http';
import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { MemWal, MemWalError } from '../../src/index.js';
import { NodeFileStorage } from '../../src/node.js';

const dir = process.argv[2] ?? './memwal-data';
const port = Number(process.argv[3] ?? 8790);
const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);

const wal = await MemWal.open({ name: 'events', schema, primaryKey: ['id'], storage: new NodeFileStorage(dir) });

const json = (v: unknown): string => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x));

const server = createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/put') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const result = await wal.put(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end(json(result));
    } else if (req.url === '/scan') {
      const t = await wal.scan();
      res.writeHead(200, { 'content-type': 'application/json' }).end(json(t.toArray().map((r) => r.toJSON())));
    } else if (req.url === '/stats') {
      const stats = {
        memtable: await wal.memtableStats(),
        backpressure: await wal.backpressureStats(),
        wal: await wal.walStats(),
        write: await wal.writeStats(),
        storage: await wal.storageStats(),
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(json(stats));
    } else if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(await wal.metrics());
    } else {
      res.writeHead(404).end('not found\n');
    }
  } catch (e) {
    const code = e instanceof MemWalError ? e.code : 'IOError';
    res.writeHead(code === 'InvalidArgument' ? 400 : 500, { 'content-type': 'application/json' });
    res.end(json({ code, message: (e as Error).message }));
  }
});

server.listen(port, '127.0.0.1', () => console.log(`memwal example on http://127.0.0.1:${port} (data in ${dir})`));
const stop = async (): Promise<void> => {
  server.close();
  await wal.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
