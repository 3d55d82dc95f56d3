// The baseline memwal of the ingest cases: an older commit's src/, extracted from git into
// bench/.baseline (git-ignored) and bundled by bench/vite.config.ts through the
// `memwal-baseline` alias. Node.

import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BASELINE, CASES } from './args.mjs';

let commit;

/** The baseline's short commit, once extracted; undefined when this run has none. */
export const baselineCommit = () => commit;

/** Extracts the baseline's src/ into `benchDir`/.baseline; its short commit, or undefined (none, or no case needs it). */
export function extractBaseline(benchDir) {
  if (BASELINE === 'none' || !CASES.some((c) => c === 'arrow' || c === 'rows100k')) return undefined;
  const repo = join(benchDir, '..');
  commit = execFileSync('git', ['rev-parse', '--short', `${BASELINE}^{commit}`], { cwd: repo })
    .toString()
    .trim();
  const dir = join(benchDir, '.baseline');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  execFileSync('sh', ['-c', `git archive ${commit} src | tar -x -C "${dir}"`], { cwd: repo });
  process.env.BENCH_BASELINE_SRC = `${join(dir, 'src')}/`;
  return commit;
}
