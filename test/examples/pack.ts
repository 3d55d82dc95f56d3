// The examples as a user gets them: memwal built and packed with `npm pack` (the tarball npm
// would publish), and the examples copied out of the repository next to a node_modules into
// which npm installed that tarball and the examples' other dependencies. Node only; used by
// test/examples.test.ts.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);
/** TypeScript's CLI, from this repository's dev dependencies. */
const TSC = require.resolve('typescript/bin/tsc');
/** Packed tarballs by content hash, so a rerun on unchanged sources does not build again. */
const CACHE = join(repo, 'node_modules/.cache/memwal-pack');

/** What goes into the package: the files `npm pack` takes, and what the build reads. */
const PACKAGE_INPUTS = [
  'src',
  'docs',
  'README.md',
  'LICENSE',
  'package.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build-kit-worker.mjs',
];

async function filesUnder(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const entries = await readdir(path, { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => filesUnder(join(path, e.name))));
  return nested.flat().sort();
}

/** A hash of every input of the package (names and contents). */
async function packageHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const input of PACKAGE_INPUTS) {
    for (const file of await filesUnder(join(repo, input))) hash.update(file.slice(repo.length)).update(await readFile(file));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * Builds memwal (`tsc -p tsconfig.build.json`) into a staging copy of the package under `work`
 * (the repository's own dist/ is left alone) and packs it with `npm pack`; reuses the tarball of
 * an earlier run when no input changed. Resolves the path of the tarball.
 */
export async function packMemwal(work: string): Promise<string> {
  const cached = join(CACHE, `memwal-${await packageHash()}.tgz`);
  if (
    await stat(cached).then(
      () => true,
      () => false,
    )
  )
    return cached;
  const stage = join(work, 'memwal');
  await mkdir(stage, { recursive: true });
  await run(process.execPath, [TSC, '-p', join(repo, 'tsconfig.build.json'), '--outDir', join(stage, 'dist')], { cwd: repo });
  await run(process.execPath, [join(repo, 'scripts/build-kit-worker.mjs'), join(stage, 'dist')], { cwd: repo });
  for (const file of ['package.json', 'README.md', 'LICENSE', 'docs']) await cp(join(repo, file), join(stage, file), { recursive: true });
  // Built above: the package's own `prepack` (a build, which needs this repository's dev
  // dependencies) is not run in the staging copy.
  const { stdout } = await run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', work], { cwd: stage });
  await mkdir(CACHE, { recursive: true });
  // Renamed into place complete, so a concurrent run never takes a half-written tarball.
  const temp = `${cached}.${process.pid}.tmp`;
  await cp(join(work, stdout.trim().split('\n').at(-1)!), temp);
  await rename(temp, cached);
  return cached;
}

/**
 * Copies `examples/{names}` to `{work}/{name}` (without node_modules, dist or data) and runs
 * `npm install --omit=dev` once in `work` for the union of their dependencies and npm
 * overrides, `memwal` being `tarball`: memwal and apache-arrow come from npm's cache or
 * registry, as for a user (each copy resolves them from `{work}/node_modules`). Resolves the
 * copies' directories by name.
 */
export async function installExamples(names: string[], tarball: string, work: string): Promise<Record<string, string>> {
  const dirs: Record<string, string> = {};
  const dependencies: Record<string, string> = {};
  const overrides: Record<string, unknown> = {};
  for (const name of names) {
    dirs[name] = join(work, name);
    await cp(join(repo, 'examples', name), dirs[name], {
      recursive: true,
      filter: (source) => !/[/\\](node_modules|dist|do-disk|memwal-data)([/\\]|$)/.test(source),
    });
    const manifest = JSON.parse(await readFile(join(dirs[name], 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      overrides?: Record<string, unknown>;
    };
    Object.assign(dependencies, manifest.dependencies, { memwal: `file:${tarball}` });
    Object.assign(overrides, manifest.overrides);
  }
  await writeFile(join(work, 'package.json'), JSON.stringify({ private: true, type: 'module', dependencies, overrides }, null, 2));
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: work });
  return dirs;
}

/** Type-checks the example in `dir` with its own tsconfig.json; rejects with tsc's report. */
export async function typecheckExample(dir: string): Promise<void> {
  // Type packages (@types/node) are dev dependencies of the examples: take this repository's.
  await run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json'), '--typeRoots', join(repo, 'node_modules/@types')], {
    cwd: dir,
  }).catch((e: { stdout?: string }) => {
    throw new Error(`tsc failed in ${dir}:\n${e.stdout ?? String(e)}`);
  });
}
