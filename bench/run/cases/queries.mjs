// The list-screen query case (bench/page-queries.ts, docs/benchmarks.md "Queries"): memwal,
// Dexie, SQLite-wasm and PGlite, each with an ordered index on `count`, SIZE.queries.rows app
// rows, in the bench worker and from the page, side by side in one run; per engine and place the
// p50 and p99 of the first page (range + limit 50), of the next pages (`after`) and of `count`,
// and each peer's p50 ÷ memwal's (above 1: memwal faster). Node.

import { SIZE, wanted } from '../args.mjs';
import { details, fmtNum, guarded, label, log, record } from '../results.mjs';

const ENGINES = ['memwal', 'dexie', 'sqlite', 'pglite'];
const KINDS = ['first', 'next', 'count'];

export const queryCases = {
  async queries({ call }) {
    const { rows, chains, counts } = SIZE.queries;
    const n = label(rows);
    const out = (details.queries = { rows, chains, pagesPerChain: 10, counts });
    for (const where of ['worker', 'page']) {
      for (const engine of ENGINES.filter(wanted)) {
        const r = await guarded(`queries/${where}/${engine}`, () =>
          where === 'worker'
            ? call(([e, a, b, c]) => globalThis.bench.api.queries(e, a, b, c), engine, rows, chains, counts)
            : call(([e, a, b, c]) => globalThis.bench.queriesPage(e, a, b, c), engine, rows, chains, counts),
        );
        if (!r) continue;
        (out[where] ??= {})[engine] = r;
        for (const k of KINDS) {
          record(`queries_${where}_${n}_${k}_p50_ms`, engine, [r[k].p50], 'ms');
          record(`queries_${where}_${n}_${k}_p99_ms`, engine, [r[k].p99], 'ms');
        }
        log(
          `queries/${where}/${engine}: ${n} rows loaded in ${(r.loadMs / 1000).toFixed(1)} s${r.readyMs > 1 ? ` (+${(r.readyMs / 1000).toFixed(1)} s settle)` : ''}; ` +
            KINDS.map((k) => `${k} p50 ${fmtNum(r[k].p50)} ms p99 ${fmtNum(r[k].p99)} ms (${r[k].calls})`).join(', '),
        );
      }
      const m = out[where]?.memwal;
      if (!m) continue;
      for (const engine of ENGINES.slice(1)) {
        const p = out[where]?.[engine];
        if (!p) continue;
        const ratios = Object.fromEntries(KINDS.map((k) => [k, +(p[k].p50 / m[k].p50).toFixed(2)]));
        ((out.ratios ??= {})[where] ??= {})[engine] = ratios;
        log(`queries/${where}: ${engine} p50 ÷ memwal p50 — ${KINDS.map((k) => `${k} ${ratios[k]}×`).join(', ')}`);
      }
    }
  },
};
