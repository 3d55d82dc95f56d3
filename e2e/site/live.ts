// The live page: `window.live` opens stores (several times in this page: same-realm reopen),
// watches reads and records every result with the time it arrived, and renders a React tree in
// StrictMode whose component reads through memwal/react's useQuery. Driven by e2e/live.spec.ts.

import { createElement, StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { defineSchema, int32, type MemWalClient, openMemWal, utf8 } from '../../src/index.js';
import { memwalStore, useMemWal, useQuery } from '../../src/react.js';

const schema = defineSchema({ id: int32(), title: utf8().nullable() });
type Db = MemWalClient;

const clients = new Map<number, Db>();
let nextId = 1;
/** Results per watch: [arrival time (performance.now()), the titles seen]. */
const results = new Map<number, { at: number; titles: (string | null | undefined)[] }[]>();
const renders: string[] = [];

function client(id: number): Db {
  const c = clients.get(id);
  if (!c) throw new Error(`no client ${id}`);
  return c;
}

const live = {
  async open(name: string, tabs: 'exclusive' | 'share', extra: Record<string, unknown> = {}): Promise<number | string> {
    try {
      const c = (await openMemWal({ name, schema, primaryKey: ['id'], tabs, ...extra } as never)) as Db;
      const id = nextId++;
      clients.set(id, c);
      return id;
    } catch (e) {
      return `${(e as { code?: string }).code}: ${(e as Error).message}`;
    }
  },
  async put(id: number, rows: { id: number; title: string }[]): Promise<number> {
    const before = performance.now();
    await client(id).put(rows);
    return before;
  },
  async get(id: number, key: number): Promise<string | null | undefined> {
    return ((await client(id).get({ id: key })) as { title?: string | null } | undefined)?.title;
  },
  watch(id: number, keys: number[]): number {
    const w = nextId++;
    const got: { at: number; titles: (string | null | undefined)[] }[] = [];
    results.set(w, got);
    client(id).watch({ getMany: keys.map((k) => ({ id: k })) }, (rows) =>
      got.push({ at: performance.now(), titles: rows.map((r) => (r as { title?: string | null } | undefined)?.title) }),
    );
    return w;
  },
  /** The results of watch `w` so far, with the page's clock (performance.timeOrigin + at = wall time). */
  results(w: number): { wall: number; titles: (string | null | undefined)[] }[] {
    return (results.get(w) ?? []).map((r) => ({ wall: performance.timeOrigin + r.at, titles: r.titles }));
  },
  role(id: number): string {
    return client(id).role();
  },
  state(id: number): string {
    return client(id).writerState;
  },
  async close(id: number): Promise<void> {
    await client(id).close();
  },
  /** StrictMode render of a component that reads note 1 through useQuery; `renders` records what it showed. */
  renderStrict(name: string): void {
    const store = memwalStore({ name, schema, primaryKey: ['id'] });
    (window as unknown as { liveStore: typeof store }).liveStore = store;
    function Note(): ReturnType<typeof createElement> {
      const db = useMemWal(store);
      const note = useQuery(db, { get: { id: 1 } });
      const text = db ? (note ? `note: ${note.title}` : 'no note') : 'opening';
      renders.push(text);
      return createElement('p', { id: 'note' }, text);
    }
    createRoot(document.getElementById('root')!).render(createElement(StrictMode, null, createElement(Note)));
  },
  async putThroughStore(rows: { id: number; title: string }[]): Promise<void> {
    const store = (window as unknown as { liveStore: ReturnType<typeof memwalStore> }).liveStore;
    await (await store.open()).put(rows);
  },
  renders(): string[] {
    return renders;
  },
};

(window as unknown as { live: typeof live }).live = live;
(window as unknown as { liveReady: boolean }).liveReady = true;
