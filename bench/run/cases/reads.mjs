// The read cases: the 1M-row read case in the bench worker (reads: three overwrite rounds, point
// reads cold, warm and absent, scans, space), and the read ladders — one store per engine grown
// from size to size (200k, 1M, 4M rows), read at each — in the bench worker (readsworker: memwal,
// SQLite in WAL mode, IndexedDB) and from the page as apps call each engine (readspage: memwal's
// client, IndexedDB and Dexie on the page, SQLite through its worker API, PGlite through
// PGliteWorker). Node.

import { SIZE, wanted } from '../args.mjs';
import { details, fmtNum, guarded, label, log, record } from '../results.mjs';

export const readCases = {
  /** Cases 8-10: 3 overwrite rounds of `readRows` keys, point reads, scans, space. */
  async reads({ call }) {
    for (const engine of READ_ENGINES.filter(wanted)) {
      await guarded(`reads/${engine}`, () => readsOf(call, engine, SIZE.readRows, 3, 'reads', true));
    }
  },

  /** The read ladder in the bench worker: memwal, SQLite (WAL), IndexedDB; cold and warm point reads at each size. */
  async readsworker({ call }) {
    const api = (fn, ...args) => call(([f, a]) => globalThis.bench.api[f](...a), fn, args);
    const R = SIZE.readPasses;
    for (const engine of ['memwal', 'sqlite_sahpool_wal', 'idb'].filter(wanted)) {
      await guarded(`readsworker/${engine}`, () =>
        ladder('readsworker', engine, {
          open: () => api('readsOpen', engine, 0, true),
          grow: async (to) => (await api('readsGrow', to)).ms,
          settle: engine === 'memwal' ? () => api('readsSettle') : undefined,
          async read(size, put) {
            const cold = await api('readsPass', R.cold, 21, true, true, R.maxMs);
            await api('readsPass', R.warmup, 22, true, false, R.maxMs);
            const warm = await api('readsPass', R.warm, 23, true, false, R.maxMs);
            put('cold', engine, cold);
            put('warm', engine, warm);
            record(`readsworker_${size}_open_ms`, engine, [cold.openMs], 'ms');
            return { cold, warm };
          },
          close: () => api('readsClose'),
        }),
      );
    }
  },

  /**
   * The read ladder from the page: at each size a fresh open (memwal: a new worker), the first
   * `warmup` gets after it ("cold"), then `warm` gets; memwal's getMany in 100-key batches; Dexie
   * reads the database idb loaded.
   */
  async readspage({ call }) {
    const page = (fn, ...args) => call(([f, a]) => globalThis.bench[f](...a), fn, args);
    const P = SIZE.pagePasses;
    for (const engine of ['memwal', 'idb', 'sqlite_page_wal', 'pglite_page'].filter((e) => wanted(e) || (e === 'idb' && wanted('dexie')))) {
      await guarded(`readspage/${engine}`, async () => {
        const opened = await page('pageReadsOpen', engine);
        if (opened.vfs) details.readspage_sqlite_vfs = opened.vfs;
        await ladder('readspage', engine, {
          open: async () => undefined,
          grow: async (to) => (await page('pageReadsGrow', to)).loadMs,
          settle: engine === 'memwal' ? () => page('pageReadsSettle') : undefined,
          async read(size, put) {
            const out = {};
            for (const view of engine === 'idb' ? ['idb', 'dexie'].filter(wanted) : [engine]) {
              if (engine === 'idb') await page('pageReadsUse', view);
              const { openMs } = await page('pageReadsReopen');
              const cold = await page('pageReadsPass', P.warmup, 31, P.maxMs);
              const warm = await page('pageReadsPass', P.warm, 32, P.maxMs);
              put('cold', view, cold);
              put('warm', view, warm);
              record(`readspage_${size}_open_ms`, view, [openMs], 'ms');
              out[view] = { openMs, cold, warm };
            }
            if (engine === 'idb') await page('pageReadsUse', 'idb');
            if (engine === 'memwal') {
              const many = await page('pageReadsMany', P.manyBatches, 33, P.maxMs);
              if (many.available) {
                record(`readspage_${size}_getmany_keys_per_s`, 'memwal', [many.keys / (many.ms / 1000)], 'keys/s');
                record(`readspage_${size}_getmany_p99_ms`, 'memwal', [many.p99], 'ms');
              } else details.readspage_getmany = 'n/a (no getMany)';
              out.getMany = many;
            }
            return out;
          },
          close: () => page('pageReadsClose'),
        });
      });
    }
  },
};

