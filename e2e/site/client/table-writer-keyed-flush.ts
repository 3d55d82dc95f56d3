// Outside tester (issue 23): keyed flush tables built on the OPFS table writer thread
// (started lazily at the first table build) attacked through the public API only (openMemWal,
// destroyMemWal, the default worker). Overwrites and deletes of the same keys, nulls, empty and
// long strings, binary; a close, a steal, an abort then destroy, a reload and a quota cut around
// the FIRST flush of a fresh store; many stores in one worker. Every scenario checks values, not
// only keys: each key its newest value, deleted keys absent. Loaded by e2e/table-writer-keyed-flush.spec.ts.

import { Binary, Field, Int32, makeData, RecordBatch, Schema, Struct, Utf8, vectorFromArray } from 'apache-arrow';
import type { MemWalClient } from '../../../src/rpc/client.js';
import { type OpenMemWalOptions, openMemWal } from '../../../src/rpc/open-memwal.js';
import { destroyMemWal } from '../../../src/rpc/destroy.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('s', new Utf8(), true), new Field('b', new Binary(), true)]);
const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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

/** The value of key `id` as put in round `round`: null, empty, short or long string; binary likewise. */
function value(id: number, round: number): { s: string | null; b: Uint8Array | null } {
  const h = (id * 2654435761 + round * 40503) >>> 0;
  const kind = h % 10;
  const s = kind === 0 ? null : kind === 1 ? '' : kind < 6 ? `r${round}-${id}` : `r${round}-${id}-${'x'.repeat(200 + (h % 1800))}`;
  const bk = (h >>> 8) % 8;
  const b = bk === 0 ? null : bk === 1 ? new Uint8Array(0) : Uint8Array.from({ length: bk * 3 }, (_, k) => (id + round + k) & 0xff);
  return { s, b };
}

const bytesKey = (b: unknown): string => (b instanceof Uint8Array ? Array.from(b).join(',') : String(b));

/** Model: key id → round of its newest put, -1 when deleted (absent keys never put). */
type Model = Map<number, number>;

/** Rows as an Arrow batch of the schema. */
function arrowBatch(rows: { id: number; s: string | null; b: Uint8Array | null }[]): RecordBatch {
  const children = schema.fields.map((f) => vectorFromArray(rows.map((r) => r[f.name as 'id']) as never[], f.type).data[0]!);
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children }));
}

/**
 * Puts of `rounds` rounds over `keys` keys in batches of varied size, each round overwriting a
 * varying subset in a varying order (ascending, descending, strided), some batches sliced from a
 * bigger Arrow batch, a key repeated inside a batch, deletes between rounds. The model records
 * what was acknowledged.
 */
async function writeRounds(db: MemWalClient, model: Model, keys: number, rounds: number, firstRound = 0): Promise<void> {
  for (let round = firstRound; round < firstRound + rounds; round++) {
    const ids: number[] = [];
    for (let id = 0; id < keys; id++) if ((id + round) % 4 !== 0) ids.push(id);
    if (round % 3 === 1) ids.reverse();
    if (round % 3 === 2) ids.sort((a, b) => ((a * 7919) % keys) - ((b * 7919) % keys));
    let at = 0;
    let k = 0;
    while (at < ids.length) {
      const size = [1, 7, 300, 2000, 33, 5000][k++ % 6]!;
      const chunk = ids.slice(at, at + size);
      at += size;
      if (chunk.length > 3) chunk[chunk.length - 1] = chunk[0]!; // a key twice in one put: the last wins
      const rows = chunk.map((id) => ({ id, ...value(id, round) }));
      if (k % 3 === 0 && rows.length > 2) {
        const pad = [{ id: keys + 5, ...value(keys + 5, round) }];
        await db.put(arrowBatch([...pad, ...rows, ...pad]).slice(1, 1 + rows.length));
      } else if (k % 3 === 1) await db.put(arrowBatch(rows));
      else await db.put(rows);
      for (const id of chunk) model.set(id, round);
    }
    const dead: { id: number }[] = [];
    for (let id = round % 13; id < keys; id += 13) dead.push({ id });
    await db.delete(dead);
    for (const { id } of dead) model.set(id, -1);
  }
}

