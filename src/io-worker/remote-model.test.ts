// A store on RemoteStorage (the I/O worker's host over a MessageChannel, as remote-storage.test.ts)
// driven at random against a model: puts, deletes, seals, compactions, close/abort and reopen, with
// faults injected under the I/O plane, inside the I/O worker (an append failed or applied but
// reported failed, a failed table write, a failed WAL read). Flushes are built in the I/O worker,
// from the payloads it kept or read back; the deterministic simulation (test/sim) runs inline
// jobs and does not reach this path.

import { describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { schema, storeName } from '../engine/testkit.test-util.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MemoryStorage } from '../storage/memory.js';
import { remoteOver } from './edge-keys.test-util.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { crc32c } from '../util/crc32c.js';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function openRetry(opts: Parameters<typeof MemWal.open>[0]): Promise<MemWal> {
  for (let i = 0; ; i++) {
    try {
      return await MemWal.open(opts);
    } catch (e) {
      if (i > 8) throw e;
    }
  }
}

describe('a store on RemoteStorage against a model, under faults in the I/O worker', () => {
  for (const keyed of [true, false])
    for (let seed = 1; seed <= 4; seed++)
      it(`seed ${seed}, ${keyed ? 'keyed' : 'append-only'}: every flush (from kept payloads or read back) holds the model's rows`, async () => {
        const r = rng(seed * 7 + (keyed ? 1 : 0));
        const inner = new MemoryStorage();
        const far = new FaultInjectingStorage(inner);
        const storage = remoteOver(far);
        const name = storeName();
        const quiet = { warn: () => undefined };
        const opts = {
          name,
          schema,
          primaryKey: keyed ? ['id'] : [],
          storage,
          logger: quiet,
          maxMemtableRows: 50 + Math.floor(r() * 300),
          walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 5_000 },
          flushRetry: { baseMs: 1, maxMs: 5 },
        };
        let w = await MemWal.open(opts);
        const model = new Map<number, string>();
        const log: string[] = [];
        let appended = 0;
        for (let step = 0; step < 120; step++) {
          const x = r();
          if (x < 0.55) {
            const n = 1 + Math.floor(r() * 40);
            const rs = Array.from({ length: n }, () => {
              const id = Math.floor(r() * 400);
              return { id, value: step, name: `s${step}-${id}-${'q'.repeat(Math.floor(r() * 9))}` };
            });
            await w.put(rs);
            for (const row of rs) model.set(keyed ? row.id : appended++, row.name);
          } else if (x < 0.62 && keyed) {
            const ids = Array.from({ length: 1 + Math.floor(r() * 10) }, () => Math.floor(r() * 400));
            await w.delete(ids.map((id) => ({ id })));
            for (const id of ids) model.delete(id);
          } else if (x < 0.7) {
            far.failAfter('walAppend', 1 + Math.floor(r() * 2));
            log.push('failAfter walAppend');
          } else if (x < 0.76) {
            const k = r();
            const [op, how] =
              k < 0.4
                ? (['walAppend', 'failNext'] as const)
                : k < 0.8
                  ? (['walAppend', 'failAfter'] as const)
                  : (['walRead', 'failNext'] as const);
            far[how](op, 1);
            log.push(`far ${how} ${op}`);
          } else if (x < 0.82) {
            far.failNext('tableWrite', 1);
            log.push('failNext tableWrite');
          } else if (x < 0.88) {
            await w.forceSealActive();
          } else if (x < 0.92) {
            await w.compact().catch(() => undefined);
          } else if (x < 0.96) {
            await (r() < 0.5 ? w.close().catch(() => undefined) : w.abort());
            w = await openRetry(opts);
            log.push('reopen');
          } else {
            await w.waitForFlushDrain();
          }
        }
        await w.forceSealActive();
        await w.waitForFlushDrain();
        const check = async (m: MemWal) => {
          const t = await m.scan();
          expect(t.numRows, log.join(',')).toBe(model.size);
          if (keyed) for (const row of t) expect(row.name).toBe(model.get(Number(row.id)));
          else {
            const got = [...t].map((row) => row.name as string).sort();
            expect(got).toEqual([...model.values()].sort());
          }
        };
        await check(w);
        // Every file the manifest names (flushes and compaction outputs built in the I/O worker)
        // has the checksum of its bytes.
        const files = (inner as unknown as { stores: Map<string, { tables: Map<string, Uint8Array> }> }).stores.get(name)!.tables;
        const tables = (w as unknown as { ctx: { log: { manifest: { tables: TableFileEntry[] } } } }).ctx.log.manifest.tables;
        expect(tables.length).toBeGreaterThan(0);
        for (const t of tables) expect(crc32c(files.get(t.name)!).toString(16).padStart(8, '0')).toBe(t.checksum);
        await w.close();
        const again = await openRetry(opts);
        await check(again);
        await again.close();
      });
});
