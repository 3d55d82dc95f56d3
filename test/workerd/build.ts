// The build step for workerd and bundle checks: esbuild bundles an entry into one ES2022 module,
// apache-arrow included, with `memwal` and `memwal/*` resolved to this repository's sources.
// Node only. CLI: npx tsx test/workerd/build.ts <entry.ts> <out.js> [workerd|browser]

import { build } from 'esbuild';
import type { Plugin } from 'esbuild';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

/** `memwal` and its entry points, as the package's `exports` name them, mapped to the sources. */
const ENTRIES: Record<string, string> = {
  memwal: 'index.ts',
  'memwal/worker': 'worker.ts',
  'memwal/testing': 'testing/index.ts',
  'memwal/cloudflare': 'cloudflare.ts',
};

const memwalFromSources: Plugin = {
  name: 'memwal-from-sources',
  setup(b) {
    b.onResolve({ filter: /^memwal(\/[a-z]+)?$/ }, (args) => {
      const file = ENTRIES[args.path];
      return file ? { path: src + file } : { errors: [{ text: `memwal has no entry point "${args.path}"` }] };
    });
  },
};

/** What a bundle is for: Cloudflare's workerd, or a browser page or worker. */
export type BundleTarget = 'workerd' | 'browser';

/** A bundle's text and the runtime modules (`node:*`, `cloudflare:*`) it still imports. */
export interface Bundle {
  text: string;
  runtimeImports: string[];
}

/**
 * Bundles `entry` (every import, apache-arrow included) into one ES2022 module; writes it to
 * `outfile` too when given. `node:*` and `cloudflare:*` imports are left in place and listed in
 * `runtimeImports`; any other import that the target cannot resolve (a bare `fs`) rejects with
 * esbuild's errors.
 */
export async function bundle(entry: string, target: BundleTarget, outfile?: string): Promise<Bundle> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    // workerd resolves packages with the `workerd` and `worker` export conditions first.
    conditions: target === 'workerd' ? ['workerd', 'worker', 'browser'] : ['browser'],
    external: ['node:*', 'cloudflare:*'],
    plugins: [memwalFromSources],
    write: false,
    metafile: true,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const text = result.outputFiles[0]!.text;
  if (outfile !== undefined) {
    await mkdir(dirname(outfile), { recursive: true });
    await writeFile(outfile, text);
  }
  const runtimeImports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path));
  return { text, runtimeImports };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [entry, outfile, target = 'workerd'] = process.argv.slice(2);
  if (!entry || !outfile || (target !== 'workerd' && target !== 'browser')) {
    console.error('usage: tsx test/workerd/build.ts <entry.ts> <out.js> [workerd|browser]');
    process.exit(2);
  }
  const { text, runtimeImports } = await bundle(entry, target, outfile);
  console.log(`${outfile}: ${text.length} bytes${runtimeImports.length ? `, imports ${runtimeImports.join(', ')}` : ''}`);
}