/** Problems of `db`'s rows against the model: scan (values), getMany of every key and some absent ones. */
async function checkModel(db: MemWalClient, model: Model, when: string, problems: string[]): Promise<void> {
  const t = await db.scan();
  const ids = t.getChild('id')!.toArray() as Int32Array;
  const ss = t.getChild('s')!;
  const bs = t.getChild('b')!;
  const seen = new Set<number>();
  let wrong = 0;
  let first = '';
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (seen.has(id)) {
      wrong++;
      first ||= `${id} doubled`;
    }
    seen.add(id);
    const round = model.get(id);
    if (round === undefined || round < 0) {
      wrong++;
      first ||= `${id} deleted or never put, scanned`;
      continue;
    }
    const want = value(id, round);
    if ((ss.get(i) ?? null) !== want.s || bytesKey(bs.get(i) ?? null) !== bytesKey(want.b)) {
      wrong++;
      first ||= `${id}: s ${String(ss.get(i)).slice(0, 20)} want ${String(want.s).slice(0, 20)}`;
    }
  }
  let live = 0;
  for (const [id, round] of model) {
    if (round < 0) continue;
    live++;
    if (!seen.has(id)) {
      wrong++;
      first ||= `${id} missing`;
    }
  }
  if (wrong) problems.push(`${when}: scan ${ids.length} rows (model ${live}), ${wrong} wrong, first: ${first}`);
  const all = [...model.keys(), -1, 1_000_000];
  let bad = 0;
  let firstBad = '';
  for (let at = 0; at < all.length; at += 5000) {
    const chunk = all.slice(at, at + 5000);
    const got = await db.getMany(chunk.map((id) => ({ id })));
    chunk.forEach((id, i) => {
      const round = model.get(id);
      const g = got[i] as { s?: string | null; b?: Uint8Array | null } | undefined;
      if (round === undefined || round < 0) {
        if (g !== undefined) {
          bad++;
          firstBad ||= `${id} should be absent`;
        }
        return;
      }
      const want = value(id, round);
      if (!g || (g.s ?? null) !== want.s || bytesKey(g.b ?? null) !== bytesKey(want.b)) {
        bad++;
        firstBad ||= `${id}: ${g ? String(g.s).slice(0, 20) : 'absent'} want ${String(want.s).slice(0, 20)}`;
      }
    });
  }
  if (bad) problems.push(`${when}: getMany ${bad} wrong, first: ${firstBad}`);
}

const opts = (name: string, extra: Partial<OpenMemWalOptions> = {}): OpenMemWalOptions => ({
  name,
  schema,
  primaryKey: ['id'],
  storage: 'opfs',
  ...extra,
});

async function openOr(o: OpenMemWalOptions, when: string, problems: string[], ms = 30_000): Promise<MemWalClient | undefined> {
  const r = await within(openMemWal(o), ms);
  if (r.r === 'ok') return (r as { v: MemWalClient }).v;
  problems.push(`${when}: open ${r.r}`);
  return undefined;
}

async function destroyOr(name: string, when: string, problems: string[], o: Parameters<typeof destroyMemWal>[1] = {}): Promise<void> {
  const d = await within(destroyMemWal(name, o), 20_000);
  if (d.r !== 'ok') problems.push(`${when}: destroy ${d.r}`);
}

/**
 * The model run through the page: small memtables (a flush every 512 KiB, built on the table
 * writer thread), rounds of overwrites and deletes, checked while open, after a drain, after a
 * close and reopen, and after a compaction.
 */
async function keyedModel(name: string, keys: number, rounds: number, extra: Partial<OpenMemWalOptions> = {}): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const o = opts(name, { maxMemtableBytes: MiB / 2, ...extra });
  let db = await openMemWal(o);
  const model: Model = new Map();
  await writeRounds(db, model, keys, rounds);
  await checkModel(db, model, 'open', problems);
  await db.forceSealActive();
  await db.waitForFlushDrain();
  await checkModel(db, model, 'drained', problems);
  await db.close();
  db = await openMemWal(o);
  await checkModel(db, model, 'reopened', problems);
  await writeRounds(db, model, keys, 2, rounds);
  await db.compact();
  await checkModel(db, model, 'compacted', problems);
  await db.close();
  db = await openMemWal(o);
  await checkModel(db, model, 'reopened again', problems);
  await db.close();
  await destroyOr(name, 'model', problems);
  return problems;
}

/**
 * A fresh store (its table writer thread not started yet), `keys` keys over three rounds of
 * overwrites and deletes, then its first flush started and, `delayMs` later: `close` (then a
 * reopen), `steal` (a second client takes it over and checks), or `abort` then at once a destroy
 * (the store must go, nothing left). Every acknowledged key its newest value.
 */
