// docs/testing.md: memwal/playwright's page-side hook costs nothing in a production build unless its
// init script runs. Builds test/hook-size (a small app) with Vite twice, with the hook and with
// src/rpc/test-hook.ts replaced by a module that always answers "no hook", and compares the
// gzipped main chunks (limit 2 kB).

import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build, type Plugin, type Rolldown } from 'vite';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('./hook-size/', import.meta.url));

/** Resolves open-memwal.ts's import of the hook to a stub. */
const withoutHook: Plugin = {
  name: 'memwal-without-test-hook',
  enforce: 'pre',
  resolveId: (id, importer) => (id === './test-hook.js' && importer?.endsWith('/rpc/open-memwal.ts') ? '\0no-test-hook' : undefined),
  load: (id) => (id === '\0no-test-hook' ? 'export const openThroughTestHook = () => undefined;' : undefined),
};

/** Gzipped bytes of the entry chunk of a production build of the app. */
async function mainChunkGzipBytes(plugins: Plugin[]): Promise<{ raw: number; gzip: number }> {
  const out = (await build({
    root,
    configFile: false,
    logLevel: 'silent',
    plugins,
    build: { write: false, target: 'es2022' },
    worker: { format: 'es' },
  })) as Rolldown.RolldownOutput;
  const entry = out.output.find((o): o is Rolldown.OutputChunk => o.type === 'chunk' && o.isEntry)!;
  return { raw: entry.code.length, gzip: gzipSync(entry.code).length };
}

it('the test hook adds at most 2 kB (gzip) to the main chunk of a Vite production build', async () => {
  const withHook = await mainChunkGzipBytes([]);
  const without = await mainChunkGzipBytes([withoutHook]);
  const added = withHook.gzip - without.gzip;
  console.log(
    `hook size: main chunk ${withHook.gzip} B gzip with the hook, ${without.gzip} B without: +${added} B gzip (+${withHook.raw - without.raw} B minified)`,
  );
  expect(added).toBeGreaterThan(0); // the stub took effect: the comparison sees the hook
  expect(added).toBeLessThanOrEqual(2048);
}, 120_000);
