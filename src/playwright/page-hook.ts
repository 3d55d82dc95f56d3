// The init script memwal/playwright installs in every page before the page's own scripts run:
// it sets the hook openMemWal() consults (src/rpc/test-hook.ts), records every open and its
// client, and answers the test's calls on them. Both functions here are serialised by
// Playwright and run in the page, so they use nothing from outside their own bodies.

import type { OpenAnswer, OpenQuery, OpenRecord, Outcome, PageHookConfig } from './protocol.js';

/**
 * Install the hook at `Symbol.for('memwal.playwright.hook')` (non-writable, non-configurable,
 * so page code cannot replace it). At each `openMemWal(options, hooks)` the hook asks the test
 * through the binding `config.binding` whether to host the store in the kit's worker (then it
 * passes `workerUrl` = the kit's worker, unless the app passes its own `worker`), wraps
 * `hooks.onStateChange` to record states, and keeps the client. Runs in the page.
 */
export function installPageHook(config: PageHookConfig): void {
  type Client = Record<string, (...args: unknown[]) => Promise<unknown>> & { writerState: string };
  interface Rec {
    id: number;
    name: string;
    tabs: string;
    kitHosted: boolean;
    notHosted?: string;
    states: string[];
    client?: Client;
    error?: { code: string; message: string };
  }
  const KEY = Symbol.for('memwal.playwright.hook');
  const ASK_TIMEOUT_MS = 10_000;
  const g = globalThis as unknown as Record<string | symbol, unknown> & { location: Location };
  if (Object.getOwnPropertyDescriptor(g, KEY)) return;
  const records: Rec[] = [];
  let reentered = false;

  // util/errors.ts errorToWire's shape (a WireError), written out: this body runs in the page.
  const errorOf = (e: unknown): { code: string; message: string } => {
    const err = e as { code?: unknown; name?: unknown; message?: unknown } | null;
    return { code: String(err?.code ?? err?.name ?? 'Error'), message: String(err?.message ?? e) };
  };
  const ask = (query: OpenQuery): Promise<OpenAnswer> => {
    const binding = g[config.binding] as ((q: OpenQuery) => Promise<OpenAnswer>) | undefined;
    if (typeof binding !== 'function') return Promise.resolve({ faults: false });
    const timeout = new Promise<OpenAnswer>((resolve) => setTimeout(() => resolve({ faults: false }), ASK_TIMEOUT_MS));
    return Promise.race([binding(query), timeout]).catch(() => ({ faults: false }));
  };
  const summary = (r: Rec): OpenRecord => {
    let role: string | undefined;
    try {
      role = typeof r.client?.role === 'function' ? String((r.client.role as unknown as () => string)()) : undefined;
    } catch {
      role = undefined;
    }
    return {
      id: r.id,
      name: r.name,
      tabs: r.tabs,
      kitHosted: r.kitHosted,
      notHosted: r.notHosted,
      state: r.error ? 'failed' : r.client ? r.client.writerState : (r.states.at(-1) ?? 'opening'),
      states: [...r.states],
      role,
      error: r.error,
    };
  };
  const rowsOf = (table: { toArray(): { toJSON(): Record<string, unknown> }[] }): Record<string, unknown>[] =>
    table.toArray().map((row) => row.toJSON());
  const stats = async (c: Client): Promise<Record<string, unknown>> => {
    if (typeof c.stats === 'function') return (await c.stats()) as Record<string, unknown>; // one snapshot (SPEC §15.3)
    // An app on a memwal before stats(): each accessor, read separately.
    const get = async (method: string): Promise<unknown> => {
      if (typeof c[method] !== 'function') return undefined;
      try {
        return await c[method]!();
      } catch (e) {
        if ((e as { code?: string } | null)?.code === 'NotSupported') return undefined; // memtableStats in WAL-only mode
        throw e;
      }
    };
    const kinds = ['memtable', 'backpressure', 'compaction', 'wal', 'write', 'read', 'storage'];
    const values = await Promise.all(kinds.map((k) => get(`${k}Stats`)));
    return Object.fromEntries(kinds.map((k, i) => [k, values[i]]));
  };

  const hook = {
    version: 1,
    token: config.token,
    open(open: (o: unknown, h: unknown) => Promise<Client>, options: unknown, hooks: unknown): Promise<Client> | undefined {
      if (reentered) return undefined;
      const o = (typeof options === 'object' && options !== null ? options : {}) as Record<string, unknown>;
      const rec: Rec = { id: records.length + 1, name: String(o.name), tabs: String(o.tabs ?? 'exclusive'), kitHosted: false, states: [] };
      records.push(rec);
      return ask({ name: rec.name }).then((answer) => {
        let chosen = options;
        if (answer.faults && o.worker !== undefined) rec.notHosted = 'the app passes its own worker (options.worker)';
        else if (answer.faults) {
          const url = new URL(config.workerPath, g.location.href);
          url.searchParams.set('store', rec.name);
          url.searchParams.set('open', String(rec.id));
          chosen = { ...o, workerUrl: url.href };
          rec.kitHosted = true;
        }
        const given = (typeof hooks === 'object' && hooks !== null ? hooks : {}) as { onStateChange?: (s: string) => void };
        const wrapped = {
          ...given,
          onStateChange(s: string) {
            rec.states.push(s);
            given.onStateChange?.(s);
          },
        };
        reentered = true;
        let opening: Promise<Client>;
        try {
          opening = open(chosen, wrapped);
        } finally {
          reentered = false;
        }
        return opening.then(
          (client) => {
            rec.client = client;
            return client;
          },
          (e: unknown) => {
            rec.error = errorOf(e);
            throw e;
          },
        );
      });
    },
    /** Every open of store `name` (or of every store) this document saw. */
    records(name?: string): OpenRecord[] {
      return records.filter((r) => name === undefined || r.name === name).map(summary);
    },
    /**
     * Call `method` on this document's newest client of store `name` that is open (else the
     * newest not closed); `stats` gathers every *Stats(), `scan` returns plain rows.
     * `NoClient` when this document has none.
     */
    async call(name: string, method: string, args: unknown[]): Promise<Outcome<unknown>> {
      const live = records.filter((r) => r.name === name && r.client && r.client.writerState !== 'closed');
      const rec = live.filter((r) => r.client!.writerState === 'open').pop() ?? live.pop();
      if (!rec) return { ok: false, code: 'NoClient', message: `no open client of store ${name} in ${g.location.href}` };
      const c = rec.client!;
      try {
        let value: unknown;
        if (method === 'stats') value = await stats(c);
        else if (method === 'scan') value = rowsOf((await c.scan!(...args)) as Parameters<typeof rowsOf>[0]);
        else if (typeof c[method] !== 'function') return { ok: false, code: 'NotSupported', message: `this client has no ${method}()` };
        else value = await c[method]!(...args);
        return { ok: true, value };
      } catch (e) {
        return { ok: false, ...errorOf(e) };
      }
    },
  };
  Object.defineProperty(g, KEY, { value: Object.freeze(hook), configurable: false, writable: false, enumerable: false });
}

