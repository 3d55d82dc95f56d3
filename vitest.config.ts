import { defineConfig } from 'vitest/config';

// Unit tests run in Node; browser tests live in e2e/ and run under Playwright.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
  },
});
