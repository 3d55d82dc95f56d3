// The repository's Vite config: serves and builds the live demo (demo/). `npx vite` (or
// `npm run demo`) serves it on 127.0.0.1 and prints its URL; `npx vite build` writes demo-dist/.
// The demo imports memwal straight from src/, so no build step comes first. The bench
// (bench/vite.config.ts), the e2e pages (e2e/vite.config.ts) and the example app have their own.

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const repoRoot = fileURLToPath(new URL('.', import.meta.url));

/** The demo's preferred port; a busy port moves to the next free one (strictPort false). */
export const DEMO_PORT = 5180;

export default defineConfig({
  root: fileURLToPath(new URL('./demo', import.meta.url)),
  // A dep cache of its own: the e2e server (another root, other deps) must not invalidate it.
  cacheDir: fileURLToPath(new URL('./node_modules/.vite-demo', import.meta.url)),
  // Deps imported only by the worker would otherwise be found late, and Vite would reload the
  // page in the middle of a session; uplot is listed so the first load is one bundle.
  optimizeDeps: { include: ['apache-arrow', 'idb', 'comlink', 'uplot'] },
  worker: { format: 'es' },
  server: {
    host: '127.0.0.1',
    port: DEMO_PORT,
    strictPort: false,
    fs: { allow: [repoRoot] },
  },
  // `npx vite build` writes a static copy here (git-ignored).
  build: { outDir: fileURLToPath(new URL('./demo-dist', import.meta.url)), emptyOutDir: true },
  preview: { host: '127.0.0.1', port: DEMO_PORT + 1, strictPort: false },
});
