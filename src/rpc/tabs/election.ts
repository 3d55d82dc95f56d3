// This tab's candidacy under `tabs: 'share'`: it runs for leader on the store's election lock; when
// it wins it opens the store in a worker of its own, serves the other tabs from there (the
// worker's TabServer, server.ts) and takes over the calls no leader accepted; when its worker
// dies, or the page goes into the back/forward cache, it steps down and the next tab in the
// lock's queue takes over. A follower keeps a standby worker ready, so that taking over does not
// wait for a worker to load. Browser main thread (Web Locks).

import type { MemWalError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { HostEvent, WireOpenOptions } from '../protocol.js';
import { fromWire, openWorkerLink, uuid, type WorkerLike, type WorkerLink } from '../worker-link.js';
import type { Forwarder, Served } from './forwarder.js';
import { leaderChanged } from './forwarder.js';
import { electionLockName } from './names.js';
import type { HostMethod } from './routes.js';

/** This tab's own term as leader: its worker, and whether the store is open there. */
export interface Term {
  term: string;
  link: WorkerLink;
  ready: boolean;
  /** Rejecters of calls in flight on the worker. */
  pending: Set<(e: MemWalError) => void>;
}

/** What the candidacy asks of its tab (tabs.ts). */
export interface CandidateTab {
  readonly name: string;
  readonly wire: WireOpenOptions;
  readonly options: { workerUrl?: string | URL; worker?: WorkerLike };
  readonly logger: Logger;
  readonly lockManager: LockManager;
  readonly forwarder: Forwarder;
  /** True once the tab is done with the store. */
  ended(): boolean;
  /** `method` on this tab's own worker (a worker dying meanwhile rejects it). */
  callLocal(local: Term, method: HostMethod, args: unknown[]): Promise<Served>;
  /** An event of this tab's own store, for the client. */
  deliver(e: HostEvent): void;
  /** `role()` may have changed: tell the client. */
  roleMayHaveChanged(): void;
  /** The first open is waiting for this tab (as leader) or the leader: settle it (an error rejects it). */
  readonly settleOpen: ((e?: MemWalError) => void) | undefined;
}

/** This tab as candidate, leader and standby. */
export class Election {
  /** Set while this tab leads (or is opening the store to lead). */
  local: Term | undefined;
  /**
   * A follower's worker, started and connected ahead of need, so that taking over does not wait
   * for a worker to load (a few hundred ms; see the README's failover figures).
   */
  private standby: Promise<WorkerLink> | undefined;
  private campaign: AbortController | undefined;
  /** Ends this tab's current term as leader (frees the election lock). */
  private endTerm: (() => void) | undefined;
  /** The page is in the back/forward cache: no campaigning until it is shown again. */
  suspended = false;

  constructor(private readonly tab: CandidateTab) {}

  /** Whether this tab's worker serves the store now. */
  get leads(): boolean {
    return this.local?.ready === true;
  }

  /** Stand for election (again): hold the election lock, then lead until the term ends. */
  run(): void {
    if (this.tab.ended() || this.suspended || this.campaign) return;
    const campaign = new AbortController();
    this.campaign = campaign;
    this.tab.lockManager
      .request(electionLockName(this.tab.name), { signal: campaign.signal }, () => this.lead(campaign))
      .catch(() => undefined) // AbortError: we left, or the page went into the back/forward cache
      .finally(() => {
        if (this.campaign !== campaign) return;
        this.campaign = undefined;
        this.run(); // our term ended (our worker died): stay a candidate
      });
  }

  /** We hold the election lock: start our worker, open the store there, serve the tabs. Resolves when the term ends. */
  private async lead(campaign: AbortController): Promise<void> {
    const tab = this.tab;
    if (tab.ended() || campaign.signal.aborted) return;
    const term = uuid();
    let local: Term | undefined;
    try {
      const standby = this.standby;
      this.standby = undefined;
      const link = (await standby?.catch(() => undefined)) ?? (await openWorkerLink(tab.options, tab.logger));
      local = { term, link, ready: false, pending: new Set() };
      const me = local;
      this.local = me;
      link.start({
        event: (e) => {
          if (this.local !== me) return;
          tab.deliver(e);
          // A writer that stole the store (steal: true) fenced ours: step down and stand again,
          // so the tabs get the store back (after 'waiting-for-lock') once the thief lets go.
          if (e.memwalEvent === 'state' && e.state === 'fenced') this.resign(me, 'another writer stole the store');
        },
        dead: (reason) => this.resign(me, `its worker died (${reason})`),
      });
      // Through callLocal: a worker dying meanwhile rejects these instead of leaving them pending.
      await tab.callLocal(me, 'open', [{ ...tab.wire }]);
      await tab.callLocal(me, 'serveTabs', [term]);
      if (this.local !== me) return; // died meanwhile
      me.ready = true;
      tab.forwarder.adopt(term);
      tab.roleMayHaveChanged();
      // Calls no leader took yet are ours to serve now (no other term accepts calls any more:
      // the previous leader stopped accepting, or died, before its election lock was freed).
      for (const call of tab.forwarder.takeUnaccepted()) {
        if (call.method === 'open') call.resolve({ value: undefined, term });
        else tab.callLocal(me, call.method, call.args).then(call.resolve, call.reject);
      }
      tab.settleOpen?.();
    } catch (e) {
      const err = fromWire(e, `open ${tab.name}`);
      // A worker that died while opening is tried again (the lock frees, we campaign anew);
      // anything else would fail the same way again.
      if (err.code !== 'LeaderChanged' || tab.settleOpen) {
        if (this.campaign === campaign) this.campaign = undefined;
        campaign.abort();
      }
      if (local) {
        if (this.local === local) this.local = undefined;
        void local.link.end(false);
      }
      if (tab.settleOpen) {
        tab.settleOpen(err); // the first open failed here: openMemWal rejects with it
      } else {
        tab.logger.warn(`memwal: this tab could not take over store ${tab.name}; it stays a follower`, err);
      }
      return;
    }
    await new Promise<void>((resolve) => (this.endTerm = resolve));
  }

  /** Our term is over (worker died, page hidden into the cache): in-flight calls on it reject `LeaderChanged`. */
  resign(local: Term, why: string): void {
    if (this.local !== local) return;
    this.local = undefined;
    this.tab.roleMayHaveChanged();
    const error = leaderChanged(`this tab stopped hosting store ${this.tab.name} (${why}); outcome unknown`);
    for (const reject of [...local.pending]) reject(error);
    local.pending.clear();
    if (this.tab.forwarder.leader === local.term) this.tab.forwarder.leader = undefined;
    void local.link.end(false);
    this.endTerm?.();
    this.endTerm = undefined;
    this.prepareStandby();
  }

  /** As a follower, keep a worker ready to take over with. */
  prepareStandby(): void {
    if (this.standby || this.local || this.tab.ended() || this.suspended) return;
    const { name, storage } = this.tab.wire;
    const standby = openWorkerLink(this.tab.options, this.tab.logger).then((link) => {
      // Its storage too (the browser layouts start an I/O worker); a failure shows when it opens.
      link.remote.prepare(name, storage).catch(() => undefined);
      return link;
    });
    this.standby = standby;
    standby.catch(() => {
      if (this.standby === standby) this.standby = undefined; // taking over starts a worker itself
    });
  }

  /** The tab is done: our term ends (its worker closes the store as `local.link.end` says), nothing is started again. */
  async end(closed: MemWalError): Promise<void> {
    const local = this.local;
    this.local = undefined;
    if (local) {
      for (const reject of [...local.pending]) reject(closed);
      await local.link.end(true);
    }
    this.campaign?.abort();
    this.endTerm?.();
    this.dropStandby();
  }

  /** Into the back/forward cache: a frozen page must not hold the store, nor wait in the election. */
  suspend(): void {
    this.suspended = true;
    const local = this.local;
    if (local) {
      void local.link.remote.abort().catch(() => undefined);
      this.resign(local, 'the page went into the back/forward cache');
    }
    this.campaign?.abort();
    this.campaign = undefined;
    this.dropStandby();
  }

  /** Out of the back/forward cache: a candidate again. */
  resume(): void {
    this.suspended = false;
    this.tab.forwarder.hello();
    this.run();
    this.prepareStandby();
  }

  /** The standby worker is not needed: it never served anything. */
  private dropStandby(): void {
    const standby = this.standby;
    this.standby = undefined;
    void standby?.then((link) => link.end(true)).catch(() => undefined);
  }
}
