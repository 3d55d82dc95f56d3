// `tabs: 'share'` on the main thread: every tab that opens a store so uses it at once. The tabs
// elect a leader on a Web Lock (the election lock); the leader starts the worker that hosts the
// store, whose TabServer (tab-host.ts) answers the other tabs over BroadcastChannels; when the
// leader tab closes, reloads or crashes its locks are freed and the next tab in the lock's
// queue takes over (recovery replays the WAL). A call is sent with an id and a deadline, and:
//   (1) until a leader accepts it, it is re-sent to the current leader (a BroadcastChannel
//       message sent while nobody listens is lost, and so can an announcement be);
//   (2) once accepted, only that leader answers it; when that leader's term lock is freed (its
//       worker is gone) the call rejects `LeaderChanged`, outcome unknown;
//   (3) a call not accepted by its deadline rejects `LeaderChanged`, not written: a leader never
//       accepts a call past its deadline;
//   (4) calls on an iterator go only to the leader that started it.
// So nothing hangs and no call runs twice. Browser main thread (Web Locks, BroadcastChannel).

import type { HostEvent, TabControlMessage, TabReply, TabRequest, WireOpenOptions } from './protocol.js';
import { MemWalError } from '../errors.js';
import type { Logger } from '../options.js';
import { controlChannelName, electionLockName, tabChannelName, tabLockName, termLockName } from './tab-names.js';
import {
  type ClientLink,
  type ClientRole,
  type LinkSink,
  type Remote,
  type WorkerLike,
  type WorkerLink,
  fromWire,
  locks,
  openWorkerLink,
  uuid,
} from './worker-link.js';

/**
 * A call no leader has accepted yet is sent again after this long, doubling up to RESEND_MAX_MS
 * (a leader's welcome re-sends at once; this covers lost messages). A tab without a leader says
 * hello this often.
 */
export const RESEND_MS = 100;
const RESEND_MAX_MS = 1000;
/** How long a forwarded call waits for a leader to accept it before it rejects `LeaderChanged` (not written). */
export const ACCEPT_TIMEOUT_MS = 10_000;
/** Past its deadline a call is given this long for an `accepted` already on its way. */
const DEADLINE_GRACE_MS = 1000;
/** How long close/abort wait for the leader to let go of this tab's iterators. */
const BYE_TIMEOUT_MS = 1000;

/** A call forwarded to a leader, until it settles. */
interface Forwarded {
  id: number;
  method: string;
  args: unknown[];
  /** Only this term may take it (iterator calls). */
  pin: string | undefined;
  /** Wall-clock ms after which no leader takes it. */
  deadline: number;
  /** The error when no leader took it in time. */
  expired(): MemWalError;
  /** Times sent so far (re-sends back off). */
  sends: number;
  /** The term it was last sent to, and when (Date.now()). */
  sentTo: string | undefined;
  sentAt: number;
  /** The term that accepted it. */
  acceptedBy: string | undefined;
  resolve(r: Served): void;
  reject(e: MemWalError): void;
}

/** A call's value and the term that served it. */
interface Served {
  value: unknown;
  term: string;
}

/** This tab's own term as leader: its worker, and whether the store is open there. */
interface Term {
  term: string;
  link: WorkerLink;
  ready: boolean;
  /** Rejecters of calls in flight on the worker. */
  pending: Set<(e: MemWalError) => void>;
}

