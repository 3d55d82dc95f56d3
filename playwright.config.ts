// Playwright for memwal's browser e2e suite: serial, Debian's Chromium (no browser download),
// against the Vite dev server of e2e/site (its own config, separate from the demo's).

import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

/** The e2e dev server's port; the demo and `vite` defaults (5173/4173) stay free. */
export const E2E_PORT = Number(process.env.E2E_PORT ?? 5183);

export default defineConfig({
  testDir: 'e2e',
  workers: 1,
  fullyParallel: false,
  retries: 0,
  reporter: 'list',
  timeout: 120_000,
  use: {
    baseURL: `http://127.0.0.1:${E2E_PORT}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined),
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: {
    command: `node node_modules/vite/bin/vite.js --config e2e/vite.config.ts --port ${E2E_PORT} --strictPort --host 127.0.0.1`,
    url: `http://127.0.0.1:${E2E_PORT}/conformance.html`,
    reuseExistingServer: !process.env.CI,
    timeout: 60_000,
  },
});
