// The manifest's index set and the background index build (SPEC §17 "Declaring", docs/format.md §9
// "Index set", docs/impl.md "Building an added index"): an index added to a store with data is
// built into its table files in the background while queries stay right from the files' rows; a
// redefined index is rebuilt (checked by definition, not by name); a dropped index's sections are
// ignored and gone at the next rewrite; a crash anywhere in a build leaves a store that opens,
// reads right, and finishes the build; a manifest written before the set was kept opens and is
// brought forward without a rewrite of files that already hold their sections.

import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeStoreSchema } from '../data/schema.js';
import { claimIndexSet } from '../format/manifest/index-set.js';
import { checkManifest, type Manifest } from '../format/manifest/manifest.js';
import { readTableIndex } from '../format/table/reader.js';
import { NodeFileStorage } from '../node.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { MemWal } from './memwal.js';
import { schema, storeName, until } from './testkit.test-util.js';

const quiet = { warn: () => undefined };
type Row = { id: number; value: number; name: string };
const byName = { byName: { column: 'name' } };

function options(storage: StorageAdapter, name: string, indexes: Record<string, { column: string }> | undefined) {
  return {
    name,
    schema,
    primaryKey: ['id'],
    storage,
    logger: quiet,
    flushRetry: { baseMs: 1, maxMs: 4 },
    walRetry: { baseMs: 1, maxMs: 2, timeoutMs: 2_000 },
    ...(indexes && { indexes }),
  };
}

const rowOf = (id: number, v: number): Row => ({ id, value: (id * 7 + v) % 5, name: `n${(id + v) % 4}` });

/**
 * A store with level-1 and level-0 files (and a delete in level 0) written without indexes, and
 * its model: ids 0..29 (v0) compacted into level 1, then 0..9 overwritten (v1) and 12 deleted in
 * two level-0 files.
 */
async function seed(storage: StorageAdapter, name: string, hooks?: typeof manualOnly): Promise<Map<number, Row>> {
  const model = new Map<number, Row>();
  const w = await MemWal.open(options(storage, name, undefined), hooks);
  const put = async (rows: Row[]): Promise<void> => {
    await w.put(rows);
    for (const r of rows) model.set(r.id, r);
  };
  await put(Array.from({ length: 30 }, (_, i) => rowOf(i, 0)));
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await w.compact();
  await put(Array.from({ length: 5 }, (_, i) => rowOf(i, 1)));
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await put(Array.from({ length: 5 }, (_, i) => rowOf(i + 5, 1)));
  await w.delete([{ id: 12 }]);
  model.delete(12);
  await w.forceSealActive();
  await w.waitForFlushDrain();
  await w.close();
  return model;
}

/** `query('byName', { equals })` of every name, against the model (ties by id). */
async function check(w: MemWal, model: Map<number, Row>, where: string, column: 'name' | 'value' = 'name'): Promise<void> {
  const values = column === 'name' ? ['n0', 'n1', 'n2', 'n3'] : [0, 1, 2, 3, 4];
  for (const v of values) {
    const want = [...model.values()]
      .filter((r) => r[column] === v)
      .map((r) => r.id)
      .sort((a, b) => a - b);
    const got = (await w.query('byName', { equals: v })).map((r) => Number(r.id));
    expect(got, `${where}: byName = ${v}`).toEqual(want);
  }
}

/** The stored manifest and each live table file's section directory (kind, name, spec), read with no writer open. */
async function stored(storage: StorageAdapter, name: string): Promise<{ m: Manifest; sections: Map<string, string[]> }> {
  const h = await storage.openStore(name, { logger: quiet });
  try {
    const m = (await h.manifestLoad())!;
    const internal = makeStoreSchema(schema, ['id']).internal;
    const sections = new Map<string, string[]>();
    for (const t of m.tables) {
      const bytes = await h.tableRead(t.name);
      const ix = await readTableIndex(t.name, bytes.length, async (o, l) => bytes.slice(o, o + l), internal);
      sections.set(
        t.name,
        ix.sections.map((s) => `${s.name}:${s.spec}`),
      );
    }
    return { m, sections };
  } finally {
    await h.release();
  }
}

const NAME_SPEC = 'byName:{"columns":["name"],"kinds":["str"],"multiEntry":false}';
const VALUE_SPEC = 'byName:{"columns":["value"],"kinds":["num"],"multiEntry":false}';

