// Shared helpers of the client e2e specs (e2e/client-*.spec.ts): the client page, typed calls
// into its `window.mw`, and persistent Chromium profiles for restarts.

import { expect, type BrowserContext, type Page, type TestInfo } from '@playwright/test';
import { PersistentProfile, type MemWalKit } from '../src/playwright.js';
import type { ClientHarness, OpenRequest, Outcome } from './site/client/protocol.js';

export const MiB = 1024 * 1024;

type Args<K extends keyof ClientHarness> = ClientHarness[K] extends (...a: infer A) => unknown ? A : never;
type Result<K extends keyof ClientHarness> = ClientHarness[K] extends (...a: never[]) => infer R ? Awaited<R> : never;

/** Call `window.mw[method](...args)` in `page`. */
export function mw<K extends keyof ClientHarness>(page: Page, method: K, ...args: Args<K>): Promise<Result<K>> {
  return page.evaluate(([m, a]) => (window as unknown as { mw: Record<string, (...x: unknown[]) => unknown> }).mw[m]!(...a), [
    method,
    args,
  ] as const) as Promise<Result<K>>;
}

/** The value of a successful outcome; fails the test (with the code and message) otherwise. */
export function ok<T>(o: Outcome<T>, what = 'call'): T {
  if (!o.ok) throw new Error(`${what} failed: ${o.code}: ${o.message}`);
  return o.value;
}

/** The code of a failed outcome; fails the test if it succeeded. */
export function code(o: Outcome<unknown>): string {
  expect(o.ok, 'expected a rejection').toBe(false);
  return (o as { code: string }).code;
}

/** Load the client page in `page` and wait for its harness. */
export async function clientPage(page: Page): Promise<Page> {
  await page.goto('/client/index.html');
  await page.waitForFunction(() => 'mw' in window);
  return page;
}

/** Open a store on the page and return its client id. */
export async function open(page: Page, req: OpenRequest): Promise<number> {
  return ok(await mw(page, 'open', req), `open ${req.name}`);
}

/** Poll `probe` until `accept` holds, returning the last value. */
export async function until<T>(probe: () => Promise<T>, accept: (v: T) => boolean, ms = 10_000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (accept(v)) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}; last value: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A Chromium with an on-disk profile that survives a restart (storage as a real user's):
 * memwal/playwright's `PersistentProfile`, whose launches also install the kit (`memwal`).
 */
export class Profile {
  private readonly profile: PersistentProfile;
  context: BrowserContext | undefined;
  memwal: MemWalKit | undefined;

  constructor(testInfo: TestInfo, baseURL: string) {
    this.profile = new PersistentProfile({ launchOptions: testInfo.project.use.launchOptions, baseURL });
  }

  /** (Re)launch the browser on this profile and return a page showing the client harness. */
  async launch(): Promise<Page> {
    const { context, page, memwal } = await this.profile.launch();
    this.context = context;
    this.memwal = memwal;
    return clientPage(page);
  }

  /** Close the browser (no store is closed first: whatever is open just stops). */
  async stop(): Promise<void> {
    await this.profile.stop();
    this.context = undefined;
  }

  async dispose(): Promise<void> {
    await this.profile.dispose();
  }
}

/** Sorted ids `from .. from+n-1`. */
export const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

/** `expected` ids missing from `actual` (both sorted or not). */
export function missing(expected: number[], actual: number[]): number[] {
  const have = new Set(actual);
  return expected.filter((id) => !have.has(id));
}

/**
 * What storage holds for `store`, for failure messages: the manifest's cursors and epoch, and the
 * WAL frames (epoch/position) per segment — IndexedDB records, and OPFS file sizes.
 */
export function describeStorage(page: Page, store: string): Promise<unknown> {
  return page.evaluate(async (name) => {
    const request = <T>(r: IDBRequest): Promise<T> =>
      new Promise((resolve, reject) => {
        r.onsuccess = () => resolve(r.result as T);
        r.onerror = () => reject(r.error);
      });
    const db = await request<IDBDatabase>(indexedDB.open('memwal'));
    const tx = db.transaction(['manifests', 'wal']);
    const manifest = await request<Record<string, unknown> | undefined>(tx.objectStore('manifests').get(name));
    const range = IDBKeyRange.bound([name], [name, []]);
    const keys = await request<[string, string, number, number][]>(tx.objectStore('wal').getAllKeys(range));
    const values = await request<Uint8Array[]>(tx.objectStore('wal').getAll(range));
    db.close();
    const idbWal = keys.map((k, i) => {
      const v = values[i]!;
      const dv = new DataView(v.buffer, v.byteOffset, v.byteLength);
      const frames: string[] = [];
      for (let at = 0; at + 28 <= v.length; at += 28 + dv.getUint32(at + 4, true)) {
        frames.push(`e${dv.getBigUint64(at + 12, true)}p${dv.getBigUint64(at + 20, true)}`);
      }
      return `${k[1]} @${k[2]}+${k[3]}: ${frames.join(' ')}`;
    });
    const opfsWal: string[] = [];
    try {
      const root = await navigator.storage.getDirectory();
      const wal = await (await (await root.getDirectoryHandle('memwal')).getDirectoryHandle(name)).getDirectoryHandle('wal');
      for await (const [file, handle] of (wal as unknown as { entries(): AsyncIterable<[string, FileSystemFileHandle]> }).entries()) {
        opfsWal.push(`${file}: ${(await handle.getFile()).size} bytes`);
      }
    } catch (e) {
      opfsWal.push(`(no OPFS store: ${String(e)})`);
    }
    const { schema: _schema, tables, ...rest } = (manifest ?? {}) as { schema?: unknown; tables?: unknown[] };
    return { manifest: { ...rest, tableCount: tables?.length }, idbWal, opfsWal };
  }, store);
}

/** The outcome of operation `op` (startPut / startOpen), waiting up to `ms`; fails if it is still pending. */
export async function settledOutcome(page: Page, op: number, ms: number): Promise<Outcome<unknown>> {
  const r = await mw(page, 'settled', op, ms);
  if (r === 'pending') throw new Error(`operation ${op} still pending after ${ms} ms`);
  return r;
}

/** The value of metric `name` (first sample) in Prometheus text `text`. */
export function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  if (!line) throw new Error(`metric ${name} not found`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}
