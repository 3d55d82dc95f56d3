// A browser profile on disk that outlives the browser: launch, stop (as a user quits), launch
// again on the same storage — the restart a test of persistence needs, with memwal/playwright
// installed on every launch. Node (Playwright test process).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type BrowserType, type LaunchOptions, type Page } from '@playwright/test';
import { installMemWal, type MemWalKit } from './kit.js';

/** Options of a `PersistentProfile`. */
export interface PersistentProfileOptions {
  /** Playwright launch options (`executablePath`, `args`, ...): pass `testInfo.project.use.launchOptions`. */
  launchOptions?: LaunchOptions;
  /** The app's URL, as `baseURL` of every launch and the origin `memwal.reset()` clears. */
  baseURL?: string;
  /** Default: Playwright's `chromium`. */
  browserType?: BrowserType;
}

/** A running browser on the profile. */
export interface LaunchedProfile {
  context: BrowserContext;
  /** The browser's first page (about:blank). */
  page: Page;
  /** The kit, installed before any page loaded. */
  memwal: MemWalKit;
}

/**
 * A persistent Chromium profile in a fresh temporary directory (`launchPersistentContext`):
 * its OPFS and IndexedDB survive `stop()` and the next `launch()`, as a real user's do, unlike
 * Playwright's default off-the-record context. `dispose()` stops the browser and deletes the
 * directory. One browser at a time per profile (Chromium locks its profile).
 */
export class PersistentProfile {
  readonly dir = mkdtempSync(join(tmpdir(), 'memwal-profile-'));
  private running: LaunchedProfile | undefined;

  constructor(private readonly options: PersistentProfileOptions = {}) {}

  /** Launch the browser on this profile (stopping a running one first) with the kit installed. */
  async launch(): Promise<LaunchedProfile> {
    await this.stop();
    const { launchOptions, baseURL, browserType = chromium } = this.options;
    const context = await browserType.launchPersistentContext(this.dir, { ...launchOptions, baseURL });
    const memwal = await installMemWal(context, { baseURL });
    const page = context.pages()[0] ?? (await context.newPage());
    this.running = { context, page, memwal };
    return this.running;
  }

  /** Close the browser; open stores are not closed first: whatever runs just stops. */
  async stop(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    await running?.context.close();
  }

  /** Stop the browser and delete the profile directory. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
