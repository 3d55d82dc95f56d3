// The storage adapter conformance cases: what every StorageAdapter must do, as named cases with
// their own small assertions, so vitest, Playwright, `deno test` or a workerd harness run the
// same code (wa-sqlite style). Runner-agnostic; runs in every runtime.

import { MemWalError } from '../util/errors.js';
import type { MemWalErrorCode } from '../util/errors.js';
import { MANIFEST_FORMAT_VERSION } from '../format/manifest/manifest.js';
import type { Manifest } from '../format/manifest/manifest.js';
import type { LockOptions, StorageAdapter, StoreHandle } from '../storage/adapter.js';
import { type IoPlane, placementOf } from '../lsm/io-plane.js';
import { concatBytes } from '../util/bytes.js';

/** One named check of an adapter; `run` rejects with an Error saying what differed. */
export interface ConformanceCase {
  name: string;
  run(): Promise<void>;
}

/** How long a case waits for a lock hand-over or an `onLost` before it fails. */
const WAIT_MS = 2000;

function fail(message: string): never {
  throw new Error(`conformance: ${message}`);
}

function check(condition: boolean, message: string): void {
  if (!condition) fail(message);
}

/** Stable JSON (sorted keys), so equal records compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function sameJson(actual: unknown, expected: unknown, what: string): void {
  const a = canonical(actual);
  const e = canonical(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

function sameBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  if (!(actual instanceof Uint8Array)) fail(`${what}: expected a Uint8Array, got ${String(actual)}`);
  if (actual.length !== expected.length) fail(`${what}: expected ${expected.length} bytes, got ${actual.length}`);
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) fail(`${what}: byte ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

/** Awaits `promise`, which must reject with a MemWalError (of `code`, when given). */
async function rejects(promise: Promise<unknown>, code: MemWalErrorCode | undefined, what: string): Promise<MemWalError> {
  let result: unknown;
  try {
    result = await promise;
  } catch (e) {
    if (!(e instanceof MemWalError)) fail(`${what}: expected a MemWalError${code ? ` (${code})` : ''}, got ${String(e)}`);
    if (code && e.code !== code) fail(`${what}: expected ${code}, got ${e.code}: ${e.message}`);
    return e;
  }
  return fail(`${what}: expected a rejection${code ? ` with ${code}` : ''}, but it resolved with ${String(result)}`);
}

/** `promise`, or a failure naming `what` if it does not settle within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`conformance: ${what}: nothing happened within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `length` bytes of a recognisable pattern that depends on `seed`. */
function pattern(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed * 17 + 7) & 0xff;
  return out;
}

/** A minimal valid manifest for `adapter` (for adapter tests). */
export function testManifest(adapter: Pick<StorageAdapter, 'layout'>, writerEpoch: number, version: number): Manifest {
  return {
    formatVersion: MANIFEST_FORMAT_VERSION,
    layout: adapter.layout,
    mode: 'memtable',
    schema: 'AAAA',
    primaryKey: [],
    writerEpoch,
    version,
    nextGeneration: 1,
    replayCursor: 0,
    consumerCursor: null,
    positionHint: 0,
    tables: [],
  };
}

/** One case's adapter, its unique store names and open handles, all cleaned up at the end. */
class CaseContext {
  private readonly names: string[] = [];
  private readonly handles: StoreHandle[] = [];

  constructor(
    readonly adapter: StorageAdapter,
    private readonly caseName: string,
  ) {}

  /** A store name no other case or run uses. */
  store(): string {
    const slug = this.caseName
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 40);
    const name = `conf-${slug}-${Math.random().toString(36).slice(2, 10)}`;
    this.names.push(name);
    return name;
  }

  /** Opens `name` as a writer does: onto the I/O plane of the adapter's placement (`planeOf`). */
  async open(name: string, options: LockOptions = {}): Promise<StoreHandle> {
    const { handle, plane } = await placementOf(this.adapter).openStore(name, options);
    planes.set(handle, plane);
    this.handles.push(handle);
    return handle;
  }

  /** Opens `name` and commits the first manifest (epoch 1, version 1), as a writer's first open does. */
  async claim(name: string): Promise<StoreHandle> {
    const handle = await this.open(name, { timeoutMs: 0 });
    await handle.manifestCommit(0, testManifest(this.adapter, 1, 1));
    return handle;
  }

  async cleanup(): Promise<void> {
    for (const h of this.handles) await h.release();
    for (const name of this.names) await this.adapter.destroyStore(name);
  }
}

