// The demo's named scenarios: settings and faults tuned so that, within seconds of Start, the
// charts show what the scenario is about — backpressure waits and compaction debt included
// (at the demo's defaults, 4 MiB memtables under a 16 MiB budget and fresh ids, the pipeline
// keeps up and those charts stay flat). demo/README.md lists what each one shows and how long
// it took to show it. Data only; settings.ts applies them.

import type { Settings } from './settings.js';

const KiB = 1024;
const MiB = 1024 * KiB;

export interface Scenario {
  /** What the picker shows. */
  label: string;
  /** What to watch, one or two sentences (shown under the picker). */
  watch: string;
  /** Load and store settings over the demo's defaults. */
  settings: Partial<Settings>;
  /** Faults armed as soon as the store is open. */
  faults?: { failFlushes?: number; failCompactions?: number; slowCompactions?: boolean };
}

// Common to all: small memtables and a small budget (a flush is a fraction of a second of load,
// the budget a few memtables), and rows that overwrite a bounded key space — so level-0 files
// overlap level 1 and compactions merge, which is what builds compaction debt (with fresh ids
// every flushed file just moves down a level: no debt to see). 50,000 keys of the event shape
// are about 4.5 MiB of table files, so a compaction rewrites a few MiB.
const small: Partial<Settings> = {
  shape: 'event',
  keySpace: 50_000,
  memtableBytes: 1 * MiB,
  budgetBytes: 3 * MiB,
  graceMs: 0,
  debtBytes: 16 * MiB,
};

export type ScenarioName = 'steady' | 'burst' | 'failing-flushes' | 'slow-compaction';

export const SCENARIOS: Readonly<Record<ScenarioName, Scenario>> = {
  steady: {
    label: 'Steady load',
    watch:
      'A steady 20,000 rows/s: unflushed bytes saw-tooth under the budget, each flush adds a level-0 file and compaction debt, ' +
      'each compaction clears it. The debt bound is low (2 MiB), so while a compaction runs the flushes wait for it ' +
      '(level-0 stalls). The budget is one memtable, so the puts that arrive while a frozen memtable flushes wait for it: ' +
      'briefly at every flush, longer when the flush waits for a compaction.',
    settings: { ...small, rowsPerSec: 20_000, batchRows: 1000, inflight: 8, debtBytes: 2 * MiB, budgetBytes: 1 * MiB },
  },
  burst: {
    label: 'Burst past the budget',
    watch:
      'Puts as fast as 32 in flight allow: writers outrun flushes, unflushed bytes sit at the 2 MiB budget and puts wait on it ' +
      '(cause: memtable) while compactions run behind.',
    settings: { ...small, rowsPerSec: 0, batchRows: 2000, inflight: 32, budgetBytes: 2 * MiB },
  },
  'failing-flushes': {
    label: 'Failing flushes',
    watch:
      'The next 6 flushes fail: frozen memtables pile up behind the retried one until the 4 MiB budget is reached and puts ' +
      'wait. When the failures run out the pile flushes, and level-0 files and compaction debt jump.',
    settings: { ...small, rowsPerSec: 20_000, batchRows: 1000, inflight: 8, memtableBytes: 512 * KiB, budgetBytes: 4 * MiB },
    faults: { failFlushes: 6 },
  },
  'slow-compaction': {
    label: 'Slow compaction',
    watch:
      'Steady load with every compaction output write 2 s slower: debt stays past its 2 MiB bound, flushes wait for ' +
      'compaction (level-0 stalls rise first), then puts wait with cause "compaction".',
    settings: { ...small, rowsPerSec: 20_000, batchRows: 1000, inflight: 8, debtBytes: 2 * MiB, slowMs: 2000 },
    faults: { slowCompactions: true },
  },
};
