// The leader side of `tabs: 'share'`, in the worker that hosts the store: it answers the other
// tabs' calls (and its own tab's, while that tab hands calls over) on one BroadcastChannel per
// tab, with the guarantees the tabs rely on (tabs.ts):
//   (1) it holds its term lock before it announces itself, and until it stops answering, so a
//       tab that is granted that lock knows no answer of the term will ever come;
//   (2) a call is taken at most once (ids are remembered until the tab says it has moved on),
//       and `accepted` is posted before the call starts;
//   (3) a call past its deadline, or one arriving after `stopAccepting()`, is never taken: the
//       tab re-sends it to the next leader or rejects it as not written.
// Browser workers (Web Locks, BroadcastChannel).

import type { MemWal } from '../../engine/memwal.js';
import { MemWalError, errorToWire } from '../../util/errors.js';
import type { HostApi, HostError, HostEvent, TabControlMessage, TabReply, TabRequest } from '../protocol.js';
import { isTabMethod } from './routes.js';
import { controlChannelName, tabChannelName, tabLockName, termLockName } from './names.js';

interface Tab {
  channel: BroadcastChannel;
  /** The tab's connection (host.ts `makeHostApi`), attached to the open store. */
  api: HostApi;
  /** Ids taken and not yet known to be settled on the tab's side. */
  seen: Set<number>;
  /** Stops watching the tab's lifetime lock. */
  watch: AbortController;
}

/** Options of `TabServer.start`. */
export interface TabServerOptions {
  /** The store's name (channel and lock names derive from it). */
  name: string;
  /** This term's id. */
  leader: string;
  store: MemWal;
  /** A new connection API attached to the open store, posting its events to `port`. */
  attach(port: { postMessage(message: unknown): void }): HostApi;
}

/** Serves the sharing tabs for one term of this worker's leadership. */
export class TabServer {
  private accepting = true;
  private stopped = false;
  private readonly tabs = new Map<string, Tab>();
  private readonly control: BroadcastChannel;
  private readonly unsubscribe: () => void;

  private constructor(
    private readonly term: TabServerOptions,
    private readonly locks: LockManager,
    private readonly releaseTerm: () => void,
  ) {
    this.control = new BroadcastChannel(controlChannelName(this.term.name));
    this.control.onmessage = (ev: MessageEvent<TabControlMessage>) => {
      if (ev.data?.memwalTabs === 'hello') this.welcome(ev.data.tab);
    };
    // 'closed' is this term's end, not the store's: the next leader reopens it.
    this.unsubscribe = this.term.store.onStateChange((state) => {
      if (state !== 'closed') this.broadcast({ memwalEvent: 'state', state });
    });
  }

  /**
   * Take the term lock, then start answering and announce the term. Rejects `NotSupported`
   * without Web Locks or BroadcastChannel.
   */
  static async start(term: TabServerOptions): Promise<TabServer> {
    const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
    if (!locks || typeof BroadcastChannel !== 'function') {
      throw new MemWalError('NotSupported', "tabs: 'share' needs Web Locks and BroadcastChannel in the worker");
    }
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await new Promise<void>((granted, reject) => {
      locks.request(termLockName(term.name, term.leader), () => (granted(), released)).catch(reject);
    });
    const server = new TabServer(term, locks, release);
    server.control.postMessage({ memwalTabs: 'leader', leader: term.leader } satisfies TabControlMessage);
    return server;
  }

  /** Post `event` (a state change, a warning) to every tab. */
  broadcast(event: HostEvent): void {
    if (!this.accepting) return;
    for (const tab of this.tabs.values()) this.reply(tab, { memwalTabs: 'event', leader: this.term.leader, event });
  }

  /** Take no more calls (the store is closing); calls already taken still get their answers. */
  stopAccepting(): void {
    if (!this.accepting) return;
    this.accepting = false;
    this.control.postMessage({ memwalTabs: 'resign', leader: this.term.leader } satisfies TabControlMessage);
  }

