// tabs: 'share' with three tabs: every tab writes and reads through one store, one
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

test('three tabs share one store: each writes and reads, one leads, stats, scans and getMany agree, tail works from a follower', async ({
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
  // A follower's getMany reaches the leader: one call, the leader's answers in the caller's order.
  const asked = [...[...acked].slice(0, 50), -5];
  const answers = await Promise.all(tabs.map(async ([page, id]) => ok(await mw(page, 'getMany', id, asked)).ids));
  expect(answers[0]).toEqual(asked.map((i) => (i < 0 ? null : i)));
  expect(answers[1]).toEqual(answers[0]);
  expect(answers[2]).toEqual(answers[0]);

  const entries = ok(await mw(c, 'epochs', cc));
  expect(entries.length).toBeGreaterThan(0);
  expect(entries.map(([p]) => p)).toEqual(entries.map((_, i) => entries[0]![0] + i));
  console.log(`share: ${acked.size} rows from 3 tabs, ${entries.length} WAL entries, stats agree`);
  for (const [page, id] of tabs.reverse()) ok(await mw(page, 'call', id, 'close'));
});

/**
 * Kill `page`'s renderer (CDP Page.crash) and resolve once Playwright reports the crash. The CDP
 * call itself answers only after ~20 s here (the session dies with the page), so it is not awaited.
 */
async function crash(context: BrowserContext, page: Page): Promise<void> {
  const crashed = new Promise((resolve) => page.once('crash', resolve));
  const cdp = await context.newCDPSession(page);
  void cdp.send('Page.crash').catch(() => undefined);
  await crashed;
}

/** The tabs whose role is 'leader' right now (polling until exactly one leads). */
async function leaderOf(tabs: [Page, number][], ms = 10_000): Promise<[Page, number]> {
  const rs = await until(
    () => roles(tabs),
    (r) => r.filter((x) => x === 'leader').length === 1,
    ms,
    'exactly one leader',
  );
  return tabs[rs.indexOf('leader')]!;
}

test('the leader tab closes, then crashes, and a follower reloads, all during a write storm: every acknowledged row is there', async ({
  context,
}) => {
  const name = 'share-failover';
  const acked = new Set<number>();
  const storm = (page: Page, id: number, firstId: number) =>
    mw(page, 'storm', id, { firstId, batch: 10, payloadBytes: 64, concurrency: 1, pauseMs: 40, reportAcks: true });
  const errors: Record<string, number> = {};
  const stop = async (page: Page, id: number): Promise<void> => {
    for (const [code, n] of Object.entries((await mw(page, 'stopStorm', id)).errors)) errors[code] = (errors[code] ?? 0) + n;
  };
  const grow = async (n: number): Promise<void> => {
    const target = acked.size + n;
    await until(
      async () => acked.size,
      (size) => size >= target,
      20_000,
      `${target} acknowledged rows`,
    );
  };

  const a = await ackedPage(context, acked);
  const b = await ackedPage(context, acked);
  const c = await ackedPage(context, acked);
  let tabs: [Page, number][] = [
    [a, await open(a, share(name))],
    [b, await open(b, share(name))],
    [c, await open(c, share(name))],
  ];
  for (const [i, [page, id]] of tabs.entries()) await storm(page, id, (i + 1) * 1_000_000);
  await grow(100);

  // 1. The leader tab closes.
  expect((await leaderOf(tabs))[0]).toBe(a);
  await a.close();
  tabs = tabs.slice(1);
  await leaderOf(tabs);
  await grow(100);

  // A fourth tab joins, so that three are left after the crash.
  const d = await ackedPage(context, acked);
  tabs.push([d, await open(d, share(name))]);
  await storm(d, tabs[2]![1], 4_000_000);
  await grow(100);

  // 2. The leader tab crashes (its renderer is killed).
  const [crashed] = await leaderOf(tabs);
  await crash(context, crashed);
  tabs = tabs.filter(([page]) => page !== crashed);
  await leaderOf(tabs);
  await crashed.close();
  await grow(100);

  // 3. A follower reloads during the storm, reopens, and writes on.
  const followerIndex = (await roles(tabs)).indexOf('follower');
  const [follower] = tabs[followerIndex]!;
  await follower.reload();
  await follower.waitForFunction(() => 'mw' in window);
  tabs[followerIndex] = [follower, await open(follower, share(name))];
  await storm(follower, tabs[followerIndex]![1], 5_000_000);
  await grow(100);

  for (const [page, id] of tabs) await stop(page, id);
  ok(await mw(tabs[0]![0], 'call', tabs[0]![1], 'sync'));
  const scans = await Promise.all(tabs.map(async ([page, id]) => ok(await mw(page, 'scan', id))));
  expect(missing([...acked], scans[0]!.ids), 'acknowledged rows missing').toEqual([]);
  expect(scans[1]!.ids).toEqual(scans[0]!.ids);
  expect(await statsOf(tabs[1]![0], tabs[1]![1])).toEqual(await statsOf(tabs[0]![0], tabs[0]![1]));
  const unexpected = Object.keys(errors).filter((code) => code !== 'LeaderChanged');
  expect(unexpected, `put errors other than LeaderChanged: ${JSON.stringify(errors)}`).toEqual([]);
  console.log(`share failover: ${acked.size} acknowledged rows all present; put errors ${JSON.stringify(errors)}`);
  for (const [page, id] of tabs) ok(await mw(page, 'call', id, 'close'));
});

/** Nearest-rank percentile of `values` (ms). */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

test('failover time: leader tab closed or crashed -> first put acknowledged by the new leader', async ({ context }) => {
  const name = 'share-failover-time';
  const rounds = Number(process.env.MEMWAL_FAILOVER_ROUNDS ?? 4);
  test.setTimeout(60_000 + rounds * 30_000);
  const acked = new Set<number>();
  const tabs: [Page, number][] = [];
  const join = async (): Promise<void> => {
    const page = await ackedPage(context, acked);
    tabs.push([page, await open(page, share(name))]);
  };
  for (let i = 0; i < 3; i++) await join();
  const times: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const [leader] = await leaderOf(tabs);
    const [prober, probeId] = tabs.find(([page]) => page !== leader)!;
    // A put every ~10 ms: the WAL a failover replays grows by a few hundred entries a round.
    mw(prober, 'probe', probeId, (round + 1) * 1_000_000, 10);
    await until(
      async () => acked.size,
      (n) => n >= 10 * (round + 1),
      10_000,
      'probe acks before the failover',
    );
    const crashIt = round % 2 === 1;
    const t0 = Date.now();
    if (crashIt) await crash(context, leader);
    else await leader.close();
    tabs.splice(
      tabs.findIndex(([page]) => page === leader),
      1,
    );
    await leaderOf(tabs);
    const before = acked.size;
    await until(
      async () => acked.size,
      (n) => n >= before + 10,
      20_000,
      'probe acks after the failover',
    );
    if (crashIt) await leader.close();
    const probe = await mw(prober, 'stopProbe', probeId);
    // Entries below the oldest retained one were flushed by the new leader's recovery: older terms.
    const epochOf = new Map(ok(await mw(prober, 'epochs', probeId)));
    const newEpoch = Math.max(...epochOf.values());
    const first = probe.acks.find((a) => a.atMs >= t0 && epochOf.get(a.position) === newEpoch);
    expect(first, 'a probe put acknowledged by the new leader').toBeDefined();
    times.push(first!.atMs - t0);
    expect(Object.keys(probe.errors).filter((code) => code !== 'LeaderChanged')).toEqual([]);
    await join();
  }
  const p50 = percentile(times, 50);
  const p95 = percentile(times, 95);
  console.log(`failover (close/crash alternating, ${rounds} rounds): ${times.join(', ')} ms; p50 ${p50} ms, p95 ${p95} ms`);
  // The target is p95 <= 1 s (measured figures are in the README); this bound only catches a
  // regression (a call waiting out its 10 s deadline, a take-over waiting for a lock) without
  // failing on a busy CI machine.
  expect(p95).toBeLessThan(5000);
  for (const [page, id] of tabs) ok(await mw(page, 'call', id, 'close'));
});

