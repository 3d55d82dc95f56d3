// The kit's worker scripts, each one module with every import (apache-arrow included), which the
// kit serves on the app's origin: worker.js (a store's engine over FaultInjectingStorage, its
// storage I/O on its own thread). `npm run build` writes them next to this module; from source
// (memwal's own tests) they are built here with esbuild. Node only.

import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { MemWalError } from '../util/errors.js';

/** The scripts the kit serves, by the file name they have on the app's origin. */
export type KitScript = 'worker.js';

/** Each script's entry (without extension, relative to this module) and its prebuilt bundle's file name. */
export const KIT_SCRIPTS: Record<KitScript, { entry: string; bundle: string }> = {
  'worker.js': { entry: './worker', bundle: 'kit-worker.bundle.js' },
};

const cached = new Map<KitScript, Promise<string>>();

const exists = (url: URL): Promise<boolean> =>
  readFile(url).then(
    () => true,
    () => false,
  );

/**
 * Bundle `script` from its TypeScript source (or the compiled JavaScript beside this module)
 * with esbuild into one ES2022 module; writes it to `options.outfile` when given. For a build
 * outside the package's tree, `options.nodePaths` says where else to find its packages (comlink,
 * idb, apache-arrow) and `options.esbuild` gives the esbuild module (default: imported from
 * here). Rejects `NotSupported` when esbuild is not installed, `IOError` with esbuild's message
 * when bundling fails.
 */
export async function buildKitScript(
  script: KitScript,
  options: { outfile?: string; nodePaths?: string[]; esbuild?: typeof import('esbuild') } = {},
): Promise<string> {
  const { entry: base, bundle } = KIT_SCRIPTS[script];
  const source = new URL(`${base}.ts`, import.meta.url);
  const entry = (await exists(source)) ? source : new URL(`${base}.js`, import.meta.url);
  let esbuild: typeof import('esbuild');
  try {
    esbuild = options.esbuild ?? (await import('esbuild'));
  } catch (e) {
    throw new MemWalError('NotSupported', `memwal/playwright: ${bundle} is missing and esbuild is not installed to build it (${e})`);
  }
  try {
    const result = await esbuild.build({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      format: 'esm',
      target: 'es2022',
      platform: 'browser',
      conditions: ['browser'],
      nodePaths: options.nodePaths,
      minify: true,
      write: false,
      logLevel: 'silent',
      legalComments: 'none',
    });
    const text = result.outputFiles[0]!.text;
    if (options.outfile !== undefined) await writeFile(options.outfile, text);
    return text;
  } catch (e) {
    throw new MemWalError('IOError', `memwal/playwright: bundling ${script} failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * The text of `script`: its prebuilt bundle when the package has one, else built once per
 * process by `buildKitScript`. Rejects as `buildKitScript` does.
 */
export function kitScript(script: KitScript): Promise<string> {
  let text = cached.get(script);
  if (!text) {
    text = readFile(new URL(`./${KIT_SCRIPTS[script].bundle}`, import.meta.url), 'utf8').catch(() => buildKitScript(script));
    text.catch(() => cached.delete(script)); // a failed build is tried again next time
    cached.set(script, text);
  }
  return text;
}
