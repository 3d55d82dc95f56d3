// `npm run bench:fairness`: how long a small store waits while another store floods the same Lance
// server (examples/lance-server, keyed table) with its largest allowed requests. A "small" store
// sends 1-row requests one after another and times each answer (client round trip: the apply and
// its position commit), alone (unloaded) and while a "flood" store keeps its maxPendingPerStore
// requests of just under the server's body limit in flight (loaded), in alternating blocks so that
// both meet the machine's other work alike. Both phases run on a table already holding the flood's
// rows (its requests overwrite the same keys, so the table keeps its size). Prints p50 / p99 of both and their ratio; writes
// bench/results/fairness-latest.json.
//
// Environment: FAIRNESS_SAMPLES (small requests per phase, default 300), FAIRNESS_PORT (default
// 5297), FAIRNESS_BODY_BYTES (the server's body limit, default the handler's 8 MiB),
// FAIRNESS_FLOOD_REQUESTS (flood requests prepared, default 80), FAIRNESS_ROWS_PER_COMMIT (the
// sink's maxRowsPerCommit, default the sink's), FAIRNESS_OPTIMIZE_EVERY (the sink's
// optimizeEvery, default the sink's), FAIRNESS_FLOOD=refused (the flood sends keyed requests of
// 500,000 narrow rows, 7.7 MiB, that the sink checks in full and then refuses: their positions
// skip; the small store then waits only for their checks, not for commits).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Bool, Field, Float64, Int64, RecordBatch, Schema, Struct, Table, Utf8, makeData, tableToIPC, vectorFromArray } from 'apache-arrow';
import { DRAIN_HEADERS, POSITION_COLUMN, drainRequestHeaders } from '../src/drain/wire.js';
import { DEFAULT_MAX_DRAIN_BODY_BYTES, DEFAULT_MAX_PENDING_PER_STORE, DEFAULT_MAX_ROWS_PER_COMMIT } from '../src/lance.js';
import { crc32c } from '../src/util/crc32c.js';
import { startLanceServer } from '../test/lance-server-process.js';

const SAMPLES = Number(process.env.FAIRNESS_SAMPLES ?? 300);
/** Blocks per phase: unloaded and loaded blocks of SAMPLES / BLOCKS requests alternate. */
const BLOCKS = 6;
const PORT = Number(process.env.FAIRNESS_PORT ?? 5297);
const BODY_LIMIT = Number(process.env.FAIRNESS_BODY_BYTES ?? DEFAULT_MAX_DRAIN_BODY_BYTES);
const ADMIN = 'bench-admin';
/** Flood requests prepared up front (the client must not spend its time encoding during the measurement). */
const FLOOD_REQUESTS = Number(process.env.FAIRNESS_FLOOD_REQUESTS ?? 80);
/** The sink's maxRowsPerCommit (default: the sink's default). */
const ROWS_PER_COMMIT = process.env.FAIRNESS_ROWS_PER_COMMIT ? Number(process.env.FAIRNESS_ROWS_PER_COMMIT) : undefined;
/** The sink's optimizeEvery (default: the sink's). */
const OPTIMIZE_EVERY = process.env.FAIRNESS_OPTIMIZE_EVERY ? Number(process.env.FAIRNESS_OPTIMIZE_EVERY) : undefined;
/** `refused`: the flood's requests are refused after their check (see the file header). */
const REFUSED = process.env.FAIRNESS_FLOOD === 'refused';

const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('name', new Utf8(), true),
  new Field('score', new Float64(), true),
  new Field('_tombstone', new Bool(), false),
  new Field(POSITION_COLUMN, new Int64(), false),
]);

/**
 * A keyed drain request of `rows` rows (ids `first..first+rows-1`) at `position`, announced as
 * covering positions `from..position`.
 */
function request(rows: number, position: number, first = 0, from = position) {
  const children = [
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: BigInt64Array.from({ length: rows }, (_, i) => BigInt(first + i)) }),
    vectorFromArray(
      Array.from({ length: rows }, (_, i) => `customer ${first + i} at position ${position}, a name`),
      new Utf8(),
    ).data[0]!,
    makeData({ type: new Float64(), length: rows, nullCount: 0, data: Float64Array.from({ length: rows }, (_, i) => i * 0.5) }),
    vectorFromArray(new Array(rows).fill(false), new Bool()).data[0]!,
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: new BigInt64Array(rows).fill(BigInt(position)) }),
  ];
  const data = makeData({ type: new Struct(schema.fields), length: rows, nullCount: 0, children });
  const body = tableToIPC(new Table(schema, [new RecordBatch(schema, data)]), 'stream');
  return { body, headers: drainRequestHeaders({ firstPosition: from, lastPosition: position, epoch: 1, rows, crc32c: crc32c(body) }) };
}

/** A keyed request of `rows` rows of the key alone (8 + 1 bytes a row with the drain's columns) at `position`. */
function narrow(rows: number, position: number) {
  const fields = [schema.fields[0]!, schema.fields[3]!, schema.fields[4]!];
  const children = [
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: BigInt64Array.from({ length: rows }, (_, i) => BigInt(i)) }),
    makeData({ type: new Bool(), length: rows, nullCount: 0, data: new Uint8Array(Math.ceil(rows / 8)) }),
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: new BigInt64Array(rows).fill(BigInt(position)) }),
  ];
  const narrowSchema = new Schema(fields);
  const data = makeData({ type: new Struct(fields), length: rows, nullCount: 0, children });
  const body = tableToIPC(new Table(narrowSchema, [new RecordBatch(narrowSchema, data)]), 'stream');
  return { body, headers: drainRequestHeaders({ firstPosition: position, lastPosition: position, epoch: 1, rows, crc32c: crc32c(body) }) };
}