  /** Stop for good: close every channel and free the term lock (tabs then give up on this term). */
  stop(): void {
    if (this.stopped) return;
    this.stopAccepting();
    this.stopped = true;
    this.unsubscribe();
    for (const id of [...this.tabs.keys()]) this.drop(id);
    this.control.close();
    this.releaseTerm();
  }

  /** A tab said hello: open its channel (once) and tell it there who leads. */
  private welcome(id: string): void {
    if (!this.accepting || typeof id !== 'string') return;
    const tab = this.tabs.get(id) ?? this.connect(id);
    this.reply(tab, { memwalTabs: 'welcome', leader: this.term.leader });
  }

  private connect(id: string): Tab {
    const channel = new BroadcastChannel(tabChannelName(this.term.name, id));
    const tab: Tab = {
      channel,
      api: this.term.attach({
        postMessage: (event) => this.reply(tab, { memwalTabs: 'event', leader: this.term.leader, event: event as HostEvent }),
      }),
      seen: new Set(),
      watch: new AbortController(),
    };
    this.tabs.set(id, tab);
    channel.onmessage = (ev: MessageEvent<TabRequest>) => this.onRequest(id, tab, ev.data);
    // The tab holds this lock while it lives; we are granted it once the tab is gone.
    this.locks.request(tabLockName(this.term.name, id), { signal: tab.watch.signal }, () => this.drop(id)).catch(() => undefined); // AbortError: we stopped watching
    return tab;
  }

  /** Forget tab `id`: its iterators and signals go, its channel closes. */
  private drop(id: string): void {
    const tab = this.tabs.get(id);
    if (!tab) return;
    this.tabs.delete(id);
    tab.watch.abort();
    tab.channel.close();
    tab.api.detach?.().catch(() => undefined); // attached connections only release their iterators
  }

  private onRequest(id: string, tab: Tab, msg: TabRequest | undefined): void {
    if (msg?.leader !== this.term.leader) return;
    if (msg.memwalTabs === 'bye') {
      this.drop(id);
      return;
    }
    if (msg.memwalTabs !== 'call' || !this.accepting || Date.now() > msg.deadline) return;
    for (const seen of tab.seen) if (seen < msg.oldest) tab.seen.delete(seen);
    if (tab.seen.has(msg.id)) return; // a re-send of a call already taken: its answer is on its way
    tab.seen.add(msg.id);
    const { leader } = this.term;
    this.reply(tab, { memwalTabs: 'accepted', leader, id: msg.id });
    const run = isTabMethod(msg.method)
      ? (tab.api[msg.method] as (...args: unknown[]) => Promise<unknown>)(...msg.args) // the tab sent this method's arguments
      : Promise.reject(new MemWalError('InvalidArgument', `tabs: '${String(msg.method)}' cannot be called by a tab`));
    const fail = (e: unknown): void => void this.reply(tab, { memwalTabs: 'error', leader, id: msg.id, error: this.wireError(e) });
    run.then((value) => {
      if (!this.reply(tab, { memwalTabs: 'result', leader, id: msg.id, value }))
        fail(new MemWalError('IOError', 'the answer could not be posted to the tab'));
    }, fail);
  }

  /** `e` as the tab gets it: a store closing under a taken call is this leader going away. */
  private wireError(e: unknown): HostError {
    const w = (e as Partial<HostError> | null)?.memwalError ?? errorToWire(e, 'memwal leader tab');
    if (w.code === 'Closed' && !this.accepting) {
      return { memwalError: { code: 'LeaderChanged', message: `the leader tab closed the store under this call: ${w.message}` } };
    }
    return { memwalError: w };
  }

  /** Post `message` to the tab; false when it cannot be cloned or the tab was dropped meanwhile. */
  private reply(tab: Tab, message: TabReply): boolean {
    try {
      tab.channel.postMessage(message);
      return true;
    } catch {
      return false;
    }
  }
}
