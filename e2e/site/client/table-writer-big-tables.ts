// Outside tester (issue 23): the OPFS table writer thread attacked through the public
// API only (openMemWal, destroyMemWal, the default worker): a steal, a terminated worker, an
// abort, a close then a reopen or a destroy, many stores in one worker, compactions racing
// flushes, each while big table files are being written. Every scenario reports what an app
// could see go wrong: an acknowledged row missing or doubled, an open or destroy that fails or
// hangs, a file left after destroy, a table file the manifest names missing. Loaded by
// e2e/table-writer-big-tables.spec.ts.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import type { MemWalClient } from '../../../src/rpc/client.js';
import { type OpenMemWalOptions, openMemWal } from '../../../src/rpc/open-memwal.js';
import { destroyMemWal } from '../../../src/rpc/destroy.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('payload', new Utf8(), true)]);
const KiB = 1024;
const MiB = 1024 * KiB;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Incompressible-ish text of `n` characters. */
function text(n: number): string {
  const r = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(r.subarray(at, Math.min(n, at + 65536)));
  let s = '';
  for (const b of r) s += ALPHABET[b % ALPHABET.length];
  return s;
}

/** `n` rows from `first`, each with its own `bytes`-character payload slice (distinct values). */
function rows(first: number, n: number, bytes: number): { id: number; payload: string }[] {
  const base = text(bytes + n);
  return Array.from({ length: n }, (_, i) => ({ id: first + i, payload: base.slice(i, i + bytes) }));
}

/** Put `total` rows from `first` in batches, returning the acknowledged ids. */
async function fill(db: MemWalClient, first: number, total: number, bytes: number, batch = 2_000): Promise<number[]> {
  const acked: number[] = [];
  for (let at = 0; at < total; at += batch) {
    const n = Math.min(batch, total - at);
    await db.put(rows(first + at, n, bytes));
    for (let i = 0; i < n; i++) acked.push(first + at + i);
  }
  return acked;
}

/** Outcome of `p` within `ms`: 'ok', the error's code, or 'hung'. */
async function within<T>(p: Promise<T>, ms: number): Promise<{ r: 'ok'; v: T } | { r: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<{ r: string }>((res) => {
    timer = setTimeout(() => res({ r: 'hung' }), ms);
  });
  try {
    return await Promise.race([p.then((v) => ({ r: 'ok' as const, v })), hung]);
  } catch (e) {
    const err = e as { code?: string; name?: string; message?: string };
    return { r: `${err.code ?? err.name ?? 'error'}: ${err.message ?? e}` };
  } finally {
    clearTimeout(timer);
  }
}

/** Files of store `name` in OPFS (`wal/..`, `tables/..`); [] when its directory is gone. */
async function opfsFiles(name: string): Promise<string[]> {
  const out: string[] = [];
  try {
    const root = await (await navigator.storage.getDirectory()).getDirectoryHandle('memwal');
    const dir = await root.getDirectoryHandle(name);
    type Dir = FileSystemDirectoryHandle & { keys(): AsyncIterable<string> };
    for await (const sub of (dir as Dir).keys()) {
      const d = await dir.getDirectoryHandle(sub).catch(() => undefined);
      if (!d) {
        out.push(sub);
        continue;
      }
      for await (const f of (d as Dir).keys()) out.push(`${sub}/${f}`);
    }
  } catch (e) {
    if ((e as { name?: string }).name !== 'NotFoundError') out.push(`(listing failed: ${String(e)})`);
  }
  return out;
}

/** Table file names the stored manifest of `name` holds ([] without one). */
async function manifestTables(name: string): Promise<string[]> {
  const request = <T>(r: IDBRequest): Promise<T> =>
    new Promise((resolve, reject) => {
      r.onsuccess = () => resolve(r.result as T);
      r.onerror = () => reject(r.error);
    });
  const db = await request<IDBDatabase>(indexedDB.open('memwal'));
  try {
    const m = await request<{ tables?: { name: string }[] } | undefined>(db.transaction('manifests').objectStore('manifests').get(name));
    return (m?.tables ?? []).map((t) => t.name);
  } finally {
    db.close();
  }
}