/** The I/O plane each handle a case opened was placed on. */
const planes = new WeakMap<StoreHandle, IoPlane>();

/** Write table file `name` from whole `bytes` (handed over) through the plane `h` was opened onto, as the engine writes a built table. */
function writeTableBytes(h: StoreHandle, name: string, bytes: Uint8Array): Promise<void> {
  const plane = planes.get(h);
  if (!plane) throw new Error('a handle opened outside the case context');
  return plane.writeTable(name, bytes);
}

/**
 * The conformance cases for adapters made by `makeAdapter` (called once per case). Each case uses
 * its own store names and destroys them at the end; run them in any order, with any runner.
 */
export function conformanceCases(makeAdapter: () => StorageAdapter | Promise<StorageAdapter>): ConformanceCase[] {
  const define = (name: string, body: (t: CaseContext) => Promise<void>): ConformanceCase => ({
    name,
    async run() {
      const t = new CaseContext(await makeAdapter(), name);
      try {
        await body(t);
      } catch (e) {
        await t.cleanup().catch(() => undefined); // the case's own failure is the one to report
        throw e;
      }
      await t.cleanup();
    },
  });

  /** What a fenced-call case starts from: the new writer's handle and what the old one wrote. */
  interface Fence {
    next: StoreHandle;
    claimed: Manifest;
    segment: Uint8Array;
    table: Uint8Array;
  }
  const adapters = new WeakMap<StoreHandle, StorageAdapter>();
  const t0 = (h: StoreHandle): StorageAdapter => adapters.get(h)!;
  /**
   * One case per mutating call: writer 1 claims epoch 1, appends segment 1-1 and writes table
   * 1-1-1.arrow; writer 2 steals the lock and claims epoch 2; then `call` runs on writer 1's
   * handle, and afterwards storage must be exactly as writer 2 left it.
   */
  const fencedCall = (what: string, call: (old: StoreHandle, f: Fence) => Promise<void>): ConformanceCase[] => [
    define(`after a newer claim the old writer's ${what} fails Fenced and changes nothing`, async (t) => {
      const name = t.store();
      const old = await t.claim(name);
      adapters.set(old, t.adapter);
      const segment = pattern(40, 1);
      const table = pattern(24, 5);
      await old.walAppend('1-1', 0, segment);
      await old.tableWrite('1-1-1.arrow', [table]);
      const next = await t.open(name, { steal: true, timeoutMs: 0 });
      const stored = await next.manifestLoad();
      check(stored?.writerEpoch === 1 && stored.version === 1, `the new writer should load epoch 1 version 1, got ${canonical(stored)}`);
      const claimed = testManifest(t.adapter, 2, 2);
      await next.manifestCommit(1, claimed);

      await call(old, { next, claimed, segment, table });

      sameJson(await next.manifestLoad(), claimed, `manifest after the old writer's ${what}`);
      sameBytes(await next.walRead('1-1'), segment, `segment 1-1 after the old writer's ${what}`);
      sameJson(
        (await next.walList()).map((s) => s.name),
        ['1-1'],
        `walList after the old writer's ${what}`,
      );
      sameBytes(await next.tableRead('1-1-1.arrow'), table, `table 1-1-1.arrow after the old writer's ${what}`);
      sameJson((await next.tableList()).sort(), ['1-1-1.arrow'], `tableList after the old writer's ${what}`);
      await next.walAppend('2-2', 0, pattern(8, 3));
      sameBytes(await next.walRead('2-2'), pattern(8, 3), "the new writer's segment");
    }),
  ];

  return [
    define('manifest of a new store is undefined', async (t) => {
      const h = await t.open(t.store());
      check((await h.manifestLoad()) === undefined, 'manifestLoad of a new store should be undefined');
    }),

    define('manifest commit and load round-trip, as copies', async (t) => {
      const h = await t.open(t.store());
      const v1 = testManifest(t.adapter, 1, 1);
      await h.manifestCommit(0, v1);
      sameJson(await h.manifestLoad(), v1, 'manifest after the first commit');
      const v2 = { ...testManifest(t.adapter, 1, 2), replayCursor: 9, consumerCursor: 4, positionHint: 12, nextGeneration: 2 };
      v2.tables = [{ generation: 1, name: '1-1-0.arrow', bytes: 10, rows: 2, checksum: '0a1b2c3d', minKey: '00', maxKey: 'ff' }];
      await h.manifestCommit(1, v2);
      const loaded = await h.manifestLoad();
      sameJson(loaded, v2, 'manifest after the second commit');
      const expected = canonical(v2);
      v2.tables[0]!.rows = 999;
      loaded!.tables.length = 0;
      sameJson(await h.manifestLoad(), JSON.parse(expected), 'manifest after mutating the committed and loaded objects');
    }),

    define('manifest commit with a stale expected version fails IOError and changes nothing', async (t) => {
      const h = await t.open(t.store());
      await h.manifestCommit(0, testManifest(t.adapter, 1, 1));
      await rejects(h.manifestCommit(0, testManifest(t.adapter, 1, 1)), 'IOError', 'commit expecting no manifest over version 1');
      const v2 = { ...testManifest(t.adapter, 1, 2), replayCursor: 5 };
      await h.manifestCommit(1, v2);
      await rejects(
        h.manifestCommit(1, { ...testManifest(t.adapter, 1, 2), replayCursor: 77 }),
        'IOError',
        'commit expecting version 1 over version 2',
      );
      sameJson(await h.manifestLoad(), v2, 'manifest after the rejected commits');
    }),

    // Fencing (every mutating call of a writer whose epoch is stale fails Fenced and changes
    // nothing): one case per call, each after a newer writer took the lock and claimed epoch 2.
    ...fencedCall('WAL append to its own segment', async (old, f) => {
      await rejects(old.walAppend('1-1', f.segment.length, pattern(8, 2)), 'Fenced', "the old writer's WAL append");
    }),
    ...fencedCall('WAL append that would create a segment', async (old, f) => {
      await rejects(old.walAppend('1-9', 0, pattern(8, 2)), 'Fenced', "the old writer's new segment");
      check(!(await f.next.walList()).some((s) => s.name === '1-9'), 'the fenced append must not create its segment');
    }),
    ...fencedCall('WAL truncate', async (old) => {
      await rejects(old.walTruncate('1-1', 0), 'Fenced', "the old writer's WAL truncate");
    }),
    ...fencedCall('WAL remove', async (old) => {
      await rejects(old.walRemove('1-1'), 'Fenced', "the old writer's WAL remove");
    }),
    ...fencedCall('table write', async (old, f) => {
      await rejects(old.tableWrite('1-1-2.arrow', [pattern(8, 4)]), 'Fenced', "the old writer's table write");
      check(!(await f.next.tableList()).includes('1-1-2.arrow'), 'the fenced table write must not leave its file');
    }),
    ...fencedCall('table write of whole bytes', async (old, f) => {
      await rejects(writeTableBytes(old, '1-1-2.arrow', pattern(8, 4)), 'Fenced', "the old writer's table write of whole bytes");
      check(!(await f.next.tableList()).includes('1-1-2.arrow'), 'the fenced table write must not leave its file');
    }),
    ...fencedCall('table remove', async (old) => {
      await rejects(old.tableRemove('1-1-1.arrow'), 'Fenced', "the old writer's table remove");
    }),
    ...fencedCall('manifest commit', async (old) => {
      await rejects(
        old.manifestCommit(1, { ...testManifest(t0(old), 1, 2), replayCursor: 3 }),
        'Fenced',
        "the old writer's manifest commit",
      );
      await rejects(
        old.manifestCommit(2, { ...testManifest(t0(old), 1, 3), replayCursor: 3 }),
        'Fenced',
        "the old writer's commit at the new version",
      );
    }),

    define('a WAL append to a segment older than the manifest epoch fails Fenced', async (t) => {
      const h = await t.claim(t.store());
      await h.manifestCommit(1, testManifest(t.adapter, 2, 2));
      await rejects(h.walAppend('1-5', 0, pattern(4, 1)), 'Fenced', 'append to an epoch-1 segment under epoch 2');
      check(!(await h.walList()).some((s) => s.name === '1-5'), 'the fenced append must not create its segment');
    }),

    define("the old holder's onLost fires when its lock is stolen", async (t) => {
      const name = t.store();
      let reason: unknown;
      let reportLost!: () => void;
      const lost = new Promise<void>((resolve) => (reportLost = resolve));
      await t.open(name, { timeoutMs: 0, onLost: (r) => ((reason = r), reportLost()) });
      await t.open(name, { steal: true, timeoutMs: 0 });
      await within(lost, WAIT_MS, 'onLost of the holder whose lock was stolen');
      check(typeof reason === 'string', `onLost reason should be a string, got ${String(reason)}`);
    }),

    define('a second opener with timeoutMs 0 fails Locked, and succeeds after release', async (t) => {
      const name = t.store();
      const first = await t.open(name, { timeoutMs: 0 });
      await rejects(t.open(name, { timeoutMs: 0 }), 'Locked', 'second open while the lock is held');
      await first.release();
      await t.open(name, { timeoutMs: 0 });
    }),

    define('a waiting opener gets the lock when the holder releases', async (t) => {
      const name = t.store();
      const first = await t.open(name, { timeoutMs: 0 });
      let waited = 0;
      let granted = false;
      const second = t.open(name, { onWaiting: () => waited++ }).then((h) => ((granted = true), h));
      await sleep(30);
      check(!granted, 'the waiting opener got the lock while it was still held');
      check(waited === 1, `onWaiting should be called once, was called ${waited} times`);
      await first.release();
      const h = await within(second, WAIT_MS, 'the waiting opener after release');
      check((await h.manifestLoad()) === undefined, 'the new holder should see the store');
    }),

    define('a waiting opener fails Locked after timeoutMs', async (t) => {
      const name = t.store();
      await t.open(name, { timeoutMs: 0 });
      await within(rejects(t.open(name, { timeoutMs: 40 }), 'Locked', 'open with timeoutMs 40 while held'), WAIT_MS, 'timed-out open');
    }),

    define('aborting a waiting open fails Aborted', async (t) => {
      const name = t.store();
      const first = await t.open(name, { timeoutMs: 0 });
      const controller = new AbortController();
      const waiting = t.open(name, { signal: controller.signal });
      await sleep(10);
      controller.abort();
      await within(rejects(waiting, 'Aborted', 'aborted open'), WAIT_MS, 'aborted open');
      await first.release();
      await t.open(name, { timeoutMs: 0 }); // the aborted waiter must not hold the lock
    }),

    define('WAL append, read, list, truncate and remove round-trip', async (t) => {
      const h = await t.claim(t.store());
      const a1 = pattern(3, 1);
      const a2 = pattern(100_000, 2);
      const b1 = pattern(17, 3);
      await h.walAppend('1-1', 0, a1);
      await h.walAppend('1-6', 0, b1);
      await h.walAppend('1-1', a1.length, a2);
      const a = concatBytes([a1, a2]);
      sameBytes(await h.walRead('1-1'), a, 'segment 1-1');
      sameBytes(await h.walRead('1-1', 2), a.subarray(2), 'segment 1-1 from offset 2');
      sameBytes(await h.walRead('1-1', a.length), new Uint8Array(0), 'segment 1-1 from its end');
      sameBytes(await h.walRead('1-6'), b1, 'segment 1-6');
      const byName = (l: { name: string }[]) => [...l].sort((x, y) => (x.name < y.name ? -1 : 1));
      sameJson(
        byName(await h.walList()),
        [
          { name: '1-1', epoch: 1, firstPosition: 1, bytes: a.length },
          { name: '1-6', epoch: 1, firstPosition: 6, bytes: b1.length },
        ],
        'walList',
      );
      await h.walTruncate('1-1', 2);
      sameBytes(await h.walRead('1-1'), a.subarray(0, 2), 'segment 1-1 after truncating to 2 bytes');
      await h.walAppend('1-1', 2, pattern(5, 4));
      sameBytes(await h.walRead('1-1'), concatBytes([a.subarray(0, 2), pattern(5, 4)]), 'segment 1-1 after appending past the cut');
      await h.walRemove('1-6');
      await h.walRemove('1-6');
      await h.walRemove('1-99');
      sameJson(
        (await h.walList()).map((s) => s.name),
        ['1-1'],
        'walList after removing 1-6',
      );
      await rejects(h.walRead('1-6'), undefined, 'reading a removed segment');
    }),

    define('a WAL segment reads from any offset: at, inside and between its appends, also after a cut to 0', async (t) => {
      const h = await t.claim(t.store());
      const parts = [pattern(7, 1), pattern(3000, 2), pattern(1, 3), pattern(50_000, 4), pattern(12, 5)];
      let at = 0;
      for (const part of parts) {
        await h.walAppend('1-1', at, part);
        at += part.length;
      }
      const whole = concatBytes(parts);
      for (const offset of [0, 1, 7, 8, 3006, 3007, 3008, 28_008, whole.length - 12, whole.length - 1, whole.length]) {
        sameBytes(await h.walRead('1-1', offset), whole.subarray(offset), `segment 1-1 from offset ${offset}`);
      }
      await rejects(h.walRead('1-1', whole.length + 1), undefined, 'a read from past the end');
      await h.walTruncate('1-1', 0);
      await h.walAppend('1-1', 0, pattern(9, 6));
      await h.walAppend('1-1', 9, pattern(4, 7));
      const rewritten = concatBytes([pattern(9, 6), pattern(4, 7)]);
      for (const offset of [0, 3, 9, 12, 13]) {
        sameBytes(
          await h.walRead('1-1', offset),
          rewritten.subarray(offset),
          `segment 1-1 rewritten after a cut to 0, from offset ${offset}`,
        );
      }
    }),

    define('a zero-byte append at offset 0 creates an empty segment', async (t) => {
      const h = await t.claim(t.store());
      await h.walAppend('1-7', 0, new Uint8Array(0));
      sameJson(await h.walList(), [{ name: '1-7', epoch: 1, firstPosition: 7, bytes: 0 }], 'walList after the empty append');
      sameBytes(await h.walRead('1-7'), new Uint8Array(0), 'the empty segment');
      await h.walAppend('1-7', 0, pattern(6, 1));
      sameBytes(await h.walRead('1-7'), pattern(6, 1), 'the segment after appending to it');
    }),

    define('appending at a wrong offset fails and changes nothing', async (t) => {
      const h = await t.claim(t.store());
      const data = pattern(10, 1);
      await h.walAppend('1-1', 0, data);
      await rejects(h.walAppend('1-1', 12, pattern(4, 2)), undefined, 'append past the end');
      await rejects(h.walAppend('1-1', 4, pattern(4, 2)), undefined, 'append inside the segment');
      await rejects(h.walAppend('1-1', 0, pattern(4, 2)), undefined, 'append at 0 to an existing segment');
      sameBytes(await h.walRead('1-1'), data, 'segment after the rejected appends');
      await rejects(h.walAppend('1-20', 4, pattern(4, 2)), undefined, 'append at 4 to a missing segment');
      sameJson(
        (await h.walList()).map((s) => s.name),
        ['1-1'],
        'walList after the rejected appends',
      );
    }),

    define('table files are written from chunks, then read, listed and removed', async (t) => {
      const h = await t.claim(t.store());
      const parts = [pattern(5, 1), pattern(70_000, 2), new Uint8Array(0), pattern(9, 3)];
      const whole = concatBytes([...parts]);
      await h.tableWrite('1-1-0.arrow', parts);
      await h.tableWrite(
        '2-1-0.arrow',
        (function* () {
          yield* parts;
        })(),
      );
      await h.tableWrite(
        '3-1-0.arrow',
        (async function* () {
          for (const p of parts) {
            await sleep(0);
            yield p;
          }
        })(),
      );
      for (const name of ['1-1-0.arrow', '2-1-0.arrow', '3-1-0.arrow']) sameBytes(await h.tableRead(name), whole, `table ${name}`);
      sameJson((await h.tableList()).sort(), ['1-1-0.arrow', '2-1-0.arrow', '3-1-0.arrow'], 'tableList');
      await rejects(h.tableWrite('1-1-0.arrow', [pattern(3, 9)]), undefined, 'writing an existing table file');
      sameBytes(await h.tableRead('1-1-0.arrow'), whole, 'table after the rejected overwrite');
      await h.tableRemove('2-1-0.arrow');
      await h.tableRemove('2-1-0.arrow');
      sameJson((await h.tableList()).sort(), ['1-1-0.arrow', '3-1-0.arrow'], 'tableList after a remove');
      await rejects(h.tableRead('2-1-0.arrow'), 'IOError', 'reading a removed table');
    }),

    define("table files handed over whole (the I/O plane's writeTable) are written exactly; an existing name is refused", async (t) => {
      const h = await t.claim(t.store());
      // Past one write chunk and not a multiple of it; a view inside a larger buffer (the
      // adapter may take only a buffer the bytes cover whole: the rest must stay the caller's).
      const big = pattern(2 * 1024 * 1024 + 12_345, 5);
      const backing = pattern(100_000, 6);
      const inside = backing.subarray(10, 90_010);
      const expectedInside = inside.slice();
      await writeTableBytes(h, '1-1-0.arrow', big.slice());
      await writeTableBytes(h, '2-1-0.arrow', inside);
      await writeTableBytes(h, '3-1-0.arrow', new Uint8Array(0));
      sameBytes(await h.tableRead('1-1-0.arrow'), big, 'the table written from whole bytes');
      sameBytes(await h.tableRead('2-1-0.arrow'), expectedInside, 'the table written from a view');
      sameBytes(backing, pattern(100_000, 6), 'the buffer around the view, after its write');
      sameBytes(await h.tableRead('3-1-0.arrow'), new Uint8Array(0), 'the empty table');
      await rejects(writeTableBytes(h, '1-1-0.arrow', pattern(3, 9)), undefined, 'writing an existing table file from whole bytes');
      sameBytes(await h.tableRead('1-1-0.arrow'), big, 'table after the rejected overwrite');
      sameJson((await h.tableList()).sort(), ['1-1-0.arrow', '2-1-0.arrow', '3-1-0.arrow'], 'tableList');
    }),

    define('ranged table reads return exactly the bytes asked for', async (t) => {
      const h = await t.claim(t.store());
      const parts = [pattern(1000, 1), pattern(70_000, 2), pattern(1_100_000, 3), pattern(9, 4)];
      const whole = concatBytes([...parts]);
      await h.tableWrite('1-1-0.arrow', parts);
      const ranges: [number, number][] = [
        [0, 0],
        [0, 10],
        [995, 10], // across the first chunk boundary
        [71_000 - 4, 1_100_000], // across two boundaries
        [whole.length - 10, 10], // the last bytes (a footer)
        [whole.length, 0],
        [123_457, 65_536],
      ];
      for (const [offset, length] of ranges) {
        sameBytes(
          await h.tableReadRange('1-1-0.arrow', offset, length),
          whole.subarray(offset, offset + length),
          `range ${offset}+${length}`,
        );
      }
      await rejects(h.tableReadRange('1-1-0.arrow', whole.length - 5, 10), 'IOError', 'a range past the end');
      await rejects(h.tableReadRange('1-1-0.arrow', -1, 4), 'InvalidArgument', 'a negative offset');
      await rejects(h.tableReadRange('9-9-9.arrow', 0, 1), 'IOError', 'a range of a missing table');
      const r = await h.tableReadRange('1-1-0.arrow', 5, 5);
      r.fill(0);
      sameBytes(await h.tableReadRange('1-1-0.arrow', 5, 5), whole.subarray(5, 10), 'a range after the caller mutated an earlier result');
    }),

    define('reading a missing table or WAL segment rejects with a MemWalError', async (t) => {
      const h = await t.claim(t.store());
      await rejects(h.tableRead('9-9-9.arrow'), 'IOError', 'reading a missing table');
      await rejects(h.walRead('9-9'), undefined, 'reading a missing segment');
    }),

    define('written and read bytes are copies of the caller buffers', async (t) => {
      const h = await t.claim(t.store());
      const wal = pattern(16, 1);
      const table = pattern(16, 2);
      await h.walAppend('1-1', 0, wal);
      await h.tableWrite('1-1-0.arrow', [table]);
      wal.fill(0);
      table.fill(0);
      (await h.walRead('1-1')).fill(1);
      (await h.tableRead('1-1-0.arrow')).fill(1);
      sameBytes(await h.walRead('1-1'), pattern(16, 1), 'segment after the caller mutated its buffers');
      sameBytes(await h.tableRead('1-1-0.arrow'), pattern(16, 2), 'table after the caller mutated its buffers');
    }),

    define('data survives release and reopen', async (t) => {
      const name = t.store();
      const h = await t.claim(name);
      const v2 = { ...testManifest(t.adapter, 1, 2), replayCursor: 3 };
      await h.manifestCommit(1, v2);
      await h.walAppend('1-1', 0, pattern(33, 1));
      await h.tableWrite('1-1-0.arrow', [pattern(44, 2)]);
      await h.release();
      const again = await t.open(name, { timeoutMs: 0 });
      sameJson(await again.manifestLoad(), v2, 'manifest after reopen');
      sameBytes(await again.walRead('1-1'), pattern(33, 1), 'segment after reopen');
      sameBytes(await again.tableRead('1-1-0.arrow'), pattern(44, 2), 'table after reopen');
      sameJson(
        (await again.walList()).map((s) => [s.name, s.bytes]),
        [['1-1', 33]],
        'walList after reopen',
      );
      sameJson(await again.tableList(), ['1-1-0.arrow'], 'tableList after reopen');
    }),

    define('destroyStore fails Locked while open and removes everything after release', async (t) => {
      const name = t.store();
      const h = await t.claim(name);
      await h.walAppend('1-1', 0, pattern(8, 1));
      await h.tableWrite('1-1-0.arrow', [pattern(8, 2)]);
      await rejects(t.adapter.destroyStore(name), 'Locked', 'destroyStore while the store is open');
      sameBytes(await h.walRead('1-1'), pattern(8, 1), 'segment after the rejected destroy');
      await h.release();
      await t.adapter.destroyStore(name);
      const again = await t.open(name, { timeoutMs: 0 });
      check((await again.manifestLoad()) === undefined, 'a destroyed store should have no manifest');
      sameJson(await again.walList(), [], 'walList of a destroyed store');
      sameJson(await again.tableList(), [], 'tableList of a destroyed store');
      await t.adapter.destroyStore(t.store()); // never opened: nothing to do, no error
    }),

    define('operations on a released handle reject', async (t) => {
      const h = await t.claim(t.store());
      await h.walAppend('1-1', 0, pattern(4, 1));
      await h.release();
      await h.release();
      await rejects(h.manifestLoad(), undefined, 'manifestLoad after release');
      await rejects(h.manifestCommit(1, testManifest(t.adapter, 1, 2)), undefined, 'manifestCommit after release');
      await rejects(h.walAppend('1-1', 4, pattern(4, 2)), undefined, 'walAppend after release');
      await rejects(h.walRead('1-1'), undefined, 'walRead after release');
      await rejects(h.walList(), undefined, 'walList after release');
      await rejects(h.tableWrite('1-1-0.arrow', [pattern(4, 3)]), undefined, 'tableWrite after release');
      await rejects(writeTableBytes(h, '1-1-0.arrow', pattern(4, 3)), undefined, 'a whole-bytes table write after release');
      await rejects(h.tableList(), undefined, 'tableList after release');
    }),
  ];
}
