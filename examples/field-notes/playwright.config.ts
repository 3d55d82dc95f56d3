// The field-notes suite: a production build (`vite build`) served by `vite preview`, in Debian's
// Chromium (CHROMIUM_PATH to override), one test at a time (the store is per origin). The HMR
// test starts its own `vite dev` server (tests/hmr.spec.ts).

import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

/** The preview server's port (as in vite.config.ts): three above memwal's e2e server (E2E_PORT, default 5183). */
const port = Number(process.env.FIELD_NOTES_PORT ?? Number(process.env.E2E_PORT ?? 5183) + 3);

export default defineConfig({
  testDir: 'tests',
  workers: 1,
  retries: 0,
  timeout: 90_000,
  reporter: 'list',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined),
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
    },
  },
  webServer: {
    command: 'npx vite build && npx vite preview',
    url: `http://127.0.0.1:${port}/`,
    reuseExistingServer: !process.env.CI,
    timeout: 120_000,
  },
});
