// Stores written by release 0.1 (test/fixtures/release-0.1: manifest format 1, table files of
// format 1) open unchanged, read right, and are rewritten in the current table format (3) by compaction.

import { cp, mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileStorage } from '../node.js';
import { FileStorage } from '../storage/fs.js';
import { nodeFileSystem } from '../storage/fs-node.js';
import { MemWal } from './memwal.js';
import { schema } from './testkit.test-util.js';

const fixture = join(import.meta.dirname, '../../test/fixtures/release-0.1');
const quiet = { warn: () => undefined };

async function copy(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'memwal-compat-'));
  await cp(fixture, root, { recursive: true });
  return root;
}

const newestManifest = async (
  root: string,
  store: string,
): Promise<{ formatVersion: number; tables: { format?: number; level?: number }[] }> => {
  const versions = (await readdir(join(root, store, 'manifest'))).filter((f) => /^\d+\.json$/.test(f)).map((f) => Number.parseInt(f, 10));
  return JSON.parse(await readFile(join(root, store, 'manifest', `${Math.max(...versions)}.json`), 'utf8'));
};

describe('stores written by release 0.1', () => {
  it('a keyed store opens, replays its WAL tail, and reads every key right (format-1 table files)', async () => {
    const root = await copy();
    expect((await newestManifest(root, 'keyed')).formatVersion).toBe(1);
    const w = await MemWal.open({
      name: 'keyed',
      schema,
      primaryKey: ['id'],
      storage: new FileStorage(nodeFileSystem, root),
      logger: quiet,
    });
    const t = await w.scan();
    const ids = Array.from(t.getChild('id')!.toArray(), Number);
    const expected = [...Array.from({ length: 100 }, (_, i) => i).filter((i) => i !== 5 && i !== 55), 200, 201, 202];
    expect(ids).toEqual(expected); // key order
    expect(t.getChild('name')!.get(0)).toBe('r2-0');
    expect(await w.get({ id: 42 })).toMatchObject({ name: 'r2-42' });
    expect(await w.get({ id: 5 })).toBeUndefined();
    expect(await w.get({ id: 201 })).toMatchObject({ name: 'tail-201' });
    // Compaction rewrites the format-1 files into format 3, and nothing changes for readers.
    await w.compact();
    await w.close();
    const m = await newestManifest(root, 'keyed');
    expect(m.formatVersion).toBe(3); // manifest format 3 (SPEC §9.1)
    expect(m.tables.every((x) => x.format === 3)).toBe(true); // table format 3; the close flushed the tail into level 0
    expect(m.tables.some((x) => x.level === 1)).toBe(true);
    const again = await MemWal.open({ name: 'keyed', schema, primaryKey: ['id'], storage: new NodeFileStorage(root), logger: quiet });
    expect(Array.from((await again.scan()).getChild('id')!.toArray(), Number)).toEqual(expected);
    await again.close();
  });

  it('a store without an incarnation id gets one at its first open, and keeps it across reopens', async () => {
    const root = await copy();
    expect(await newestManifest(root, 'keyed')).not.toHaveProperty('incarnation');
    const opts = { name: 'keyed', schema, primaryKey: ['id'], storage: new NodeFileStorage(root), logger: quiet };
    const w = await MemWal.open(opts);
    const incarnation = (await w.walStats()).incarnation;
    expect(incarnation).toMatch(/^[0-9a-f]{32}$/);
    await w.close();
    expect(await newestManifest(root, 'keyed')).toHaveProperty('incarnation', incarnation);
    const again = await MemWal.open(opts);
    expect((await again.walStats()).incarnation).toBe(incarnation);
    await again.close();
  });

  it('an append-only store keeps its rows in insertion order', async () => {
    const root = await copy();
    const w = await MemWal.open({ name: 'log', schema, storage: new NodeFileStorage(root), logger: quiet });
    const names = (await w.scan()).getChild('name')!.toArray() as string[];
    expect(names).toEqual(Array.from({ length: 105 }, (_, i) => `a${i}`));
    await w.close();
  });

  it('a WAL-only queue keeps its consumer cursor and its unconsumed entries', async () => {
    const root = await copy();
    const w = await MemWal.open({ name: 'queue', schema, storage: new NodeFileStorage(root), enableMemtable: false, logger: quiet });
    const got: string[] = [];
    for await (const e of w.tail(3)) got.push(e.data.getChild('name')!.get(0) as string);
    expect(got).toEqual(['q2', 'q3', 'q4', 'q5']);
    await w.close();
  });
});
