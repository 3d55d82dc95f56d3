// The conformance worker: runs memwal's adapter conformance cases, plus a few checks specific to
// Durable Object storage and ordered queries over a MemWal on it (test/fixtures/query-conformance.ts),
// inside workerd against a real SQLite-backed Durable Object, and answers GET /?chunkBytes=N with
// the results as JSON. Bundled by test/workerd/build.ts.

import { DurableObjectStorageAdapter } from '../../src/cloudflare.js';
import { crc32c, crc32cJs, crc32cPath } from '../../src/util/crc32c.js';
import { MemWalError } from '../../src/util/errors.js';
import type { DurableObjectStorageLike } from '../../src/cloudflare.js';
import { conformanceCases, testManifest } from '../../src/testing/conformance.js';
import type { ConformanceCase } from '../../src/testing/conformance.js';
import { queryConformanceCase } from '../fixtures/query-conformance.js';

/** One case's outcome, as the test in Node reads it. */
export interface CaseResult {
  name: string;
  ok: boolean;
  error?: string;
}

interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(request: Request): Promise<Response> };
}

function expectCode(e: unknown, code: string, what: string): void {
  if (!(e instanceof MemWalError) || e.code !== code) throw new Error(`${what}: expected ${code}, got ${String(e)}`);
}

/** Checks only this adapter needs: a shared lock table, the chunk-size limit, interrupted writes. */
function durableObjectCases(storage: DurableObjectStorageLike, chunkBytes: number | undefined): ConformanceCase[] {
  const make = (): DurableObjectStorageAdapter => new DurableObjectStorageAdapter(storage, { chunkBytes });
  const store = (): string => `do-${Math.random().toString(36).slice(2, 10)}`;
  return [
    {
      name: 'CRC-32C takes the JavaScript path (workerd refuses to compile WebAssembly from bytes) with the same results',
      async run() {
        const bytes = Uint8Array.from({ length: 200_003 }, (_, i) => (i * 2654435761) >>> 24);
        const whole = crc32c(bytes.subarray(1));
        if (crc32cPath() !== 'js') throw new Error(`crc32cPath() is ${crc32cPath()} in workerd`);
        if (whole !== crc32cJs(bytes.subarray(1)) || whole !== crc32c(bytes.subarray(70_001), crc32c(bytes.subarray(1, 70_001)))) {
          throw new Error('crc32c disagrees with itself');
        }
        if (crc32c(new TextEncoder().encode('123456789')) !== 0xe3069283) throw new Error('check value');
      },
    },
    {
      name: 'two adapters over one ctx.storage share the writer lock',
      async run() {
        const name = store();
        const first = await make().openStore(name, { timeoutMs: 0 });
        await make()
          .openStore(name, { timeoutMs: 0 })
          .then(
            () => Promise.reject(new Error('a second adapter opened a held store')),
            (e: unknown) => expectCode(e, 'Locked', 'open through a second adapter'),
          );
        await first.release();
        await (await make().openStore(name, { timeoutMs: 0 })).release();
        await make().destroyStore(name);
      },
    },
    {
      name: 'chunkBytes outside 1..1 MiB throws InvalidArgument',
      async run() {
        for (const bad of [0, 1024 * 1024 + 1, 1.5]) {
          try {
            new DurableObjectStorageAdapter(storage, { chunkBytes: bad });
          } catch (e) {
            expectCode(e, 'InvalidArgument', `chunkBytes ${bad}`);
            continue;
          }
          throw new Error(`chunkBytes ${bad} was accepted`);
        }
      },
    },
    {
      name: 'an interrupted table write is listed, unreadable, and removable',
      async run() {
        const name = store();
        const adapter = make();
        const h = await adapter.openStore(name, { timeoutMs: 0 });
        const failing = (async function* () {
          yield new Uint8Array(5000).fill(7);
          throw new Error('source failed');
        })();
        await h.tableWrite('1-1-0.arrow', failing).then(
          () => Promise.reject(new Error('the interrupted write resolved')),
          (e: unknown) => expectCode(e, 'IOError', 'interrupted table write'),
        );
        const listed = await h.tableList();
        if (listed.join() !== '1-1-0.arrow') throw new Error(`tableList after the interrupted write: ${listed.join()}`);
        await h.tableRead('1-1-0.arrow').then(
          () => Promise.reject(new Error('an incomplete table file was readable')),
          (e: unknown) => expectCode(e, 'IOError', 'reading an incomplete table file'),
        );
        await h.tableRemove('1-1-0.arrow');
        await h.tableWrite('1-1-0.arrow', [new Uint8Array([1, 2, 3])]);
        const back = await h.tableRead('1-1-0.arrow');
        if (back.join() !== '1,2,3') throw new Error(`rewritten table file reads ${back.join()}`);
        await h.release();
        await adapter.destroyStore(name);
      },
    },
    {
      name: "estimate counts one store's WAL, table and manifest bytes, not the database",
      async run() {
        const [name, other] = [store(), store()];
        const adapter = make();
        const h = await adapter.openStore(name, { timeoutMs: 0 });
        const manifest = testManifest(adapter, 1, 1);
        await h.manifestCommit(0, manifest);
        await h.walAppend('1-1', 0, new Uint8Array(100_000));
        await h.tableWrite('1-1-0.arrow', [new Uint8Array(70_000), new Uint8Array(3)]);
        const o = await adapter.openStore(other, { timeoutMs: 0 });
        await o.walAppend('1-1', 0, new Uint8Array(50_000));
        const expected = 170_003 + new TextEncoder().encode(JSON.stringify(manifest)).length;
        const got = (await adapter.estimate(name)).usageBytes;
        if (got !== expected) throw new Error(`estimate of the store: ${got}, expected ${expected}`);
        if ((await adapter.estimate(other)).usageBytes !== 50_000) throw new Error('estimate of the other store');
        if ((await adapter.estimate(store())).usageBytes !== 0) throw new Error('estimate of a missing store');
        await h.release();
        await o.release();
        await adapter.destroyStore(name);
        await adapter.destroyStore(other);
      },
    },
  ];
}

/** The Durable Object that runs the cases against its own storage. */
export class ConformanceObject {
  constructor(private readonly ctx: { storage: DurableObjectStorageLike }) {}

  async fetch(request: Request): Promise<Response> {
    const param = new URL(request.url).searchParams.get('chunkBytes');
    const chunkBytes = param ? Number(param) : undefined;
    const cases = [
      ...conformanceCases(() => new DurableObjectStorageAdapter(this.ctx.storage, { chunkBytes })),
      ...durableObjectCases(this.ctx.storage, chunkBytes),
      queryConformanceCase(() => new DurableObjectStorageAdapter(this.ctx.storage, { chunkBytes })),
    ];
    const results: CaseResult[] = [];
    for (const c of cases) {
      try {
        await c.run();
        results.push({ name: c.name, ok: true });
      } catch (e) {
        results.push({ name: c.name, ok: false, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
      }
    }
    return Response.json(results);
  }
}

export default {
  fetch(request: Request, env: { CONFORMANCE: DurableObjectNamespaceLike }): Promise<Response> {
    return env.CONFORMANCE.get(env.CONFORMANCE.idFromName('conformance')).fetch(request);
  },
};
