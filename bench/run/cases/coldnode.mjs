// Cold point reads in Node (bench/cold-node.ts, run in a process of its own): `coldKeys` keys
// compacted into one table file on NodeFileStorage, then per rep a fresh open and `coldGets`
// timed gets. Node.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR, REPS, SIZE } from '../args.mjs';
import { details, fmtNum, log, record } from '../results.mjs';

export const coldNodeCases = {
  async coldnode() {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(BENCH_DIR, 'cold-node.ts'), `--keys=${SIZE.coldKeys}`, `--gets=${SIZE.coldGets}`, `--reps=${REPS}`],
      { cwd: join(BENCH_DIR, '..'), maxBuffer: 16 * 1024 * 1024 },
    );
    const r = JSON.parse(stdout.trim().split('\n').at(-1));
    for (const k of ['p50', 'p99', 'max'])
      record(
        'coldnode_get_ms',
        k,
        r.reps.map((x) => x[k]),
        'ms',
      );
    record(
      'coldnode_open_ms',
      'memwal',
      r.reps.map((x) => x.openMs),
      'ms',
    );
    record(
      'coldnode_gets_per_s',
      'memwal',
      r.reps.map((x) => x.gets / (x.ms / 1000)),
      'gets/s',
    );
    details.coldnode = {
      keys: r.keys,
      gets: r.gets,
      tableCount: r.tableCount,
      tableBytes: r.tableBytes,
      blockReads: r.reps.map((x) => x.blockReads),
      node: process.version,
    };
    log(
      `coldnode: ${r.keys} keys in ${r.tableCount} table file(s), ${r.gets} gets per fresh open: p50 ${r.reps.map((x) => fmtNum(x.p50)).join(', ')} ms; p99 ${r.reps.map((x) => fmtNum(x.p99)).join(', ')} ms`,
    );
  },
};
