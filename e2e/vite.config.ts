// Vite dev server for the e2e test pages in e2e/site; they import memwal straight from ../../src.

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('./site', import.meta.url)),
  // Deps used only inside workers are otherwise found late, and Vite reloads the page mid-test.
  optimizeDeps: { include: ['apache-arrow', 'idb', 'comlink', 'react', 'react-dom/client'] },
  worker: { format: 'es' },
  server: { fs: { allow: [repoRoot] } },
  logLevel: 'warn',
});
