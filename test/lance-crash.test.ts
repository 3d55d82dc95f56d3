// Crash either side of a drain at random points (docs/scale-out.md): the example Lance server is killed
// with SIGKILL while it creates each of its two datasets (the data table, then the positions table:
// a kill at a random time in the creation, test/lance-kill-hook.ts), then while a shipment is in
// flight (mid-commit), and restarted; the store is aborted while a shipment is in flight and
// reopened with a new drain. Afterwards the Lance table equals scan() of the store at the drained
// position, with no row applied twice.

import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Schema } from 'apache-arrow';
import { afterAll, expect, it, onTestFinished } from 'vitest';
import { MemWal } from '../src/engine/memwal.js';
import { drain } from '../src/drain/drain.js';
import type { DrainHandle } from '../src/drain/drain.js';
import { appendSchema, keyedSchema, lanceRows, randomAppendLoad, randomKeyedLoad, scanRows } from '../src/lance/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { int, rng } from '../src/testing/rng.js';
import { type LanceServer, type LanceServerOptions, startLanceServer, testPort } from './lance-server-process.js';

const dirs: string[] = [];
const servers: LanceServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const quiet = { warn: () => undefined };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Seeds of the sweep: MEMWAL_DRAIN_CRASH_SEEDS=N runs N of them per kind (default 2). */
const SEEDS = Number(process.env.MEMWAL_DRAIN_CRASH_SEEDS ?? 2);
const ROUNDS = 5;
/**
 * A kill during a dataset's creation lands uniformly in this many ms after the creation starts:
 * creating a small dataset took 5-15 ms here, so kills land before anything is written, in the
 * middle (a directory without a version) and just after.
 */
const CREATE_KILL_WINDOW_MS = 15;

/** What a kill left of dataset `name`: nothing, a directory without a version, or a dataset. */
function datasetState(uri: string, name: string): 'absent' | 'half-created' | 'complete' {
  const dir = join(uri, `${name}.lance`);
  if (!existsSync(dir)) return 'absent';
  const versions = join(dir, '_versions');
  return existsSync(versions) && readdirSync(versions).some((f) => f.endsWith('.manifest')) ? 'complete' : 'half-created';
}

/** Resolves once a shipment is in flight (shipped beyond applied), or after `ms`. */
async function inFlight(d: DrainHandle, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const s = await d.drainStats();
    if (s.shippedPosition > s.appliedPosition) return true;
    await sleep(1);
  }
  return false;
}

for (const kind of ['keyed', 'append-only'] as const) {
  for (let seed = 1; seed <= SEEDS; seed++) {
    it(`${kind} (seed ${seed}): SIGKILL of the server while it creates each dataset and mid-shipment, abort of the store mid-shipment, rerun: the Lance table equals scan(), no duplicates`, async () => {
      const r = rng(seed * 7919 + (kind === 'keyed' ? 1 : 2));
      const keyed = kind === 'keyed';
      const schema: Schema = keyed ? keyedSchema : appendSchema;
      const root = mkdtempSync(join(tmpdir(), 'memwal-drain-crash-store-'));
      const uri = mkdtempSync(join(tmpdir(), 'memwal-drain-crash-lance-'));
      dirs.push(root, uri);
      const port = testPort(keyed ? 2 : 3);
      const serverOptions = { uri, port, tokens: { secret: 'crashy' }, primaryKey: keyed ? ['id'] : [] };
      const start = async (extra: Partial<LanceServerOptions> = {}): Promise<LanceServer> => {
        const s = await startLanceServer({ ...serverOptions, ...extra });
        servers.push(s);
        return s;
      };
      const open = () =>
        MemWal.open({
          name: 'crashy',
          schema,
          ...(keyed ? { primaryKey: ['id'] } : {}),
          storage: new NodeFileStorage(root),
          maxMemtableRows: 400,
          logger: quiet,
        });
      const startDrain = (s: MemWal) =>
        drain(s, {
          endpoint: `http://127.0.0.1:${port}/drain/crashy`,
          token: 'secret',
          batchBytes: 1024 + int(r, 8192),
          retry: { baseMs: 10, maxMs: 150 },
          requestTimeoutMs: 10_000, // a request whose answer died with the server is retried
          logger: quiet,
        });

      // Kills while the server creates each dataset: the first request creates the data table with
      // its rows, then the positions table with its position.
      const created: string[] = [];
      let server = await start({ killDuringCreate: { table: 'events', afterMs: r() * CREATE_KILL_WINDOW_MS } });
      onTestFinished(() => server.kill()); // a failed run must not keep the port
      let store = await open();
      let d = startDrain(store);
      let seq = 0;
      if (keyed) await randomKeyedLoad(store, r, 5, 300);
      else seq = await randomAppendLoad(store, r, 5, seq);
      for (const dataset of ['events', 'events_memwal_positions']) {
        if (dataset !== 'events') server = await start({ killDuringCreate: { table: dataset, afterMs: r() * CREATE_KILL_WINDOW_MS } });
        // The server dies once it starts creating the dataset; if an earlier kill came after that
        // creation, it is not created again: the drain gets its first position applied instead.
        const until = Date.now() + 60_000;
        let killed = false;
        while (
          !(killed = server.child.exitCode !== null || server.child.signalCode !== null) &&
          (await d.drainStats()).appliedPosition === 0
        ) {
          if (Date.now() > until) throw new Error(`no creation of ${dataset} in 60 s:\n${server.log()}`);
          await sleep(5);
        }
        if (killed) created.push(`${dataset}: ${datasetState(uri, dataset)}`);
        await server.kill();
      }
      console.log(`${kind} seed ${seed}: kills during creation left ${created.join(', ') || 'nothing (both made before a kill)'}`);
      server = await start();
      const kills = { server: 0, store: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const s = store;
        const load = (async () => {
          if (keyed) await randomKeyedLoad(s, r, 30 + int(r, 40), 300);
          else seq = await randomAppendLoad(s, r, 30 + int(r, 40), seq);
        })().catch(() => undefined); // puts in flight when the store is aborted reject (Closed)
        await sleep(int(r, 150));
        const caught = await inFlight(d, 2000);
        if (caught) await sleep(int(r, 20));
        if (r() < 0.5) {
          await server.kill(); // SIGKILL, mid-commit when `caught`
          kills.server += 1;
          server = await start();
        } else {
          await store.abort(); // the writer dies mid-shipment
          kills.store += 1;
          await d.stop();
          await load;
          store = await open();
          d = startDrain(store);
        }
        await load;
        if (!keyed) seq += 1000; // aborted puts may leave gaps; never reuse a seq
      }
      if (keyed) await randomKeyedLoad(store, r, 20, 300);
      else await randomAppendLoad(store, r, 20, seq);
      const target = (await store.sync()).position;
      await d.waitForApplied(target, { signal: AbortSignal.timeout(120_000) }).catch(async (e: unknown) => {
        throw new Error(`the drain did not reach position ${target} in 120 s: ${JSON.stringify(await d.drainStats())}`, { cause: e });
      });

      const lance = await lanceRows(uri, 'events', 'crashy', schema);
      expect(lance).toEqual(await scanRows(store, schema));
      expect(new Set(lance.map((row) => (JSON.parse(row) as unknown[])[0])).size).toBe(lance.length); // no key or seq twice
      expect(kills.server + kills.store).toBe(ROUNDS);
      await d.stop();
      await store.close();
      await server.kill();
    }, 240_000); // each server restart loads LanceDB in a new process: 3–6 s here, far more on a loaded machine
  }
}
