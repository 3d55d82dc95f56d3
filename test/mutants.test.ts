// Every mutant in test/mutants/ still applies to the tree (docs/testing.md, "Mutants"): a patch that
// no longer applies puts no hole back, and `npm run test:mutants` would report it only when run.

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const repo = fileURLToPath(new URL('..', import.meta.url));
const dir = fileURLToPath(new URL('./mutants/', import.meta.url));
const patches = readdirSync(dir).filter((f) => f.endsWith('.patch'));

it('every mutant patch applies to the current tree', () => {
  expect(patches.length).toBeGreaterThan(0);
  const stale = patches.filter((f) => spawnSync('git', ['apply', '--check', `${dir}${f}`], { cwd: repo, encoding: 'utf8' }).status !== 0);
  expect(stale, 'mutants to regenerate against the moved code').toEqual([]);
});

it("every '# test:' mutant names the command that finds it on its first line", () => {
  for (const f of patches) {
    const first = readFileSync(`${dir}${f}`, 'utf8').split('\n', 1)[0]!;
    if (first.startsWith('#')) expect(first, f).toMatch(/^# test: \S/);
  }
});
