// The client e2e page: opens stores with openMemWal (memwal's default worker, a worker of its
// own, or the fault worker) and exposes `window.mw` (protocol.ts) to Playwright.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { MemWal } from '../../../src/engine/memwal.js';
import type { MemWalClient } from '../../../src/rpc/client.js';
import { openMemWal, type OpenMemWalOptions } from '../../../src/rpc/open-memwal.js';
import { destroyMemWal } from '../../../src/rpc/destroy.js';
import type {
  ClientHarness,
  FaultControl,
  GetManyReport,
  OpenRequest,
  Outcome,
  ProbeAck,
  ProbeReport,
  ScanReport,
  StormOptions,
  StormReport,
} from './protocol.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('payload', new Utf8(), true)]);

interface Entry {
  client: MemWalClient;
  worker: Worker | undefined;
  states: string[];
  roleChanges: string[];
  warnings: string[];
  storm?: { stop: boolean; acked: number[]; errors: Record<string, number>; puts: number; done: Promise<void> };
  probe?: { stop: boolean; acks: ProbeAck[]; errors: Record<string, number>; done: Promise<void> };
}

const clients = new Map<number, Entry>();
const ops = new Map<number, Promise<Outcome<unknown>>>();
let nextClient = 1;
let nextOp = 1;

/** `window.__ack(ids)`: set by a test (exposeBinding) that must learn of acks before a page close. */
const reportAck = (ids: number[]): void => (window as unknown as { __ack?: (ids: number[]) => void }).__ack?.(ids);

async function outcome<T>(p: Promise<T> | (() => Promise<T>)): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await (typeof p === 'function' ? p() : p) };
  } catch (e) {
    const err = e as { code?: string; message?: string; name?: string };
    return { ok: false, code: err.code ?? err.name ?? 'unknown', message: String(err.message ?? e) };
  }
}

function entry(id: number): Entry {
  const e = clients.get(id);
  if (!e) throw new Error(`no client ${id}`);
  return e;
}

const PAYLOAD_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Incompressible-ish text of `bytes` characters (IndexedDB compresses values). */
function payload(bytes: number): string {
  const random = new Uint8Array(bytes);
  for (let at = 0; at < bytes; at += 65536) crypto.getRandomValues(random.subarray(at, Math.min(bytes, at + 65536)));
  let s = '';
  for (const b of random) s += PAYLOAD_ALPHABET[b % PAYLOAD_ALPHABET.length];
  return s;
}

function rows(firstId: number, n: number, payloadBytes = 16): { id: number; payload: string }[] {
  const text = payload(payloadBytes);
  return Array.from({ length: n }, (_, i) => ({ id: firstId + i, payload: text }));
}

function newWorker(kind: 'own' | 'fault'): Worker {
  return kind === 'own'
    ? new Worker(new URL('../../../src/rpc/default-worker.ts', import.meta.url), { type: 'module' })
    : new Worker(new URL('./fault.worker.ts', import.meta.url), { type: 'module' });
}

const openStates = new Map<number, string[]>();

/**
 * Messages this page posted and received on MessagePorts (the clients' connections to their
 * workers), so a test can count the messages of one call. Counted from the page's start: each
 * message event once, however many listeners it reaches.
 */
const portTraffic = { sent: 0, received: 0 };
{
  const proto = MessagePort.prototype;
  const post = proto.postMessage as (this: MessagePort, ...a: unknown[]) => void;
  proto.postMessage = function (this: MessagePort, ...a: unknown[]) {
    portTraffic.sent++;
    return post.apply(this, a);
  } as MessagePort['postMessage'];
  const add = proto.addEventListener;
  const remove = proto.removeEventListener;
  const counted = new WeakSet<Event>();
  const wrappers = new WeakMap<object, EventListener>();
  const wrapped = (listener: EventListener): EventListener => {
    let w = wrappers.get(listener);
    if (!w) {
      w = function (this: unknown, ev: Event) {
        if (!counted.has(ev)) {
          counted.add(ev);
          portTraffic.received++;
        }
        return listener.call(this, ev);
      };
      wrappers.set(listener, w);
    }
    return w;
  };
  proto.addEventListener = function (this: MessagePort, type: string, listener: unknown, options?: unknown) {
    const l = type === 'message' && typeof listener === 'function' ? wrapped(listener as EventListener) : listener;
    return add.call(this, type, l as EventListener, options as AddEventListenerOptions);
  } as MessagePort['addEventListener'];
  proto.removeEventListener = function (this: MessagePort, type: string, listener: unknown, options?: unknown) {
    const l = (typeof listener === 'function' && wrappers.get(listener)) || listener;
    return remove.call(this, type, l as EventListener, options as EventListenerOptions);
  } as MessagePort['removeEventListener'];
}

