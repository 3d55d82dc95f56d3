// The commit protocol of ManifestLog and the REQUIRES of typed manifest edits.

import { describe, expect, it } from 'vitest';
import { applyEdit } from '../format/manifest/edit.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { MemoryStorage } from '../storage/memory.js';
import { testManifest } from '../testing/conformance.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { isClaimConflict, ManifestLog } from './manifest-log.js';

async function claimed(storage = new FaultInjectingStorage(new MemoryStorage())) {
  const h = await storage.openStore('m', { timeoutMs: 0 });
  const log = new ManifestLog(h, 'm', 1000);
  await log.claim(undefined, { ...testManifest(storage, 1, 1), nextGeneration: 10 });
  return { storage, h, log };
}

const table = (name: string, generation: number) => ({ generation, name, bytes: 1, rows: 1, checksum: '00000000' });

describe('ManifestLog', () => {
  it('every commit carries a new commit id and the next version', async () => {
    const { h, log } = await claimed();
    const first = log.manifest.commitId;
    const m = await log.commit({ replayCursor: 3 }, 3);
    expect(m.version).toBe(2);
    expect(m.commitId).not.toBe(first);
    expect((await h.manifestLoad())!.commitId).toBe(m.commitId);
    expect(m.positionHint).toBe(3);
  });

  it('a commit that landed but reported failure is a success once the re-read finds its id', async () => {
    const { storage, log } = await claimed();
    storage.failAfter('manifestCommit');
    const m = await log.commit({ addTables: [table('a', 1)] }, 0);
    expect(m.tables.map((t) => t.name)).toEqual(['a']);
    expect(log.inDoubt).toBe(false);
  });

  it('a claim refused because another writer committed meanwhile is a conflict; a claim that failed in storage is not', async () => {
    const { storage, h, log } = await claimed();
    const stale = log.manifest;
    await log.commit({ replayCursor: 1 }, 1); // the store moved past `stale`
    const second = new ManifestLog(h, 'm', 1000);
    const conflict = await second.claim(stale, { ...stale, writerEpoch: 2, version: stale.version + 1 }).catch((e: unknown) => e);
    expect(conflict).toMatchObject({ code: 'IOError' });
    expect(isClaimConflict(conflict)).toBe(true);
    const current = log.manifest;
    storage.failNext('manifestCommit');
    const failed = await second.claim(current, { ...current, writerEpoch: 2, version: current.version + 1 }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: 'IOError', message: expect.stringContaining('injected fault') });
    expect(isClaimConflict(failed)).toBe(false);
  });

  it('a commit that did not land reports its error and changes nothing', async () => {
    const { storage, log } = await claimed();
    storage.failNext('manifestCommit');
    await expect(log.commit({ addTables: [table('a', 1)] }, 0)).rejects.toMatchObject({ code: 'IOError' });
    expect(log.manifest.tables).toEqual([]);
    expect(log.inDoubt).toBe(false);
  });

  it('when the re-read fails too the commit is in doubt, and the next commit resolves it by content first', async () => {
    const { storage, h, log } = await claimed();
    storage.failAfter('manifestCommit');
    storage.failNext('manifestLoad');
    const e = await log.commit({ addTables: [table('a', 1)] }, 0).catch((x: unknown) => x);
    expect((e as { message: string }).message).toContain('outcome is unknown');
    expect(log.inDoubt).toBe(true);
    const m = await log.commit({ addTables: [table('b', 2)] }, 0);
    expect(m.tables.map((t) => t.name)).toEqual(['a', 'b']); // 'a' landed, and 'b' went on top of it
    expect((await h.manifestLoad())!.version).toBe(3);
  });

  it('resolveDoubt says whether the doubtful commit landed', async () => {
    const { storage, log } = await claimed();
    storage.failNext('manifestCommit');
    storage.failNext('manifestLoad');
    await log.commit({ addTables: [table('a', 1)] }, 0).catch(() => undefined);
    expect(log.inDoubt).toBe(true);
    expect(await log.resolveDoubt()).toEqual({ landed: false });
    expect(await log.resolveDoubt()).toEqual({ landed: false }); // nothing in doubt any more
  });

  it('a newer epoch found while resolving is Fenced', async () => {
    const { storage, log } = await claimed();
    storage.failNext('manifestCommit');
    storage.failNext('manifestLoad');
    await log.commit({ replayCursor: 1 }, 1).catch(() => undefined);
    const thief = await storage.openStore('m', { steal: true, timeoutMs: 0 });
    const stored = (await thief.manifestLoad())!;
    await thief.manifestCommit(stored.version, { ...stored, writerEpoch: 2, version: stored.version + 1 });
    await expect(log.resolveDoubt()).rejects.toMatchObject({ code: 'Fenced' });
  });

  it('a commit call that never settles makes the log unresolvable (the writer poisons)', async () => {
    const storage = new FaultInjectingStorage(new MemoryStorage());
    const h = await storage.openStore('m', { timeoutMs: 0 });
    const log = new ManifestLog(h, 'm', 50);
    await log.claim(undefined, { ...testManifest(storage, 1, 1), nextGeneration: 10 });
    const release = storage.hold('manifestCommit');
    await expect(log.commit({ replayCursor: 1 }, 1)).rejects.toMatchObject({ code: 'IOError' });
    expect(log.unresolvable).toBe(true);
    release();
  });
});

