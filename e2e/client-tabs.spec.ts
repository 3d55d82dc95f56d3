// One writer per store across tabs, through the main-thread client: a second tab waits
// ('waiting-for-lock') or fails fast (Locked), and a steal fences the first tab at once without
// losing a write it acknowledged.

import { expect, test } from '@playwright/test';
import { clientPage, code, missing, mw, ok, open, range, settledOutcome, until } from './client-fixtures.js';
import type { Layout } from './site/client/protocol.js';

for (const layout of ['opfs', 'indexeddb'] as Layout[]) {
  test(`${layout}: a second tab waits, gets Locked with lockTimeoutMs 0, and a steal fences the first tab losing nothing it acknowledged`, async ({
    context,
  }) => {
    const name = `tabs-${layout}`;
    const a = await clientPage(await context.newPage());
    const b = await clientPage(await context.newPage());

    const ca = await open(a, { name, storage: layout, keyed: true });
    ok(await mw(a, 'put', ca, 0, 100));

    // Fail fast.
    expect(code(await mw(b, 'open', { name, storage: layout, keyed: true, options: { lockTimeoutMs: 0 } }))).toBe('Locked');

    // Wait: the second tab reports 'waiting-for-lock' and gets the store once the first closes it.
    const waiting = await mw(b, 'startOpen', { name, storage: layout, keyed: true });
    await until(
      () => mw(b, 'openStates', waiting),
      (s) => s.includes('waiting-for-lock'),
      5000,
      "'waiting-for-lock'",
    );
    expect(await mw(b, 'settled', waiting, 300)).toBe('pending');
    ok(await mw(a, 'call', ca, 'close'));
    const cb = ok(await settledOutcome(b, waiting, 10_000)) as number;
    expect(await mw(b, 'openStates', waiting)).toEqual(['waiting-for-lock', 'open']);

    // Steal: the tab holding the store (b) is fenced at once while it writes.
    await mw(b, 'storm', cb, { firstId: 1000, batch: 10, payloadBytes: 32, concurrency: 2 });
    await until(
      () => mw(b, 'acked', cb),
      (ids) => ids.length >= 100,
      10_000,
      'acknowledged storm writes',
    );
    const thief = await open(a, { name, storage: layout, keyed: true, options: { steal: true } });
    await until(
      () => mw(b, 'states', cb),
      (s) => s.includes('fenced'),
      5000,
      "'fenced' in the first tab",
    );
    expect(code(await mw(b, 'put', cb, 900_000, 1))).toBe('Fenced');
    const storm = await mw(b, 'stopStorm', cb);
    expect(
      Object.keys(storm.errors).filter((k) => k !== 'Fenced'),
      'put errors other than Fenced',
    ).toEqual([]);

    const scan = ok(await mw(a, 'scan', thief));
    expect(missing(range(0, 100), scan.ids), 'rows of the first writer').toEqual([]);
    expect(missing(storm.acked, scan.ids), 'rows the fenced tab acknowledged').toEqual([]);
    console.log(`${layout}: ${storm.acked.length} storm rows acknowledged before the steal, all present`);
    ok(await mw(a, 'call', thief, 'close'));
  });
}
