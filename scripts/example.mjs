// `npm run example [app]`: the proof that a user's bundler, types and tabs work with the published
// package. Packs memwal (or takes MEMWAL_TARBALL), installs the tarball into examples/<app> (`todo`,
// the default, or `field-notes`) as a `file:` dependency, typechecks and builds the app, and runs
// its Playwright suite (against the production build; field-notes' HMR test on `vite dev`). Extra
// arguments go to Playwright (e.g. --reporter=list,json).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const APPS = ['todo', 'field-notes'];
const args = process.argv.slice(2);
const app = join(root, 'examples', APPS.includes(args[0]) ? args.shift() : 'todo');
const run = (cmd, args, cwd) => {
  const status =
    spawnSync(cmd, args, { cwd, stdio: 'inherit', env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' } }).status ?? 1;
  if (status !== 0) {
    console.error(`example: ${cmd} ${args.join(' ')} failed (${status})`);
    process.exit(status);
  }
};

let tarball = process.env.MEMWAL_TARBALL;
if (!tarball) {
  // Built and packed as test/examples/pack.ts does (a staging copy; cached by the sources' hash).
  const dir = mkdtempSync(join(tmpdir(), 'memwal-pack-'));
  const script = `import('./test/examples/pack.ts').then((m) => m.packMemwal(${JSON.stringify(dir)})).then((path) => console.log(path));`;
  const packed = spawnSync('npx', ['tsx', '--eval', script], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  tarball = packed.stdout.trim().split('\n').at(-1);
  if (packed.status !== 0 || !tarball) {
    console.error('example: packing memwal failed');
    process.exit(1);
  }
}
copyFileSync(tarball, join(app, 'memwal.tgz'));
// A fresh install of the tarball every time (npm keeps a `file:` package of the same version otherwise).
rmSync(join(app, 'node_modules', 'memwal'), { recursive: true, force: true });
rmSync(join(app, 'package-lock.json'), { force: true });
// --prefer-offline: the app's other dependencies are the versions the repository itself uses, in npm's cache.
run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], app);
run('npm', ['run', 'build', '--silent'], app);
run('npx', ['playwright', 'test', ...args], app);