async function firstFlush(name: string, how: 'close' | 'steal' | 'abort-destroy', delayMs: number, keys: number): Promise<string[]> {
  const problems: string[] = [];
  const when = `${how} at ${delayMs} ms`;
  await destroyMemWal(name).catch(() => undefined);
  const a = await openMemWal(opts(name, { maxMemtableBytes: 256 * MiB }));
  const model: Model = new Map();
  await writeRounds(a, model, keys, 3);
  void a.forceSealActive().catch(() => undefined);
  await sleep(delayMs);
  if (how === 'close') {
    const c = await within(a.close(), 30_000);
    if (c.r !== 'ok') problems.push(`${when}: close ${c.r}`);
  } else if (how === 'abort-destroy') {
    await a.abort();
    await destroyOr(name, when, problems);
    const b = await openOr(opts(name), `${when}: open after destroy`, problems);
    if (b) {
      const n = (await b.scan()).numRows;
      if (n) problems.push(`${when}: ${n} rows after destroy`);
      await b.close();
    }
    await destroyOr(name, when, problems);
    return problems;
  }
  const b = await openOr(opts(name, how === 'steal' ? { steal: true } : {}), when, problems);
  if (b) {
    await checkModel(b, model, when, problems);
    await b.forceSealActive();
    const w = await within(b.waitForFlushDrain(), 30_000);
    if (w.r !== 'ok') problems.push(`${when}: flush after ${w.r}`);
    await checkModel(b, model, `${when}, flushed again`, problems);
    const c = await within(b.close(), 30_000);
    if (c.r !== 'ok') problems.push(`${when}: close after ${c.r}`);
  }
  if (how === 'steal') {
    const c = await within(a.close(), 20_000);
    if (c.r === 'hung') problems.push(`${when}: the robbed writer's close hung`);
  }
  const again = await openOr(opts(name), `${when}, reopened`, problems);
  if (again) {
    await checkModel(again, model, `${when}, reopened`, problems);
    await again.close();
  }
  await destroyOr(name, when, problems);
  return problems;
}

/** Before a reload: a fresh store's rounds acknowledged and its first flush started; returns the model. */
async function reloadStart(name: string, keys: number): Promise<[number, number][]> {
  await destroyMemWal(name).catch(() => undefined);
  const db = await openMemWal(opts(name, { maxMemtableBytes: 256 * MiB }));
  const model: Model = new Map();
  await writeRounds(db, model, keys, 3);
  void db.forceSealActive().catch(() => undefined);
  lastDb = db;
  return [...model];
}

let lastDb: MemWalClient | undefined;

/** The client `reloadStart` left open: its close, after another tab took the store, within 20 s (any outcome but a hang). */
async function closeLast(): Promise<string[]> {
  const c = await within(lastDb!.close(), 20_000);
  return c.r === 'hung' ? ['the robbed tab close hung'] : [];
}

/** In a second tab: the store taken over (`steal`) and checked against the first tab's model. */
async function stealCheck(name: string, entries: [number, number][]): Promise<string[]> {
  const problems: string[] = [];
  const model: Model = new Map(entries);
  const db = await openOr(opts(name, { steal: true }), 'steal from another tab', problems);
  if (db) {
    await checkModel(db, model, 'stolen', problems);
    await db.forceSealActive();
    const w = await within(db.waitForFlushDrain(), 60_000);
    if (w.r !== 'ok') problems.push(`flush after the steal ${w.r}`);
    await db.close();
    const b = await openOr(opts(name), 'reopen after the steal', problems);
    if (b) {
      await checkModel(b, model, 'reopened after the steal', problems);
      await b.close();
    }
  }
  return problems;
}

async function reloadCheck(name: string, entries: [number, number][]): Promise<string[]> {
  const problems: string[] = [];
  const model: Model = new Map(entries);
  const db = await openOr(opts(name), 'open after the reload', problems);
  if (db) {
    await checkModel(db, model, 'after the reload', problems);
    await db.forceSealActive();
    const w = await within(db.waitForFlushDrain(), 60_000);
    if (w.r !== 'ok') problems.push(`flush after the reload ${w.r}`);
    await db.close();
    const b = await openOr(opts(name), 'reopen after the reload', problems);
    if (b) {
      await checkModel(b, model, 'reopened after the reload', problems);
      await b.close();
    }
  }
  await destroyOr(name, 'reload', problems);
  return problems;
}

