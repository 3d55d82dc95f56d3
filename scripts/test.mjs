// `npm test`: format and lint check (Biome), typecheck, unit tests (vitest, the packed tarball's contents included),
// browser e2e (Playwright), the example app on the packed tarball (scripts/example.mjs), then one closing line
// `memwal: N passed, N failed` that counts every runner. Exits non-zero on any failure.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const out = mkdtempSync(join(tmpdir(), 'memwal-test-'));
const run = (cmd, args, env = {}) =>
  spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1', ...env } }).status ?? 1;

let passed = 0;
let failed = 0;
let skipped = 0;

console.log('== format and lint (biome)');
if (run('npx', ['biome', 'check', '.']) !== 0) failed += 1;

console.log('== typecheck');
if (run('npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']) !== 0) failed += 1;

/** Add a Playwright JSON report's counts; a run that failed without failed tests counts one failure. */
function countPlaywright(status, json) {
  if (existsSync(json)) {
    const s = JSON.parse(readFileSync(json, 'utf8')).stats;
    passed += s.expected + s.flaky; // flaky: passed on retry; counted and visible in the list above
    failed += s.unexpected;
    skipped += s.skipped;
    if (status !== 0 && s.unexpected === 0) failed += 1;
  } else if (status !== 0) failed += 1;
}

console.log('== unit tests (vitest)');
const vitestJson = join(out, 'vitest.json');
const vitestStatus = run('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${vitestJson}`]);
if (existsSync(vitestJson)) {
  const r = JSON.parse(readFileSync(vitestJson, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  if (vitestStatus !== 0 && r.numFailedTests === 0) failed += 1; // a suite failed to load
} else if (vitestStatus !== 0) failed += 1;

if (process.env.MEMWAL_SKIP_E2E !== '1') {
  console.log('== browser e2e (Playwright, Chromium)');
  const pwJson = join(out, 'playwright.json');
  const pwStatus = run('npx', ['playwright', 'test', '--reporter=list,json'], { PLAYWRIGHT_JSON_OUTPUT_NAME: pwJson, CI: '1' });
  countPlaywright(pwStatus, pwJson);

  console.log('== example app (examples/todo on the packed tarball)');
  const exampleJson = join(out, 'example.json');
  // The tarball test/pack.test.ts and test/examples.test.ts packed (cached by content) is reused.
  const exampleStatus = run('node', ['scripts/example.mjs', '--reporter=list,json'], { PLAYWRIGHT_JSON_OUTPUT_NAME: exampleJson, CI: '1' });
  countPlaywright(exampleStatus, exampleJson);
}

console.log(`memwal: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
