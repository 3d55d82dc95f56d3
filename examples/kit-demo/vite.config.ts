// The todo app's Vite config. In this repository `memwal` is the source next door; an app that
// installed memwal from npm needs no alias.

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const src = (path: string): string => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  resolve: { alias: { memwal: src('index.ts') } },
  // Deps used only in memwal's worker are otherwise found late, and Vite reloads the page mid-test.
  optimizeDeps: { include: ['apache-arrow', 'idb', 'comlink'] },
  worker: { format: 'es' },
  server: { fs: { allow: [fileURLToPath(new URL('../..', import.meta.url))] } },
  logLevel: 'warn',
});
