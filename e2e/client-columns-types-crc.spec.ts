// Outside tester: puts built on the page (the worker checks a columns message before
// writing it), every type through the page's client, and CRC-32C where the worker's CSP refuses
// WebAssembly, attacked through the public API only (site/client/client-columns-types-crc.ts): hand-made columns
// messages of every wrong shape are refused InvalidArgument with nothing written; a message whose
// length no buffer backs does not make the worker build billions of rows; puts after a schema
// change; every type round-trips exactly; a store written with the CRC module refused reopens
// with it allowed and back, every row byte for byte.

import { type BrowserContext, expect, type Page, test } from '@playwright/test';
import { clientPage } from './client-fixtures.js';

type Attack = Record<string, (...a: unknown[]) => Promise<unknown>>;

async function attack<T = string[]>(page: Page, fn: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(([f, a]) => (window as unknown as { columnsTypesCrc: Attack }).columnsTypesCrc[f as string]!(...(a as unknown[])), [
    fn,
    args,
  ] as const) as Promise<T>;
}

async function load(page: Page): Promise<void> {
  await clientPage(page);
  await page.evaluate((url) => import(url), '/client/client-columns-types-crc.ts');
}

const stamp = () => `${Date.now()}`;

test('hand-made columns messages of every wrong shape: each refused InvalidArgument at once, nothing written, the store whole after a reopen', async ({
  page,
}) => {
  await load(page);
  const { outcomes, problems } = await attack<{ outcomes: Record<string, string>; problems: string[] }>(
    page,
    'hostile',
    `a8-hostile-${stamp()}`,
  );
  const wrong = Object.entries(outcomes).filter(([, o]) => o !== 'InvalidArgument');
  expect(wrong).toEqual([]);
  expect(Object.keys(outcomes).length).toBeGreaterThan(40);
  expect(problems).toEqual([]);
});

test('a columns message naming no column, its length backed by no buffer (3, 2^31-1, 2^40 rows): refused InvalidArgument, nothing written, nothing else stalls', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await load(page);
  const r = await attack<{ outcomes: string[]; rows: number; other: string }>(page, 'noColumns', `a8-nocols-${stamp()}`);
  expect(r).toEqual({
    outcomes: ['3: InvalidArgument', `${2 ** 31 - 1}: InvalidArgument`, `${2 ** 40}: InvalidArgument`],
    rows: 1,
    other: 'ok',
  });
});

test('page-built puts after a schema change: a dropped column refused, an added one lands, both versions read back after a flush and reopen', async ({
  page,
}) => {
  await load(page);
  expect(await attack(page, 'evolved', `a8-evolved-${stamp()}`)).toEqual([]);
});

for (const withRowTypes of [false, true])
  test(`every type through the page's client (${withRowTypes ? 'with dates, timestamps and fixed-size binary: rows cross as they are' : 'built into columns on the page'}): edge values, nulls, non-ASCII, 64 KiB values; open, flushed, overwritten, deleted, reopened`, async ({
    page,
  }) => {
    await load(page);
    expect(await attack(page, 'everyType', `a8-types-${withRowTypes}-${stamp()}`, withRowTypes)).toEqual([]);
  });

/** Serve every response uncached, with a CSP that refuses WebAssembly while `state.csp` holds. */
async function routeCsp(context: BrowserContext, state: { csp: boolean }): Promise<void> {
  await context.route('**/*', async (route) => {
    const response = await route.fetch();
    const headers: Record<string, string> = { ...response.headers(), 'cache-control': 'no-store' };
    if (state.csp) headers['content-security-policy'] = "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:";
    await route.fulfill({ response, headers });
  });
}

test("CRC-32C with the workers' WebAssembly refused by CSP and allowed, in turns: every round reopens the store written by the other, every row byte for byte (WAL replay and table files around 64 and 128 KiB)", async ({
  page,
  context,
}) => {
  test.setTimeout(240_000);
  const state = { csp: true };
  await routeCsp(context, state);
  const name = `a8-csp-${stamp()}`;
  let model: [number, number][] = [];
  const problems: string[] = [];
  const compiled: string[] = [];
  try {
    for (const [round, csp] of [true, false, true, false].entries()) {
      state.csp = csp;
      const workers: Promise<string>[] = [];
      const onWorker = (w: import('@playwright/test').Worker): void => {
        workers.push(
          w
            .evaluate(() => {
              try {
                new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
                return 'compiled';
              } catch (e) {
                return `refused: ${String(e).slice(0, 80)}`;
              }
            })
            .catch((e: unknown) => `gone: ${String(e).slice(0, 40)}`),
        );
      };
      page.on('worker', onWorker);
      await load(page);
      const r = await attack<{ problems: string[]; model: [number, number][] }>(page, 'crcRound', name, model, round * 1000);
      page.off('worker', onWorker);
      problems.push(...r.problems.map((p) => `round ${round} (csp ${csp}): ${p}`));
      model = r.model;
      const seen = (await Promise.all(workers)).filter((s) => !s.startsWith('gone'));
      // The store's worker (the engine: WAL frames, block checks on read) takes the page's CSP; the
      // I/O worker it starts is not reached by the route here and compiles either way.
      compiled.push(`${csp}: ${csp ? seen.some((s) => s.startsWith('refused')) : seen.length > 0 && seen.every((s) => s === 'compiled')}`);
    }
    state.csp = false;
    await load(page);
    const last = await attack<{ problems: string[]; model: [number, number][] }>(page, 'crcRound', name, model, 9000);
    problems.push(...last.problems.map((p) => `last: ${p}`));
  } finally {
    await attack(page, 'crcFinish', name).catch(() => undefined);
  }
  expect(problems).toEqual([]);
  expect(model.length).toBe(4 * 2 * 13);
  expect(compiled).toEqual(['true: true', 'false: true', 'true: true', 'false: true']);
});