/**
 * `stores` fresh stores in one worker, each writing rounds with small memtables at once (their
 * first flushes, and so their table writer threads, starting together); one of them aborted
 * and destroyed while its flushes run; the others closed at once, reopened and checked.
 */
async function manyStores(prefix: string, stores: number, keys: number): Promise<string[]> {
  const problems: string[] = [];
  const worker = new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  try {
    const names = Array.from({ length: stores }, (_, i) => `${prefix}-${i}`);
    const o = (n: string) => opts(n, { worker, maxMemtableBytes: MiB });
    const dbs = await Promise.all(names.map((n) => openMemWal(o(n))));
    const models = names.map(() => new Map() as Model);
    const writes = dbs.map((db, i) => writeRounds(db, models[i]!, keys, 3));
    await writes[0];
    await dbs[0]!.abort();
    await destroyOr(names[0]!, 'store 0 aborted', problems, { worker });
    const w = await within(Promise.all(writes.slice(1)), 120_000);
    if (w.r !== 'ok') problems.push(`writes ${w.r}`);
    for (const db of dbs.slice(1)) void db.forceSealActive().catch(() => undefined);
    const c = await within(Promise.all(dbs.slice(1).map((db) => db.close())), 60_000);
    if (c.r !== 'ok') problems.push(`close all ${c.r}`);
    for (const [i, n] of names.entries()) {
      if (i === 0) {
        const b = await openOr(o(n), `${n} after destroy`, problems);
        if (b) {
          if ((await b.scan()).numRows) problems.push(`${n}: rows after destroy`);
          await b.close();
        }
      } else {
        const b = await openOr(o(n), n, problems);
        if (!b) continue;
        await checkModel(b, models[i]!, n, problems);
        await b.close();
      }
      await destroyOr(n, n, problems, { worker });
    }
  } finally {
    worker.terminate();
  }
  return problems;
}

/**
 * The quota cut (`window.a6SetQuota`) just above the current usage while a fresh store's first
 * keyed flush is built and written on the table writer thread, lifted after `holdMs`: the flush
 * retries and lands, every key its newest value before and after a reopen.
 */
async function quota(name: string, keys: number, holdMs: number): Promise<string[]> {
  const setQuota = (window as unknown as { a6SetQuota: (bytes: number | null) => Promise<void> }).a6SetQuota;
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const o = opts(name, { maxMemtableBytes: 256 * MiB, flushRetry: { baseMs: 50, maxMs: 300 } });
  const db = await openMemWal(o);
  const model: Model = new Map();
  await writeRounds(db, model, keys, 3);
  const { usage = 0 } = await navigator.storage.estimate();
  await setQuota(usage + MiB);
  try {
    void db.forceSealActive().catch(() => undefined);
    await sleep(holdMs);
    const hit = await db.writeStats();
    if (hit.flushFailureCount === 0) problems.push(`no flush failed under the cut quota (${hit.flushCount} flushes)`);
  } finally {
    await setQuota(null);
  }
  const drained = await within(db.waitForFlushDrain(), 60_000);
  if (drained.r !== 'ok') problems.push(`flush drain after the lift: ${drained.r}`);
  if (db.writerState !== 'open') problems.push(`writer ${db.writerState}`);
  await checkModel(db, model, 'after the lift', problems);
  await writeRounds(db, model, keys, 1, 3);
  const c = await within(db.close(), 30_000);
  if (c.r !== 'ok') problems.push(`close ${c.r}`);
  const b = await openOr(o, 'reopen after the quota', problems);
  if (b) {
    await checkModel(b, model, 'reopened after the quota', problems);
    await b.close();
  }
  await destroyOr(name, 'quota', problems);
  return problems;
}

(window as unknown as Record<string, unknown>).keyedFlush = {
  keyedModel,
  firstFlush,
  reloadStart,
  reloadCheck,
  manyStores,
  quota,
  closeLast,
  stealCheck,
};

/**
 * Schema evolution across a crash: rounds under the schema (id, s, b) left in the WAL (an abort,
 * some already flushed when `flushFirst`), then the store opened with (id, x, s): a column added
 * before `s`, `b` dropped. The replayed v1 rows and new v2 overwrites and deletes share memtables,
 * flushed (on the table writer thread where the payloads were kept) and compacted: each key its
 * newest value, `x` null for rows last put under v1.
 */