/**
 * One engine up the ladder (SIZE.ladder): open, then for each size load the rows up to it (in
 * steps of at most 250k rows), settle (memwal), and `read(size, put)`, whose passes `put(kind,
 * engine, pass)` records as `<prefix>_<size>_<kind>_{gets_per_s,p50_ms,p99_ms}`. An engine whose
 * next size would take longer than SIZE.loadLimitS to load, at the rate it loaded so far, stops
 * there (details.<prefix>.<engine>.stopped says why). Always closes (deletes) the engine's data.
 */
async function ladder(prefix, engine, { open, grow, settle, read, close }) {
  const d = ((details[prefix] ??= {})[engine] = { sizes: {} });
  await open();
  try {
    let loaded = 0;
    let loadMs = 0;
    for (const n of SIZE.ladder) {
      const size = label(n);
      if (loaded > 0) {
        const projectedS = (n - loaded) / (loaded / loadMs) / 1000;
        if (projectedS > SIZE.loadLimitS) {
          d.stopped = `not loaded to ${size}: ${projectedS.toFixed(0)} s projected at ${fmtNum(loaded / (loadMs / 1000))} rows/s (limit ${SIZE.loadLimitS} s)`;
          log(`${prefix}/${engine}: ${d.stopped}`);
          break;
        }
      }
      let ms = 0;
      for (let from = loaded; from < n; from = Math.min(n, from + 250_000)) ms += await grow(Math.min(n, from + 250_000));
      loaded = n;
      loadMs += ms;
      const s = (d.sizes[size] = { loadSeconds: +(ms / 1000).toFixed(1) });
      if (settle) s.settle = await settle();
      log(
        `${prefix}/${engine}: ${size} loaded in ${s.loadSeconds} s${s.settle ? `, settled in ${(s.settle.settleMs / 1000).toFixed(1)} s` : ''}`,
      );
      const put = (kind, who, p) => {
        record(`${prefix}_${size}_${kind}_gets_per_s`, who, [p.gets / (p.ms / 1000)], 'gets/s');
        record(`${prefix}_${size}_${kind}_p50_ms`, who, [p.p50], 'ms');
        record(`${prefix}_${size}_${kind}_p99_ms`, who, [p.p99], 'ms');
        log(
          `${prefix}/${who} ${size}: ${kind} ${fmtNum(p.gets / (p.ms / 1000))} gets/s, p50 ${fmtNum(p.p50)} ms, p99 ${fmtNum(p.p99)} ms${p.blockReads !== undefined ? `, ${p.blockReads} block reads in ${p.gets} gets` : p.readStats ? `, ${p.readStats.blockReads} block reads in ${p.gets} gets` : ''}`,
        );
      };
      Object.assign(s, await read(size, put));
    }
  } finally {
    await close();
  }
}

/** The engines of the read case (Dexie reads the database idb wrote; see bench/reads.ts). */
export const READ_ENGINES = ['memwal', 'sqlite_sahpool_wal', 'pglite_opfs_ahp', 'idb'];

/**
 * The read case of one engine: write `rounds` overwrite rounds of `n` keys, then point reads
 * (cold, warm, absent); with `full`, also two full scans, and for memwal the space before and
 * after compact() and reads once more after it. Figures go to cases `<prefix>_*`.
 */