test('the added latency of a forwarded call: puts and stats from a follower against the leader', async ({ context }) => {
  const name = 'share-latency';
  const leader = await clientPage(await context.newPage());
  const follower = await clientPage(await context.newPage());
  const cl = await open(leader, share(name));
  const cf = await open(follower, share(name));
  expect(ok(await mw(follower, 'call', cf, 'role'))).toBe('follower');
  const measure = (page: Page, id: number, what: 'put' | 'walStats', n: number): Promise<number[]> =>
    page.evaluate(
      async ([id, what, n]) => {
        const mw = (window as unknown as { mw: import('./site/client/protocol.js').ClientHarness }).mw;
        const out: number[] = [];
        for (let i = 0; i < n; i++) {
          const t = performance.now();
          const r = what === 'put' ? await mw.put(id, 10_000_000 + i, 1) : await mw.call(id, 'walStats');
          if (!r.ok) throw new Error(r.message);
          out.push(performance.now() - t);
        }
        return out;
      },
      [id, what, n] as const,
    );
  const figures: Record<string, string> = {};
  for (const what of ['put', 'walStats'] as const) {
    await measure(leader, cl, what, 20); // warm-up
    await measure(follower, cf, what, 20);
    const local = await measure(leader, cl, what, 200);
    const forwarded = await measure(follower, cf, what, 200);
    figures[what] =
      `leader p50 ${percentile(local, 50).toFixed(2)} p95 ${percentile(local, 95).toFixed(2)} ms, ` +
      `follower p50 ${percentile(forwarded, 50).toFixed(2)} p95 ${percentile(forwarded, 95).toFixed(2)} ms`;
    expect(percentile(forwarded, 50)).toBeLessThan(percentile(local, 50) + 50);
  }
  console.log(`forwarded-call latency: put: ${figures.put}; walStats: ${figures.walStats}`);
  ok(await mw(follower, 'call', cf, 'close'));
  ok(await mw(leader, 'call', cl, 'close'));
});

