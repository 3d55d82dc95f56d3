// Holes an outside reliability review found through the public API, each as the behaviour that
// closes it (docs/impl.md, "Faults the tests inject"; docs/testing.md §7 for the simulation).

import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemWal } from '../src/engine/memwal.js';
import { MemWalError } from '../src/util/errors.js';
import type { WalEntry } from '../src/engine/api.js';
import { type DrainSink, drain } from '../src/drain/drain.js';
import { MemoryStorage } from '../src/storage/memory.js';
import { idsOf, open, rows } from '../src/engine/testkit.test-util.js';
import { NodeFileStorage } from '../src/node.js';
import { FileStorage } from '../src/storage/fs.js';
import type { FileSystemShim } from '../src/storage/fs-shim.js';
import { nodeFileSystem } from '../src/storage/fs-node.js';

const quiet = { warn: () => undefined };

describe('a destroy cut short', () => {
  // MemWal.destroy (and onSchemaMismatch 'reset') removes the store directory; a process that
  // dies meanwhile can leave WAL segments without any manifest (Node removes a directory's
  // entries in parallel, so any subset may be left).
  async function destroyCutShort(): Promise<NodeFileStorage> {
    const root = await mkdtemp(join(tmpdir(), 'memwal-review-'));
    const storage = new NodeFileStorage(root);
    let w = await open(storage, { logger: quiet }, 's');
    await w.put(rows(1, 3, 'old'));
    await w.abort();
    w = await open(storage, { logger: quiet }, 's'); // a second epoch, its own segment
    await w.put(rows(4, 1, 'old'));
    await w.abort();
    await rm(join(root, 's', 'manifest'), { recursive: true }); // the manifest went, the WAL did not
    return storage;
  }

  it('leaves no destroyed row in the store created next', async () => {
    const storage = await destroyCutShort();
    const w = await open(storage, { logger: quiet }, 's');
    expect(idsOf(await w.scan())).toEqual([]);
    await w.close();
  });

  it('never costs the store created next an acknowledged write', async () => {
    const storage = await destroyCutShort();
    let w = await open(storage, { logger: quiet }, 's');
    await w.put(rows(10, 2, 'new'));
    await w.abort();
    w = await open(storage, { logger: quiet }, 's');
    expect(idsOf(await w.scan())).toEqual([10, 11]);
    await w.close();
  });

  it('does not brick a store reset to another schema', async () => {
    const storage = await destroyCutShort();
    const other = new Schema([new Field('id', new Int64(), false), new Field('label', new Utf8(), true)]);
    const options = { name: 's', schema: other, primaryKey: ['id'], storage, logger: quiet, onSchemaMismatch: 'reset' as const };
    let w = await MemWal.open(options);
    await w.put([{ id: 7n, label: 'x' }]);
    await w.abort();
    w = await MemWal.open(options);
    expect(idsOf(await w.scan())).toEqual([7]);
    await w.close();
  });
});

