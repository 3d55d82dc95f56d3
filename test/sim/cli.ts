// The simulation from the command line (npm run sim):
//   npm run sim -- --seeds 10000 [--from N]    run seeds N..N+count-1, stop at the first failure
//   npm run sim -- --seed N [--trace]          run one seed (exact replay) and print its trace
//                                               (--trace-storage: every storage call too)
//   npm run sim -- --seed N --keep 3,8,21      replay only those steps (a shrunk trace)
//                    [--drop-faults 8]           … step 8 without its faults
//   --no-shrink                                 print the failing seed without shrinking it
//   --all                                       go on past failures; list the failing seeds by kind
//   --record FILE                               go on past failures; write each seed's outcome to FILE (JSON)
//   --differ FILE                               stop at the first seed whose outcome differs from FILE's
//                                               (scripts/mutants.mjs: a mutant is found where it differs)
// A failure prints the seed, its configuration, the shrunk step list and its trace, and exits 1.

import { readFileSync, writeFileSync } from 'node:fs';
import { runSeed, type SimResult } from './run.js';
import { shrink } from './shrink.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const has = (name: string): boolean => process.argv.includes(`--${name}`);

function report(r: SimResult, keep?: number[], dropFaults: number[] = []): void {
  console.log(`seed ${r.seed}: ${r.violation ? r.violation.message : 'ok'}`);
  if (keep) console.log(`replay: ${replay(r.seed, keep, dropFaults)}`);
  console.log(r.trace.join('\n'));
}

/** The command that replays a shrunk run. */
function replay(seed: number, keep: number[], dropFaults: number[]): string {
  return `npm run sim -- --seed ${seed} --keep ${keep.join(',')}${dropFaults.length > 0 ? ` --drop-faults ${dropFaults.join(',')}` : ''}`;
}

let running: number | undefined;
// A seed whose run waits on something nothing will ever resolve empties the event loop: say which.
process.on('exit', () => {
  if (running !== undefined) {
    console.log(`the harness stalled in seed ${running} (nothing left to run); replay: npm run sim -- --seed ${running}`);
    process.exitCode = 2;
  }
});

async function main(): Promise<number> {
  const one = arg('seed');
  if (one !== undefined) {
    const keep = arg('keep')?.split(',').map(Number);
    const dropFaults = arg('drop-faults')?.split(',').map(Number) ?? [];
    running = Number(one);
    const r = await runSeed(Number(one), {
      trace: has('trace'),
      traceStorage: has('trace-storage'),
      ...(keep ? { keep: new Set(keep) } : {}),
      dropFaults: new Set(dropFaults),
    });
    running = undefined;
    report(r, keep, dropFaults);
    return r.violation ? 1 : 0;
  }
  const count = Number(arg('seeds') ?? 100);
  const from = Number(arg('from') ?? 1);
  const started = Date.now();
  const kinds = new Map<string, number>();
  const failures = new Map<string, number[]>();
  const record = arg('record');
  const outcomes: Record<number, string | null> = {};
  const differFile = arg('differ');
  const baseline: Record<string, string | null> | undefined = differFile ? JSON.parse(readFileSync(differFile, 'utf8')) : undefined;
  for (let seed = from; seed < from + count; seed++) {
    running = seed;
    const r = await runSeed(seed);
    running = undefined;
    for (const [k, v] of Object.entries(r.counts)) kinds.set(k, (kinds.get(k) ?? 0) + v);
    const outcome = r.violation ? r.violation.message.split('\n')[0]!.slice(0, 300) : null;
    if (baseline) {
      if ((baseline[seed] ?? null) !== outcome) {
        const secs = (Date.now() - started) / 1000;
        console.log(
          `FOUND at seed ${seed} after ${seed - from + 1} seeds (${secs.toFixed(1)} s): ${outcome ?? 'ok'} (baseline: ${baseline[seed] ?? 'ok'})`,
        );
        return 1;
      }
      continue;
    }
    if (record) {
      outcomes[seed] = outcome;
      if (outcome) console.log(`seed ${seed}: ${outcome}`);
      continue;
    }
    if (r.violation && has('all')) {
      console.log(`seed ${seed}: ${r.violation.message.split('\n')[0]!.slice(0, 300)}`);
      failures.set(r.violation.kind, [...(failures.get(r.violation.kind) ?? []), seed]);
      continue;
    }
    if (r.violation) {
      const secs = (Date.now() - started) / 1000;
      console.log(`FAILED at seed ${seed} after ${seed - from + 1} seeds (${secs.toFixed(1)} s): ${r.violation.message}`);
      if (has('no-shrink')) {
        report(r);
        return 1;
      }
      const s = await shrink(r);
      console.log(`shrunk from ${r.ran.length} to ${s.keep.length} steps in ${s.runs} re-runs`);
      report(s.result, s.keep, s.dropFaults);
      return 1;
    }
    if ((seed - from + 1) % 100 === 0) {
      const secs = (Date.now() - started) / 1000;
      console.log(`${seed - from + 1} seeds ok (${secs.toFixed(1)} s, ${((seed - from + 1) / secs).toFixed(1)} seeds/s)`);
    }
  }
  const secs = (Date.now() - started) / 1000;
  if (record) writeFileSync(record, JSON.stringify(outcomes));
  if (baseline) {
    console.log(`no seed of ${from}..${from + count - 1} differs from the baseline (${secs.toFixed(1)} s)`);
    return 0;
  }
  if (failures.size > 0) {
    for (const [k, seeds] of failures) console.log(`${k}: ${seeds.length} seeds (${seeds.slice(0, 20).join(', ')})`);
    return 1;
  }
  console.log(`${count} seeds ok (${from}..${from + count - 1}) in ${secs.toFixed(1)} s: ${(count / secs).toFixed(1)} seeds/s`);
  console.log(
    [...kinds]
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  );
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    console.error(e);
    process.exitCode = 2;
  },
);
