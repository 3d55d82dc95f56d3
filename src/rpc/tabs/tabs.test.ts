// A follower's side of tabs: 'share' (TabsLink) against a leader played by the test over real
// BroadcastChannels: guarantees (1)-(3) of tabs.ts — re-sent until accepted, LeaderChanged with
// outcome unknown when the accepting leader goes, LeaderChanged not written past the deadline.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { schemaToWire } from '../client-wire.js';
import { TestLocks } from '../locks.test-util.js';
import type { TabControlMessage, TabReply, TabRequest } from '../protocol.js';
import { controlChannelName, electionLockName, tabChannelName, termLockName } from './names.js';
import { ACCEPT_TIMEOUT_MS, TabsLink } from './tabs.js';
import { quiet, rejection, schema, stubGlobalWorker } from '../rpc.test-util.js';
import { MemoryStorage } from '../../storage/memory.js';

const store = 'tabs-follower';
const term = 'term-A';
let locks: TestLocks;
let link: TabsLink;
let releaseElection: () => void;
let releaseTerm: () => void;
const channels: BroadcastChannel[] = [];

/** The leader, played here: sees every call of the tab, and answers as `respond` says. */
let seen: TabRequest[];
/** What the link told its client through `role` (onRoleChange). */
let roleChanges: string[];
/** How often the link told its client that calls go to another leader now (its watches subscribe there again). */
let served: number;
/** The term the played leader welcomes tabs as. */
let welcomeAs: string;
let respond: (call: Extract<TabRequest, { memwalTabs: 'call' }>, reply: (m: TabReply) => void) => void;

function channel(name: string): BroadcastChannel {
  const c = new BroadcastChannel(name);
  channels.push(c);
  return c;
}

beforeEach(() => {
  locks = new TestLocks();
  vi.stubGlobal('navigator', { locks });
  seen = [];
  roleChanges = [];
  served = 0;
  welcomeAs = term;
  // Another tab leads: it holds the election and its worker the term lock.
  releaseElection = locks.hold(electionLockName(store));
  releaseTerm = locks.hold(termLockName(store, term));
  const control = channel(controlChannelName(store));
  control.onmessage = (ev: MessageEvent<TabControlMessage>) => {
    if (ev.data.memwalTabs !== 'hello') return;
    const tabChannel = channel(tabChannelName(store, ev.data.tab));
    const reply = (m: TabReply): void => tabChannel.postMessage(m);
    tabChannel.onmessage = (e: MessageEvent<TabRequest>) => {
      seen.push(e.data);
      if (e.data.memwalTabs === 'call') respond(e.data, reply);
    };
    reply({ memwalTabs: 'welcome', leader: welcomeAs });
  };
  link = new TabsLink({ name: store, schema: schemaToWire(schema) }, {}, quiet);
  link.start({ event: () => undefined, dead: () => undefined, role: (r) => roleChanges.push(r), served: () => served++ });
});

afterEach(async () => {
  vi.useRealTimers();
  await link.end(true);
  releaseElection();
  releaseTerm();
  for (const c of channels.splice(0)) c.close();
  vi.unstubAllGlobals();
});

const sync = (): Promise<unknown> => (link.remote as unknown as { sync(): Promise<unknown> }).sync();

