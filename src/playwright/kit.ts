// MemWalKit: what memwal/playwright installs on a browser context (the init script, the route
// serving the kit's worker, the binding the init script asks at each open) and the test's view
// of the context's stores. Node (Playwright test process).

import { randomBytes } from 'node:crypto';
import type { BrowserContext, Route } from '@playwright/test';
import { MemWalError, errorFromWire } from '../util/errors.js';
import { installPageHook, resetOrigin } from './page-hook.js';
import type { OpenAnswer, OpenQuery, OpenRecord, Outcome, PageHookConfig } from './protocol.js';
import { MemWalStore } from './store.js';
import { type KitScript, KIT_SCRIPTS, kitScript } from './worker-bundle.js';

/** Where the init script's hook lives in each page (`TEST_HOOK_KEY` of src/rpc/test-hook.ts). */
export const PAGE_HOOK_KEY = 'memwal.playwright.hook';

/** Options of `installMemWal`. */
export interface InstallMemWalOptions {
  /** The app's URL (Playwright's `baseURL`): `reset()` deletes the stores of its origin. */
  baseURL?: string;
}

/** An open seen by the init script, with the page that made it. */
export type PageOpenRecord = OpenRecord & { page: string };

/** `MemWalError` from a page's outcome code (codes that are not memwal's become `IOError`). */
export function pageError(code: string, message: string): MemWalError {
  return errorFromWire({ code, message });
}

/**
 * Install memwal/playwright on `context` and return the kit. Do it before the page loads the app
 * (the `memwal` fixture does it for every test): pages loaded earlier have no hook until they
 * navigate again. Rejects with Playwright's error if the context is closed.
 */
export async function installMemWal(context: BrowserContext, options: InstallMemWalOptions = {}): Promise<MemWalKit> {
  const kit = new MemWalKit(context, options);
  await kit.install();
  return kit;
}

/**
 * memwal in one browser context, seen from the test: `store(name)` for a store's stats, calls
 * and faults, `reset()` to delete every store of the origin, `opens()` for what the pages
 * opened. Create with `installMemWal` (or take the `memwal` fixture).
 */
export class MemWalKit {
  private readonly token = randomBytes(16).toString('hex');
  private readonly prefix = `/__memwal_playwright__/${this.token}/`;
  /** Path of the kit's worker script on the app's origin. */
  readonly workerPath = `${this.prefix}worker.js`;
  private readonly binding = `__memwalPlaywright_${this.token}`;
  private readonly faulted = new Set<string>();
  private readonly stores = new Map<string, MemWalStore>();
  private disposed = false;
  private readonly routeHandler = (route: Route): Promise<void> => this.serve(route);
  private readonly routeMatch = (url: URL): boolean => url.pathname.startsWith(this.prefix);

  /** @internal Use `installMemWal`. */
  constructor(
    readonly context: BrowserContext,
    private readonly options: InstallMemWalOptions,
  ) {}

  /** @internal */
  async install(): Promise<void> {
    const config: PageHookConfig = { token: this.token, binding: this.binding, workerPath: this.workerPath };
    await this.context.exposeBinding(
      this.binding,
      (_source, query: OpenQuery): OpenAnswer => ({
        faults: !this.disposed && this.faulted.has(String(query?.name)),
      }),
    );
    await this.context.route(this.routeMatch, this.routeHandler);
    await this.context.addInitScript(installPageHook, config);
  }

  private async serve(route: Route): Promise<void> {
    const path = new URL(route.request().url()).pathname;
    const script = path.slice(this.prefix.length);
    if (script in KIT_SCRIPTS) {
      const body = await kitScript(script as KitScript);
      // Same-origin and COEP-clean, so apps served cross-origin isolated can start it too.
      const headers = { 'content-type': 'text/javascript', 'cross-origin-embedder-policy': 'require-corp', 'cache-control': 'no-store' };
      await route.fulfill({ status: 200, headers, body });
    } else if (path === `${this.prefix}blank.html`) {
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>memwal/playwright</title>' });
    } else await route.fulfill({ status: 404, body: 'not found' });
  }

  /**
   * The store `name` of this context. With `{ faults: true }`, every later open of it is hosted
   * by the kit's worker over `FaultInjectingStorage` (the app's data stays in its real OPFS /
   * IndexedDB layout), so `failNext`, `failAfter`, `hold`, `clearFaults` and `crash` work: ask
   * before the page opens the store (or reload after asking). The same object each time.
   */
  store(name: string, options: { faults?: boolean } = {}): MemWalStore {
    if (typeof name !== 'string' || name === '') throw new MemWalError('InvalidArgument', 'store(name): name must be a non-empty string');
    if (options.faults) this.faulted.add(name);
    let store = this.stores.get(name);
    if (!store) {
      store = new MemWalStore(this, name);
      this.stores.set(name, store);
    }
    return store;
  }

