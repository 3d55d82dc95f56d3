// The todo app's Vite config. Nothing memwal-specific is needed: Vite bundles memwal's worker
// from `new Worker(new URL(..., import.meta.url))` inside the package, in dev and in builds.

import { defineConfig } from 'vite';

/** The preview server's port (the app's Playwright suite starts it): two above memwal's e2e server. */
const port = Number(process.env.EXAMPLE_PORT ?? Number(process.env.E2E_PORT ?? 5183) + 2);

export default defineConfig({
  server: { host: '127.0.0.1', port },
  preview: { host: '127.0.0.1', port, strictPort: true },
});
