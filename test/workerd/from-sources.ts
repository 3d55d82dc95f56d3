// Bundles an example Worker with `memwal` and its entry points mapped to this repository's
// sources (no `npm pack`, unlike test/examples.test.ts), for tests that run it next to other
// unreleased code: the scale-out tests drain its Durable Object into the example Lance server.
// Node only.

import { copyFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { BuiltWorker } from './harness.js';

const source = (path: string): string => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

/** `memwal/*` as package.json `exports` names them, mapped to the sources. */
const ALIASES: Record<string, string> = {
  memwal: source('index.ts'),
  'memwal/cloudflare': source('cloudflare.ts'),
  'memwal/worker': source('worker.ts'),
  'memwal/testing': source('testing/index.ts'),
};

/**
 * Bundles `entry` for workerd into `{dir}/{bundleName}` of a new temporary directory and copies
 * `configFile` (which embeds `bundleName`) next to it. Rejects with esbuild's errors.
 */
export async function buildWorkerFromSources(entry: string, configFile: string, bundleName: string): Promise<BuiltWorker> {
  const dir = await mkdtemp(join(tmpdir(), 'memwal-workerd-src-'));
  const config = join(dir, 'config.capnp');
  await Promise.all([
    build({
      entryPoints: [entry],
      bundle: true,
      format: 'esm',
      target: 'es2022',
      platform: 'browser',
      conditions: ['workerd', 'worker', 'browser'],
      external: ['node:*', 'cloudflare:*'],
      alias: ALIASES,
      outfile: join(dir, bundleName),
      logLevel: 'silent',
      legalComments: 'none',
    }),
    copyFile(configFile, config),
  ]);
  return { dir, config };
}