describe('applyEdit', () => {
  const base = (): Manifest => ({
    ...testManifest({ layout: 'memory' }, 1, 1),
    tables: [table('a', 1)],
    nextGeneration: 2,
    replayCursor: 5,
    consumerCursor: 2,
  });

  it('adds and removes table files and moves cursors, leaving its input untouched', () => {
    const cur = base();
    const next = applyEdit(cur, { removeTables: ['a'], addTables: [table('b', 2)], replayCursor: 7, nextGeneration: 3, consumerCursor: 4 });
    expect(next.tables.map((t) => t.name)).toEqual(['b']);
    expect([next.replayCursor, next.nextGeneration, next.consumerCursor]).toEqual([7, 3, 4]);
    expect(cur.tables.map((t) => t.name)).toEqual(['a']);
  });

  it('refuses edits that break their REQUIRES', () => {
    expect(() => applyEdit(base(), { removeTables: ['zz'] })).toThrow(/not live/);
    expect(() => applyEdit(base(), { addTables: [table('a', 9)] })).toThrow(/already live/);
    expect(() => applyEdit(base(), { replayCursor: 4 })).toThrow(/replayCursor/);
    expect(() => applyEdit(base(), { consumerCursor: 1 })).toThrow(/consumerCursor/);
    expect(() => applyEdit(base(), { nextGeneration: 0 })).toThrow(/nextGeneration/);
  });

  it('refuses an edit whose result holds a generation at or above nextGeneration', () => {
    expect(() => applyEdit(base(), { addTables: [table('b', 2)] })).toThrow(/holds generation 2, not below nextGeneration 2/);
    expect(() => applyEdit(base(), { addTables: [{ ...table('c', 1), maxGeneration: 5 }] })).toThrow(/holds generation 5/);
    expect(applyEdit(base(), { addTables: [table('b', 2)], nextGeneration: 3 }).tables).toHaveLength(2);
  });

  it('refuses an edit whose result has overlapping level-1 files', () => {
    const l1 = (name: string, minKey: string, maxKey: string) => ({ ...table(name, 1), level: 1, minKey, maxKey });
    const cur = { ...base(), tables: [l1('x', '10', '20'), l1('y', '30', '40')] };
    expect(() => applyEdit(cur, { addTables: [l1('z', '20', '25')] })).toThrow(/level-1 table files x and z overlap/);
    expect(() => applyEdit(cur, { addTables: [l1('z', '00', '50')] })).toThrow(/overlap/);
    expect(applyEdit(cur, { addTables: [l1('z', '21', '2f')] }).tables).toHaveLength(3);
    // Level 0 may overlap anything.
    expect(applyEdit(cur, { addTables: [{ ...l1('w', '00', '50'), level: 0 }] }).tables).toHaveLength(3);
  });
});
