// A worker writing OPFS on its own thread (no I/O worker: each WAL entry appended as its header
// and its payload, two writes) killed during a write storm, round after round on one store: after
// each reopen every acknowledged put is there, whole; a put not acknowledged is there whole or not
// at all; the overwritten key holds the newest put that is there.

import { expect, test } from '@playwright/test';

type Probe = {
  storm(name: string, from: number): Promise<void>;
  acked(): number;
  kill(): void;
  rows(name: string): Promise<{ rows: [string, string][] } | { error: string }>;
};

test('killed mid-append over and over, a store on OPFS without an I/O worker loses no acknowledged put and half-applies none', async ({
  page,
}) => {
  await page.goto('/inline-crash.html');
  await page.waitForFunction(() => 'inlineCrash' in window);
  const call = <T>(f: string, ...args: unknown[]): Promise<T> =>
    page.evaluate(
      ([fn, a]) =>
        (window as unknown as { inlineCrash: Record<string, (...x: unknown[]) => T> }).inlineCrash[fn as string]!(...(a as unknown[])),
      [f, args] as const,
    ) as Promise<T>;
  const name = 'inline-crash';
  let last = -1; // the newest put there after the last reopen
  for (let round = 0; round < 6; round++) {
    const from = last + 1;
    await call<void>('storm', name, from);
    // Kill at a different moment each round, once some puts of this round are acknowledged.
    await page.waitForFunction((min) => (window as unknown as { inlineCrash: Probe }).inlineCrash.acked() >= min, from + 3 + round * 7, {
      timeout: 20_000,
    });
    await page.waitForTimeout(round * 13);
    await call<void>('kill');
    await page.waitForTimeout(200); // acknowledgements posted before the kill still arrive
    const acked = await call<number>('acked');
    const reply = await call<{ rows: [string, string][] } | { error: string }>('rows', name);
    if ('error' in reply) throw new Error(`reopen failed: ${reply.error}`);
    const puts = new Map<number, number>(); // put -> its rows present
    let hot: number | undefined;
    for (const [id, payload] of reply.rows) {
      if (id === '-1') hot = Number(payload);
      else {
        const put = Number(payload.split(':')[0]);
        expect(Math.floor(Number(id) / 10), `row ${id} carries put ${put}`).toBe(put);
        puts.set(put, (puts.get(put) ?? 0) + 1);
      }
    }
    const present = [...puts.keys()].sort((x, y) => x - y);
    last = present.at(-1) ?? -1;
    expect(last, `round ${round}: acknowledged ${acked}`).toBeGreaterThanOrEqual(acked);
    expect(last, `round ${round}: at most the put in flight beyond the acknowledged`).toBeLessThanOrEqual(acked + 1);
    expect(present, 'every put, whole, with no gap').toEqual(Array.from({ length: last + 1 }, (_, i) => i));
    expect(
      [...puts.values()].every((n) => n === 10),
      'no put half-applied',
    ).toBe(true);
    expect(hot, 'the overwritten key holds the newest put there').toBe(last);
  }
});
