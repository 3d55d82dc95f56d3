// `tabs: 'share'` on the main thread: every tab that opens a store so uses it at once. The tabs
// elect a leader on a Web Lock (the election lock, election.ts); the leader starts the worker that
// hosts the store, whose TabServer (server.ts) answers the other tabs over BroadcastChannels;
// when the leader tab closes, reloads or crashes its locks are freed and the next tab in the
// lock's queue takes over (recovery replays the WAL). A follower's call (forwarder.ts) is sent
// with an id and a deadline, and:
//   (1) until a leader accepts it, it is re-sent to the current leader (a BroadcastChannel
//       message sent while nobody listens is lost, and so can an announcement be);
//   (2) once accepted, only that leader answers it; when that leader's term lock is freed (its
//       worker is gone) the call rejects `LeaderChanged`, outcome unknown;
//   (3) a call not accepted by its deadline rejects `LeaderChanged`, not written: a leader never
//       accepts a call past its deadline;
//   (4) calls on an iterator go only to the leader that started it.
// So nothing hangs and no call runs twice. This file routes each call (routes.ts) and holds the
// tab's life: its tab lock, the first open, the back/forward cache, the end. Browser main thread
// (Web Locks, BroadcastChannel).

import { MemWalError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { HostEvent, WireOpenOptions } from '../protocol.js';
import { type ClientLink, type ClientRole, fromWire, type LinkSink, locks, type Remote, uuid, type WorkerLike } from '../worker-link.js';
import { Election, type Term } from './election.js';
import { Forwarder, type Served } from './forwarder.js';
import { tabLockName } from './names.js';
import { type HostMethod, isTabMethod, TAB_ROUTES } from './routes.js';

export { ACCEPT_TIMEOUT_MS, RESEND_MS } from './forwarder.js';

/** How long close/abort wait for the leader to let go of this tab's iterators. */
const BYE_TIMEOUT_MS = 1000;

/**
 * The link of a client opened with `tabs: 'share'`: routes every call to this tab's worker while
 * this tab leads, else to the leader tab's worker, and takes over when the leader goes. Created
 * by `openMemWal`; the election starts when the client starts the link.
 */
export class TabsLink implements ClientLink {
  readonly remote: Remote;
  private readonly name: string;
  private readonly tab = uuid();
  private readonly wire: WireOpenOptions;
  private sink: LinkSink | undefined;
  private readonly forwarder: Forwarder;
  private readonly election: Election;
  private readonly iterators = new Map<number, { term: string; hostId: number }>();
  private nextIteratorId = 1;
  private releaseTabLock!: () => void;
  private readonly tabLockHeld: Promise<void>;
  private ended = false;
  /** The role last told to the client (it starts a follower). */
  private toldRole: ClientRole = 'follower';
  private opened: Promise<void> | undefined;
  private settleOpen: ((e?: MemWalError) => void) | undefined;
  private readonly cleanups: (() => void)[] = [];

  constructor(wire: WireOpenOptions, options: { workerUrl?: string | URL; worker?: WorkerLike }, logger: Logger) {
    const lm = locks();
    if (!lm || typeof BroadcastChannel !== 'function') {
      throw new MemWalError('NotSupported', "option tabs: 'share' needs Web Locks and BroadcastChannel (a current browser page)");
    }
    this.name = wire.name;
    this.wire = wire;
    const link = this;
    this.forwarder = new Forwarder(this.name, this.tab, lm, {
      leads: () => this.election.leads,
      suspended: () => this.election.suspended,
      deliver: (e) => this.deliver(e),
      adopted: () => this.sink?.served?.(),
    });
    this.election = new Election({
      name: this.name,
      wire,
      options,
      logger,
      lockManager: lm,
      forwarder: this.forwarder,
      ended: () => this.ended,
      callLocal: (local, method, args) => this.callLocal(local, method, args),
      deliver: (e) => this.deliver(e),
      roleMayHaveChanged: () => this.roleMayHaveChanged(),
      get settleOpen() {
        return link.settleOpen;
      },
    });
    this.tabLockHeld = new Promise<void>((granted) => {
      const held = new Promise<void>((release) => (this.releaseTabLock = release));
      lm.request(tabLockName(this.name, this.tab), () => (granted(), held)).catch(() => granted());
    });
    const remote: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const method of Object.keys(TAB_ROUTES) as HostMethod[]) remote[method] = (...args) => this.route(method, args);
    this.remote = remote as unknown as Remote; // one function per host method, each routed as TAB_ROUTES says
  }

  role(): ClientRole {
    return this.election.leads ? 'leader' : 'follower';
  }

  /** Tell the client when `role()` changed: this tab took the store over, or stopped hosting it. */
  private roleMayHaveChanged(): void {
    const role = this.role();
    if (role === this.toldRole || this.ended) return;
    this.toldRole = role;
    this.sink?.role?.(role);
  }

  start(sink: LinkSink): void {
    this.sink = sink;
    this.forwarder.start();
    const target = globalThis as Partial<EventTarget>;
    if (typeof target.addEventListener === 'function') {
      const onHide = (ev: Event): void => this.onPageHide(ev as PageTransitionEvent);
      const onShow = (ev: Event): void => this.onPageShow(ev as PageTransitionEvent);
      target.addEventListener('pagehide', onHide);
      target.addEventListener('pageshow', onShow);
      this.cleanups.push(() => {
        target.removeEventListener!('pagehide', onHide);
        target.removeEventListener!('pageshow', onShow);
      });
    }
    // The leader learns of this tab's death through its tab lock: hold it before saying hello.
    void this.tabLockHeld.then(() => {
      if (this.ended) return;
      this.forwarder.hello();
      this.election.run();
    });
  }

  // ------------------------------------------------------------------ routing

  private route(method: HostMethod, args: unknown[]): Promise<unknown> {
    switch (TAB_ROUTES[method]) {
      case 'open':
        return this.open();
      case 'iterator':
        return this.send(method, args).then(({ value, term }) => {
          const id = this.nextIteratorId++;
          this.iterators.set(id, { term, hostId: value as number });
          return id;
        });
      case 'page': {
        const it = this.iterators.get(args[0] as number);
        if (!it) {
          if (method === 'release') return Promise.resolve();
          return Promise.reject(new MemWalError('InvalidArgument', `iterator ${String(args[0])} is not open`));
        }
        if (method === 'release') this.iterators.delete(args[0] as number);
        return this.send(method, [it.hostId, ...args.slice(1)], it.term).then(({ value }) => {
          if ((value as { done?: boolean } | undefined)?.done) this.iterators.delete(args[0] as number);
          return value;
        });
      }
      case 'leave':
        return this.leave(method === 'close' ? 'close' : 'abort');
      default:
        return this.send(method, args).then(({ value }) => value);
    }
  }

  /** To this tab's worker while it leads (or the term `pin` names it), else forwarded. */
  private send(method: HostMethod, args: unknown[], pin?: string): Promise<Served> {
    const local = this.election.local;
    if (local?.ready && (pin === undefined || pin === local.term)) return this.callLocal(local, method, args);
    if (!isTabMethod(method)) return Promise.reject(new MemWalError('InvalidArgument', `tabs: '${method}' cannot be called by a tab`));
    return this.forwarder.forward(method, args, pin);
  }

  private callLocal(local: Term, method: HostMethod, args: unknown[]): Promise<Served> {
    return new Promise<Served>((resolve, reject) => {
      local.pending.add(reject);
      const fn = local.link.remote[method] as (...a: unknown[]) => Promise<unknown>; // `args` are what the client passed for `method`
      fn(...args)
        .then(
          (value) => resolve({ value, term: local.term }),
          (e: unknown) => reject(fromWire(e, method)),
        )
        .finally(() => local.pending.delete(reject));
    });
  }

  private deliver(e: HostEvent): void {
    // A term's store closing is not this client's: the next leader reopens it.
    if (e.memwalEvent === 'state' && e.state === 'closed') return;
    this.sink?.event(e);
  }

  // ------------------------------------------------------------------ the tab's life

  /** The first open: as leader (election.ts), or by joining the leader (re-sent across leader changes). */
  private open(): Promise<void> {
    this.opened ??= new Promise<void>((resolve, reject) => {
      const timeoutMs = this.wire.lockTimeoutMs === undefined ? Number.POSITIVE_INFINITY : Math.max(this.wire.lockTimeoutMs, 2000);
      this.settleOpen = (e) => {
        this.settleOpen = undefined;
        if (e) reject(e);
        else resolve();
      };
      const expired = (): MemWalError => new MemWalError('Locked', `no tab could open store ${this.name} within ${timeoutMs} ms`);
      const join = (): void => {
        this.forwarder.forward('open', [{ ...this.wire }], undefined, timeoutMs, expired).then(
          () => {
            this.settleOpen?.();
            this.election.prepareStandby();
          },
          (e: MemWalError) => {
            if (!this.settleOpen) return; // we opened as leader meanwhile
            if (e.code === 'LeaderChanged')
              join(); // the leader went away during the join: join the next one
            else this.settleOpen(e);
          },
        );
      };
      join();
    });
    return this.opened;
  }

  /** close/abort/detach: the leader's worker closes (aborts) the store; a follower lets go of its iterators there. */
  private async leave(method: 'close' | 'abort'): Promise<void> {
    const local = this.election.local;
    if (local?.ready) {
      await this.callLocal(local, method, []);
      return;
    }
    if (this.forwarder.leader === undefined) return;
    await this.forwarder.forward(method, [], undefined, BYE_TIMEOUT_MS).catch(() => undefined); // we leave all the same
  }

  async end(_detach: boolean): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const closed = new MemWalError('Closed', `store ${this.name} is closed`);
    this.forwarder.end(closed);
    await this.election.end(closed);
    this.releaseTabLock();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  /** Into the back/forward cache: a frozen page must not hold the store, nor wait in the election. */
  private onPageHide(ev: PageTransitionEvent): void {
    if (!ev.persisted || this.ended) return;
    this.election.suspend();
  }

  private onPageShow(ev: PageTransitionEvent): void {
    if (!ev.persisted || this.ended || !this.election.suspended) return;
    this.election.resume();
  }
}