test("a frozen leader tab (Page lifecycle 'frozen') keeps serving the other tabs: its worker answers", async ({ context }) => {
  const name = 'share-frozen';
  const leader = await clientPage(await context.newPage());
  const follower = await clientPage(await context.newPage());
  const cl = await open(leader, share(name));
  const cf = await open(follower, share(name));
  const cdp = await context.newCDPSession(leader);
  await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
  expect(ok(await mw(follower, 'put', cf, 1, 10))).toMatchObject({ rows: 10, durable: true });
  expect(ok(await mw(follower, 'scan', cf)).rows).toBe(10);
  await cdp.send('Page.setWebLifecycleState', { state: 'active' });
  expect(ok(await mw(leader, 'call', cl, 'role'))).toBe('leader');
  ok(await mw(follower, 'call', cf, 'close'));
  ok(await mw(leader, 'call', cl, 'close'));
});

test('a writer that steals the store fences the sharing tabs; they wait and get it back when it closes', async ({ context }) => {
  const name = 'share-stolen';
  const a = await clientPage(await context.newPage());
  const b = await clientPage(await context.newPage());
  const thiefPage = await clientPage(await context.newPage());
  const ca = await open(a, share(name));
  const cb = await open(b, share(name));
  ok(await mw(b, 'put', cb, 1, 10));
  const thief = await open(thiefPage, { name, keyed: true, options: { steal: true } });
  for (const [page, id] of [
    [a, ca],
    [b, cb],
  ] as const) {
    await until(
      () => mw(page, 'states', id),
      (s) => s.includes('fenced'),
      5000,
      "'fenced' in a sharing tab",
    );
  }
  ok(await mw(thiefPage, 'put', thief, 100, 10));
  ok(await mw(thiefPage, 'call', thief, 'close'));
  const tabs: [Page, number][] = [
    [a, ca],
    [b, cb],
  ];
  await leaderOf(tabs);
  await until(
    () => mw(b, 'put', cb, 200, 10),
    (r) => r.ok,
    10_000,
    'a put from the follower after the thief closed',
  );
  expect(ok(await mw(a, 'scan', ca)).rows).toBe(30);
  expect((await mw(b, 'states', cb)).at(-1)).toBe('open');
  ok(await mw(b, 'call', cb, 'close'));
  ok(await mw(a, 'call', ca, 'close'));
});

test("onRoleChange: the tab that takes over hears 'leader', a leader fenced by a steal hears 'follower', tabs that stay followers hear nothing", async ({
  context,
}) => {
  const name = 'share-role-events';
  const a = await clientPage(await context.newPage());
  const b = await clientPage(await context.newPage());
  const c = await clientPage(await context.newPage());
  const ca = await open(a, share(name));
  const tabs: [Page, number][] = [
    [b, await open(b, share(name))],
    [c, await open(c, share(name))],
  ];
  const changes = (tab: [Page, number]): Promise<string[]> => mw(tab[0], 'roleChanges', tab[1]);
  expect(ok(await mw(a, 'call', ca, 'role'))).toBe('leader');
  expect(await Promise.all(tabs.map(changes))).toEqual([[], []]); // the role at open is role()'s

  // 1. The leader tab closes: one follower takes over and hears it; the other hears nothing.
  await a.close();
  const next = await leaderOf(tabs);
  const other = tabs.find((t) => t !== next)!;
  await until(
    () => changes(next),
    (r) => r.length > 0,
    10_000,
    "'leader' in the tab that took over",
  );
  expect(await changes(next)).toEqual(['leader']);
  expect(await changes(other)).toEqual([]);

  // 2. A writer steals the store: the leader is fenced and hears 'follower'; once the thief
  //    closes, whichever tab takes the store back hears 'leader'.
  const thiefPage = await clientPage(await context.newPage());
  const thief = await open(thiefPage, { name, keyed: true, options: { steal: true } });
  await until(
    () => changes(next),
    (r) => r.length === 2,
    10_000,
    "'follower' in the fenced leader",
  );
  expect(await changes(next)).toEqual(['leader', 'follower']);
  ok(await mw(thiefPage, 'call', thief, 'close'));
  const back = await leaderOf(tabs);
  await until(
    () => changes(back),
    (r) => r.at(-1) === 'leader',
    10_000,
    "'leader' in the tab that took the store back",
  );
  // Every tab's last event agrees with its role() (a tab that never changed is a follower).
  for (const tab of tabs) {
    expect((await changes(tab)).at(-1) ?? 'follower').toBe(ok(await mw(tab[0], 'call', tab[1], 'role')));
  }
  console.log(`role changes: ${JSON.stringify(await Promise.all(tabs.map(changes)))}`);
  for (const [page, id] of tabs) ok(await mw(page, 'call', id, 'close'));
});
