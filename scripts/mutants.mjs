// npm run test:mutants [-- --seeds 2000] [--jobs 1] [--only NAME] [--baseline FILE]
//
// Every hole found in memwal from outside is kept as a mutant (test/mutants/*.patch): the smallest
// patch that puts it back. This script runs the simulation (test/sim) on the unpatched code once
// (the baseline: each seed's outcome), then, for each mutant, on a scratch copy of the repository
// with the patch applied (node_modules linked), until the first seed whose outcome differs from
// the baseline's. It prints the table: mutant, seeds until found, the seed. A mutant not found
// within --seeds is a gap in the simulation; the script then exits 1. --baseline reuses the
// baseline file a previous run wrote (same code, same seeds).
//
// A patch whose first line is `# test: <command>` puts back a hole outside the simulation's reach
// (the Lance sink, the drain's HTTP transport): its test command must pass on the unpatched code
// and fail on the patched copy; the table shows it as found "by its test".

import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const seeds = Number(arg('seeds', 2000));
const jobs = Number(arg('jobs', 1));
const only = arg('only', undefined);
const repo = process.cwd();
const tsx = join(repo, 'node_modules', '.bin', 'tsx');

/** A copy of the repository's files (tracked and new, as in the working tree) with node_modules linked. */
function scratchCopy() {
  const dir = mkdtempSync(join(tmpdir(), 'memwal-mutant-'));
  const files = spawnSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: repo, encoding: 'utf8' }).stdout.split('\n');
  for (const f of files) {
    if (!f || f.startsWith('node_modules/')) continue;
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    try {
      copyFileSync(join(repo, f), join(dir, f));
    } catch {
      // listed but deleted in the working tree
    }
  }
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** Run the simulation's CLI in `cwd`; resolves its output. */
function sim(cwd, args) {
  return new Promise((resolve) => {
    const child = spawn(tsx, ['test/sim/cli.ts', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), 'memwal-mutants-'));
const reuse = arg('baseline', undefined);
const baselineFile = reuse ?? join(work, 'baseline.json');
let baselineFailures;
if (reuse) {
  baselineFailures = Object.entries(JSON.parse(readFileSync(reuse, 'utf8')))
    .filter(([, v]) => v !== null)
    .map(([k, v]) => `seed ${k}: ${v}`);
} else {
  console.log(`baseline: seeds 1..${seeds} on the unpatched code`);
  const base = await sim(repo, ['--seeds', String(seeds), '--from', '1', '--record', baselineFile]);
  baselineFailures = base.out.split('\n').filter((l) => l.startsWith('seed '));
}
console.log(
  baselineFailures.length === 0
    ? `baseline: every seed passes (${((Date.now() - started) / 1000).toFixed(0)} s)`
    : `baseline: ${baselineFailures.length} seeds fail on the unpatched code; a mutant is found where its outcome differs\n  ${baselineFailures.slice(0, 5).join('\n  ')}`,
);

const patches = readdirSync(join(repo, 'test', 'mutants'))
  .filter((f) => f.endsWith('.patch') && (!only || f.includes(only)))
  .sort();
const rows = [];

/** The `# test: <command>` of a patch's first line, or undefined (the simulation finds it). */
function testCommand(patch) {
  const first = readFileSync(join(repo, 'test', 'mutants', patch), 'utf8').split('\n', 1)[0];
  const m = /^# test: (.+)$/.exec(first);
  return m ? m[1].trim() : undefined;
}

/** Run a shell command in `cwd`; resolves its exit code and output. */
function shell(cwd, command) {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

async function runMutant(patch) {
  const t0 = Date.now();
  const command = testCommand(patch);
  if (command) {
    const clean = await shell(repo, command);
    if (clean.code !== 0) {
      rows.push({ mutant: patch, seeds: 'its test fails unpatched', seed: '-', secs: 0, detail: command });
      console.log(`${patch}: its test fails on the unpatched code`);
      return;
    }
  }
  const dir = scratchCopy();
  const applied = spawnSync('git', ['apply', '--whitespace=nowarn', join(repo, 'test', 'mutants', patch)], { cwd: dir, encoding: 'utf8' });
  if (applied.status !== 0) {
    rows.push({ mutant: patch, seeds: 'patch does not apply', seed: '-', secs: 0, detail: applied.stderr.trim() });
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  if (command) {
    const r = await shell(dir, command);
    const secs = (Date.now() - t0) / 1000;
    rows.push(
      r.code !== 0
        ? { mutant: patch, seeds: 'by its test', seed: '-', secs, detail: command }
        : { mutant: patch, seeds: 'its test passes', seed: '-', secs, detail: command },
    );
    console.log(`${patch}: ${r.code !== 0 ? 'found by its test' : 'NOT FOUND: its test passes'} (${secs.toFixed(0)} s)`);
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  const r = await sim(dir, ['--seeds', String(seeds), '--from', '1', '--differ', baselineFile]);
  const found = /FOUND at seed (\d+) after (\d+) seeds[^:]*: (.*)/.exec(r.out);
  const secs = (Date.now() - t0) / 1000;
  rows.push(
    found
      ? { mutant: patch, seeds: Number(found[2]), seed: Number(found[1]), secs, detail: found[3] }
      : { mutant: patch, seeds: `not found in ${seeds}`, seed: '-', secs, detail: r.out.trim().split('\n').pop() },
  );
  console.log(`${patch}: ${found ? `found at seed ${found[1]} (${secs.toFixed(0)} s)` : `NOT FOUND (${secs.toFixed(0)} s)`}`);
  rmSync(dir, { recursive: true, force: true });
}
const queue = [...patches];
await Promise.all(
  Array.from({ length: Math.max(1, jobs) }, async () => {
    while (queue.length > 0) await runMutant(queue.shift());
  }),
);

rows.sort((a, b) => a.mutant.localeCompare(b.mutant));
const w = Math.max(...rows.map((r) => r.mutant.length), 6);
console.log(`\n${'mutant'.padEnd(w)}  seeds until found  failing seed  violation`);
for (const r of rows) {
  console.log(`${r.mutant.padEnd(w)}  ${String(r.seeds).padEnd(17)}  ${String(r.seed).padEnd(12)}  ${String(r.detail).slice(0, 120)}`);
}
writeFileSync(join(work, 'table.json'), JSON.stringify(rows, null, 2));
console.log(
  `\n${rows.length} mutants, ${((Date.now() - started) / 1000).toFixed(0)} s; table: ${join(work, 'table.json')}; baseline: ${baselineFile}`,
);
process.exitCode = rows.every((r) => typeof r.seeds === 'number' || r.seeds === 'by its test') ? 0 : 1;
