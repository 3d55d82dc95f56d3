// `npm test`: format and lint check (Biome), typecheck, unit tests (vitest, the packed tarball's contents included),
// browser e2e (Playwright: memwal's e2e/, the example app's suite on memwal/playwright, and the todo and
// field-notes apps on the packed tarball, scripts/example.mjs), then one closing line `memwal: N passed, N failed` that counts every runner.
// Exits non-zero on any failure.
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

/** Run a Playwright suite (`args` after `playwright test`) and count its results. */
function playwright(name, args) {
  counted(name, 'npx', ['playwright', 'test', ...args]);
}

/** Run `cmd args --reporter=list,json` (a Playwright run) and count the results of its JSON report. */
function counted(name, cmd, args) {
  const pwJson = join(out, `playwright-${name}.json`);
  const pwStatus = run(cmd, [...args, '--reporter=list,json'], { PLAYWRIGHT_JSON_OUTPUT_NAME: pwJson, CI: '1' });
  if (existsSync(pwJson)) {
    const s = JSON.parse(readFileSync(pwJson, 'utf8')).stats;
    passed += s.expected;
    failed += s.unexpected;
    skipped += s.skipped;
    passed += s.flaky; // passed on retry; counted and visible in the list above
    if (pwStatus !== 0 && s.unexpected === 0) failed += 1;
  } else if (pwStatus !== 0) failed += 1;
}

if (process.env.MEMWAL_SKIP_E2E !== '1') {
  console.log('== browser e2e (Playwright, Chromium)');
  playwright('e2e', []);
  console.log('== example app on memwal/playwright (examples/kit-demo)');
  if (run('npx', ['tsc', '-p', 'examples/kit-demo/tsconfig.json']) !== 0) failed += 1;
  playwright('kit-demo', ['-c', 'examples/kit-demo/playwright.config.ts']);
  // Packs memwal (reusing the tarball the unit tests packed: cached by content), installs it into
  // examples/todo, typechecks and builds the app, and runs its suite on the production build.
  console.log('== example app on the packed tarball (examples/todo)');
  counted('todo', 'node', ['scripts/example.mjs']);
  // The same for the React app on memwal/react (examples/field-notes): its suite on the production
  // build, and its HMR test on `vite dev`.
  console.log('== React example app on the packed tarball (examples/field-notes)');
  counted('field-notes', 'node', ['scripts/example.mjs', 'field-notes']);
}

console.log(`memwal: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
