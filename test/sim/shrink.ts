// Shrinking a failing seed: delta debugging (Zeller's ddmin) over the steps that ran, re-running
// the seed with a subset of its steps and keeping a subset that still fails with the same kind of
// violation. Each re-run is deterministic, so the minimal list replays exactly (`--keep`).

import { runSeed, type SimResult } from './run.js';

export interface Shrunk {
  keep: number[];
  /** Kept steps that run without their faults. */
  dropFaults: number[];
  result: SimResult;
  runs: number;
}

/**
 * The smallest list of step indices found (within `maxRuns` re-runs and `maxMs` ms) that still
 * fails like `failed`: ddmin over the steps, then one step at a time, then the faults of each
 * step that is left.
 */
export async function shrink(failed: SimResult, maxRuns = 500, maxMs = 120_000): Promise<Shrunk> {
  const kind = failed.violation!.kind;
  const started = Date.now();
  let runs = 0;
  let best: Shrunk = { keep: failed.ran, dropFaults: [], result: failed, runs: 0 };
  const out = (): boolean => runs >= maxRuns || Date.now() - started > maxMs;
  const fails = async (keep: number[], dropFaults = best.dropFaults): Promise<boolean> => {
    if (out()) return false;
    runs++;
    const r = await runSeed(failed.seed, { keep: new Set(keep), dropFaults: new Set(dropFaults) });
    if (r.violation?.kind !== kind) return false;
    best = { keep: r.ran, dropFaults: dropFaults.filter((i) => r.ran.includes(i)), result: r, runs };
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
    if (out()) break;
  }
  // One step at a time, from the end (a step late in the list often only set the stage).
  for (let i = best.keep.length - 1; i >= 0 && !out(); i--) {
    const keep = best.keep.filter((_, j) => j !== i);
    if (keep.length > 0) await fails(keep);
  }
  // The faults of what is left, one step at a time.
  for (const i of [...best.keep]) {
    if (out()) break;
    if (failed.steps[i]!.faults.length > 0 && !best.dropFaults.includes(i)) await fails(best.keep, [...best.dropFaults, i]);
  }
  return { ...best, runs };
}