describe('a destroy cut short at any file', () => {
  /** Node's file system, except that removals go file by file (newest names first) and the process dies at the `cut`-th. */
  function dyingAt(cut: number): FileSystemShim {
    let removals = 0;
    const removal = async (path: string, remove: () => Promise<void>) => {
      if (++removals >= cut) throw Object.assign(new Error(`killed before removing ${path}`), { code: 'EKILLED' });
      await remove();
    };
    const rmTree = async (path: string): Promise<void> => {
      let children: string[];
      try {
        children = await readdir(path);
      } catch {
        return removal(path, () => nodeFileSystem.unlink(path));
      }
      for (const c of children.sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))) await rmTree(`${path}/${c}`);
      await removal(path, () => rm(path, { recursive: true }));
    };
    return { ...nodeFileSystem, unlink: (path) => removal(path, () => nodeFileSystem.unlink(path)), rm: rmTree };
  }

  it('leaves the whole store or none of it: the next open shows every row or no row', async () => {
    const template = await mkdtemp(join(tmpdir(), 'memwal-review-'));
    const storage = new NodeFileStorage(template);
    const w = await open(storage, { logger: quiet }, 's');
    for (let i = 0; i < 6; i++) {
      await w.put(rows(i * 10, 10));
      await w.forceSealActive();
      await w.waitForFlushDrain();
    }
    await w.put(rows(100, 5)); // in the WAL only
    await w.abort();
    const outcomes: string[] = [];
    for (let cut = 1; cut < 100; cut++) {
      const root = await mkdtemp(join(tmpdir(), 'memwal-review-'));
      await cp(template, root, { recursive: true });
      const destroyed = await MemWal.destroy('s', { storage: new FileStorage(dyingAt(cut), root) }).then(
        () => true,
        () => false,
      );
      try {
        const again = await open(new NodeFileStorage(root), { logger: quiet }, 's');
        const ids = idsOf(await again.scan());
        await again.close();
        outcomes.push(ids.length === 0 ? 'none' : ids.length === 65 ? 'all' : `cut ${cut}: ${ids.length} of 65 rows`);
      } catch (e) {
        outcomes.push(`cut ${cut}: ${(e as Error).message}`);
      }
      await rm(root, { recursive: true, force: true }).catch(() => undefined);
      if (destroyed) break;
    }
    expect(outcomes.filter((o) => o !== 'all' && o !== 'none')).toEqual([]);
    expect(outcomes).toContain('all');
    expect(outcomes).toContain('none');
    await rm(template, { recursive: true, force: true }).catch(() => undefined);
  });
});

describe('a drain across a destroy', () => {
  /**
   * A sink that applies each (store id, incarnation, position) once, as LanceSink does: an older
   * incarnation is refused, a newer one starts from position 0. It keeps the rows' ids.
   */
  class Sink implements DrainSink {
    applied = 0;
    incarnation: string | undefined;
    readonly ids: number[] = [];
    private newer(incarnation: string | undefined): boolean {
      if (incarnation === undefined || this.incarnation === undefined || incarnation === this.incarnation) return false;
      if (incarnation < this.incarnation) throw new MemWalError('InvalidArgument', 'an older incarnation');
      return true;
    }
    async appliedPosition(_store: string, incarnation?: string): Promise<number> {
      return this.newer(incarnation) ? 0 : this.applied;
    }
    async apply(_store: string, entries: readonly WalEntry[], incarnation?: string): Promise<{ appliedPosition: number }> {
      if (this.newer(incarnation)) this.applied = 0;
      this.incarnation = incarnation ?? this.incarnation;
      for (const e of entries) {
        if (e.position <= this.applied) continue;
        for (const id of e.data.getChild('id')!.toArray()) this.ids.push(Number(id));
        this.applied = e.position;
      }
      return { appliedPosition: this.applied };
    }
  }

  // Positions (and writer epochs) start again at 1 in a store created after MemWal.destroy or
  // onSchemaMismatch 'reset'; a sink dedupes by (store id, position), so without the store's
  // incarnation id on the drain's requests the new store's first entries (ids 10-14 here) never
  // reached the sink, silently.
  it('a store created after a destroy loses no entry in a drain that goes on under the same store id', async () => {
    const storage = new MemoryStorage();
    const sink = new Sink();
    let w = await open(storage, { logger: quiet }, 'd');
    let d = drain(w, { sink, storeId: 'd', logger: quiet });
    for (let i = 0; i < 5; i++) await w.put(rows(i, 1, 'old'));
    await d.waitForApplied(5);
    await d.stop();
    await w.close();
    await MemWal.destroy('d', { storage });
    w = await open(storage, { logger: quiet }, 'd');
    for (let i = 10; i < 17; i++) await w.put(rows(i, 1, 'new'));
    d = drain(w, { sink, storeId: 'd', logger: quiet });
    await d.waitForApplied(7);
    await d.stop();
    await w.close();
    expect(sink.ids.filter((id) => id >= 10)).toEqual([10, 11, 12, 13, 14, 15, 16]);
  });
});
