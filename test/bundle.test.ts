// `memwal` and `memwal/worker` bundle for the browser without any
// runtime module (`node:*`, `cloudflare:*`, the `Deno` global), and `memwal/cloudflare` and
// `memwal/drain` bundle for workerd without `node:*` (memwal/cloudflare types Durable Object
// storage structurally, so it needs no `cloudflare:*` module either).

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundle } from './workerd/build.js';
import type { BundleTarget } from './workerd/build.js';

const source = (path: string): string => fileURLToPath(new URL(`../src/${path}`, import.meta.url));

describe('entry points bundle without runtime modules', () => {
  const entries: [string, string, BundleTarget][] = [
    ['memwal', 'index.ts', 'browser'],
    ['memwal/worker', 'worker.ts', 'browser'],
    ['memwal/cloudflare', 'cloudflare.ts', 'workerd'],
    ['memwal/drain', 'drain.ts', 'workerd'],
  ];
  for (const [entry, file, target] of entries) {
    it(`${entry} bundles for ${target} with no node:, cloudflare: or Deno references`, async () => {
      const { text, runtimeImports } = await bundle(source(file), target);
      expect(runtimeImports).toEqual([]);
      expect(text).not.toMatch(/\bDeno\s*\./);
      expect(text.length).toBeGreaterThan(1000);
    });
  }

  it('memwal and memwal/worker bundle none of memwal/playwright: only the page-side hook (src/rpc/test-hook.ts)', async () => {
    const [main, worker] = await Promise.all([bundle(source('index.ts'), 'browser'), bundle(source('worker.ts'), 'browser')]);
    for (const { text } of [main, worker]) {
      expect(text).not.toMatch(/__memwal_playwright__|memwal\.playwright\.worker|FaultInjectingStorage|@playwright/);
    }
    expect(main.text).toContain('memwal.playwright.hook');
    // The pattern above does match the kit when it comes along:
    expect((await bundle(source('playwright/worker.ts'), 'browser')).text).toContain('FaultInjectingStorage');
  });

  it('memwal carries drain() for browsers and Durable Objects, and nothing of memwal/lance or LanceDB', async () => {
    for (const target of ['browser', 'workerd'] as const) {
      const { text, runtimeImports } = await bundle(source('index.ts'), target);
      expect(runtimeImports).toEqual([]);
      expect(text).toContain('memwal-drain-version');
      expect(text).not.toMatch(/lancedb|_memwal_positions/i);
    }
  });

  it('the check sees runtime imports: memwal/lance bundled for the browser imports node:*', async () => {
    const { runtimeImports } = await bundle(source('lance.ts'), 'browser');
    expect(runtimeImports.filter((p) => p.startsWith('node:')).length).toBeGreaterThan(0);
  });

  it('the check sees runtime imports: memwal/node bundled for the browser imports node:*', async () => {
    const { runtimeImports } = await bundle(source('node.ts'), 'browser');
    expect(runtimeImports.length).toBeGreaterThan(0);
    expect(runtimeImports.every((p) => p.startsWith('node:'))).toBe(true);
  });
});
