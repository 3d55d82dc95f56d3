// `test` and `expect` of memwal/playwright: Playwright's, with an automatic `memwal` fixture
// (the kit installed on the test's context before any page loads) and memwal's matchers.

import { test as base, expect as baseExpect } from '@playwright/test';
import { installMemWal, type MemWalKit } from './kit.js';
import { memwalMatchers } from './matchers.js';

/** The fixtures memwal/playwright adds to a test. */
export interface MemWalFixtures {
  /** memwal in the test's browser context: `memwal.store(name)`, `memwal.reset()`, `memwal.opens()`. */
  memwal: MemWalKit;
}

/**
 * Playwright's `test` with the `memwal` fixture. It is automatic, so every page of every test is
 * registered (a test that never names `memwal` costs one init script and one route).
 */
export const test = base.extend<MemWalFixtures>({
  memwal: [
    async ({ context, baseURL }, use) => {
      const kit = await installMemWal(context, { baseURL });
      await use(kit);
      await kit.dispose();
    },
    { auto: true },
  ],
});

/** Playwright's `expect` with `toHaveFlushed()` and `toHaveNoBackpressure()` for a `MemWalStore`. */
export const expect = baseExpect.extend(memwalMatchers);
