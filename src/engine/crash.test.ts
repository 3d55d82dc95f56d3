// Seeded randomized crash test: crash storage at a random operation while a write load runs,
// crash again during recovery, then check that the recovered state is some prefix of the issued
// operations that contains every acknowledged one.

import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../storage/memory.js';
import type { FaultOp } from '../testing/fault-controller.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { int, rng } from '../testing/rng.js';
import { MemWal } from './memwal.js';
import { schema } from './testkit.test-util.js';

type Op = { kind: 'put'; rows: { id: number; name: string }[] } | { kind: 'delete'; id: number } | { kind: 'seal' };
type Mode = 'keyed' | 'append-only' | 'wal-only';

const quiet = { warn: () => undefined };
const SEEDS = Number(process.env.MEMWAL_CRASH_SEEDS ?? 210);

function makeOps(r: () => number, n: number, mode: Mode): Op[] {
  const ops: Op[] = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    if (mode !== 'wal-only' && x < 0.1) ops.push({ kind: 'seal' });
    else if (mode === 'keyed' && x < 0.2) ops.push({ kind: 'delete', id: int(r, 12) });
    else {
      const rows = Array.from({ length: 1 + int(r, 3) }, (_, j) => ({ id: int(r, 12), name: `o${i}r${j}` }));
      ops.push({ kind: 'put', rows });
    }
  }
  return ops;
}

/** The state after applying `ops[0..k)`: keyed → id→name; otherwise the sorted multiset of names. */
function model(ops: Op[], k: number, mode: Mode): string {
  if (mode === 'keyed') {
    const m = new Map<number, string>();
    for (const op of ops.slice(0, k)) {
      if (op.kind === 'put') for (const row of op.rows) m.set(row.id, row.name);
      else if (op.kind === 'delete') m.delete(op.id);
    }
    return JSON.stringify([...m].sort((a, b) => a[0] - b[0]));
  }
  const names: string[] = [];
  for (const op of ops.slice(0, k)) if (op.kind === 'put') for (const row of op.rows) names.push(row.name);
  return JSON.stringify(names.sort());
}

function options(storage: FaultInjectingStorage, name: string, mode: Mode) {
  return {
    name,
    schema,
    primaryKey: mode === 'keyed' ? ['id'] : [],
    enableMemtable: mode !== 'wal-only',
    storage,
    maxMemtableRows: 6,
    flushRetry: { baseMs: 1, maxMs: 4 },
    walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 2_000 },
    logger: quiet,
  };
}

async function recoveredState(w: MemWal, mode: Mode): Promise<string> {
  if (mode === 'wal-only') {
    const names: string[] = [];
    for await (const e of w.tail(1)) {
      const col = e.data.getChild('name')!;
      for (let i = 0; i < e.data.numRows; i++) names.push(col.get(i) as string);
    }
    return JSON.stringify(names.sort());
  }
  const t = await w.scan();
  if (mode === 'keyed') {
    const pairs: [number, string][] = [];
    for (let i = 0; i < t.numRows; i++) pairs.push([Number(t.getChild('id')!.get(i)), t.getChild('name')!.get(i) as string]);
    return JSON.stringify(pairs.sort((a, b) => a[0] - b[0]));
  }
  const names: string[] = [];
  for (let i = 0; i < t.numRows; i++) names.push(t.getChild('name')!.get(i) as string);
  return JSON.stringify(names.sort());
}

/** Operations whose outcome a seed may make ambiguous: applied, then reported failed. */
const AMBIGUOUS: FaultOp[] = ['walAppend', 'manifestCommit', 'tableWrite', 'walTruncate', 'walRemove', 'tableRemove'];

/** Issue `ops[from..to)` against `w` a few at a time, in order; records acknowledged indices. */
async function issue(
  w: MemWal,
  ops: Op[],
  from: number,
  to: number,
  r: () => number,
  acked: Set<number>,
  stop: () => boolean,
): Promise<number> {
  let i = from;
  while (i < to && !stop()) {
    const group = 1 + int(r, 3);
    const batch: Promise<unknown>[] = [];
    for (let g = 0; g < group && i < to; g++) {
      const k = i++;
      const op = ops[k]!;
      const p = op.kind === 'put' ? w.put(op.rows) : op.kind === 'delete' ? w.delete([{ id: op.id }]) : w.forceSealActive();
      // A seal is not a write: its promise says nothing about durability.
      batch.push(
        p.then(
          () => op.kind !== 'seal' && acked.add(k),
          () => undefined,
        ),
      );
    }
    await Promise.all(batch);
  }
  return i;
}

/**
 * One seed: a write load on a fault-injecting store, then recovery, then a check that the
 * recovered state is a prefix of the issued operations that contains every acknowledged one.
 * Each seed draws: a crash point (storage crashes at a random operation); ambiguous outcomes
 * (one kind of operation is applied and then reported failed, sometimes with the re-read that
 * would resolve it failing too); or a stale writer (a successor steals the lock while the old
 * writer, never told, keeps writing until storage fences it). Then the restarted process
 * crashes again early in its recovery, and a final recovery must match.
 */