/** Problems with the files of a closed store: a manifest-named table missing. */
async function checkNamedTables(name: string, when: string, problems: string[]): Promise<void> {
  const files = new Set(await opfsFiles(name));
  for (const t of await manifestTables(name)) if (!files.has(`tables/${t}`)) problems.push(`${when}: manifest names tables/${t}, missing`);
}

/** Problems with a scan's ids against the acknowledged ones: missing or doubled. */
async function checkRows(db: MemWalClient, acked: number[], when: string, problems: string[]): Promise<void> {
  const t = await db.scan();
  const ids = [...(t.getChild('id')?.toArray() ?? [])] as number[];
  const seen = new Set<number>();
  let doubled = 0;
  for (const id of ids) {
    if (seen.has(id)) doubled++;
    seen.add(id);
  }
  const missing = acked.filter((id) => !seen.has(id));
  if (missing.length) problems.push(`${when}: ${missing.length} acknowledged rows missing (first ${missing.slice(0, 3).join(',')})`);
  if (doubled) problems.push(`${when}: ${doubled} rows doubled`);
}

/** Destroy `name` (within `ms`) and check nothing of it is left. */
async function destroyAndCheck(
  name: string,
  when: string,
  problems: string[],
  opts: Parameters<typeof destroyMemWal>[1] = {},
): Promise<void> {
  const d = await within(destroyMemWal(name, opts), 20_000);
  if (d.r !== 'ok') problems.push(`${when}: destroy ${d.r}`);
  const left = await opfsFiles(name);
  if (left.length) problems.push(`${when}: files left after destroy: ${left.join(' ')}`);
  if ((await manifestTables(name)).length) problems.push(`${when}: manifest left after destroy`);
}

const keyed = (name: string, extra: Partial<OpenMemWalOptions> = {}): OpenMemWalOptions => ({
  name,
  schema,
  primaryKey: ['id'],
  storage: 'opfs',
  maxMemtableBytes: 256 * MiB,
  ...extra,
});

/** Open `opts` within `ms`, reporting a failure into `problems`. */
async function openOr(opts: OpenMemWalOptions, when: string, problems: string[], ms = 30_000): Promise<MemWalClient | undefined> {
  const o = await within(openMemWal(opts), ms);
  if (o.r === 'ok') return (o as { v: MemWalClient }).v;
  problems.push(`${when}: open ${o.r}`);
  return undefined;
}

/**
 * A steal by a second client while the first one's big table (`mib` MiB of rows) is being built
 * or written, `delayMs` after its seal: the thief opens, holds every acknowledged row, closes,
 * and the store destroys clean.
 */
async function steal(name: string, delayMs: number, mib: number): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const a = await openMemWal(keyed(name));
  const acked = await fill(a, 0, mib * 1024, 1000);
  void a.forceSealActive().catch(() => undefined);
  await sleep(delayMs);
  const b = await openOr(keyed(name, { steal: true }), `steal at ${delayMs} ms`, problems);
  if (b) {
    await checkRows(b, acked, `steal at ${delayMs} ms`, problems);
    await b.put(rows(10_000_000, 100, 10));
    await b.forceSealActive();
    const w = await within(b.waitForFlushDrain(), 30_000);
    if (w.r !== 'ok') problems.push(`steal at ${delayMs} ms: thief's flush ${w.r}`);
    const c = await within(b.close(), 30_000);
    if (c.r !== 'ok') problems.push(`steal at ${delayMs} ms: thief's close ${c.r}`);
    await checkNamedTables(name, `steal at ${delayMs} ms`, problems);
  }
  // The robbed writer's calls settle (with an error or not), none hangs.
  const drain = await within(a.waitForFlushDrain(), 20_000);
  if (drain.r === 'hung') problems.push(`steal at ${delayMs} ms: the robbed writer's waitForFlushDrain hung`);
  const closed = await within(a.close(), 20_000);
  if (closed.r === 'hung') problems.push(`steal at ${delayMs} ms: the robbed writer's close hung`);
  await destroyAndCheck(name, `steal at ${delayMs} ms`, problems);
  return problems;
}

/**
 * The worker hosting a store ended (`terminate` by the app, or the client's `abort`) `delayMs`
 * after the seal of a big memtable: an open right after holds every acknowledged row; a destroy
 * right after leaves nothing.
 */
