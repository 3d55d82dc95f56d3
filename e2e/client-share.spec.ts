// tabs: 'share' (SPEC §10) with three tabs: every tab writes and reads through one store, one
// tab is the leader, and when it closes, crashes (renderer killed) or a follower reloads during
// a write storm, every acknowledged row is there at the end and the tabs' stats agree.

import { expect, type BrowserContext, type Page, test } from '@playwright/test';
import { clientPage, missing, mw, ok, open, until } from './client-fixtures.js';
import type { OpenRequest } from './site/client/protocol.js';

const share = (name: string): OpenRequest => ({ name, keyed: true, options: { tabs: 'share' } });

/** Every id a page reported as acknowledged (window.__ack), kept here so a page's death does not lose them. */
async function ackedPage(context: BrowserContext, acked: Set<number>): Promise<Page> {
  const page = await context.newPage();
  await page.exposeBinding('__ack', (_source, ids: number[]) => {
    for (const id of ids) acked.add(id);
  });
  return clientPage(page);
}

async function roles(pages: [Page, number][]): Promise<string[]> {
  return Promise.all(pages.map(async ([page, id]) => ok(await mw(page, 'call', id, 'role')) as string));
}

/** The stats that must be equal from every tab once nobody writes. */
async function statsOf(page: Page, id: number): Promise<unknown> {
  const wal = ok(await mw(page, 'call', id, 'walStats')) as { nextPosition: number; oldestPosition: number };
  const mem = ok(await mw(page, 'call', id, 'memtableStats')) as { rowCount: number; generation: number; frozenCount: number };
  const writes = ok(await mw(page, 'call', id, 'writeStats')) as { putCount: number; putRows: number };
  return {
    wal: [wal.nextPosition, wal.oldestPosition],
    mem: [mem.rowCount, mem.generation, mem.frozenCount],
    writes: [writes.putCount, writes.putRows],
  };
}

test('three tabs share one store: each writes and reads, one leads, stats and scans agree, tail works from a follower', async ({
  context,
}) => {
  const name = 'share-basic';
  const acked = new Set<number>();
  const a = await ackedPage(context, acked);
  const b = await ackedPage(context, acked);
  const c = await ackedPage(context, acked);
  const ca = await open(a, share(name));
  const cb = await open(b, share(name));
  const cc = await open(c, share(name));
  const tabs: [Page, number][] = [
    [a, ca],
    [b, cb],
    [c, cc],
  ];
  expect(await roles(tabs)).toEqual(['leader', 'follower', 'follower']);
  for (const [page, id] of tabs) expect(await mw(page, 'states', id)).toEqual(['open']);

  for (const [i, [page, id]] of tabs.entries()) {
    await mw(page, 'storm', id, { firstId: (i + 1) * 1_000_000, batch: 20, payloadBytes: 64, concurrency: 2 });
  }
  await until(
    async () => (await Promise.all(tabs.map(([page, id]) => mw(page, 'acked', id)))).map((ids) => ids.length),
    (counts) => counts.every((n) => n >= 1000),
    20_000,
    '1000 acknowledged rows from every tab',
  );
  for (const [page, id] of tabs) {
    const storm = await mw(page, 'stopStorm', id);
    expect(storm.errors, 'put errors').toEqual({});
    for (const row of storm.acked) acked.add(row);
  }
  ok(await mw(b, 'call', cb, 'sync'));

  const scans = await Promise.all(tabs.map(async ([page, id]) => ok(await mw(page, 'scan', id))));
  expect(missing([...acked], scans[0]!.ids), 'acknowledged rows missing').toEqual([]);
  for (const s of scans) expect(s.ids).toEqual(scans[0]!.ids);
  const stats = await Promise.all(tabs.map(([page, id]) => statsOf(page, id)));
  expect(stats[1]).toEqual(stats[0]);
  expect(stats[2]).toEqual(stats[0]);

  const entries = ok(await mw(c, 'epochs', cc));
  expect(entries.length).toBeGreaterThan(0);
  expect(entries.map(([p]) => p)).toEqual(entries.map((_, i) => entries[0]![0] + i));
  console.log(`share: ${acked.size} rows from 3 tabs, ${entries.length} WAL entries, stats agree`);
  for (const [page, id] of tabs.reverse()) ok(await mw(page, 'call', id, 'close'));
});