/**
 * Delete every memwal store of this page's origin: the OPFS directory `memwal/` and the
 * IndexedDB database `memwal`. Refuses (`Locked`) while any tab or worker of the origin holds a
 * store's writer lock (`memwal:<store>`), and when the database stays blocked. Runs in a page.
 */
export async function resetOrigin(): Promise<Outcome<{ opfs: boolean; indexedDb: boolean }>> {
  const held = ((await navigator.locks?.query())?.held ?? []).map((l) => l.name ?? '').filter((n) => n.startsWith('memwal:'));
  if (held.length > 0) {
    const stores = held.map((n) => n.slice('memwal:'.length)).join(', ');
    return {
      ok: false,
      code: 'Locked',
      message: `stores still open in this origin: ${stores} (close the pages or clients using them first)`,
    };
  }
  let opfs = false;
  try {
    await (await navigator.storage.getDirectory()).removeEntry('memwal', { recursive: true });
    opfs = true;
  } catch (e) {
    const name = (e as { name?: string } | null)?.name;
    if (name !== 'NotFoundError') {
      const code = name === 'NoModificationAllowedError' ? 'Locked' : 'IOError';
      return { ok: false, code, message: `removing the OPFS directory memwal/: ${name}: ${(e as Error).message}` };
    }
  }
  const failure = await new Promise<{ code: string; message: string } | undefined>((resolve) => {
    const request = indexedDB.deleteDatabase('memwal');
    const timer = setTimeout(() => resolve({ code: 'Locked', message: 'an open connection blocked it for 10 s' }), 10_000);
    request.onsuccess = () => (clearTimeout(timer), resolve(undefined));
    request.onerror = () => (clearTimeout(timer), resolve({ code: 'IOError', message: String(request.error) }));
  });
  if (failure) return { ok: false, code: failure.code, message: `deleting the IndexedDB database memwal: ${failure.message}` };
  return { ok: true, value: { opfs, indexedDb: true } };
}