async function killed(name: string, how: 'terminate' | 'abort', delayMs: number, mib: number): Promise<string[]> {
  const problems: string[] = [];
  const when = `${how} at ${delayMs} ms`;
  await destroyMemWal(name).catch(() => undefined);
  const worker = new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  const a = await openMemWal(keyed(name, { worker }));
  const acked = await fill(a, 0, mib * 1024, 1000);
  void a.forceSealActive().catch(() => undefined);
  await sleep(delayMs);
  if (how === 'terminate') worker.terminate();
  else {
    await a.abort();
    worker.terminate();
  }
  const b = await openOr(keyed(name), when, problems);
  if (b) {
    await checkRows(b, acked, when, problems);
    const c = await within(b.close(), 30_000);
    if (c.r !== 'ok') problems.push(`${when}: close ${c.r}`);
    await checkNamedTables(name, when, problems);
  }
  await destroyAndCheck(name, when, problems);
  return problems;
}

/** As `killed`, but the destroy comes right after the worker ended, before any reopen. */
async function killedThenDestroy(name: string, delayMs: number, mib: number): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const worker = new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  const a = await openMemWal(keyed(name, { worker }));
  await fill(a, 0, mib * 1024, 1000);
  void a.forceSealActive().catch(() => undefined);
  await sleep(delayMs);
  worker.terminate();
  await destroyAndCheck(name, `terminate at ${delayMs} ms, destroy`, problems);
  return problems;
}

/**
 * In one worker the app keeps: a close while a big table is being written (no wait for the
 * flush), then at once a reopen in the same worker (or a destroy through it): nothing lost, nothing left.
 */
async function closeThen(name: string, then: 'reopen' | 'destroy', delayMs: number, mib: number): Promise<string[]> {
  const problems: string[] = [];
  const when = `close at ${delayMs} ms, ${then}`;
  const worker = new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  try {
    await destroyMemWal(name, { worker }).catch(() => undefined);
    const a = await openMemWal(keyed(name, { worker }));
    const acked = await fill(a, 0, mib * 1024, 1000);
    void a.forceSealActive().catch(() => undefined);
    await sleep(delayMs);
    const c = await within(a.close(), 30_000);
    if (c.r !== 'ok') problems.push(`${when}: close ${c.r}`);
    if (then === 'reopen') {
      const b = await openOr(keyed(name, { worker }), when, problems);
      if (b) {
        await checkRows(b, acked, when, problems);
        const c2 = await within(b.close(), 30_000);
        if (c2.r !== 'ok') problems.push(`${when}: second close ${c2.r}`);
        await checkNamedTables(name, when, problems);
      }
    }
    await destroyAndCheck(name, when, problems, { worker });
  } finally {
    worker.terminate();
  }
  return problems;
}

/**
 * `stores` stores hosted by one worker, each flushing big tables at once (they share its I/O
 * worker and table writer thread), then closed all at once: reopened, every row is there;
 * destroyed, nothing is left.
 */
async function manyStores(prefix: string, stores: number, mib: number): Promise<string[]> {
  const problems: string[] = [];
  const worker = new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  try {
    const names = Array.from({ length: stores }, (_, i) => `${prefix}-${i}`);
    for (const n of names) await destroyMemWal(n, { worker }).catch(() => undefined);
    const dbs = await Promise.all(names.map((n) => openMemWal(keyed(n, { worker, maxMemtableBytes: 4 * MiB }))));
    const acked = await Promise.all(dbs.map((db) => fill(db, 0, mib * 1024, 1000, 500)));
    const drained = await within(Promise.all(dbs.map((db) => db.forceSealActive().then(() => db.waitForFlushDrain()))), 60_000);
    if (drained.r !== 'ok') problems.push(`drain ${drained.r}`);
    // Again, then closed while those flushes run.
    await Promise.all(dbs.map((db, i) => fill(db, 1_000_000, 4 * 1024, 1000, 500).then((ids) => acked[i]!.push(...ids))));
    for (const db of dbs) void db.forceSealActive().catch(() => undefined);
    const closed = await within(Promise.all(dbs.map((db) => db.close())), 60_000);
    if (closed.r !== 'ok') problems.push(`close all ${closed.r}`);
    for (const [i, n] of names.entries()) {
      const b = await openOr(keyed(n, { worker }), n, problems);
      if (!b) continue;
      await checkRows(b, acked[i]!, n, problems);
      await b.close();
      await checkNamedTables(n, n, problems);
      await destroyAndCheck(n, n, problems, { worker });
    }
  } finally {
    worker.terminate();
  }
  return problems;
}