const leaderChanged = (message: string): MemWalError => new MemWalError('LeaderChanged', message);

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
  private readonly lockManager: LockManager;
  private readonly channel: BroadcastChannel;
  private readonly control: BroadcastChannel;

  /** The term calls are sent to (learned from an announcement or a welcome). */
  private leader: string | undefined;
  /** Set while this tab leads (or is opening the store to lead). */
  private local: Term | undefined;
  /**
   * A follower's worker, started and connected ahead of need, so that taking over does not wait
   * for a worker to load (a few hundred ms; see the README's failover figures).
   */
  private standby: Promise<WorkerLink> | undefined;
  private readonly calls = new Map<number, Forwarded>();
  private nextCallId = 1;
  private readonly iterators = new Map<number, { term: string; hostId: number }>();
  private nextIteratorId = 1;
  /** Terms whose lock we wait on (granted = that leader is gone). */
  private readonly watched = new Map<string, AbortController>();
  private timer: ReturnType<typeof setInterval> | undefined;

  private campaign: AbortController | undefined;
  /** Ends this tab's current term as leader (frees the election lock). */
  private endTerm: (() => void) | undefined;
  private releaseTabLock!: () => void;
  private readonly tabLockHeld: Promise<void>;
  private ended = false;
  /** The page is in the back/forward cache: no campaigning until it is shown again. */
  private suspended = false;
  /** The role last told to the client (it starts a follower). */
  private toldRole: ClientRole = 'follower';

  private opened: Promise<void> | undefined;
  private settleOpen: ((e?: MemWalError) => void) | undefined;
  private readonly cleanups: (() => void)[] = [];

  constructor(
    wire: WireOpenOptions,
    private readonly options: { workerUrl?: string | URL; worker?: WorkerLike },
    private readonly logger: Logger,
  ) {
    const lm = locks();
    if (!lm || typeof BroadcastChannel !== 'function') {
      throw new MemWalError('NotSupported', "option tabs: 'share' needs Web Locks and BroadcastChannel (a current browser page)");
    }
    this.lockManager = lm;
    this.name = wire.name;
    this.wire = wire;
    this.channel = new BroadcastChannel(tabChannelName(this.name, this.tab));
    this.control = new BroadcastChannel(controlChannelName(this.name));
    this.tabLockHeld = new Promise<void>((granted) => {
      const held = new Promise<void>((release) => (this.releaseTabLock = release));
      lm.request(tabLockName(this.name, this.tab), () => (granted(), held)).catch(() => granted());
    });
    this.remote = new Proxy({} as Remote, {
      get: (_target, method) =>
        typeof method === 'string' && method !== 'then' ? (...args: unknown[]) => this.route(method, args) : undefined,
    });
  }

  role(): ClientRole {
    return this.local?.ready ? 'leader' : 'follower';
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
    this.channel.onmessage = (ev: MessageEvent<TabReply>) => this.onReply(ev.data);
    this.control.onmessage = (ev: MessageEvent<TabControlMessage>) => this.onControl(ev.data);
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
      this.hello();
      this.runForElection();
    });
  }

  // ------------------------------------------------------------------ routing

  private route(method: string, args: unknown[]): Promise<unknown> {
    switch (method) {
      case 'open':
        return this.open();
      case 'scanBatches':
      case 'tail':
        return this.send(method, args).then(({ value, term }) => {
          const id = this.nextIteratorId++;
          this.iterators.set(id, { term, hostId: value as number });
          return id;
        });
      case 'nextBatches':
      case 'nextEntries':
      case 'release': {
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
      case 'close':
      case 'abort':
      case 'detach':
        return this.leave(method);
      default:
        return this.send(method, args).then(({ value }) => value);
    }
  }

  /** To this tab's worker while it leads (or the term `pin` names it), else forwarded. */
  private send(method: string, args: unknown[], pin?: string): Promise<Served> {
    const local = this.local;
    if (local?.ready && (pin === undefined || pin === local.term)) return this.callLocal(local, method, args);
    return this.forward(method, args, pin);
  }

  private callLocal(local: Term, method: string, args: unknown[]): Promise<Served> {
    return new Promise<Served>((resolve, reject) => {
      local.pending.add(reject);
      const fn = (local.link.remote as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!;
      fn(...args)
        .then(
          (value) => resolve({ value, term: local.term }),
          (e: unknown) => reject(fromWire(e, method)),
        )
        .finally(() => local.pending.delete(reject));
    });
  }

  private forward(
    method: string,
    args: unknown[],
    pin: string | undefined,
    acceptWithinMs = ACCEPT_TIMEOUT_MS,
    expired = (): MemWalError =>
      leaderChanged(`no leader tab accepted ${method} on store ${this.name} within ${acceptWithinMs} ms; not written`),
  ): Promise<Served> {
    if (this.ended) return Promise.reject(new MemWalError('Closed', `store ${this.name} is closed`));
    if (pin !== undefined && pin !== this.leader) {
      return Promise.reject(leaderChanged('the leader tab that started this iterator is gone; not written'));
    }
    return new Promise<Served>((resolve, reject) => {
      const call: Forwarded = {
        id: this.nextCallId++,
        method,
        args,
        pin,
        deadline: Date.now() + acceptWithinMs,
        expired,
        sends: 0,
        sentTo: undefined,
        sentAt: 0,
        acceptedBy: undefined,
        resolve,
        reject,
      };
      this.calls.set(call.id, call);
      this.post(call);
      this.tick();
    });
  }

  /** Send `call` to its term (or the current leader); nothing when none is known yet. */
  private post(call: Forwarded): void {
    const to = call.pin ?? this.leader;
    if (to === undefined) return;
    call.sentTo = to;
    call.sentAt = Date.now();
    call.sends++;
    let oldest = call.id;
    for (const id of this.calls.keys()) if (id < oldest) oldest = id;
    const message: TabRequest = {
      memwalTabs: 'call',
      leader: to,
      id: call.id,
      method: call.method,
      args: call.args,
      deadline: call.deadline,
      oldest,
    };
    try {
      this.channel.postMessage(message);
    } catch (e) {
      this.settle(call, undefined, fromWire(e, call.method)); // an argument that cannot be cloned
    }
  }

  private settle(call: Forwarded, served: Served | undefined, error?: MemWalError): void {
    if (!this.calls.delete(call.id)) return;
    if (error) call.reject(error);
    else call.resolve(served!);
  }

  /**
   * Every RESEND_MS while a call waits to be accepted: deadlines, re-sends, and a hello while no
   * leader is known. Accepted calls need no timer: their leader's term lock tells when it is gone.
   */
  private tick(): void {
    if (this.timer !== undefined || this.ended) return;
    this.timer = setInterval(() => {
      const now = Date.now();
      let waiting = 0;
      for (const call of [...this.calls.values()]) {
        if (call.acceptedBy !== undefined) continue;
        if (now > call.deadline + DEADLINE_GRACE_MS) {
          this.settle(call, undefined, call.expired());
          continue;
        }
        waiting++;
        if (now - call.sentAt >= Math.min(RESEND_MS * 2 ** call.sends, RESEND_MAX_MS)) this.post(call);
      }
      if (this.leader === undefined && waiting > 0) this.hello();
      if (waiting === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    }, RESEND_MS);
  }

  // ------------------------------------------------------------------ leader discovery

  private hello(): void {
    if (!this.ended && !this.suspended) this.control.postMessage({ memwalTabs: 'hello', tab: this.tab } satisfies TabControlMessage);
  }

  private onControl(msg: TabControlMessage | undefined): void {
    if (msg?.memwalTabs === 'leader') {
      // A new term: tell its worker about this tab; its welcome brings the re-sends.
      if (this.adopt(msg.leader)) this.hello();
    } else if (msg?.memwalTabs === 'resign' && msg.leader === this.leader) {
      // It answers what it accepted; the rest waits for the next leader.
      this.leader = undefined;
      for (const call of [...this.calls.values()]) {
        if (call.pin === msg.leader && call.acceptedBy === undefined) {
          this.settle(call, undefined, leaderChanged('the leader tab stopped before it took this iterator call; not written'));
        }
      }
      this.hello();
    }
  }

  private onReply(msg: TabReply | undefined): void {
    if (!msg) return;
    if (msg.memwalTabs === 'welcome') {
      this.adopt(msg.leader);
      if (msg.leader !== this.leader) return;
      for (const call of this.calls.values()) if (call.acceptedBy === undefined && call.pin === undefined) this.post(call);
      return;
    }
    if (msg.memwalTabs === 'event') {
      if (msg.leader === this.leader && !this.local?.ready) this.deliver(msg.event);
      return;
    }
    const call = this.calls.get(msg.id);
    if (!call || call.sentTo !== msg.leader) return;
    if (msg.memwalTabs === 'accepted') call.acceptedBy = msg.leader;
    else if (msg.memwalTabs === 'result') this.settle(call, { value: msg.value, term: msg.leader });
    else this.settle(call, undefined, fromWire(msg.error, call.method));
  }

  /** Route to term `term` from now on and watch its lock; false when it already was the leader. */
  private adopt(term: string): boolean {
    if (this.ended || term === this.leader) return false;
    this.leader = term;
    if (!this.watched.has(term)) {
      const watch = new AbortController();
      this.watched.set(term, watch);
      // Its worker holds the term lock from before its announcement until it stops answering.
      this.lockManager.request(termLockName(this.name, term), { signal: watch.signal }, () => this.termEnded(term)).catch(() => undefined); // AbortError: we stopped watching
    }
    return true;
  }

  /** Term `term` is over (its lock was granted to us): its accepted calls will never be answered. */
  private termEnded(term: string): void {
    this.watched.delete(term);
    if (this.leader === term) {
      this.leader = undefined;
      this.hello();
    }
    for (const call of [...this.calls.values()]) {
      if (call.acceptedBy === term) {
        this.settle(
          call,
          undefined,
          leaderChanged(`the leader tab of store ${this.name} went away after it accepted ${call.method}; outcome unknown`),
        );
      } else if (call.pin === term) {
        this.settle(call, undefined, leaderChanged('the leader tab that started this iterator went away; not written'));
      }
    }
  }

  private deliver(e: HostEvent): void {
    // A term's store closing is not this client's: the next leader reopens it.
    if (e.memwalEvent === 'state' && e.state === 'closed') return;
    this.sink?.event(e);
  }

  // ------------------------------------------------------------------ election and our own term

  private runForElection(): void {
    if (this.ended || this.suspended || this.campaign) return;
    const campaign = new AbortController();
    this.campaign = campaign;
    this.lockManager
      .request(electionLockName(this.name), { signal: campaign.signal }, () => this.lead(campaign))
      .catch(() => undefined) // AbortError: we left, or the page went into the back/forward cache
      .finally(() => {
        if (this.campaign !== campaign) return;
        this.campaign = undefined;
        this.runForElection(); // our term ended (our worker died): stay a candidate
      });
  }

  /** We hold the election lock: start our worker, open the store there, serve the tabs. Resolves when the term ends. */
  private async lead(campaign: AbortController): Promise<void> {
    if (this.ended || campaign.signal.aborted) return;
    const term = uuid();
    let local: Term | undefined;
    try {
      const standby = this.standby;
      this.standby = undefined;
      const link = (await standby?.catch(() => undefined)) ?? (await openWorkerLink(this.options, this.logger));
      local = { term, link, ready: false, pending: new Set() };
      const me = local;
      this.local = me;
      link.start({
        event: (e) => {
          if (this.local !== me) return;
          this.deliver(e);
          // A writer that stole the store (steal: true) fenced ours: step down and stand again,
          // so the tabs get the store back (after 'waiting-for-lock') once the thief lets go.
          if (e.memwalEvent === 'state' && e.state === 'fenced') this.resign(me, 'another writer stole the store');
        },
        dead: (reason) => this.resign(me, `its worker died (${reason})`),
      });
      // Through callLocal: a worker dying meanwhile rejects these instead of leaving them pending.
      await this.callLocal(me, 'open', [{ ...this.wire }]);
      await this.callLocal(me, 'serveTabs', [term]);
      if (this.local !== me) return; // died meanwhile
      me.ready = true;
      this.adopt(term);
      this.roleMayHaveChanged();
      // Calls no leader took yet are ours to serve now (no other term accepts calls any more:
      // the previous leader stopped accepting, or died, before its election lock was freed).
      for (const call of [...this.calls.values()]) {
        if (call.acceptedBy !== undefined || call.pin !== undefined) continue;
        this.calls.delete(call.id);
        if (call.method === 'open') call.resolve({ value: undefined, term });
        else this.callLocal(me, call.method, call.args).then(call.resolve, call.reject);
      }
      this.settleOpen?.();
    } catch (e) {
      const err = fromWire(e, `open ${this.name}`);
      // A worker that died while opening is tried again (the lock frees, we campaign anew);
      // anything else would fail the same way again.
      if (err.code !== 'LeaderChanged' || this.settleOpen) {
        if (this.campaign === campaign) this.campaign = undefined;
        campaign.abort();
      }
      if (local) {
        if (this.local === local) this.local = undefined;
        void local.link.end(false);
      }
      if (this.settleOpen) {
        this.settleOpen(err); // the first open failed here: openMemWal rejects with it
      } else {
        this.logger.warn(`memwal: this tab could not take over store ${this.name}; it stays a follower`, err);
      }
      return;
    }
    await new Promise<void>((resolve) => (this.endTerm = resolve));
  }

  /** Our term is over (worker died, page hidden into the cache): in-flight calls on it reject `LeaderChanged`. */
  private resign(local: Term, why: string): void {
    if (this.local !== local) return;
    this.local = undefined;
    this.roleMayHaveChanged();
    const error = leaderChanged(`this tab stopped hosting store ${this.name} (${why}); outcome unknown`);
    for (const reject of [...local.pending]) reject(error);
    local.pending.clear();
    if (this.leader === local.term) this.leader = undefined;
    void local.link.end(false);
    this.endTerm?.();
    this.endTerm = undefined;
    this.prepareStandby();
  }

  /** As a follower, keep a worker ready to take over with. */
  private prepareStandby(): void {
    if (this.standby || this.local || this.ended || this.suspended) return;
    const standby = openWorkerLink(this.options, this.logger).then((link) => {
      // Its storage too (the browser layouts start an I/O worker); a failure shows when it opens.
      link.remote.prepare(this.wire.name, this.wire.storage).catch(() => undefined);
      return link;
    });
    this.standby = standby;
    standby.catch(() => {
      if (this.standby === standby) this.standby = undefined; // taking over starts a worker itself
    });
  }

  /** The first open: as leader, or by joining the leader (re-sent across leader changes). */
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
        this.forward('open', [{ ...this.wire }], undefined, timeoutMs, expired).then(
          () => {
            this.settleOpen?.();
            this.prepareStandby();
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
  private async leave(method: 'close' | 'abort' | 'detach'): Promise<void> {
    const local = this.local;
    if (local?.ready) {
      await this.callLocal(local, method, []);
      return;
    }
    if (this.leader === undefined) return;
    await this.forward(method === 'close' ? 'close' : 'abort', [], undefined, BYE_TIMEOUT_MS).catch(() => undefined); // we leave all the same
  }

  async end(_detach: boolean): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.timer);
    const closed = new MemWalError('Closed', `store ${this.name} is closed`);
    for (const call of [...this.calls.values()]) this.settle(call, undefined, closed);
    if (this.leader !== undefined && !this.local?.ready) {
      this.channel.postMessage({ memwalTabs: 'bye', leader: this.leader } satisfies TabRequest);
    }
    const local = this.local;
    this.local = undefined;
    if (local) {
      for (const reject of [...local.pending]) reject(closed);
      await local.link.end(true);
    }
    this.campaign?.abort();
    this.endTerm?.();
    const standby = this.standby;
    this.standby = undefined;
    void standby?.then((link) => link.end(true)).catch(() => undefined); // it never served anything
    for (const watch of this.watched.values()) watch.abort();
    this.watched.clear();
    this.releaseTabLock();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.channel.close();
    this.control.close();
  }

  // ------------------------------------------------------------------ back/forward cache

  /** Into the back/forward cache: a frozen page must not hold the store, nor wait in the election. */
  private onPageHide(ev: PageTransitionEvent): void {
    if (!ev.persisted || this.ended) return;
    this.suspended = true;
    const local = this.local;
    if (local) {
      void local.link.remote.abort().catch(() => undefined);
      this.resign(local, 'the page went into the back/forward cache');
    }
    this.campaign?.abort();
    this.campaign = undefined;
    const standby = this.standby;
    this.standby = undefined;
    void standby?.then((link) => link.end(true)).catch(() => undefined);
  }

  private onPageShow(ev: PageTransitionEvent): void {
    if (!ev.persisted || this.ended || !this.suspended) return;
    this.suspended = false;
    this.hello();
    this.runForElection();
    this.prepareStandby();
  }
}
