// Chooses the compaction policy's numbers by measurement (docs/impl.md §3b): a keyed store under
// uniform overwrite, run once per candidate policy side by side in one process, reporting space
// amplification (live table bytes ÷ the newest version of every row as one Arrow IPC file) settled
// and at its worst, write amplification (table bytes written ÷ bytes put), level-0 files at worst
// (the files a get may consult) and time. Node, in-memory storage: `npm run bench:compaction`.

import { RecordBatch, Table, tableToIPC } from 'apache-arrow';
import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import { MemoryStorage, MemWal } from '../src/index.js';

const KEYS = Number(process.env.KEYS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const PER_PUT = 1_000;
const MEMTABLE_BYTES = 2 * 1024 * 1024;

const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);

/** Deterministic shuffled key order per round. */
function order(round: number): Int32Array {
  const a = Int32Array.from({ length: KEYS }, (_, i) => i);
  let x = 0x9e3779b9 ^ round;
  for (let i = a.length - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = (x >>> 0) % (i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

interface Candidate {
  name: string;
  policy: { level0Trigger?: number; spaceAmpTrigger?: number };
}

const CANDIDATES: Candidate[] = [
  { name: 'L0 4, space 0.3 (default)', policy: { level0Trigger: 4, spaceAmpTrigger: 0.3 } },
  { name: 'L0 4, space 0.5', policy: { level0Trigger: 4, spaceAmpTrigger: 0.5 } },
  { name: 'L0 4, space 1.0', policy: { level0Trigger: 4, spaceAmpTrigger: 1.0 } },
  { name: 'L0 8, space 0.3', policy: { level0Trigger: 8, spaceAmpTrigger: 0.3 } },
  { name: 'L0 4, no space trigger', policy: { level0Trigger: 4, spaceAmpTrigger: Number.POSITIVE_INFINITY } },
];

async function run(c: Candidate): Promise<Record<string, number | string>> {
  const w = await MemWal.open(
    {
      name: 'policy',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      maxMemtableBytes: MEMTABLE_BYTES,
      logger: { warn: () => undefined },
    },
    { compactionPolicy: c.policy },
  );
  const t0 = performance.now();
  let worstL0 = 0;
  let worstAmp = 0;
  let liveBytes = 0;
  const sample = async (): Promise<void> => {
    const cs = await w.compactionStats();
    worstL0 = Math.max(worstL0, cs.levels.find((l) => l.level === 0)?.files ?? 0);
    if (liveBytes > 0) worstAmp = Math.max(worstAmp, cs.tableBytes / liveBytes);
  };
  for (let round = 0; round < ROUNDS; round++) {
    const keys = order(round);
    for (let i = 0; i < KEYS; i += PER_PUT) {
      const rows = [];
      for (let k = i; k < Math.min(KEYS, i + PER_PUT); k++) rows.push({ id: keys[k]!, value: round, name: `r${round}-${keys[k]}` });
      await w.put(rows);
      if ((i / PER_PUT) % 20 === 0) await sample();
    }
    if (round === 0) {
      // The newest version of every row, as one Arrow IPC file: the space baseline (later rounds
      // only change the round digit, so its size stays the same).
      await w.forceSealActive();
      await w.waitForFlushDrain();
      const t = await w.scan();
      liveBytes = tableToIPC(
        new Table(
          t.schema,
          t.batches.map((b) => new RecordBatch(t.schema, b.data)),
        ),
        'file',
      ).length;
    }
  }
  await w.forceSealActive();
  await w.waitForFlushDrain();
  for (;;) {
    const cs = await w.compactionStats();
    if (!cs.running && cs.pendingBytes === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = performance.now() - t0;
  const cs = await w.compactionStats();
  const ws = await w.writeStats();
  const wal = await w.walStats();
  await w.close();
  return {
    policy: c.name,
    'space amp settled': +(cs.tableBytes / liveBytes).toFixed(2),
    'space amp worst': +worstAmp.toFixed(2),
    'write amp': +((ws.flushBytes + cs.bytesWritten) / wal.bytesWritten).toFixed(2),
    'level-0 files worst': worstL0,
    compactions: cs.completedCount,
    seconds: +(ms / 1000).toFixed(1),
  };
}

const results = [];
for (const c of CANDIDATES) results.push(await run(c));
console.log(`${KEYS} keys, ${ROUNDS} rounds of uniform overwrite, ${PER_PUT} rows per put, ${MEMTABLE_BYTES / 1024 / 1024} MiB memtables`);
console.table(results);
