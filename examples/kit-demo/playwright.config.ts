// The todo app's Playwright suite: the app on Vite's dev server, Debian's Chromium, one worker
// (the tests of one origin share its storage and Web Locks).

import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

/** The app's dev server port: one above memwal's e2e server (E2E_PORT, default 5183). */
const PORT = Number(process.env.KIT_DEMO_PORT ?? Number(process.env.E2E_PORT ?? 5183) + 1);

export default defineConfig({
  testDir: 'tests',
  workers: 1,
  fullyParallel: false,
  retries: 0,
  reporter: 'list',
  timeout: 60_000,
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined),
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: {
    command: `node ../../node_modules/vite/bin/vite.js --port ${PORT} --strictPort --host 127.0.0.1`,
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: !process.env.CI,
    timeout: 60_000,
  },
});
