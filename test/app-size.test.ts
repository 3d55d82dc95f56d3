// README "What an app loads": the example todo app (examples/todo) built for production with Vite
// from the packed tarball, as a user builds it, ships at most 180 kB of JavaScript in all, each
// file gzipped with zlib at level 9 (the page's chunks and the worker script: every .js file of
// the build, loaded or not). Prints each file's size. And a worker of the app's own on
// memwal/worker keeps its I/O worker script in such a build (package.json `sideEffects`). Packs
// as test/examples/pack.ts does (cached by content), or takes MEMWAL_TARBALL.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Rolldown } from 'vite';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { installExamples, packMemwal } from './examples/pack.js';

/** The bound, in gzipped bytes (zlib level 9) summed over the build's JavaScript files. */
const MAX_GZIP_BYTES = 180 * 1000;

let work: string;
let app: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'memwal-app-size-'));
  app = (await installExamples(['todo'], process.env.MEMWAL_TARBALL || (await packMemwal(work)), work)).todo!;
}, 300_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

it("the example todo app's production build ships at most 180 kB of JavaScript, gzipped", async () => {
  // The app's own vite.config.ts only sets ports (and imports vite, which --omit=dev leaves out).
  const out = (await build({ root: app, configFile: false, logLevel: 'silent', build: { write: false } })) as Rolldown.RolldownOutput;
  const files = out.output
    .filter((o) => o.fileName.endsWith('.js'))
    .map((o) => {
      const text = o.type === 'chunk' ? o.code : o.source;
      return {
        file: o.fileName.replace(/-[\w-]{8}\.js$/, '.js'),
        bytes: Buffer.byteLength(text),
        gzip: gzipSync(text, { level: 9 }).length,
      };
    });
  const total = files.reduce((sum, f) => sum + f.gzip, 0);
  const kB = (n: number): string => (n / 1000).toFixed(1);
  console.log(
    `app size: ${files.map((f) => `${f.file} ${kB(f.bytes)} kB (${kB(f.gzip)} kB gzip)`).join(', ')}; total ${kB(total)} kB gzip`,
  );
  expect(files.some((f) => f.file.includes('default-worker'))).toBe(true); // the worker is counted
  expect(total).toBeLessThanOrEqual(MAX_GZIP_BYTES);
}, 120_000);

it("a worker of the app's own on memwal/worker still starts memwal's I/O worker script in a production build", async () => {
  const own = join(work, 'own-worker');
  await mkdir(own, { recursive: true });
  const files: Record<string, string> = {
    'index.html': '<script type="module" src="./main.js"></script>\n',
    'main.js':
      "import { defineSchema, int64, openMemWal } from 'memwal';\nconst worker = new Worker(new URL('./store.worker.js', import.meta.url), { type: 'module' });\nopenMemWal({ name: 'x', schema: defineSchema({ id: int64() }), primaryKey: ['id'], worker });\n",
    'store.worker.js': "import { hostMemWal } from 'memwal/worker';\nhostMemWal();\n",
  };
  for (const [name, text] of Object.entries(files)) await writeFile(join(own, name), text);
  const out = (await build({ root: own, configFile: false, logLevel: 'silent', build: { write: false } })) as Rolldown.RolldownOutput;
  const text = (name: string): string => {
    const o = out.output.find((x) => x.fileName.includes(name));
    return o === undefined ? '' : o.type === 'chunk' ? o.code : String(o.source);
  };
  const io = out.output.find((o) => o.fileName.includes('io.worker'));
  expect(io?.fileName).toBeDefined();
  expect(text('store.worker')).toContain(io!.fileName.split('/').at(-1));
}, 120_000);
