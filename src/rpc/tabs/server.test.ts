// The leader's side of tabs: 'share' (TabServer) against a tab played by the test over real
// BroadcastChannels (Node has them): guarantees (1)-(3) of server.ts, which the browser e2e
// (e2e/client-share.spec.ts) cannot provoke on purpose.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { MemWal } from '../../engine/memwal.js';
import type { WriterState } from '../../metrics/stats.js';
import type { HostApi, TabControlMessage, TabReply, TabRequest } from '../protocol.js';
import { TabServer } from './server.js';
import { controlChannelName, tabChannelName, tabLockName, termLockName } from './names.js';
import { TestLocks } from '../locks.test-util.js';

const store = 'tabhost';
const leader = 'term-1';
let locks: TestLocks;
let server: TabServer;
let calls: { method: string; args: unknown[] }[];
let release: (() => void) | undefined;
const channels: BroadcastChannel[] = [];

function channel(name: string): BroadcastChannel {
  const c = new BroadcastChannel(name);
  channels.push(c);
  return c;
}

/** Messages arriving on `c`, collected. */
function collect<T>(c: BroadcastChannel): T[] {
  const got: T[] = [];
  c.onmessage = (ev: MessageEvent<T>) => got.push(ev.data);
  return got;
}

const until = async (cond: () => boolean, ms = 2000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

beforeEach(async () => {
  locks = new TestLocks();
  vi.stubGlobal('navigator', { locks });
  calls = [];
  const fakeStore = { onStateChange: (_l: (s: WriterState) => void) => () => undefined } as unknown as MemWal;
  const api = {
    put: async (...args: unknown[]) => {
      calls.push({ method: 'put', args });
      if (args[0] === 'hold') await new Promise<void>((r) => (release = r));
      return { rows: 1, position: calls.length, durable: true };
    },
    detach: async () => undefined,
    compactionStats: async () => ({ tag: 'compactionStats' }),
    readStats: async () => ({ tag: 'readStats' }),
    compact: async () => ({ tag: 'compact' }),
    getMany: async (keys: { id: number }[]) => keys.map(({ id }) => (id < 0 ? undefined : { id, tag: 'getMany' })),
  };
  // The methods these tests call, of a connection's API (rpc/host.ts makeHostApi).
  server = await TabServer.start({ name: store, leader, store: fakeStore, attach: () => api as unknown as HostApi });
});

afterEach(() => {
  server.stop();
  for (const c of channels.splice(0)) c.close();
  vi.unstubAllGlobals();
});

/** Say hello as tab `tab` (holding its tab lock, as a live tab does) and wait for the welcome on its channel. */
async function join(tab: string): Promise<{ send(m: TabRequest): void; replies: TabReply[] }> {
  void locks.request(tabLockName(store, tab), () => new Promise(() => undefined));
  const mine = channel(tabChannelName(store, tab));
  const replies = collect<TabReply>(mine);
  channel(controlChannelName(store)).postMessage({ memwalTabs: 'hello', tab } satisfies TabControlMessage);
  await until(() => replies.some((r) => r.memwalTabs === 'welcome'));
  return { send: (m) => mine.postMessage(m), replies };
}

const call = (id: number, deadline = Date.now() + 10_000, args: unknown[] = ['rows']): Extract<TabRequest, { memwalTabs: 'call' }> => ({
  memwalTabs: 'call',
  leader,
  id,
  method: 'put',
  args,
  deadline,
  oldest: id,
});

describe('TabServer', () => {
  it('holds its term lock while it serves, and frees it on stop', () => {
    expect(locks.held.has(termLockName(store, leader))).toBe(true);
    server.stop();
    return until(() => !locks.held.has(termLockName(store, leader)));
  });

  it("posts 'accepted' before it answers, and runs a call sent twice once", async () => {
    const tab = await join('a');
    tab.send(call(1));
    tab.send(call(1));
    await until(() => tab.replies.some((r) => r.memwalTabs === 'result'));
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toHaveLength(1);
    const kinds = tab.replies.filter((r) => r.memwalTabs !== 'welcome').map((r) => r.memwalTabs);
    expect(kinds).toEqual(['accepted', 'result']);
  });

  it('never takes a call past its deadline, nor one meant for another term', async () => {
    const tab = await join('b');
    tab.send(call(1, Date.now() - 1));
    tab.send({ ...call(2), leader: 'term-0' });
    tab.send(call(3));
    await until(() => tab.replies.some((r) => r.memwalTabs === 'result'));
    expect(calls).toHaveLength(1);
    expect(tab.replies.filter((r) => r.memwalTabs === 'accepted').map((r) => (r as { id: number }).id)).toEqual([3]);
  });

  it("serves a tab's compactionStats, readStats and compact, as every other call a follower's client makes", async () => {
    const tab = await join('d');
    const methods = ['compactionStats', 'readStats', 'compact'] as const;
    for (const [i, method] of methods.entries()) tab.send({ ...call(i + 1, undefined, []), method });
    await until(() => tab.replies.filter((r) => r.memwalTabs === 'result' || r.memwalTabs === 'error').length === 3);
    const values = tab.replies.filter((r) => r.memwalTabs === 'result').map((r) => (r as { value: unknown }).value);
    expect(values).toEqual(methods.map((tag) => ({ tag })));
  });

  it("serves a tab's getMany: one call, answered in the order of its keys", async () => {
    const tab = await join('e');
    tab.send({ ...call(1, undefined, [[{ id: 3 }, { id: -1 }, { id: 1 }]]), method: 'getMany' });
    await until(() => tab.replies.some((r) => r.memwalTabs === 'result' || r.memwalTabs === 'error'));
    const result = tab.replies.find((r) => r.memwalTabs === 'result') as { value: unknown } | undefined;
    expect(result?.value).toEqual([{ id: 3, tag: 'getMany' }, undefined, { id: 1, tag: 'getMany' }]);
  });

  it('after stopAccepting a new call is left for the next leader, while a call it took still gets its answer', async () => {
    const tab = await join('c');
    tab.send(call(1, undefined, ['hold']));
    await until(() => calls.length === 1);
    const control = collect<TabControlMessage>(channel(controlChannelName(store)));
    server.stopAccepting();
    tab.send(call(2));
    await until(() => control.some((m) => m.memwalTabs === 'resign'));
    release!();
    await until(() => tab.replies.some((r) => r.memwalTabs === 'result'));
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toHaveLength(1);
    expect(tab.replies.filter((r) => r.memwalTabs === 'accepted').map((r) => (r as { id: number }).id)).toEqual([1]);
  });
});
