// Same-realm reopen: an `openMemWal` of a store this page (this JavaScript realm) already has open,
// or is opening, joins that open instead of starting a worker of its own and waiting on its own
// Web Lock (which, in the same page, it would wait on for ever: React StrictMode's
// open → close → open, a module re-run by HMR). Each open gets a handle (a MemWalClient over a
// `HandleLink`); the store stays open while one handle does, and the last `close()` closes it.
// Browser main thread.

import type { WriterState } from '../metrics/stats.js';
import { MemWalError } from '../util/errors.js';
import type { WireOpenOptions } from './protocol.js';
import type { ClientLink, ClientRole, LinkSink, Remote, WorkerLike } from './worker-link.js';

/**
 * Options that only govern how an open waits for the store, or the page's own request: a join
 * neither waits nor steals, so they may differ between the opens that share a store.
 */
const OPEN_ONLY: ReadonlySet<string> = new Set(['name', 'lockTimeoutMs', 'steal', 'persist', 'onSchemaMismatch']);

/** What two opens of one store in a page must agree on: the posted options plus how the page hosts it. */
export interface JoinKey {
  wire: WireOpenOptions;
  tabs: 'exclusive' | 'share';
  workerUrl: string | undefined;
}

/** The first option in which `joining` differs from `open` (its name), or undefined when it may join. */
export function joinDifference(joining: JoinKey, open: JoinKey): string | undefined {
  if (joining.tabs !== open.tabs) return 'tabs';
  if (joining.workerUrl !== open.workerUrl) return 'workerUrl';
  const a = joining.wire as unknown as Record<string, unknown>;
  const b = open.wire as unknown as Record<string, unknown>;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (OPEN_ONLY.has(k)) continue;
    if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) return k;
  }
  return undefined;
}

/** One store open (or opening) in this realm, shared by its handles. */
class SharedOpen {
  readonly handles = new Set<HandleLink>();
  link: ClientLink | undefined;
  readonly linkReady: Promise<ClientLink>;
  /** The store's open, run once for every handle; undefined until the first handle asks. */
  opened: Promise<void> | undefined;
  /** The last writer state the host reported (a joining handle starts from it). */
  state: WriterState | undefined;
  /** Set once the last handle let go, the open failed or the worker died: no open joins it any more. */
  done = false;

  constructor(
    readonly name: string,
    readonly key: JoinKey,
    makeLink: () => Promise<ClientLink>,
    private readonly registry: Map<string, SharedOpen>,
  ) {
    this.linkReady = makeLink().then((link) => {
      this.link = link;
      link.start({
        event: (e) => {
          if (e?.memwalEvent === 'state') this.state = e.state;
          for (const h of [...this.handles]) h.sink?.event(e);
        },
        dead: (reason) => {
          this.retire();
          for (const h of [...this.handles]) h.sink?.dead(reason);
        },
        role: (role) => {
          for (const h of [...this.handles]) h.sink?.role?.(role);
        },
        served: () => {
          for (const h of [...this.handles]) h.sink?.served?.();
        },
      });
      return link;
    });
    this.linkReady.catch(() => this.retire());
  }

  /** No later open joins this one. */
  retire(): void {
    this.done = true;
    if (this.registry.get(this.name) === this) this.registry.delete(this.name);
  }
}

/**
 * The stores open in this realm: by name for the workers memwal starts (the default one,
 * `workerUrl`), and by worker and name for a worker the app passes (each such worker hosts its
 * own stores: two workers given for one name open it twice, as two writers would).
 */
const started = new Map<string, SharedOpen>();
const given = new WeakMap<WorkerLike, Map<string, SharedOpen>>();

function registryOf(worker: WorkerLike | undefined): Map<string, SharedOpen> {
  if (!worker) return started;
  let m = given.get(worker);
  if (!m) given.set(worker, (m = new Map()));
  return m;
}

/**
 * A handle on store `key.wire.name` for one `openMemWal`: joins this realm's open of it when there
 * is one (no new worker, no Web Lock wait), else starts one with `makeLink()`. Throws
 * `InvalidArgument` naming the option when the open one was opened with another value of it.
 * An open with `steal` never joins: it asks to take the store from whoever writes it, this page's
 * own open included (that one is fenced, as another tab's would be), so it starts its own, and
 * later opens of this page join it.
 */