  /** @internal Whether the test asked for the kit to host store `name`. */
  wantsFaults(name: string): boolean {
    return this.faulted.has(name);
  }

  /** Every `openMemWal` the pages of this context made (of store `name`, or of all), oldest first per page. */
  async opens(name?: string): Promise<PageOpenRecord[]> {
    const all = await Promise.all(
      this.context.pages().map(async (page) => {
        const records = await page
          .evaluate(
            ([key, n]) => {
              const hook = (globalThis as unknown as Record<symbol, { records(n?: string): OpenRecord[] } | undefined>)[Symbol.for(key)];
              return hook?.records(n ?? undefined) ?? [];
            },
            [PAGE_HOOK_KEY, name ?? null] as const,
          )
          .catch(() => [] as OpenRecord[]); // a page navigating or closing has nothing to say
        return records.map((r) => ({ ...r, page: page.url() }));
      }),
    );
    return all.flat();
  }

  /**
   * Run `method` of store `name` on a client of it in some page of this context (the first page,
   * in `context.pages()` order, whose document has a client that is not closed). Rejects with the
   * call's `MemWalError`, or `Closed` when no page has a client of the store. @internal
   */
  async call<T>(name: string, method: string, args: unknown[] = []): Promise<T> {
    for (const page of this.context.pages()) {
      let out: Outcome<unknown>;
      try {
        out = await page.evaluate(
          ([key, n, m, a]) => {
            type Hook = { call(n: string, m: string, a: unknown[]): Promise<Outcome<unknown>> };
            const hook = (globalThis as unknown as Record<symbol, Hook | undefined>)[Symbol.for(key)];
            return hook ? hook.call(n, m, a) : { ok: false as const, code: 'NoClient', message: 'no memwal/playwright hook in this page' };
          },
          [PAGE_HOOK_KEY, name, method, args] as const,
        );
      } catch {
        continue; // the page navigated or closed meanwhile
      }
      if (out.ok) return out.value as T;
      if (out.code !== 'NoClient') throw pageError(out.code, `${method}() on store '${name}': ${out.message}`);
    }
    throw new MemWalError('Closed', `${method}() on store '${name}': no page of this context has it open. ${await this.describe(name)}`);
  }

  /** What the pages did with store `name`, for error messages. */
  async describe(name: string): Promise<string> {
    const opens = await this.opens(name);
    if (opens.length === 0)
      return `No page opened it since the kit was installed (pages: ${
        this.context
          .pages()
          .map((p) => p.url())
          .join(', ') || 'none'
      }).`;
    return `Opens seen: ${opens
      .map(
        (o) =>
          `#${o.id} in ${o.page}: ${o.state}${o.error ? ` (${o.error.code}: ${o.error.message})` : ''}${o.kitHosted ? ', kit-hosted' : ''}`,
      )
      .join('; ')}.`;
  }

  /**
   * Delete every memwal store of the app's origin (`options.origin`, else the `baseURL`, else
   * the origin of the first http(s) page): the OPFS directory `memwal/` and the IndexedDB
   * database `memwal`, through a page of the kit's own on that origin (the app does not run
   * there). For a persistent profile (`launchPersistentContext`) before the app opens its
   * stores; a fresh Playwright context starts empty anyway. Rejects `Locked` while any tab or
   * worker of the origin has a store open (close those pages first), `InvalidArgument` when no
   * origin is known.
   */
  async reset(options: { origin?: string } = {}): Promise<void> {
    const origin =
      options.origin ??
      this.options.baseURL ??
      this.context
        .pages()
        .find((p) => /^https?:/.test(p.url()))
        ?.url();
    if (!origin) throw new MemWalError('InvalidArgument', 'reset(): no origin known: pass { origin } or set baseURL');
    const page = await this.context.newPage();
    try {
      await page.goto(new URL(`${this.prefix}blank.html`, origin).href);
      const out = await page.evaluate(resetOrigin);
      if (!out.ok) throw pageError(out.code, `reset() of ${new URL(origin).origin}: ${out.message}`);
    } finally {
      await page.close();
    }
  }

  /** Stop serving the kit's worker and hosting new opens (the init script stays, inert). */
  async dispose(): Promise<void> {
    this.disposed = true;
    await this.context.unroute(this.routeMatch, this.routeHandler).catch(() => undefined); // the context is already closed
  }
}
