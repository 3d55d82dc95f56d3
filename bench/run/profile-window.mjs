// Which thread sets the pace of an ingest rep: two CPU profiles of one `--profile=arrow` run (the
// I/O worker's and the bench worker's, the engine's thread) cut to one window of wall time, each
// thread's busy share in it, and where the busy time went (inclusive time of the functions named,
// and the top self time). Without --from/--to the window is the longest run of 50 ms buckets in
// which the I/O worker was at least 60 % busy (in the one-writer case: the rep through the I/O
// worker). Node; reads the files the bench wrote, changes nothing.
//
//   node bench/run/profile-window.mjs [--from ms --to ms] [--io file] [--engine file] [fn ...]

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** bench/results (args.mjs names it too, but parses this process's arguments as the bench's). */
const RESULTS_DIR = fileURLToPath(new URL('../results', import.meta.url));

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    io: { type: 'string', default: join(RESULTS_DIR, 'profile-arrow-io-worker-1.cpuprofile.json') },
    engine: { type: 'string', default: join(RESULTS_DIR, 'profile-arrow-bench-worker.cpuprofile.json') },
  },
});

const DEFAULT_FUNCTIONS = [
  'walAppendEntry',
  'encodeFrameHeader',
  'walAppendParts',
  'buildFlush',
  'flushTableSteps',
  'cutBlockSteps',
  'encodeTableSteps',
  'encode',
  'toUint8Array',
  'crc32c',
  'tableWrite',
  'write',
  'flush',
  '(garbage collector)',
  'postMessage',
  'tableToIPC',
  'put',
];

/** Samples of a profile as [start µs, ms, stack of function names (leaf first)], idle marked. */
function samplesOf(file) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const out = [];
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const stack = [];
    for (let x = p.samples[i]; x !== undefined; x = parent.get(x)) {
      const f = byId.get(x).callFrame.functionName;
      if (f && f !== '(root)') stack.push(f);
    }
    out.push({ at: t, ms: (p.timeDeltas[i + 1] ?? 0) / 1000, stack, idle: stack[0] === '(idle)' });
  }
  return { start: p.startTime, samples: out };
}

const io = samplesOf(opts.io);
const engine = samplesOf(opts.engine);
const t0 = Math.min(io.start, engine.start);
const msOf = (s) => (s.at - t0) / 1000;

/** The longest run of 50 ms buckets in which the I/O worker was ≥ 60 % busy. */
function busiestWindow() {
  const bucket = 50;
  const busy = new Map();
  for (const s of io.samples) if (!s.idle) busy.set(Math.floor(msOf(s) / bucket), (busy.get(Math.floor(msOf(s) / bucket)) ?? 0) + s.ms);
  const keys = [...busy.keys()].sort((a, b) => a - b);
  let best = [0, 0];
  let start;
  let prev;
  for (const k of keys) {
    const hot = busy.get(k) >= 0.6 * bucket;
    if (hot && start !== undefined && k === prev + 1) {
      if (k - start > best[1] - best[0]) best = [start, k];
    } else start = hot ? k : undefined;
    if (hot && start === undefined) start = k;
    prev = k;
  }
  return [best[0] * bucket, (best[1] + 1) * bucket];
}

const [from, to] = opts.from !== undefined ? [Number(opts.from), Number(opts.to)] : busiestWindow();
const names = positionals.length > 0 ? positionals : DEFAULT_FUNCTIONS;
console.log(`window ${from.toFixed(0)}–${to.toFixed(0)} ms after the first profile's start (${(to - from).toFixed(0)} ms)`);
for (const [label, { samples }] of [
  ['I/O worker', io],
  ['engine (bench worker)', engine],
]) {
  let busy = 0;
  const inclusive = new Map();
  const self = new Map();
  for (const s of samples) {
    const at = msOf(s);
    if (at < from || at >= to || s.idle) continue;
    busy += s.ms;
    self.set(s.stack[0], (self.get(s.stack[0]) ?? 0) + s.ms);
    for (const f of new Set(s.stack)) inclusive.set(f, (inclusive.get(f) ?? 0) + s.ms);
  }
  console.log(`\n${label}: busy ${busy.toFixed(0)} ms = ${((100 * busy) / (to - from)).toFixed(1)} % of the window`);
  console.log(`  inclusive ms: ${names.map((f) => `${f} ${(inclusive.get(f) ?? 0).toFixed(0)}`).join(', ')}`);
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 12);
  console.log(`  top self ms: ${top.map(([f, ms]) => `${f} ${ms.toFixed(0)}`).join(', ')}`);
}
