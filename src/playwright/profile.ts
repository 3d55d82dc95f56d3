// A browser profile on disk that outlives the browser: launch, stop (as a user quits), launch
// again on the same storage — the restart a test of persistence needs, with memwal/playwright
// installed on every launch. Node (Playwright test process).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, test, type BrowserContext, type BrowserType, type LaunchOptions, type Page } from '@playwright/test';
import { installMemWal, type MemWalKit } from './kit.js';

/** Options of a `PersistentProfile`. */
export interface PersistentProfileOptions {
  /**
   * Playwright launch options (`executablePath`, `args`, ...), over the ones Playwright Test
   * itself applies to every launch in a test worker: the project's `use.launchOptions`,
   * `headless` and `channel`. Outside Playwright Test, nothing is inherited.
   */
  launchOptions?: LaunchOptions;
  /**
   * The app's URL, as `baseURL` of every launch and the origin `memwal.reset()` clears. Default:
   * the project's `use.baseURL` when the profile is made inside a test (or a hook).
   */
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

  private readonly options: PersistentProfileOptions;

  constructor(options: PersistentProfileOptions = {}) {
    this.options = { baseURL: projectBaseURL(), ...options };
  }

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

/** The running test's project `use.baseURL`; undefined outside a test. */
function projectBaseURL(): string | undefined {
  try {
    return test.info().project.use.baseURL;
  } catch {
    return undefined; // not inside a test: test.info() throws
  }
}
