// The build step for workerd and bundle checks: esbuild bundles an entry into one ES2022 module,
// every import included (apache-arrow; `memwal` from the node_modules next to the entry, as in an
// app). Node only. CLI: npx tsx test/workerd/build.ts <entry.ts> <out.js> [workerd|browser]

import { build } from 'esbuild';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';

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