async function evolve(name: string, keys: number, flushFirst: boolean): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const a = await openMemWal(opts(name, { maxMemtableBytes: 256 * MiB }));
  const v1: Model = new Map();
  await writeRounds(a, v1, keys, flushFirst ? 1 : 2);
  if (flushFirst) {
    await a.forceSealActive();
    await a.waitForFlushDrain();
    await writeRounds(a, v1, keys, 1, 1);
  }
  await a.abort();
  const schema2 = new Schema([new Field('id', new Int32(), false), new Field('x', new Utf8(), true), new Field('s', new Utf8(), true)]);
  const want = new Map<number, { x: string | null; s: string | null } | null>();
  for (const [id, round] of v1) want.set(id, round < 0 ? null : { x: null, s: value(id, round).s });
  const o2: OpenMemWalOptions = { name, schema: schema2, primaryKey: ['id'], storage: 'opfs', maxMemtableBytes: MiB / 4 };
  let db = await openOr(o2, 'open under v2', problems);
  if (!db) return problems;
  for (let round = 10; round < 13; round++) {
    const rows: { id: number; x: string | null; s: string | null }[] = [];
    for (let id = round % 5; id < keys + 100; id += 3) rows.push({ id, x: id % 4 ? `x${round}-${id}` : null, s: value(id, round).s });
    for (let at = 0; at < rows.length; at += 700) await db.put(rows.slice(at, at + 700));
    for (const r of rows) want.set(r.id, { x: r.x, s: r.s });
    const dead: { id: number }[] = [];
    for (let id = round; id < keys; id += 17) dead.push({ id }, { id });
    await db.delete(dead);
    for (const { id } of dead) want.set(id, null);
  }
  const check = async (when: string): Promise<void> => {
    const t = await db!.scan();
    const ids = t.getChild('id')!.toArray() as Int32Array;
    const xs = t.getChild('x')!;
    const ss = t.getChild('s')!;
    let wrong = 0;
    let first = '';
    const seen = new Set<number>();
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      seen.add(id);
      const w = want.get(id);
      if (!w || (xs.get(i) ?? null) !== w.x || (ss.get(i) ?? null) !== w.s) {
        wrong++;
        first ||= `${id}: x ${xs.get(i)} s ${String(ss.get(i)).slice(0, 16)} want ${JSON.stringify(w)?.slice(0, 40)}`;
      }
    }
    for (const [id, w] of want)
      if (w && !seen.has(id)) {
        wrong++;
        first ||= `${id} missing`;
      }
    if (wrong) problems.push(`${when}: ${wrong} wrong of ${ids.length}, first: ${first}`);
    const got = await db!.getMany([...want.keys()].slice(0, 5000).map((id) => ({ id })));
    let bad = 0;
    [...want.keys()].slice(0, 5000).forEach((id, i) => {
      const w = want.get(id);
      const g = got[i] as { x?: string | null; s?: string | null; b?: unknown } | undefined;
      if (!w ? g !== undefined : !g || (g.x ?? null) !== w.x || (g.s ?? null) !== w.s || 'b' in g) bad++;
    });
    if (bad) problems.push(`${when}: getMany ${bad} wrong`);
  };
  await check('v2 open');
  await db.forceSealActive();
  await db.waitForFlushDrain();
  await check('v2 drained');
  await db.close();
  db = await openOr(o2, 'reopen under v2', problems);
  if (!db) return problems;
  await check('v2 reopened');
  await db.compact();
  await check('v2 compacted');
  await db.close();
  await destroyOr(name, 'evolve', problems);
  return problems;
}

Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { evolve });

/** The app's own worker hosting store after store: each opened, written, flushed (its table writer started), closed. */
let cycleWorker: Worker | undefined;
async function cycles(prefix: string, n: number, keys: number, own = true): Promise<string[]> {
  const problems: string[] = [];
  if (own) cycleWorker ??= new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  const worker = own ? cycleWorker : undefined;
  for (let i = 0; i < n; i++) {
    const name = `${prefix}-${i}`;
    const o = opts(name, { ...(worker ? { worker } : {}), maxMemtableBytes: MiB });
    const db = await openOr(o, name, problems);
    if (!db) continue;
    const model: Model = new Map();
    await writeRounds(db, model, keys, 1);
    await db.forceSealActive();
    const w = await within(db.waitForFlushDrain(), 30_000);
    if (w.r !== 'ok') problems.push(`${name}: drain ${w.r}`);
    const c = await within(db.close(), 30_000);
    if (c.r !== 'ok') problems.push(`${name}: close ${c.r}`);
    await destroyOr(name, name, problems, worker ? { worker } : {});
  }
  return problems;
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { cycles });