async function runSeed(
  seed: number,
): Promise<{ acked: number; issued: number; matched: number; torn: number; stale: boolean; compactions: number }> {
  const r = rng(seed);
  const mode: Mode = (['keyed', 'append-only', 'wal-only'] as const)[seed % 3]!;
  const storage = new FaultInjectingStorage(new MemoryStorage(), { seed });
  const name = `crash-${seed}`;
  const ops = makeOps(r, 30 + int(r, 30), mode);
  const w = await MemWal.open(options(storage, name, mode));
  if (r() < 0.5) {
    storage.failAfter(AMBIGUOUS[int(r, AMBIGUOUS.length)]!, 1 + int(r, 2));
    if (r() < 0.5) storage.failNext('manifestLoad');
  }
  const stale = r() < 0.3;
  const acked = new Set<number>();
  let issued: number;
  if (stale) {
    // A successor takes the lock at a random point; the old writer is never told and keeps going.
    storage.silenceLockLoss();
    const cut = int(r, ops.length);
    issued = await issue(w, ops, 0, cut, r, acked, () => false);
    // Its open may meet an injected failure too: it retries, as an app would.
    const openSuccessor = async (): Promise<MemWal> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await MemWal.open({ ...options(storage, name, mode), steal: true });
        } catch (e) {
          if (attempt >= 3) throw e;
        }
      }
    };
    const successor = openSuccessor();
    successor.catch(() => undefined);
    issued = await issue(w, ops, issued, ops.length, r, acked, () => false);
    const b = await successor;
    storage.silenceLockLoss(false);
    if (r() < 0.5) await b.abort();
    else await b.close().catch(() => undefined);
    await w.abort();
  } else {
    storage.crashAt(1 + int(r, 80));
    const crashesBefore = storage.crashed;
    issued = await issue(w, ops, 0, ops.length, r, acked, () => storage.crashed !== crashesBefore);
    if (storage.crashed === crashesBefore) storage.crash();
    await w.abort();
  }
  const compactions = mode === 'wal-only' ? 0 : (await w.compactionStats()).completedCount;
  storage.clearFaults();
  let torn = 0;
  // The restarted process crashes again, early in its recovery.
  storage.crashAt(1 + int(r, 12));
  const before2 = storage.crashed;
  try {
    const w2 = await MemWal.open(options(storage, name, mode));
    torn += (await w2.walStats()).tornTailBytes;
    if (storage.crashed === before2) {
      await w2.close().catch(() => undefined);
    }
    await w2.abort();
  } catch {
    // crashed during open or replay
  }
  if (storage.crashed === before2) storage.crash();
  await storage.settled();
  // Final recovery, no faults.
  const w3 = await MemWal.open(options(storage, name, mode));
  const got = await recoveredState(w3, mode);
  torn += (await w3.walStats()).tornTailBytes;
  // The recovered writer keeps working: one more put, then one more reopen must see both.
  const post: Op = { kind: 'put', rows: [{ id: 99, name: 'post' }] };
  await w3.put(post.rows);
  await w3.abort();
  const w4 = await MemWal.open(options(storage, name, mode));
  const after = await recoveredState(w4, mode);
  await w4.close();
  const maxAcked = acked.size === 0 ? -1 : Math.max(...acked);
  for (let k = maxAcked + 1; k <= issued; k++) {
    if (model(ops, k, mode) === got) {
      const expectedAfter = model([...ops.slice(0, k), post], k + 1, mode);
      if (after !== expectedAfter)
        throw new Error(`seed ${seed} (${mode}): after recovery and one more put: ${after}, expected ${expectedAfter}`);
      return { acked: acked.size, issued, matched: k, torn, stale, compactions };
    }
  }
  if (process.env.MEMWAL_CRASH_DEBUG) {
    console.log('expected', model(ops, issued, mode));
    console.log('acked', [...acked].sort((a, b) => a - b).join(','));
  }
  throw new Error(
    `seed ${seed} (${mode}${stale ? ', stale writer' : ''}): recovered state matches no prefix containing every acknowledged op ` +
      `(acked up to ${maxAcked}, issued ${issued}): ${got}`,
  );
}

describe('crash safety', () => {
  it(
    `every acknowledged operation survives ${SEEDS} seeds of crashes, ambiguous outcomes and stale writers, each crashed again during recovery`,
    async () => {
      let ackedTotal = 0;
      let partial = 0;
      let tornSeeds = 0;
      let staleSeeds = 0;
      let compactions = 0;
      for (let seed = 0; seed < SEEDS; seed++) {
        const res = await runSeed(seed);
        ackedTotal += res.acked;
        if (res.matched < res.issued) partial += 1;
        if (res.torn > 0) tornSeeds += 1;
        if (res.stale) staleSeeds += 1;
        compactions += res.compactions;
      }
      // Compaction ran under the faults too (level 0 fills fast with these tiny memtables).
      expect(compactions).toBeGreaterThan(SEEDS / 10);
      expect(staleSeeds).toBeGreaterThan(SEEDS / 10);
      // The load did real work before the crashes, and some crashes lost unacknowledged tails.
      expect(ackedTotal).toBeGreaterThan(SEEDS);
      expect(partial).toBeGreaterThan(0);
      // Some crashes tore a WAL append, and recovery cut the torn tail.
      expect(tornSeeds).toBeGreaterThan(0);
    },
    Math.max(300_000, SEEDS * 1_500),
  );
});
