// `npm run bench:drain`: drain throughput into Lance and drain lag under the rows case's write
// load (bench/data.ts: `{id, value, name}`, 1,000 rows per durable put, keyed by id), in Node
// with a NodeFileStorage store, side by side: the writer alone, the writer with an in-process
// LanceSink drain, the writer with a drain over HTTP to examples/lance-server; and a backlog
// (store written first, then drained) both ways. Prints a table; writes
// bench/results/drain-latest.json. Uses the public entry points only.
//
// Environment: DRAIN_BENCH_ROWS (default 100000), DRAIN_BENCH_REPS (default 3),
// DRAIN_BENCH_PORT (default 5296).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DrainHandle, MemWal, drain } from '../src/index.js';
import { LanceSink } from '../src/lance.js';
import { NodeFileStorage } from '../src/node.js';
import { startLanceServer } from '../test/lance-server-process.js';
import { BENCH_SCHEMA, rowChunks } from './data.js';

const ROWS = Number(process.env.DRAIN_BENCH_ROWS ?? 100_000);
const REPS = Number(process.env.DRAIN_BENCH_REPS ?? 3);
const PORT = Number(process.env.DRAIN_BENCH_PORT ?? 5296);
const MiB = 1024 * 1024;
const quiet = { warn: () => undefined };
const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Mode = 'none' | 'sink' | 'http';

interface Run {
  /** Writer: rows/s from the first put to the last acknowledgement. */
  writeRowsPerS: number;
  /** Drain: rows/s and WAL MiB/s from the drain's start to the last position applied. */
  drainRowsPerS: number;
  drainMiBPerS: number;
  /** After the last acknowledgement, until the sink had applied it. */
  catchUpMs: number;
  /** Lag sampled every 50 ms while writing: p50 and max. */
  lagEntriesP50: number;
  lagEntriesMax: number;
  lagMiBMax: number;
  shipments: number;
}

async function runOnce(mode: Mode, backlog: boolean, rep: number): Promise<Run> {
  const root = mkdtempSync(join(tmpdir(), 'memwal-drain-bench-store-'));
  const uri = mkdtempSync(join(tmpdir(), 'memwal-drain-bench-lance-'));
  const server = mode === 'http' ? await startLanceServer({ uri, port: PORT, tokens: { bench: `bench${rep + 1}` } }) : undefined;
  const store = await MemWal.open({
    name: `bench${rep + 1}`,
    schema: BENCH_SCHEMA,
    primaryKey: ['id'],
    storage: new NodeFileStorage(root),
    logger: quiet,
  });
  const chunks = rowChunks(ROWS);
  const startDrain = (): DrainHandle | undefined =>
    mode === 'sink'
      ? drain(store, { sink: new LanceSink({ uri, table: 'events', primaryKey: ['id'] }), storeId: `bench${rep + 1}`, logger: quiet })
      : mode === 'http'
        ? drain(store, { endpoint: `${server!.url}/drain/bench${rep + 1}`, token: 'bench', logger: quiet })
        : undefined;
  try {
    let d = backlog ? undefined : startDrain();
    const drainStart = now();
    const lag: number[] = [];
    let lagBytesMax = 0;
    let writing = true;
    const sampler = (async () => {
      while (writing && d) {
        const s = await d.drainStats();
        lag.push(s.lagEntries);
        lagBytesMax = Math.max(lagBytesMax, s.lagBytes);
        await sleep(50);
      }
    })();
    const t0 = now();
    let last = 0;
    for (const chunk of chunks) last = (await store.put(chunk)).position;
    const writeMs = now() - t0;
    writing = false;
    await sampler;
    const walBytes = (await store.walStats()).bytesWritten;
    let drainMs = 0;
    let catchUpMs = 0;
    let shipments = 0;
    if (mode !== 'none') {
      const tb = now();
      d ??= startDrain();
      await d!.waitForApplied(last);
      catchUpMs = now() - tb;
      drainMs = backlog ? catchUpMs : now() - drainStart;
      shipments = (await d!.drainStats()).shipments;
      await d!.stop();
    }
    lag.sort((a, b) => a - b);
    return {
      writeRowsPerS: ROWS / (writeMs / 1000),
      drainRowsPerS: drainMs ? ROWS / (drainMs / 1000) : 0,
      drainMiBPerS: drainMs ? walBytes / MiB / (drainMs / 1000) : 0,
      catchUpMs,
      lagEntriesP50: lag[Math.floor(lag.length / 2)] ?? 0,
      lagEntriesMax: lag[lag.length - 1] ?? 0,
      lagMiBMax: lagBytesMax / MiB,
      shipments,
    };
  } finally {
    await store.close();
    await server?.kill();
    rmSync(root, { recursive: true, force: true });
    rmSync(uri, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
const fmt = (xs: number[], digits = 0): string => {
  const f = (x: number) => (digits === 0 ? Math.round(x).toLocaleString('en-US') : x.toFixed(digits));
  return `${f(median(xs))} [${f(Math.min(...xs))}–${f(Math.max(...xs))}]`;
};

const CASES: { label: string; mode: Mode; backlog: boolean }[] = [
  { label: 'writer alone', mode: 'none', backlog: false },
  { label: 'writer + drain in-process (LanceSink)', mode: 'sink', backlog: false },
  { label: 'writer + drain over HTTP (lance-server)', mode: 'http', backlog: false },
  { label: 'backlog, drain in-process', mode: 'sink', backlog: true },
  { label: 'backlog, drain over HTTP', mode: 'http', backlog: true },
];

// Warm-up (discarded): JIT, the LanceDB native module, the tsx server start.
for (const c of CASES) await runOnce(c.mode, c.backlog, -1);

const results: Record<string, Run[]> = {};
console.log(
  `drain bench: ${ROWS.toLocaleString('en-US')} rows {id, value, name}, 1,000 per durable put, keyed; ${REPS} reps; ${cpus().length} CPUs`,
);
for (let rep = 0; rep < REPS; rep++) {
  for (const c of CASES) {
    const r = await runOnce(c.mode, c.backlog, rep);
    (results[c.label] ??= []).push(r);
    console.log(`  rep ${rep + 1} ${c.label}: ${JSON.stringify(r, (_k, v) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v))}`);
  }
}

console.log(
  '\n| case | writer rows/s | drain rows/s into Lance | drain WAL MiB/s | catch-up after last put, ms | lag entries p50 / max | lag MiB max | shipments |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const c of CASES) {
  const rs = results[c.label]!;
  const pick = (k: keyof Run) => rs.map((r) => r[k]);
  const drained = c.mode !== 'none';
  console.log(
    `| ${c.label} | ${c.backlog ? '(before the drain)' : ''} ${fmt(pick('writeRowsPerS'))} | ${drained ? fmt(pick('drainRowsPerS')) : '–'} | ${drained ? fmt(pick('drainMiBPerS'), 2) : '–'} | ${drained ? fmt(pick('catchUpMs')) : '–'} | ${drained && !c.backlog ? `${median(pick('lagEntriesP50'))} / ${median(pick('lagEntriesMax'))}` : '–'} | ${drained && !c.backlog ? fmt(pick('lagMiBMax'), 2) : '–'} | ${drained ? median(pick('shipments')) : '–'} |`,
  );
}

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
writeFileSync(
  join(resultsDir, 'drain-latest.json'),
  JSON.stringify({ rows: ROWS, reps: REPS, date: new Date().toISOString(), results }, null, 2),
);
process.exit(0);
