// The field-notes app's Vite config. Running the app needs none; the automated suite drives a cold
// dev server (the HMR test), so what only memwal's worker imports is pre-bundled up front (else
// Vite finds it late and reloads the page mid-test: docs/testing.md §1).

import { defineConfig } from 'vite';

/** The preview server's port (the app's Playwright suite starts it): three above memwal's e2e server. */
const port = Number(process.env.FIELD_NOTES_PORT ?? Number(process.env.E2E_PORT ?? 5183) + 3);

export default defineConfig({
  optimizeDeps: { include: ['apache-arrow', 'idb', 'comlink', 'react', 'react-dom/client', 'react/jsx-dev-runtime'] },
  worker: { format: 'es' },
  server: { host: '127.0.0.1', port },
  preview: { host: '127.0.0.1', port, strictPort: true },
});
