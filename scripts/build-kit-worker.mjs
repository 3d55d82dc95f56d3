// After `tsc -p tsconfig.build.json`: bundle memwal/playwright's worker (dist/playwright/worker.js
// and its imports) into dist/playwright/kit-worker.bundle.js, which the kit serves to the app's
// origin. Usage: node scripts/build-kit-worker.mjs <dist directory>
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const repo = fileURLToPath(new URL('..', import.meta.url));
const { buildKitWorker, KIT_WORKER_BUNDLE } = await import(pathToFileURL(join(dist, 'playwright/worker-bundle.js')).href);
const outfile = join(dist, 'playwright', KIT_WORKER_BUNDLE);
const esbuild = await import('esbuild');
const text = await buildKitWorker({ outfile, nodePaths: [join(repo, 'node_modules')], esbuild });
console.log(`${outfile}: ${text.length} bytes`);