const mw: ClientHarness = {
  async open(req: OpenRequest, states: string[] = []) {
    const kind = req.worker ?? 'default';
    const worker = kind === 'default' || kind === 'url' ? undefined : newWorker(kind);
    const workerUrl = req.workerUrl ?? (kind === 'url' ? new URL('./fault.worker.ts', import.meta.url) : undefined);
    const warnings: string[] = [];
    const options = {
      name: req.name,
      schema,
      primaryKey: req.keyed ? ['id'] : [],
      storage: req.storage,
      worker,
      workerUrl,
      logger: { warn: (message: string) => warnings.push(message) },
      ...(req.options ?? {}),
    } as OpenMemWalOptions;
    const r = await outcome(openMemWal(options, { onStateChange: (s) => states.push(s) }));
    if (!r.ok) {
      worker?.terminate();
      return r;
    }
    const id = nextClient++;
    const roleChanges: string[] = [];
    r.value.onRoleChange((role) => roleChanges.push(role));
    clients.set(id, { client: r.value, worker, states, roleChanges, warnings });
    return { ok: true, value: id };
  },

  startOpen(req) {
    const op = nextOp++;
    const states: string[] = [];
    openStates.set(op, states);
    ops.set(op, (mw.open as (r: OpenRequest, s: string[]) => Promise<Outcome<number>>)(req, states));
    return op;
  },

  openStates: (op) => [...(openStates.get(op) ?? [])],

  states: (id) => [...entry(id).states],

  roleChanges: (id) => [...entry(id).roleChanges],

  put: (id, firstId, n, payloadBytes) => outcome(entry(id).client.put(rows(firstId, n, payloadBytes))),

  startPut(id, firstId, n, payloadBytes) {
    const op = nextOp++;
    ops.set(op, outcome(entry(id).client.put(rows(firstId, n, payloadBytes))));
    return op;
  },

  async settled(op, waitMs = 0) {
    const p = ops.get(op);
    if (!p) throw new Error(`no operation ${op}`);
    const timeout = new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), waitMs));
    return Promise.race([p, timeout]);
  },

  async getMany(id, ids) {
    const before = { ...portTraffic };
    const r = await outcome(entry(id).client.getMany(ids.map((i) => ({ id: i })) as { id: number }[]));
    if (!r.ok) return r;
    const report: GetManyReport = {
      ids: r.value.map((row) => (row === undefined ? null : Number((row as { id: number }).id))),
      sent: portTraffic.sent - before.sent,
      received: portTraffic.received - before.received,
    };
    return { ok: true, value: report };
  },

  async statsUnderPuts(id, writers, puts, rowsPerPut) {
    const c = entry(id).client;
    return outcome(async () => {
      await c.stats(); // the first call asks the worker; it publishes from then on
      let next = 0;
      const writer = async (): Promise<void> => {
        while (next < puts) await c.put(rows(100_000 + next++ * rowsPerPut, rowsPerPut, 64));
      };
      let pushes = 0;
      let inconsistentPushes = 0;
      const stop = c.onStats(
        (s) => {
          pushes++;
          if (s.memtable && s.unflushedBytes !== s.memtable.estimatedBytes + s.memtable.frozenBytes) inconsistentPushes++;
        },
        { intervalMs: 100 },
      );
      const latenciesMs: number[] = [];
      let loading = true;
      const sampler = (async () => {
        while (loading) {
          const t = performance.now();
          await c.stats();
          latenciesMs.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      await Promise.all(Array.from({ length: writers }, writer));
      loading = false;
      await sampler;
      stop();
      let staleAfterReply = 0;
      const base = (await c.stats()).write.putCount;
      for (let i = 1; i <= 20; i++) {
        await c.put(rows(900_000 + i, 1, 16));
        if ((await c.stats()).write.putCount < base + i) staleAfterReply++;
      }
      const before = portTraffic.sent;
      for (let i = 0; i < 200; i++) await c.stats();
      return { latenciesMs, pushes, inconsistentPushes, staleAfterReply, postedDuringStats: portTraffic.sent - before };
    });
  },
  call(id, method) {
    const client = entry(id).client as unknown as Record<string, () => Promise<unknown>>;
    return outcome(() => client[method]!());
  },

  scan: (id) =>
    outcome(async (): Promise<ScanReport> => {
      const t = await entry(id).client.scan({ columns: ['id'] });
      const counts = new Map<number, number>();
      for (const v of t.getChild('id')!.toArray() as Int32Array) counts.set(v, (counts.get(v) ?? 0) + 1);
      const duplicates: Record<number, number> = {};
      for (const [k, c] of counts) if (c !== 1) duplicates[k] = c;
      return { rows: t.numRows, duplicates, ids: [...counts.keys()].sort((a, b) => a - b) };
    }),

  storm(id, o: StormOptions) {
    const e = entry(id);
    const state = { stop: false, acked: [] as number[], errors: {} as Record<string, number>, puts: 0, done: Promise.resolve() };
    let next = o.firstId;
    const text = payload(o.payloadBytes);
    const lane = async (): Promise<void> => {
      while (!state.stop) {
        if (o.pauseMs) await new Promise((resolve) => setTimeout(resolve, o.pauseMs));
        const first = next;
        next += o.batch;
        state.puts++;
        const batch = Array.from({ length: o.batch }, (_, i) => ({ id: first + i, payload: text }));
        const r = await outcome(e.client.put(batch));
        if (r.ok) {
          const ids = batch.map((b) => b.id);
          state.acked.push(...ids);
          if (o.reportAcks) reportAck(ids);
        } else {
          state.errors[r.code] = (state.errors[r.code] ?? 0) + 1;
          if (r.code === 'Closed' || r.code === 'Fenced' || r.code === 'QuotaExceeded' || r.code === 'IOError') return;
        }
      }
    };
    state.done = Promise.all(Array.from({ length: o.concurrency }, lane)).then(() => undefined);
    e.storm = state;
  },

  async stopStorm(id): Promise<StormReport> {
    const s = entry(id).storm;
    if (!s) throw new Error(`client ${id} has no storm`);
    s.stop = true;
    await s.done;
    return { acked: s.acked, errors: s.errors, puts: s.puts };
  },

  acked: (id) => [...(entry(id).storm?.acked ?? [])],

  probe(id, firstId, pauseMs = 0) {
    const e = entry(id);
    const state = { stop: false, acks: [] as ProbeAck[], errors: {} as Record<string, number>, done: Promise.resolve() };
    state.done = (async () => {
      for (let next = firstId; !state.stop; next++) {
        if (pauseMs) await new Promise((resolve) => setTimeout(resolve, pauseMs));
        const r = await outcome(e.client.put([{ id: next, payload: 'probe' }]));
        if (r.ok) {
          state.acks.push({ id: next, position: r.value.position, atMs: Date.now() });
          reportAck([next]);
        } else {
          state.errors[r.code] = (state.errors[r.code] ?? 0) + 1;
        }
      }
    })();
    e.probe = state;
  },

  async stopProbe(id): Promise<ProbeReport> {
    const p = entry(id).probe;
    if (!p) throw new Error(`client ${id} has no probe`);
    p.stop = true;
    await p.done;
    return { acks: p.acks, errors: p.errors };
  },

  epochs: (id) =>
    outcome(async () => {
      const out: [number, number][] = [];
      const client = entry(id).client;
      for await (const e of client.tail((await client.walStats()).oldestPosition)) out.push([e.position, e.epoch]);
      return out;
    }),

  fault(id, control: FaultControl) {
    const w = entry(id).worker;
    if (!w) throw new Error(`client ${id} has no worker of the page`);
    w.postMessage({ fault: control });
  },

  terminate(id) {
    const w = entry(id).worker;
    if (!w) throw new Error(`client ${id} has no worker of the page`);
    w.terminate();
  },

  persisted: (id) => entry(id).client.persisted,

  destroy: (name, storage) => outcome(destroyMemWal(name, { storage })),

  destroyHere: (name, storage) => outcome(MemWal.destroy(name, { storage })),

  warnings: (id) => [...entry(id).warnings],

  hide(event) {
    if (event === 'pagehide') {
      window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }));
      return;
    }
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
    delete (document as { visibilityState?: unknown }).visibilityState; // back to the real (visible) state
  },
};

(window as unknown as { mw: ClientHarness }).mw = mw;