/** The path of a NodeFileStorage store's newest manifest version. */
async function newestManifestPath(root: string, name: string): Promise<string> {
  const dir = join(root, name, 'manifest');
  const newest = Math.max(...(await readdir(dir)).filter((f) => /^\d+\.json$/.test(f)).map((f) => Number.parseInt(f, 10)));
  return join(dir, `${newest}.json`);
}

/** The policy never compacts by itself: only the index build (and compact()) rewrites files. */
const manualOnly = { compactionPolicy: { level0Trigger: 1_000, spaceAmpTrigger: Number.POSITIVE_INFINITY } };

const built = async (w: MemWal): Promise<boolean> => (await w.indexStats()).byName?.filesPending === 0;

describe('the manifest index set and the background index build', () => {
  it('an index added to a store with data: queries stay right from the rows while the build cannot write, then it builds every file', async () => {
    const mem = new MemoryStorage();
    const name = storeName('ix-add');
    const model = await seed(mem, name);
    const storage = new FaultInjectingStorage(mem);
    storage.failNext('tableWrite', 1_000); // every rewrite of the build fails while this holds
    const w = await MemWal.open(options(storage, name, byName), manualOnly);
    const files = (await w.compactionStats()).tableCount;
    await check(w, model, 'before the build');
    let s = (await w.indexStats()).byName!;
    expect([s.filesBuilt, s.filesPending]).toEqual([0, files]);
    // Puts and gets keep flowing meanwhile.
    await w.put([rowOf(40, 0)]);
    model.set(40, rowOf(40, 0));
    expect(await w.get({ id: 40 })).toMatchObject({ name: rowOf(40, 0).name });
    await check(w, model, 'a put during the build');
    const snap = await w.stats();
    expect(snap.indexes.find((i) => i.name === 'byName')).toMatchObject({ kind: 'ordered', filesBuilt: 0, filesPending: files });
    expect(await w.metrics()).toContain(`wal_index_files_pending{store="${name}",index="byName"} ${files}`);
    storage.clearFaults();
    await w.put([rowOf(41, 0)]); // a flush commit wakes the lane at once (it backs off after failures)
    model.set(41, rowOf(41, 0));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await until(() => built(w), 10_000, 'the index build');
    // The seed's level-0 files went down by a compaction of level 0 (their delete markers met the
    // rows they hide); level 0 holds only the flush made after the faults cleared.
    expect((await w.compactionStats()).levels.find((l) => l.level === 0)?.files).toBe(1);
    s = (await w.indexStats()).byName!;
    expect(s.filesBuilt).toBe((await w.compactionStats()).tableCount);
    await check(w, model, 'after the build');
    expect(await w.metrics()).toContain(`wal_index_files_pending{store="${name}",index="byName"} 0`);
    await w.close();
    const { m, sections } = await stored(mem, name);
    expect(m.indexes).toEqual([{ id: 1, kind: 'ordered', name: 'byName', spec: NAME_SPEC.slice('byName:'.length) }]);
    for (const t of m.tables) {
      expect(t.indexes, t.name).toEqual([1]);
      expect(sections.get(t.name), t.name).toEqual([NAME_SPEC]);
    }
  });

  it("a redefined index (same name, other column) is never read from the old definition's sections, and is rebuilt; a dropped one leaves at the next rewrite", async () => {
    const mem = new MemoryStorage();
    const name = storeName('ix-redefine');
    const model = await seed(mem, name);
    let w = await MemWal.open(options(mem, name, byName));
    await until(() => built(w), 10_000, 'the first build');
    await w.close();
    const first = await stored(mem, name);
    // Reopen with byName on another column: a new id, every file pending, queries by the new column right.
    const storage = new FaultInjectingStorage(mem);
    storage.failNext('tableWrite', 1_000);
    w = await MemWal.open(options(storage, name, { byName: { column: 'value' } }));
    const s = (await w.indexStats()).byName!;
    expect([s.filesBuilt, s.filesPending]).toEqual([0, first.m.tables.length]);
    await check(w, model, 'redefined, before its build', 'value');
    storage.clearFaults();
    await w.compact();
    await until(() => built(w), 10_000, 'the rebuild');
    await check(w, model, 'redefined, after its build', 'value');
    await w.close();
    const second = await stored(mem, name);
    expect(second.m.indexes).toEqual([{ id: 2, kind: 'ordered', name: 'byName', spec: VALUE_SPEC.slice('byName:'.length) }]);
    for (const t of second.m.tables) {
      expect(t.indexes, t.name).toEqual([2]);
      expect(second.sections.get(t.name), t.name).toEqual([VALUE_SPEC]);
    }
    // Dropped: the set is empty, nothing is rewritten for it, and the next rewrite writes no section.
    w = await MemWal.open(options(mem, name, undefined));
    await w.put([rowOf(5, 3)]); // overlaps level 1: the compaction rewrites every file
    model.set(5, rowOf(5, 3));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    await w.compact();
    await w.close();
    const third = await stored(mem, name);
    expect(third.m.indexes).toEqual([]);
    for (const t of third.m.tables) {
      expect(third.sections.get(t.name), t.name).toEqual([]);
      expect(t.indexes, t.name).toEqual([]);
    }
    // And added back as it first was: built again (no file lists an id of the set any more, so
    // the id may be one used before: an id is never reused while a file lists it).
    w = await MemWal.open(options(mem, name, byName));
    await until(() => built(w), 10_000, 'the build after re-adding');
    await check(w, model, 're-added');
    await w.close();
    const fourth = await stored(mem, name);
    expect(fourth.m.indexes).toEqual([{ id: 1, kind: 'ordered', name: 'byName', spec: NAME_SPEC.slice(7) }]);
    for (const t of fourth.m.tables) expect([t.indexes, fourth.sections.get(t.name)], t.name).toEqual([[1], [NAME_SPEC]]);
  });

  it('a crash at any point of a build leaves a store that opens, reads right, finishes the build and keeps no orphan', async () => {
    // A dry run: which operations the open and the build take (the crashes land among the build's).
    const dry = new FaultInjectingStorage(new MemoryStorage());
    await seed(dry, 'dry');
    const from = dry.opCount;
    const d = await MemWal.open(options(dry, 'dry', byName));
    const opened = dry.opCount - from;
    await until(() => built(d), 10_000, 'the dry build');
    const buildOps = dry.opCount - from - opened;
    await d.close();
    expect(buildOps).toBeGreaterThan(4);
    const step = Math.max(1, Math.floor(buildOps / 12));
    let crashedInBuild = 0;
    for (let at = opened + 1; at <= opened + buildOps; at += step) {
      const mem = new MemoryStorage();
      const name = storeName('ix-crash');
      const model = await seed(mem, name);
      const storage = new FaultInjectingStorage(mem, { seed: at });
      storage.crashAt(at);
      try {
        const w = await MemWal.open(options(storage, name, byName));
        await until(async () => storage.crashed > 0 || (await built(w)), 10_000, 'a crash or the build');
        if (storage.crashed > 0) crashedInBuild++;
        await w.abort();
      } catch {
        // crashed during open (the timing of background work may move the crash there)
      }
      if (storage.crashed === 0) storage.crash();
      await storage.settled();
      storage.clearFaults();
      const w = await MemWal.open(options(storage, name, byName));
      await check(w, model, `crash at ${at}, reopened`);
      await until(() => built(w), 10_000, `the build after the crash at ${at}`);
      await check(w, model, `crash at ${at}, built`);
      await w.close();
      const { m, sections } = await stored(mem, name);
      for (const t of m.tables) expect(sections.get(t.name), `crash at ${at}: ${t.name}`).toEqual([NAME_SPEC]);
      // After the next open (which sweeps what the manifest does not name: outputs of the
      // interrupted build, inputs whose removal the crash or the close cut short) every stored
      // table file is live.
      await (await MemWal.open(options(mem, name, byName))).close();
      const h = await mem.openStore(name, { logger: quiet });
      const files = (await h.tableList()).sort();
      await h.release();
      expect(files, `crash at ${at}: files`).toEqual(m.tables.map((t) => t.name).sort());
    }
    expect(crashedInBuild).toBeGreaterThan(3); // most crashes landed after the open, in the build
  });

  it('a manifest written before the index set was kept opens; files holding their sections are recorded, not rewritten', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-ix-old-'));
    const storage = new NodeFileStorage(root);
    const name = 'old';
    const model = await seed(storage, name);
    let w = await MemWal.open(options(storage, name, byName));
    await until(() => built(w), 10_000, 'the build');
    await w.close();
    // Strip what this release added: the manifest as the release before wrote it (format 3, no set, no lists).
    const dir = join(root, name, 'manifest');
    const newest = Math.max(...(await readdir(dir)).filter((f) => /^\d+\.json$/.test(f)).map((f) => Number.parseInt(f, 10)));
    const path = join(dir, `${newest}.json`);
    const m = JSON.parse(await readFile(path, 'utf8')) as Manifest;
    const names = m.tables.map((t) => t.name).sort();
    delete m.indexes;
    for (const t of m.tables) delete t.indexes;
    await writeFile(path, JSON.stringify(m));
    w = await MemWal.open(options(storage, name, byName));
    await check(w, model, 'older manifest');
    await until(() => built(w), 10_000, 'the record');
    expect((await w.compactionStats()).completedCount).toBe(0); // nothing rewritten
    await w.close();
    const after = await stored(storage, name);
    expect(after.m.tables.map((t) => t.name).sort()).toEqual(names);
    expect(after.m.indexes).toEqual([{ id: 1, kind: 'ordered', name: 'byName', spec: NAME_SPEC.slice(7) }]);
    for (const t of after.m.tables) expect(t.indexes).toEqual([1]);
  });

  it('a manifest written before the index set was kept, of files without the section: their directories are read, and they are rebuilt', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-ix-old-'));
    const storage = new NodeFileStorage(root);
    const name = 'old';
    const model = await seed(storage, name); // written with no index: no file holds a section
    const path = await newestManifestPath(root, name);
    const m = JSON.parse(await readFile(path, 'utf8')) as Manifest;
    delete m.indexes;
    for (const t of m.tables) delete t.indexes;
    await writeFile(path, JSON.stringify(m));
    const w = await MemWal.open(options(storage, name, byName), manualOnly);
    await check(w, model, 'older manifest, files without sections');
    await until(() => built(w), 10_000, 'the build');
    expect((await w.compactionStats()).completedCount).toBeGreaterThan(0);
    await check(w, model, 'built');
    await w.close();
    const after = await stored(storage, name);
    for (const t of after.m.tables) expect([t.indexes, after.sections.get(t.name)], t.name).toEqual([[1], [NAME_SPEC]]);
  });

  it('a manifest of a newer format is refused with NotSupported and left as it was', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-ix-new-'));
    const storage = new NodeFileStorage(root);
    // No background compaction: close does not wait for one, and its manifest commit could land
    // after the edit below, above the newer-format version.
    await seed(storage, 'newer', manualOnly);
    const dir = join(root, 'newer', 'manifest');
    const newest = Math.max(...(await readdir(dir)).filter((f) => /^\d+\.json$/.test(f)).map((f) => Number.parseInt(f, 10)));
    const path = join(dir, `${newest}.json`);
    const m = JSON.parse(await readFile(path, 'utf8')) as Manifest;
    await writeFile(path, JSON.stringify({ ...m, formatVersion: 4 }));
    const before = await readdir(dir);
    await expect(MemWal.open(options(storage, 'newer', byName))).rejects.toMatchObject({ code: 'NotSupported' });
    expect(await readdir(dir)).toEqual(before);
  });
});