/**
 * Compactions racing flushes: small memtables (a flush every few MiB, level 0 filling), an
 * explicit `compact()` beside them, overwrites of earlier keys; then a close mid-way, a reopen:
 * every acknowledged key holds its last value once; the manifest's files are all there.
 */
async function compactRace(name: string): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const opts = keyed(name, { maxMemtableBytes: 2 * MiB });
  let db = await openMemWal(opts);
  const last = new Map<number, string>();
  const compactions: Promise<unknown>[] = [];
  for (let round = 0; round < 12; round++) {
    const batch = rows((round % 4) * 1_000, 2_000, 600);
    const tag = `r${round}`;
    for (const r of batch) r.payload = `${tag}:${r.payload}`;
    await db.put(batch);
    for (const r of batch) last.set(r.id, r.payload);
    if (round % 3 === 2) compactions.push(db.compact().catch((e: { code?: string }) => e.code));
  }
  void db.forceSealActive().catch(() => undefined);
  void db.compact().catch(() => undefined);
  const c = await within(db.close(), 60_000);
  if (c.r !== 'ok') problems.push(`close ${c.r}`);
  const outcomes = await Promise.all(compactions);
  for (const o of outcomes) if (typeof o === 'string' && o !== 'Closed') problems.push(`compact rejected ${o}`);
  await checkNamedTables(name, 'after close', problems);
  const r = await within(openMemWal(opts), 30_000);
  if (r.r !== 'ok') {
    problems.push(`reopen ${r.r}`);
    return problems;
  }
  db = (r as { v: MemWalClient }).v;
  const t = await db.scan();
  const ids = [...(t.getChild('id')?.toArray() ?? [])] as number[];
  const payloads = t.getChild('payload')!.toArray() as string[];
  if (ids.length !== last.size) problems.push(`reopened: ${ids.length} rows, expected ${last.size}`);
  let wrong = 0;
  ids.forEach((id, i) => {
    if (last.get(id) !== payloads[i]) wrong++;
  });
  if (wrong) problems.push(`reopened: ${wrong} rows with a value other than their last`);
  const done = await within(db.compact(), 60_000);
  if (done.r !== 'ok') problems.push(`compact after reopen ${done.r}`);
  await db.close();
  await checkNamedTables(name, 'after a last compaction', problems);
  await destroyAndCheck(name, 'compaction race', problems);
  return problems;
}

(window as unknown as Record<string, unknown>).bigTables = {
  steal,
  killed,
  killedThenDestroy,
  closeThen,
  manyStores,
  compactRace,
  opfsFiles,
};

/**
 * A table file of store `name` held open elsewhere for `ms` (as a predecessor's table writer
 * thread still writing it after a steal or its worker's end): an open (`then: 'open'`, which
 * sweeps it as an orphan) or a destroy right after must wait for it, not fail.
 */
async function heldTable(name: string, then: 'open' | 'destroy', ms: number): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const a = await openMemWal(keyed(name));
  const acked = await fill(a, 0, 1024, 100);
  await a.close();
  const holder = new Worker(new URL('./hold-file.worker.ts', import.meta.url), { type: 'module' });
  const said = (what: string) => new Promise<void>((r) => holder.addEventListener('message', (ev) => ev.data === what && r()));
  const held = said('held');
  const released = said('released');
  holder.postMessage({ store: name, file: '9-9-9.arrow', ms });
  await held;
  try {
    if (then === 'open') {
      const b = await openOr(keyed(name), `open beside a held table file`, problems);
      if (b) {
        await checkRows(b, acked, 'open beside a held table file', problems);
        await b.close();
        const left = (await opfsFiles(name)).filter((f) => f === 'tables/9-9-9.arrow');
        if (left.length) problems.push('the orphan held at open was not swept');
      }
      await released;
    }
    await destroyAndCheck(name, `${then} beside a held table file`, problems);
  } finally {
    holder.terminate();
  }
  return problems;
}

