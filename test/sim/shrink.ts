// Shrinking a failing seed: delta debugging (Zeller's ddmin) over the steps that ran, re-running
// the seed with a subset of its steps and keeping a subset that still fails with the same kind of
// violation. Each re-run is deterministic, so the minimal list replays exactly (`--keep`).

import { runSeed, type SimResult } from './run.js';

export interface Shrunk {
  keep: number[];
  result: SimResult;
  runs: number;
}

/** The smallest list of step indices found (within `maxRuns` re-runs and `maxMs` ms) that still fails like `failed`. */
export async function shrink(failed: SimResult, maxRuns = 300, maxMs = 120_000): Promise<Shrunk> {
  const kind = failed.violation!.kind;
  const started = Date.now();
  let runs = 0;
  let best: Shrunk = { keep: failed.ran, result: failed, runs: 0 };
  const fails = async (keep: number[]): Promise<boolean> => {
    if (runs >= maxRuns || Date.now() - started > maxMs) return false;
    runs++;
    const r = await runSeed(failed.seed, { keep: new Set(keep) });
    if (r.violation?.kind !== kind) return false;
    best = { keep: r.ran, result: r, runs };
    return true;
  };
  let c = failed.ran;
  let n = 2;
  while (c.length >= 2) {
    const size = Math.ceil(c.length / n);
    const chunks: number[][] = [];
    for (let i = 0; i < c.length; i += size) chunks.push(c.slice(i, i + size));
    let reduced = false;
    for (const chunk of chunks) {
      if (await fails(chunk)) {
        c = best.keep;
        n = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      for (const chunk of chunks) {
        const rest = c.filter((i) => !chunk.includes(i));
        if (await fails(rest)) {
          c = best.keep;
          n = Math.max(n - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (!reduced) {
      if (n >= c.length) break;
      n = Math.min(2 * n, c.length);
    }
    if (runs >= maxRuns || Date.now() - started > maxMs) break;
  }
  return { ...best, runs };
}
