// A follower tab's calls under `tabs: 'share'` (guarantees (1)-(3) of tabs.ts) and how it finds the
// leader: each call goes to the leader's worker over this tab's BroadcastChannel with an id and a
// deadline, is re-sent until a leader accepts it, and settles when that leader answers, when its
// term lock is freed (`LeaderChanged`, outcome unknown) or when no leader took it in time
// (`LeaderChanged`, not written). Leaders are learnt from announcements and welcomes on the
// store's control channel. Browser main thread (Web Locks, BroadcastChannel).

import { MemWalError } from '../../util/errors.js';
import type { HostEvent, TabControlMessage, TabReply, TabRequest } from '../protocol.js';
import { fromWire } from '../worker-link.js';
import { controlChannelName, tabChannelName, termLockName } from './names.js';
import type { TabMethod } from './routes.js';

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

/** A call's value and the term that served it. */
export interface Served {
  value: unknown;
  term: string;
}

/** A call forwarded to a leader, until it settles. */
export interface Forwarded {
  id: number;
  method: TabMethod;
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

export const leaderChanged = (message: string): MemWalError => new MemWalError('LeaderChanged', message);

/** What the forwarder asks of its tab. */
export interface ForwarderTab {
  /** True while this tab's own worker serves the store (its leader's events come from there). */
  leads(): boolean;
  /** The page is in the back/forward cache: say nothing until it is shown again. */
  suspended(): boolean;
  /** An event of the leader's store, for the client. */
  deliver(e: HostEvent): void;
  /** Calls go to term `term` from now on (a new leader, maybe this tab's own). */
  adopted(term: string): void;
}

/** The calls of one tab to the leader of its store, and who that leader is. */
export class Forwarder {
  /** The term calls are sent to (learned from an announcement or a welcome). */
  leader: string | undefined;
  private readonly calls = new Map<number, Forwarded>();
  private nextCallId = 1;
  /** Terms whose lock we wait on (granted = that leader is gone). */
  private readonly watched = new Map<string, AbortController>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly channel: BroadcastChannel;
  private readonly control: BroadcastChannel;
  private ended = false;

  constructor(
    private readonly store: string,
    private readonly tab: string,
    private readonly lockManager: LockManager,
    private readonly owner: ForwarderTab,
  ) {
    this.channel = new BroadcastChannel(tabChannelName(store, tab));
    this.control = new BroadcastChannel(controlChannelName(store));
  }

  /** Start listening for replies and announcements. */
  start(): void {
    this.channel.onmessage = (ev: MessageEvent<TabReply>) => this.onReply(ev.data);
    this.control.onmessage = (ev: MessageEvent<TabControlMessage>) => this.onControl(ev.data);
  }

  /**
   * Forward `method` to the leader (only to term `pin` when given); resolves its value and the
   * term that served it. Rejects `LeaderChanged` as the guarantees say, with `expired()` when
   * no leader accepted it within `acceptWithinMs`. `args` are copied now: every send (and this
   * tab's own worker, should it take the call over) carries them as they were at the call.
   */
  forward(
    method: TabMethod,
    args: unknown[],
    pin: string | undefined,
    acceptWithinMs = ACCEPT_TIMEOUT_MS,
    expired = (): MemWalError =>
      leaderChanged(`no leader tab accepted ${method} on store ${this.store} within ${acceptWithinMs} ms; not written`),
  ): Promise<Served> {
    if (this.ended) return Promise.reject(new MemWalError('Closed', `store ${this.store} is closed`));
    if (pin !== undefined && pin !== this.leader) {
      return Promise.reject(leaderChanged('the leader tab that started this iterator is gone; not written'));
    }
    let copy: unknown[];
    try {
      copy = structuredClone(args);
    } catch (e) {
      return Promise.reject(fromWire(e, method, 'InvalidArgument')); // an argument that cannot be cloned (a getter that threw)
    }
    return new Promise<Served>((resolve, reject) => {
      const call: Forwarded = {
        id: this.nextCallId++,
        method,
        args: copy,
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

  /** The calls no leader has taken and no term is pinned to: this tab's own term serves them now. */
  takeUnaccepted(): Forwarded[] {
    const taken: Forwarded[] = [];
    for (const call of [...this.calls.values()]) {
      if (call.acceptedBy !== undefined || call.pin !== undefined) continue;
      this.calls.delete(call.id);
      taken.push(call);
    }
    return taken;
  }

  /** Say hello on the control channel: the leader opens this tab's channel and welcomes it there. */
  hello(): void {
    if (!this.ended && !this.owner.suspended()) {
      this.control.postMessage({ memwalTabs: 'hello', tab: this.tab } satisfies TabControlMessage);
    }
  }

  /** Route to term `term` from now on and watch its lock; false when it already was the leader. */
  adopt(term: string): boolean {
    if (this.ended || term === this.leader) return false;
    this.leader = term;
    this.owner.adopted(term);
    if (!this.watched.has(term)) {
      const watch = new AbortController();
      this.watched.set(term, watch);
      // Its worker holds the term lock from before its announcement until it stops answering.
      this.lockManager.request(termLockName(this.store, term), { signal: watch.signal }, () => this.termEnded(term)).catch(() => undefined); // AbortError: we stopped watching
    }
    return true;
  }

  /** Stop: every call still waiting rejects `error`; a follower says bye to its leader; channels close. */
  end(error: MemWalError): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.timer);
    for (const call of [...this.calls.values()]) this.settle(call, undefined, error);
    if (this.leader !== undefined && !this.owner.leads()) {
      this.channel.postMessage({ memwalTabs: 'bye', leader: this.leader } satisfies TabRequest);
    }
    for (const watch of this.watched.values()) watch.abort();
    this.watched.clear();
    this.channel.close();
    this.control.close();
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
      if (msg.leader === this.leader && !this.owner.leads()) this.owner.deliver(msg.event);
      return;
    }
    const call = this.calls.get(msg.id);
    if (!call || call.sentTo !== msg.leader) return;
    if (msg.memwalTabs === 'accepted') call.acceptedBy = msg.leader;
    else if (msg.memwalTabs === 'result') this.settle(call, { value: msg.value, term: msg.leader });
    else this.settle(call, undefined, fromWire(msg.error, call.method));
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
          leaderChanged(`the leader tab of store ${this.store} went away after it accepted ${call.method}; outcome unknown`),
        );
      } else if (call.pin === term) {
        this.settle(call, undefined, leaderChanged('the leader tab that started this iterator went away; not written'));
      }
    }
  }
}