describe('the index set (pure)', () => {
  const d = (name: string, spec: string) => ({ kind: 'ordered', name, spec });
  it('keeps the id of a definition it has, gives a new one to a new or redefined index, never reusing a listed id', () => {
    const m = {
      indexes: [
        { id: 1, ...d('a', 'x') },
        { id: 2, ...d('b', 'y') },
      ],
      tables: [{ indexes: [1, 2, 5] }] as Manifest['tables'],
    };
    expect(claimIndexSet(m, [d('a', 'x'), d('b', 'z'), d('c', 'w')])).toEqual([
      { id: 1, ...d('a', 'x') },
      { id: 6, ...d('b', 'z') },
      { id: 7, ...d('c', 'w') },
    ]);
    expect(claimIndexSet(undefined, [d('a', 'x')])).toEqual([{ id: 1, ...d('a', 'x') }]);
  });

  it('a damaged set or file list is Corruption', () => {
    const base = { formatVersion: 3, layout: 'memory', mode: 'memtable', schema: '', primaryKey: [], writerEpoch: 1, version: 1 };
    const m = { ...base, nextGeneration: 1, replayCursor: 0, consumerCursor: null, positionHint: 0 };
    expect(() => checkManifest({ ...m, tables: [], indexes: [{ id: 0, ...d('a', 'x') }] })).toThrow(/Corruption|positive integer id/);
    expect(() =>
      checkManifest({
        ...m,
        tables: [],
        indexes: [
          { id: 1, ...d('a', 'x') },
          { id: 1, ...d('b', 'x') },
        ],
      }),
    ).toThrow(/twice/);
    expect(() => checkManifest({ ...m, tables: [{ name: 't', indexes: ['1'] }] })).toThrow(/list of index ids/);
    expect(checkManifest({ ...m, tables: [{ name: 't', indexes: [1] }], indexes: [{ id: 1, ...d('a', 'x') }] }).indexes).toHaveLength(1);
  });
});
