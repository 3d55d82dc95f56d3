// After `tsc -p tsconfig.build.json`: bundle memwal/playwright's worker scripts (dist/playwright/
// worker.js with its imports) into dist/playwright/*.bundle.js, which the kit serves to the app's
// origin.
// Usage: node scripts/build-kit-worker.mjs <dist directory>
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const repo = fileURLToPath(new URL('..', import.meta.url));
const { buildKitScript, KIT_SCRIPTS } = await import(pathToFileURL(join(dist, 'playwright/worker-bundle.js')).href);
const esbuild = await import('esbuild');
for (const [script, { bundle }] of Object.entries(KIT_SCRIPTS)) {
  const outfile = join(dist, 'playwright', bundle);
  const text = await buildKitScript(script, { outfile, nodePaths: [join(repo, 'node_modules')], esbuild });
  console.log(`${outfile}: ${text.length} bytes`);
}