export async function openHandle(
  key: JoinKey,
  worker: WorkerLike | undefined,
  makeLink: () => Promise<ClientLink>,
  steal = false,
): Promise<HandleLink> {
  const registry = registryOf(worker);
  const name = key.wire.name;
  let shared = steal ? undefined : registry.get(name);
  if (shared && !shared.done) {
    const differs = joinDifference(key, shared.key);
    if (differs) {
      throw new MemWalError(
        'InvalidArgument',
        `option ${differs}: store ${name} is already open in this page with another ${differs}; open it with the same options, or close it first`,
      );
    }
  } else {
    shared = new SharedOpen(name, key, makeLink, registry);
    registry.set(name, shared);
  }
  // Counted now, before any await: the other handles' last close cannot close it under this one.
  const handle = new HandleLink(shared);
  try {
    await shared.linkReady;
  } catch (e) {
    await handle.end(false);
    throw e;
  }
  return handle;
}

/**
 * One open's view of a shared store (the `ClientLink` of its MemWalClient): calls go to the shared
 * link; `open` runs the store's open once for every handle (a joining handle then hears the
 * current state); `close` / `abort` / `detach` let go of this handle, and reach the store only
 * from its last one.
 */
export class HandleLink implements ClientLink {
  sink: LinkSink | undefined;
  private remoteProxy: Remote | undefined;
  private released = false;
  /** This handle was the last: the store's goodbye (its close or abort), awaited by `end`. */
  private goodbye: Promise<unknown> | undefined;

  constructor(private readonly shared: SharedOpen) {
    shared.handles.add(this);
  }

  get remote(): Remote {
    if (this.remoteProxy) return this.remoteProxy;
    const real = this.shared.link!.remote; // a HandleLink is handed out once the link is up
    const overrides: Record<PropertyKey, unknown> = {
      open: (wire: WireOpenOptions) => this.open(wire),
      close: () => this.release('close'),
      abort: () => this.release('abort'),
      detach: () => this.release('detach'),
    };
    this.remoteProxy = new Proxy(real, { get: (target, prop) => overrides[prop] ?? Reflect.get(target, prop) }) as Remote;
    return this.remoteProxy;
  }

  role(): ClientRole {
    return this.shared.link?.role() ?? 'follower';
  }

  start(sink: LinkSink): void {
    this.sink = sink;
  }

  /** How many opens of this realm share the store (for tests). */
  get handleCount(): number {
    return this.shared.handles.size;
  }

  /** The store's open, run once for all handles; a handle that joins an open store hears its state. */
  private async open(wire: WireOpenOptions): Promise<void> {
    const link = this.shared.link!;
    const first = this.shared.opened === undefined;
    this.shared.opened ??= link.remote.open(wire);
    try {
      await this.shared.opened;
    } catch (e) {
      this.shared.retire(); // a later open starts afresh
      throw e;
    }
    if (!first && this.shared.state !== undefined) this.sink?.event({ memwalEvent: 'state', state: this.shared.state });
  }

  /** Let go of this handle; from the last one, `how` reaches the store (and no open joins it any more). */
  private release(how: 'close' | 'abort' | 'detach'): Promise<void> {
    if (this.released) return Promise.resolve();
    this.released = true;
    this.shared.handles.delete(this);
    if (this.shared.handles.size > 0) return Promise.resolve();
    this.shared.retire();
    const p = this.shared.link!.remote[how]();
    this.goodbye = p.catch(() => undefined);
    return p;
  }

  async end(detach: boolean): Promise<void> {
    if (!this.released) {
      // Ended without a goodbye (the worker died, a failed open): let go all the same.
      this.released = true;
      this.shared.handles.delete(this);
      if (this.shared.handles.size > 0) return;
      this.shared.retire();
    } else if (this.goodbye === undefined) {
      return; // another handle holds the store
    }
    await this.goodbye;
    await this.shared.link?.end(detach);
  }
}
