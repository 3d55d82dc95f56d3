// `npm run bench`: builds the bench page (bench/vite.config.ts), serves it with `vite preview` on
// 127.0.0.1, runs the chosen cases of docs/benchmarks.md in one headless Chromium session on a
// persistent on-disk profile (and the Node case in a process of its own), prints the figures the
// targets name with their verdicts, the ratios and the table, and writes
// bench/results/latest.json. The arguments are in bench/run/args.mjs. Node.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, BASELINE, CASES, ENGINE_FILTER, FULL, QUICK, REPS, RESULTS_DIR, SIZE } from './run/args.mjs';
import { extractBaseline } from './run/baseline.mjs';
import { coldNodeCases } from './run/cases/coldnode.mjs';
import { ingestCases } from './run/cases/ingest.mjs';
import { mainThreadCases } from './run/cases/mainthread.mjs';
import { memoryCases } from './run/cases/memory.mjs';
import { pageCases } from './run/cases/page.mjs';
import { queryCases } from './run/cases/queries.mjs';
import { readCases } from './run/cases/reads.mjs';
import { statsCases } from './run/cases/stats.mjs';
import { openSession, profiled } from './run/chromium.mjs';
import { computeRatios, printRatios, printTable, printTargets, targetFigures, targetsOf } from './run/report.mjs';
import { cases, details, failed, log, started } from './run/results.mjs';

const CASE_RUNNERS = {
  ...ingestCases,
  ...statsCases,
  ...mainThreadCases,
  ...memoryCases,
  ...readCases,
  ...pageCases,
  ...queryCases,
  ...coldNodeCases,
};
for (const c of CASES) if (!CASE_RUNNERS[c]) throw new Error(`case ${c} has no runner`);

const fmtLoad = (l) => l.map((x) => x.toFixed(2)).join(' ');

function osName() {
  try {
    return readFileSync('/etc/os-release', 'utf8').match(/^PRETTY_NAME="?([^"\n]*)/m)?.[1];
  } catch {
    return undefined;
  }
}

/** The checkout measured: its commit, and whether the work tree differs from it. */
function checkout() {
  const git = (...a) =>
    execFileSync('git', a, { cwd: join(BENCH_DIR, '..') })
      .toString()
      .trim();
  try {
    return {
      commit: git('rev-parse', '--short', 'HEAD'),
      branch: git('rev-parse', '--abbrev-ref', 'HEAD'),
      dirty: git('status', '--porcelain') !== '',
    };
  } catch {
    return undefined;
  }
}

/** The 1-minute load average every 5 s, so each case can report the load it ran under. */
const loadSamples = [];
const loadTimer = setInterval(() => loadSamples.push([performance.now(), loadavg()[0]]), 5000);
loadTimer.unref();
const loadDuring = (t0, t1) => {
  const xs = loadSamples.filter(([t]) => t >= t0 && t <= t1).map(([, l]) => l);
  return xs.length ? { mean: +(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2), max: Math.max(...xs) } : undefined;
};

async function main() {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const loadAtStart = loadavg();
  log(`building the bench page (${QUICK ? 'quick' : 'full'} run, ${REPS} reps; cases ${CASES.join(', ')})`);
  const baselineCommit = extractBaseline(BENCH_DIR);
  if (baselineCommit) log(`baseline: memwal at ${baselineCommit} (${BASELINE}) for the ingest cases`);
  const session = await openSession();
  const { info } = session;
  const git = checkout();
  log(
    `Chromium ${info.chromium} at ${session.url}, crossOriginIsolated ${info.crossOriginIsolated}, memwal ${git?.commit ?? '?'}${git?.dirty ? ' (work tree modified)' : ''}, ${cpus().length} cores, load average ${fmtLoad(loadAtStart)}`,
  );
  try {
    const out = join(RESULTS_DIR, 'latest.json');
    const write = (complete) => {
      const ratios = computeRatios();
      const result = {
        date: new Date().toISOString(),
        checkout: git,
        userAgent: info.userAgent,
        machine: {
          cores: cpus().length,
          cpu: cpus()[0]?.model,
          memoryGiB: +(totalmem() / 2 ** 30).toFixed(1),
          kernel: release(),
          os: osName(),
          node: process.version,
          chromium: info.chromium,
          loadavgAtStart: loadAtStart,
          loadavg: loadavg(),
        },
        crossOriginIsolated: info.crossOriginIsolated,
        config: {
          quick: QUICK,
          full: FULL,
          reps: REPS,
          sizes: SIZE,
          cases: CASES,
          engines: ENGINE_FILTER,
          baseline: baselineCommit ?? null,
          complete,
        },
        targets: targetsOf(targetFigures(ratios)),
        cases,
        ratios,
        failures: Object.fromEntries(failed),
        details,
        elapsedSeconds: Math.round((performance.now() - started) / 1000),
      };
      writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
      return result;
    };
    const { call } = session;
    for (const c of CASES) {
      const t = performance.now();
      await profiled(session, c, () => CASE_RUNNERS[c](session));
      const warnings = await call(() => globalThis.bench.api.takeWarnings());
      if (warnings.count) (details.warnings ??= {})[c] = warnings;
      const lt = await call(() => globalThis.bench.takeLongTasks());
      (details.pageLongTasks ??= {})[c] = {
        count: lt.length,
        totalMs: Math.round(lt.reduce((a, x) => a + x.ms, 0)),
        maxMs: Math.max(0, ...lt.map((x) => x.ms)),
      };
      await call(() => Promise.all([globalThis.bench.api.dropData(), globalThis.bench.dropData()]));
      (details.caseSeconds ??= {})[c] = Math.round((performance.now() - t) / 1000);
      (details.caseLoad ??= {})[c] = loadDuring(t, performance.now());
      log(`case ${c}: ${details.caseSeconds[c]} s, load average ${JSON.stringify(details.caseLoad[c] ?? fmtLoad(loadavg()))}`);
      write(false); // partial results survive an interrupted run
    }
    await call(() => globalThis.bench.api.closePeers());

    const result = write(true);
    printTargets(result.targets);
    printRatios(result.ratios);
    printTable();
    log(
      `wrote ${out}: ${result.elapsedSeconds} s in all; load average ${fmtLoad(loadAtStart)} at the start, ${fmtLoad(loadavg())} at the end; Chromium ${info.chromium}; memwal ${git?.commit ?? '?'}`,
    );
    if (failed.size > 0) {
      log(`${failed.size} engine(s) failed: ${[...failed.keys()].join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    await session.close();
  }
}

await main();