describe('TabsLink (a follower)', () => {
  it('is a follower and forwards a call to the leader, which answers it', async () => {
    respond = (call, reply) => {
      reply({ memwalTabs: 'accepted', leader: term, id: call.id });
      reply({ memwalTabs: 'result', leader: term, id: call.id, value: { position: 7 } });
    };
    expect(await sync()).toEqual({ position: 7 });
    expect(link.role()).toBe('follower');
  });

  it('tells its client once per leader its calls go to (so its watches subscribe there again)', async () => {
    respond = (call, reply) => {
      reply({ memwalTabs: 'accepted', leader: call.leader, id: call.id });
      reply({ memwalTabs: 'result', leader: call.leader, id: call.id, value: { position: 1 } });
    };
    await sync();
    await sync();
    expect(served).toBe(1);
    const releaseB = locks.hold(termLockName(store, 'term-B'));
    welcomeAs = 'term-B';
    try {
      channel(controlChannelName(store)).postMessage({ memwalTabs: 'leader', leader: 'term-B' } satisfies TabControlMessage);
      await vi.waitFor(() => expect(served).toBe(2));
      await sync();
      expect(served).toBe(2);
    } finally {
      releaseB();
    }
  });

  it('re-sends a call the leader has not accepted, with the same id, until it is accepted', async () => {
    respond = (call, reply) => {
      if (seen.filter((m) => m.memwalTabs === 'call').length < 3) return; // lost, as a BroadcastChannel message to nobody is
      reply({ memwalTabs: 'accepted', leader: term, id: call.id });
      reply({ memwalTabs: 'result', leader: term, id: call.id, value: { position: 1 } });
    };
    expect(await sync()).toEqual({ position: 1 });
    const ids = seen.filter((m) => m.memwalTabs === 'call').map((m) => (m as { id: number }).id);
    expect(ids.length).toBeGreaterThanOrEqual(3);
    expect(new Set(ids).size).toBe(1);
  });

  it('a forwarded put carries its rows as they were at the call, in every send, whatever the caller changes meanwhile', async () => {
    respond = (call, reply) => {
      if (seen.filter((m) => m.memwalTabs === 'call').length < 3) return; // lost: re-sent
      reply({ memwalTabs: 'accepted', leader: term, id: call.id });
      reply({ memwalTabs: 'result', leader: term, id: call.id, value: { rows: 1, position: 1, durable: true } });
    };
    const rows = [{ id: 1, name: 'a' }];
    const pending = (link.remote as unknown as { put(data: unknown): Promise<unknown> }).put(rows);
    rows[0]!.name = 'changed'; // the caller reuses its rows as soon as put() returns
    rows.push({ id: 2, name: 'b' });
    await pending;
    const sent = seen.flatMap((m) => (m.memwalTabs === 'call' ? [m.args[0]] : []));
    expect(sent.length).toBeGreaterThanOrEqual(3);
    expect(sent).toEqual(sent.map(() => [{ id: 1, name: 'a' }]));
  });

  it('a forwarded call whose arguments cannot be cloned rejects InvalidArgument', async () => {
    respond = () => undefined;
    const e = await rejection((link.remote as unknown as { put(data: unknown): Promise<unknown> }).put([{ id: 1, name: () => 1 }]));
    expect(e.code).toBe('InvalidArgument');
  });

  it('a call the leader accepted rejects LeaderChanged (outcome unknown) once its term lock is free', async () => {
    respond = (call, reply) => reply({ memwalTabs: 'accepted', leader: term, id: call.id });
    const pending = sync();
    await vi.waitFor(() => expect(seen.length).toBeGreaterThan(0));
    await new Promise((r) => setTimeout(r, 20));
    releaseTerm(); // the leader's worker is gone
    const e = await rejection(pending);
    expect(e.code).toBe('LeaderChanged');
    expect(e.message).toMatch(/outcome unknown/);
  });

  it('a call no leader accepts rejects LeaderChanged (not written) after its deadline, and the leader was told the deadline', async () => {
    respond = () => undefined; // a leader that never takes it
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const pending = sync();
    const failed = rejection(pending);
    await vi.advanceTimersByTimeAsync(ACCEPT_TIMEOUT_MS + 2000);
    const e = await failed;
    expect(e.code).toBe('LeaderChanged');
    expect(e.message).toMatch(/not written/);
    const call = seen.find((m) => m.memwalTabs === 'call') as { deadline: number } | undefined;
    expect(call?.deadline).toBeLessThanOrEqual(Date.now());
  });

  it("tells its client each role change: 'leader' when it takes over, 'follower' when its worker dies, 'leader' when it stands again", async () => {
    const stub = stubGlobalWorker({ resolveStorage: () => new MemoryStorage() });
    respond = (call, reply) => {
      reply({ memwalTabs: 'accepted', leader: term, id: call.id });
      reply({ memwalTabs: 'result', leader: term, id: call.id, value: {} });
    };
    try {
      await sync(); // a follower of term A: no role change
      expect(roleChanges).toEqual([]);
      releaseElection(); // the leader tab is gone: this tab is next in the election lock's queue
      await vi.waitFor(() => expect(roleChanges).toEqual(['leader']), { timeout: 5000 });
      expect(link.role()).toBe('leader');
      stub.started.at(-1)!.fireError('boom'); // this tab's worker dies: it steps down and stands again
      await vi.waitFor(() => expect(roleChanges).toEqual(['leader', 'follower', 'leader']), { timeout: 5000 });
      expect(link.role()).toBe('leader');
    } finally {
      stub.restore();
    }
  });
});
