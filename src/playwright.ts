// memwal/playwright: a Playwright test kit for apps built on memwal (docs/testing.md).
// Node (the Playwright test process); needs @playwright/test. Re-exports only.

export { test, expect, type MemWalFixtures } from './playwright/fixture.js';
export { installMemWal, MemWalKit, type InstallMemWalOptions, type PageOpenRecord } from './playwright/kit.js';
export { MemWalStore, type StoreStats } from './playwright/store.js';
export { memwalMatchers } from './playwright/matchers.js';
export { PersistentProfile, type PersistentProfileOptions, type LaunchedProfile } from './playwright/profile.js';
export type { KitFaultOp, KitFaultError, OpenRecord } from './playwright/protocol.js';
