// What a run measured, as it goes: `cases` (one summary per case and engine), `details` (the
// rest), the engines that failed, the log, and the statistics both are built with. Node.

export const started = performance.now();

export const log = (...a) => console.log(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s]`, ...a);

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

const summarize = (samples, unit) => ({
  median: median(samples),
  min: Math.min(...samples),
  max: Math.max(...samples),
  unit,
  reps: samples.length,
});

/** `{ case: { engine: { median, min, max, unit, reps } } }` */
export const cases = {};
/** Everything else a case wants kept in latest.json (per-rep figures, stats, traces). */
export const details = {};

export function record(caseName, engine, samples, unit) {
  (cases[caseName] ??= {})[engine] = summarize(samples, unit);
}

/** The median of `case`/`engine`, or undefined. */
export const get = (c, e) => cases[c]?.[e]?.median;

/** Engines that failed (`case/engine`): reported in latest.json and skipped for the rest of the run. */
export const failed = new Map();

/** `run()`, or undefined after logging and remembering its failure under `key`. */
export async function guarded(key, run) {
  if (failed.has(key)) return undefined;
  try {
    return await run();
  } catch (e) {
    const msg = String(e?.message ?? e).split('\n')[0];
    failed.set(key, msg);
    log(`FAILED ${key}: ${msg}`);
    return undefined;
  }
}

/** Run `rep(i)` once untimed (warm-up: JIT, wasm, caches) and `reps` times; collect the results. */
export async function repeat(label, reps, rep, warmup = true) {
  if (warmup) await rep(-1);
  const out = [];
  for (let i = 0; i < reps; i++) out.push(await rep(i));
  log(`${label}: done`);
  return out;
}

/** 100000 → `100k`, 4000000 → `4m`. */
export const label = (n) => (n >= 1e6 ? `${n / 1e6}m` : `${n / 1e3}k`);

export function fmtNum(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return '-';
  if (Math.abs(x) >= 100_000) return `${(x / 1000).toFixed(0)}k`;
  if (Math.abs(x) >= 10_000) return `${(x / 1000).toFixed(1)}k`;
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 10) return x.toFixed(1);
  if (Math.abs(x) >= 0.1) return x.toFixed(2);
  return x.toFixed(3);
}
