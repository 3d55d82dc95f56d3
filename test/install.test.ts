// A new user's first hour, as the README tells it: a fresh Vite app whose only dependency is
// `memwal` (the packed tarball, as `npm i memwal` gets it; npm installs the peer apache-arrow
// itself), resolved by npm from scratch (new directory, no lockfile). Its page is the README's
// first browser snippet. The app type-checks against the packed types, `vite build` succeeds,
// and in Chromium the snippet runs to its end under `vite dev` and under `vite preview` of the
// build. Packs as test/examples/pack.ts does (cached by content), or takes MEMWAL_TARBALL.

import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import config from '../playwright.config.js';
import { packMemwal, typecheckExample } from './examples/pack.js';

const run = promisify(execFile);
const DONE = 'memwal: the README snippet ran';

let work: string;
let app: string;
let browser: Browser | undefined;
const servers: ChildProcess[] = [];

/** The first ```ts block of the README's "In a browser" section. */
async function readmeSnippet(): Promise<string> {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('\n## In a browser'));
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error('README.md: no ```ts block under "## In a browser"');
  return match[1]!;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'memwal-install-'));
  const tarball = process.env.MEMWAL_TARBALL || (await packMemwal(work));
  app = join(work, 'app');
  const files: Record<string, string> = {
    'package.json': JSON.stringify({
      name: 'fresh-app',
      private: true,
      type: 'module',
      dependencies: { memwal: `file:${tarball}` },
      devDependencies: { vite: '8.3.8' },
    }),
    'tsconfig.json': JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        types: [],
        strict: true,
        noEmit: true,
      },
      include: ['main.ts'],
    }),
    'index.html':
      '<!doctype html>\n<html><head><link rel="icon" href="data:," /></head><body><script type="module" src="/main.ts"></script></body></html>\n',
    'main.ts': `${await readmeSnippet()}\ndocument.title = ${JSON.stringify(DONE)};\n`,
  };
  await mkdir(app);
  for (const [name, text] of Object.entries(files)) await writeFile(join(app, name), text);
  // --prefer-offline: packuments already in npm's cache are taken as they are (no lockfile still).
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: app });
}, 300_000);

afterAll(async () => {
  for (const s of servers) s.kill('SIGKILL');
  await browser?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

/** Named value imports from 'apache-arrow' in the JavaScript files under `dir`. */
async function arrowImports(dir: string): Promise<Set<string>> {
  const names = new Set<string>();
  for (const entry of await readdir(dir, { recursive: true })) {
    if (!entry.endsWith('.js')) continue;
    const text = await readFile(join(dir, entry), 'utf8');
    for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"]apache-arrow['"]/g)) {
      for (const spec of m[1]!.split(',')) {
        const name = spec.trim().split(/\s+as\s+/)[0]!;
        if (name && !name.startsWith('type ')) names.add(name);
      }
    }
  }
  return names;
}

it('npm resolves apache-arrow to a version that exports everything memwal imports from it', async () => {
  const arrowDir = join(app, 'node_modules/apache-arrow');
  const { version } = JSON.parse(await readFile(join(arrowDir, 'package.json'), 'utf8')) as { version: string };
  const arrow = (await import(pathToFileURL(join(arrowDir, 'Arrow.dom.mjs')).href)) as Record<string, unknown>;
  const imported = await arrowImports(join(app, 'node_modules/memwal/dist'));
  expect(imported.size).toBeGreaterThan(20);
  expect({ version, missing: [...imported].filter((name) => !(name in arrow)) }).toEqual({ version, missing: [] });
});

it('the README snippet type-checks against the packed types', async () => {
  await typecheckExample(app);
}, 120_000);

/** Runs the app's own Vite (`args`); resolves its output, rejects with it on failure. */
async function vite(args: string[]): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, ['node_modules/vite/bin/vite.js', ...args], {
    cwd: app,
    env: { ...process.env, NO_COLOR: '1' },
  }).catch((e: { stdout?: string; stderr?: string }) => {
    throw new Error(`vite ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? String(e)}`);
  });
  return stdout + stderr;
}

/** A Vite server of the app: its URL and everything it printed so far. */
interface Server {
  url: string;
  log: () => string;
}

/** Starts `vite [args]` on a free port; resolves once it listens. */
function serve(args: string[]): Promise<Server> {
  const child = spawn(process.execPath, ['node_modules/vite/bin/vite.js', ...args, '--host', '127.0.0.1', '--port', '0'], {
    cwd: app,
    env: { ...process.env, NO_COLOR: '1' },
  });
  servers.push(child);
  let output = '';
  child.on('exit', (code) => (output += `\n[vite exited: ${code}]`));
  return new Promise((resolve, reject) => {
    const onData = (data: Buffer): void => {
      output += data;
      const url = /Local:\s+(http:\/\/\S+)/.exec(output)?.[1];
      if (url) resolve({ url, log: () => output });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', () => reject(new Error(`vite ${args.join(' ')} exited before listening:\n${output}`)));
  });
}

/**
 * Opens the server's page in Chromium and waits for the snippet to finish; resolves the worker
 * scripts the page loaded. Fails with the page's errors and the server's output.
 */
async function runPage({ url, log }: Server): Promise<string[]> {
  browser ??= await chromium.launch(config.use?.launchOptions);
  const page = await browser.newPage();
  const errors: string[] = [];
  const workers: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('worker', (w) => workers.push(w.url()));
  try {
    await page.goto(url);
    await page.waitForFunction((done) => document.title === done, DONE, { timeout: 30_000 });
    return workers;
  } catch (e) {
    throw new Error(`${(e as Error).message}\npage errors:\n${errors.join('\n')}\nvite:\n${log()}`);
  } finally {
    await page.close();
  }
}

it('vite build succeeds, and the built app runs the snippet in Chromium (vite preview)', async () => {
  await vite(['build']);
  expect(existsSync(join(app, 'dist/index.html'))).toBe(true);
  const workers = await runPage(await serve(['preview']));
  // The engine's I/O worker and its table writer thread are the same script started again (the
  // build holds Arrow once). The table writer thread starts at the first flush (here close()'s),
  // so the page may end before it is seen.
  const started = workers.filter((w) => /default-worker/.test(w)).length;
  expect(started).toBeGreaterThanOrEqual(2);
  expect(started).toBeLessThanOrEqual(3);
}, 120_000);

it('vite dev serves the app and its worker, and the snippet runs in Chromium', async () => {
  const server = await serve([]);
  const res = await fetch(`${server.url}node_modules/memwal/dist/rpc/default-worker.js?worker_file&type=module`);
  expect(res.status).toBe(200);
  expect(await res.text()).toContain('hostMemWal');
  const workers = await runPage(server);
  expect(workers.some((w) => /default-worker/.test(w))).toBe(true);
}, 120_000);