async function readsOf(call, engine, n, rounds, prefix, full) {
  const api = (fn, ...args) => call(([f, a]) => globalThis.bench.api[f](...a), fn, args);
  const R = SIZE.readPasses;
  const d = (details[prefix] ??= {});
  await api('readsOpen', engine, n);
  try {
    const writes = [];
    for (let round = 0; round < rounds; round++) {
      // Slices of 250k rows: the worker holds one slice of row objects at a time.
      let ms = 0;
      for (let from = 0; from < n; from += 250_000) ms += (await api('readsWrite', round, from, Math.min(n, from + 250_000))).ms;
      writes.push(ms);
      log(`${prefix}/${engine}: round ${round + 1} written in ${(ms / 1000).toFixed(1)} s`);
    }
    const writeMs = writes.reduce((a, b) => a + b, 0);
    record(`${prefix}_write_rows_per_s`, engine, [(n * rounds) / (writeMs / 1000)], 'rows/s');
    d[engine] = { writeSeconds: writes.map((ms) => +(ms / 1000).toFixed(2)) };
    if (engine === 'memwal') {
      d[engine].whileWriting = await api('readsWriteStats');
      d[engine].settle = await api('readsSettle');
      record(`${prefix}_settle_s`, 'memwal', [d[engine].settle.settleMs / 1000], 's');
      log(`${prefix}/${engine}: settled ${JSON.stringify(d[engine].settle)}`);
      if (full) {
        d[engine].settled = await api('readsSpace', false);
        recordSpace(prefix, 'settled', d[engine].settled);
      }
    }
    const passes = async (who) => {
      const cold = await api('readsPass', R.cold, 11, true, true, R.maxMs);
      await api('readsPass', R.warmup, 12, true, false, R.maxMs);
      const warm = await api('readsPass', R.warm, 13, true, false, R.maxMs);
      const absent = await api('readsPass', R.warm, 14, false, false, R.maxMs);
      for (const [kind, p] of [
        ['cold', cold],
        ['warm', warm],
        ['absent', absent],
      ]) {
        record(`${prefix}_${kind}_gets_per_s`, who, [p.gets / (p.ms / 1000)], 'gets/s');
        record(`${prefix}_${kind}_p50_ms`, who, [p.p50], 'ms');
        record(`${prefix}_${kind}_p99_ms`, who, [p.p99], 'ms');
      }
      if (full) {
        const scans = [await api('readsScan'), await api('readsScan')];
        record(
          `${prefix}_scan_rows_per_s`,
          who,
          scans.map((s) => s.rows / (s.ms / 1000)),
          'rows/s',
        );
      }
      Object.assign((d[who] ??= {}), { openMs: cold.openMs, cold, warm, absent });
      log(
        `${prefix}/${who}: cold ${fmtNum(cold.gets / (cold.ms / 1000))}/s, warm ${fmtNum(warm.gets / (warm.ms / 1000))}/s p99 ${warm.p99.toFixed(3)} ms, absent ${fmtNum(absent.gets / (absent.ms / 1000))}/s`,
      );
    };
    await passes(engine);
    if (engine === 'memwal' && full) {
      d.memwal.compacted = await api('readsSpace', true);
      recordSpace(prefix, 'compacted', d.memwal.compacted);
      await api('readsPass', R.warmup, 16, true, false, R.maxMs);
      const warm = await api('readsPass', R.warm, 15, true, false, R.maxMs);
      record(`${prefix}_after_compact_warm_gets_per_s`, 'memwal', [warm.gets / (warm.ms / 1000)], 'gets/s');
      record(`${prefix}_after_compact_warm_p99_ms`, 'memwal', [warm.p99], 'ms');
      d.memwal.afterCompact = warm;
      log(`${prefix}/memwal: compacted ${JSON.stringify(d.memwal.compacted)}`);
    }
    if (engine === 'idb' && wanted('dexie')) {
      await api('readsSwitchToDexie');
      await passes('dexie');
    }
  } finally {
    await api('readsClose');
  }
}

/**
 * Space of a memwal store: live table bytes ÷ logical bytes (the space
 * amplification), everything in OPFS (tables + WAL) ÷ logical bytes, and write amplification
 * (table bytes written by flushes and compactions ÷ the Arrow IPC bytes of every row put).
 */
function recordSpace(prefix, when, f) {
  const c = `${prefix}_space`;
  record(c, `${when}_table_amp`, [f.tableBytes / f.logicalBytes], 'x');
  record(c, `${when}_disk_amp`, [(f.opfs.tableBytes + f.opfs.walBytes) / f.logicalBytes], 'x');
  record(c, `${when}_write_amp`, [f.tableBytesWritten / f.userBytes], 'x');
  record(c, `${when}_table_files`, [f.tableCount], 'files');
}