/** A store opened in the cycles' worker, written and flushed, left open (so its threads run). */
async function holdOpen(name: string): Promise<string[]> {
  cycleWorker ??= new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  const db = await openMemWal(opts(name, { worker: cycleWorker, maxMemtableBytes: MiB }));
  await writeRounds(db, new Map(), 2000, 1);
  await db.forceSealActive();
  await db.waitForFlushDrain();
  return [];
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { holdOpen });

/**
 * A scanBatches read slowly (a pause between batches) while flushes commit on
 * the table writer thread and a compaction merges and removes the files it reads: keys 0..keys-1,
 * never touched during the scan, come back each exactly once with its value; no error.
 */
async function scanDuringCompaction(name: string, keys: number): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const db = await openMemWal(opts(name, { maxMemtableBytes: MiB / 2 }));
  const model: Model = new Map();
  await writeRounds(db, model, keys, 3);
  await db.forceSealActive();
  await db.waitForFlushDrain();
  const seen = new Map<number, number>();
  let wrong = 0;
  let first = '';
  let round = 0;
  /** Between two batches: new keys put and flushed (on the table writer), then a compaction. */
  const churn = async (): Promise<void> => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({ id: keys + 10 + i, ...value(keys + 10 + i, 100 + round) }));
    await db.put(rows);
    await db.forceSealActive();
    await db.waitForFlushDrain();
    await db.compact().catch((e: { code?: string }) => problems.push(`compact ${e.code}`));
    round++;
  };
  try {
    for await (const b of db.scanBatches()) {
      const ids = b.getChild('id')!.toArray() as Int32Array;
      const ss = b.getChild('s')!;
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        if (id >= keys) continue;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        const r = model.get(id);
        if (r === undefined || r < 0 || (ss.get(i) ?? null) !== value(id, r).s) {
          wrong++;
          first ||= `${id}`;
        }
      }
      if (round < 6) await churn();
    }
  } catch (e) {
    problems.push(`scanBatches threw ${(e as { code?: string }).code ?? ''} ${String(e)}`);
  }
  let missing = 0;
  let doubled = 0;
  for (const [id, r] of model) {
    if (r < 0) continue;
    const n = seen.get(id) ?? 0;
    if (n === 0) missing++;
    if (n > 1) doubled++;
  }
  if (wrong || missing || doubled)
    problems.push(`scan during ${round} puts and compactions: ${wrong} wrong (first ${first}), ${missing} missing, ${doubled} doubled`);
  const stats = await db.compactionStats();
  if (round < 1) problems.push(`no churn round during the scan (one batch)`);
  await db.close();
  await destroyOr(name, 'scan', problems);
  void stats;
  return problems;
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { scanDuringCompaction });

/**
 * One put of `mib` MiB (past maxWalBufferBytes' default) where each of 500 keys repeats many
 * times across the batch (the last wins), then a delete listing each deleted key twice, on a
 * fresh store: flushed (its first table, on the table writer), closed, reopened, every key its
 * last value.
 */
async function bigPut(name: string, mib: number): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const o = opts(name, { maxMemtableBytes: 256 * MiB, maxWalBufferBytes: 64 * MiB });
  let db = await openMemWal(o);
  const model: Model = new Map();
  const n = Math.floor((mib * MiB) / 1000);
  const rows = Array.from({ length: n }, (_, i) => {
    const id = (i * 7) % 500;
    return { id, ...value(id, i) };
  });
  const r = await within(db.put(rows), 60_000);
  if (r.r !== 'ok') problems.push(`big put ${r.r}`);
  else
    rows.forEach((row, i) => {
      model.set(row.id, i);
    });
  const dead = Array.from({ length: 50 }, (_, i) => ({ id: i * 9 }));
  await db.delete([...dead, ...dead]);
  for (const { id } of dead) model.set(id, -1);
  await checkModel(db, model, 'before the flush', problems);
  await db.forceSealActive();
  await db.waitForFlushDrain();
  await checkModel(db, model, 'flushed', problems);
  await db.close();
  db = await openMemWal(o);
  await checkModel(db, model, 'reopened', problems);
  await db.close();
  await destroyOr(name, 'big put', problems);
  return problems;
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { bigPut });