async function post(url: string, token: string, req: { body: Uint8Array; headers: Record<string, string> }, expected = 200): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...req.headers, authorization: `Bearer ${token}` },
    body: req.body as Uint8Array<ArrayBuffer>,
  });
  const text = await res.text();
  if (res.status !== expected) throw new Error(`${url} answered ${res.status}: ${text} (${req.headers[DRAIN_HEADERS.firstPosition]})`);
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

async function main(): Promise<void> {
  const uri = mkdtempSync(join(tmpdir(), 'memwal-fairness-'));
  const server = await startLanceServer({
    uri,
    port: PORT,
    tokens: { small: 'small', flood: 'flood' },
    adminToken: ADMIN,
    maxBodyBytes: BODY_LIMIT,
    ...(ROWS_PER_COMMIT ? { maxRowsPerCommit: ROWS_PER_COMMIT } : {}),
    ...(OPTIMIZE_EVERY !== undefined ? { optimizeEvery: OPTIMIZE_EVERY } : {}),
  });
  try {
    // The flood's rows per request: as many as fit under the body limit.
    const perRow = request(10_000, 1).body.byteLength / 10_000;
    const floodRows = REFUSED ? 500_000 : Math.floor((BODY_LIMIT * 0.9) / perRow);
    // Flood request i covers positions 1..i, so one overtaken by another is a cheap duplicate, never a skip.
    // Refused: each starts far beyond the flood's applied position (a skip), found after the check.
    const refused = REFUSED ? narrow(floodRows, 1_000_000_000) : undefined; // one body, sent again and again
    const bodies = Array.from({ length: FLOOD_REQUESTS }, (_, i) =>
      i > 0 && refused ? refused : request(refused ? 1000 : floodRows, i + 1, 0, 1),
    );
    const floodBytes = bodies[bodies.length - 1]!.body.byteLength;
    console.log(`flood requests: ${floodRows} rows, ${(floodBytes / 2 ** 20).toFixed(2)} MiB each (limit ${BODY_LIMIT / 2 ** 20} MiB)`);
    const flood = `${server.url}/drain/flood`;
    await post(flood, 'flood', bodies[0]!); // the table holds the flood's rows before either phase
    let next = 1;

    let smallPosition = 0;
    /** `n` small requests, one after another, each timed; stops early once `until()` says so. */
    const small = async (n: number, until = () => false): Promise<number[]> => {
      const times: number[] = [];
      for (let i = 0; i < n && !until(); i++) {
        smallPosition += 1;
        const req = request(1, smallPosition, 1_000_000 + (smallPosition % 50));
        const t0 = performance.now();
        await post(`${server.url}/drain/small`, 'small', req);
        times.push(performance.now() - t0);
      }
      return times;
    };

    // Unloaded and loaded blocks alternate, so both phases meet the machine's other work alike.
    const unloaded: number[] = [];
    const loaded: number[] = [];
    let floodDone = 0;
    let floodMs = 0;
    for (let block = 0; block < 2 * BLOCKS; block++) {
      const n = Math.ceil(SAMPLES / BLOCKS);
      if (block % 2 === 0) {
        unloaded.push(...(await small(n)));
        continue;
      }
      let flooding = true;
      const floodStart = performance.now();
      // The flood keeps as many requests in flight as the server lets one store queue.
      const flooders = Array.from({ length: DEFAULT_MAX_PENDING_PER_STORE }, async () => {
        while (flooding && next < bodies.length) {
          await post(flood, 'flood', bodies[next++]!, REFUSED ? 400 : 200);
          floodDone += 1;
        }
      });
      await new Promise((r) => setTimeout(r, 500)); // the flood is under way
      loaded.push(...(await small(n, () => next >= bodies.length))); // loaded samples only while the flood lasts
      flooding = false;
      await Promise.all(flooders); // the flood's last requests finish before the next unloaded block
      floodMs += performance.now() - floodStart;
    }
    if (loaded.length < unloaded.length) {
      console.log(`the flood's prepared requests lasted ${loaded.length} loaded samples: raise FAIRNESS_FLOOD_REQUESTS`);
    }
    const floodSeconds = floodMs / 1000;
    const stats = (await (await fetch(`${server.url}/stats`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as unknown;

    const figures = {
      date: new Date().toISOString(),
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, load average ${loadavg()[0]!.toFixed(1)} at the end`,
      samples: { unloaded: unloaded.length, loaded: loaded.length },
      maxRowsPerCommit: ROWS_PER_COMMIT ?? DEFAULT_MAX_ROWS_PER_COMMIT,
      flood: REFUSED ? 'refused after their check' : 'applied',
      floodRequestRows: floodRows,
      floodRequestMiB: floodBytes / 2 ** 20,
      floodRequestsAnswered: floodDone,
      floodRowsPerS: Math.round((floodDone * floodRows) / floodSeconds),
      unloadedMs: { p50: quantile(unloaded, 0.5), p99: quantile(unloaded, 0.99) },
      loadedMs: { p50: quantile(loaded, 0.5), p99: quantile(loaded, 0.99) },
      ratio: { p50: quantile(loaded, 0.5) / quantile(unloaded, 0.5), p99: quantile(loaded, 0.99) / quantile(unloaded, 0.99) },
      sink: (stats as { sink: unknown }).sink,
    };
    console.log(JSON.stringify(figures, null, 2));
    const out = fileURLToPath(new URL('./results/', import.meta.url));
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'fairness-latest.json'), `${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    await server.kill();
    rmSync(uri, { recursive: true, force: true });
  }
}

await main();