Object.assign((window as unknown as { bigTables: object }).bigTables, { heldTable });

/**
 * The origin's quota cut (`window.a5SetQuota`, the spec's CDP `Storage.overrideQuotaForOrigin`)
 * just below what a big table needs, then its flush started (the table write on the table writer
 * thread fails `QuotaExceeded`), then the quota lifted after `holdMs`: the flush retries and
 * lands, the writer never poisons, every acknowledged row is there before and after a reopen, no
 * failed write's file is left, and destroy leaves nothing.
 */
async function quota(name: string, mib: number, holdMs: number): Promise<string[]> {
  const setQuota = (window as unknown as { a5SetQuota: (bytes: number | null) => Promise<void> }).a5SetQuota;
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const opts = keyed(name, { flushRetry: { baseMs: 50, maxMs: 300 } });
  let db = await openMemWal(opts);
  const states: string[] = [];
  const acked = await fill(db, 0, mib * 1024, 1000);
  const { usage = 0 } = await navigator.storage.estimate();
  await setQuota(usage + 4 * MiB);
  try {
    void db.forceSealActive().catch(() => undefined);
    const end = Date.now() + holdMs;
    while (Date.now() < end) {
      states.push(db.writerState);
      await sleep(50);
    }
    const hit = await db.writeStats();
    if (hit.flushFailureCount === 0) problems.push(`no flush failed under the cut quota (${hit.flushCount} flushes)`);
  } finally {
    await setQuota(null);
  }
  const drained = await within(db.waitForFlushDrain(), 60_000);
  if (drained.r !== 'ok') problems.push(`flush drain after the lift: ${drained.r}`);
  states.push(db.writerState);
  if (states.some((s) => s !== 'open')) problems.push(`states: ${[...new Set(states)].join(',')}`);
  await checkRows(db, acked, 'after the lift', problems);
  const c = await within(db.close(), 30_000);
  if (c.r !== 'ok') problems.push(`close ${c.r}`);
  await checkNamedTables(name, 'after the lift', problems);
  const named = new Set((await manifestTables(name)).map((t) => `tables/${t}`));
  const extra = (await opfsFiles(name)).filter((f) => f.startsWith('tables/') && !named.has(f));
  if (extra.length) problems.push(`table files no manifest names after close: ${extra.join(' ')}`);
  const r = await openOr(opts, 'reopen after the quota', problems);
  if (r) {
    db = r;
    await checkRows(db, acked, 'reopened after the quota', problems);
    await db.close();
  }
  await destroyAndCheck(name, 'quota', problems);
  return problems;
}

Object.assign((window as unknown as { bigTables: object }).bigTables, { quota });

/** Before a page reload: a big memtable acknowledged (ids 0..n-1, returned n) and its flush started. */
async function reloadStart(name: string, mib: number): Promise<number> {
  await destroyMemWal(name).catch(() => undefined);
  const db = await openMemWal(keyed(name));
  const acked = await fill(db, 0, mib * 1024, 1000);
  void db.forceSealActive().catch(() => undefined);
  return acked.length;
}

/** After the reload: the store opens at once with ids 0..n-1, its manifest's files all there; destroy leaves nothing. */
async function reloadCheck(name: string, n: number): Promise<string[]> {
  const problems: string[] = [];
  const db = await openOr(keyed(name), 'open after the reload', problems);
  if (db) {
    await checkRows(
      db,
      Array.from({ length: n }, (_, i) => i),
      'after the reload',
      problems,
    );
    await db.forceSealActive();
    const w = await within(db.waitForFlushDrain(), 60_000);
    if (w.r !== 'ok') problems.push(`flush after the reload ${w.r}`);
    await db.close();
    await checkNamedTables(name, 'after the reload', problems);
  }
  await destroyAndCheck(name, 'reload', problems);
  return problems;
}

Object.assign((window as unknown as { bigTables: object }).bigTables, { reloadStart, reloadCheck });