/**
 * In one app worker: store A's first flush started (the worker's table writer thread being
 * started for it), A aborted `delayMs` later and destroyed; then store B opened in the same
 * worker: its flushes must not wait on a writer A's end took down, nothing of B lost.
 */
async function abortFirstThenOther(prefix: string, delayMs: number, keys: number): Promise<string[]> {
  const problems: string[] = [];
  const when = `A aborted at ${delayMs} ms`;
  const worker = new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' });
  try {
    const a = await openMemWal(opts(`${prefix}-a`, { worker, maxMemtableBytes: 256 * MiB }));
    await writeRounds(a, new Map(), keys, 2);
    void a.forceSealActive().catch(() => undefined);
    await sleep(delayMs);
    await a.abort();
    await destroyOr(`${prefix}-a`, when, problems, { worker });
    const o = opts(`${prefix}-b`, { worker, maxMemtableBytes: MiB });
    const b = await openOr(o, `${when}: B`, problems);
    if (!b) return problems;
    const model: Model = new Map();
    const w = await within(writeRounds(b, model, keys, 2), 60_000);
    if (w.r !== 'ok') problems.push(`${when}: B's writes ${w.r}`);
    await b.forceSealActive();
    const d = await within(b.waitForFlushDrain(), 30_000);
    if (d.r !== 'ok') problems.push(`${when}: B's drain ${d.r}`);
    const c = await within(b.close(), 30_000);
    if (c.r !== 'ok') problems.push(`${when}: B's close ${c.r}`);
    const b2 = await openOr(o, `${when}: B reopened`, problems);
    if (b2) {
      await checkModel(b2, model, `${when}: B reopened`, problems);
      await b2.close();
    }
    await destroyOr(`${prefix}-b`, when, problems, { worker });
  } finally {
    worker.terminate();
  }
  return problems;
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { abortFirstThenOther });

/** Destroy `name` within 20 s. */
async function destroyName(name: string): Promise<string[]> {
  const problems: string[] = [];
  await destroyOr(name, name, problems);
  return problems;
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { destroyName });

/**
 * Reads racing the first flush's commit: a fresh store's rounds, its first flush started (a
 * table built and written on the table writer thread, then the memtable dropped), and getMany
 * of 2000 keys and scans in a loop until the flush drained and after: never a key missing or old.
 */
async function readsDuringFirstFlush(name: string, keys: number): Promise<string[]> {
  const problems: string[] = [];
  await destroyMemWal(name).catch(() => undefined);
  const db = await openMemWal(opts(name, { maxMemtableBytes: 256 * MiB }));
  const model: Model = new Map();
  await writeRounds(db, model, keys, 3);
  let drained = false;
  void db
    .forceSealActive()
    .then(() => db.waitForFlushDrain())
    .then(() => {
      drained = true;
    });
  let loops = 0;
  const end = Date.now() + 60_000;
  for (let after = 0; after < 3 && Date.now() < end && problems.length === 0; loops++) {
    if (drained) after++;
    const ids = Array.from({ length: 2000 }, (_, i) => (i * 7919 + loops * 31) % keys);
    const got = await db.getMany(ids.map((id) => ({ id })));
    let bad = 0;
    ids.forEach((id, i) => {
      const round = model.get(id);
      const g = got[i] as { s?: string | null } | undefined;
      if (round === undefined || round < 0 ? g !== undefined : !g || (g.s ?? null) !== value(id, round).s) bad++;
    });
    if (bad) problems.push(`loop ${loops} (drained ${drained}): getMany ${bad} wrong`);
    if (loops % 4 === 0) {
      const n = (await db.scan({ columns: ['id'] })).numRows;
      const live = [...model.values()].filter((r) => r >= 0).length;
      if (n !== live) problems.push(`loop ${loops} (drained ${drained}): scan ${n} rows, model ${live}`);
    }
  }
  if (!drained) problems.push('the first flush never drained');
  await db.close();
  await destroyOr(name, 'reads', problems);
  return problems;
}
Object.assign((window as unknown as { keyedFlush: object }).keyedFlush, { readsDuringFirstFlush });
