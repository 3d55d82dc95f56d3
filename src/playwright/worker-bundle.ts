// The kit's worker as one module script (worker.ts with every import, apache-arrow included),
// which the kit serves on the app's origin. `npm run build` writes it next to this module; from
// source (memwal's own tests) it is built here with esbuild. Node only.

import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { MemWalError } from '../errors.js';

/** File name of the prebuilt bundle, next to this module in dist/playwright/. */
export const KIT_WORKER_BUNDLE = 'kit-worker.bundle.js';

let cached: Promise<string> | undefined;

const exists = (url: URL): Promise<boolean> =>
  readFile(url).then(
    () => true,
    () => false,
  );

/**
 * Bundle worker.ts (or the compiled worker.js beside this module) with esbuild into one ES2022
 * module; writes it to `options.outfile` when given. For a build outside the package's tree,
 * `options.nodePaths` says where else to find its packages (comlink, idb, apache-arrow) and
 * `options.esbuild` gives the esbuild module (default: imported from here). Rejects
 * `NotSupported` when esbuild is not installed, `IOError` with esbuild's message when bundling
 * fails.
 */
export async function buildKitWorker(
  options: { outfile?: string; nodePaths?: string[]; esbuild?: typeof import('esbuild') } = {},
): Promise<string> {
  const { outfile, nodePaths } = options;
  const source = new URL('./worker.ts', import.meta.url);
  const entry = (await exists(source)) ? source : new URL('./worker.js', import.meta.url);
  let esbuild: typeof import('esbuild');
  try {
    esbuild = options.esbuild ?? (await import('esbuild'));
  } catch (e) {
    throw new MemWalError(
      'NotSupported',
      `memwal/playwright: ${KIT_WORKER_BUNDLE} is missing and esbuild is not installed to build it (${e})`,
    );
  }
  try {
    const result = await esbuild.build({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      format: 'esm',
      target: 'es2022',
      platform: 'browser',
      conditions: ['browser'],
      nodePaths,
      minify: true,
      write: false,
      logLevel: 'silent',
      legalComments: 'none',
    });
    const text = result.outputFiles[0]!.text;
    if (outfile !== undefined) await writeFile(outfile, text);
    return text;
  } catch (e) {
    throw new MemWalError('IOError', `memwal/playwright: bundling the kit's worker failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * The kit's worker script: the prebuilt bundle when the package has one, else built once per
 * process by `buildKitWorker`. Rejects as `buildKitWorker` does.
 */
export function kitWorkerScript(): Promise<string> {
  cached ??= readFile(new URL(`./${KIT_WORKER_BUNDLE}`, import.meta.url), 'utf8').catch(() => buildKitWorker());
  cached.catch(() => (cached = undefined)); // a failed build is tried again next time
  return cached;
}
