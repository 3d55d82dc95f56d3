// A waiting open is never silent: the engine hands its logger to the adapter, which warns every
// LOCK_WAIT_WARN_MS while the writer lock is held elsewhere, and stops once the wait ends.

import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Field, Int64, Schema } from 'apache-arrow';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import type { MemWalError } from '../util/errors.js';
import { FileStorage } from './fs.js';
import { nodeFileSystem } from './fs-node.js';
import { LOCK_WAIT_WARN_MS } from './lock-wait.js';
import { MemoryStorage } from './memory.js';

const schema = new Schema([new Field('id', new Int64(), false)]);

afterEach(() => {
  vi.useRealTimers();
});

describe('warnings while an open waits for the writer lock', () => {
  it('MemWal.open on a held store warns through its logger every few seconds, and stops once it gets the lock', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const storage = new MemoryStorage();
    const first = await MemWal.open({ name: 'held', schema, storage, logger: { warn: () => undefined } });
    const warnings: string[] = [];
    const second = MemWal.open({ name: 'held', schema, storage, logger: { warn: (m) => warnings.push(m) } });
    await vi.advanceTimersByTimeAsync(LOCK_WAIT_WARN_MS - 1);
    expect(warnings).toEqual([]);
    await vi.advanceTimersByTimeAsync(2 * LOCK_WAIT_WARN_MS);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^memwal: opening store "held" has waited \d+ s for its writer lock/);
    await first.close();
    const w = await second;
    await vi.advanceTimersByTimeAsync(3 * LOCK_WAIT_WARN_MS);
    expect(warnings).toHaveLength(2);
    await w.close();
  });

  it('a file LOCK whose holder cannot be checked: the warning says so, a fresh heartbeat holds, a stale one is taken over', async () => {
    const root = await mkdtemp(join(tmpdir(), 'memwal-lockwait-'));
    try {
      // As in Deno without --allow-run: no pid check, no flock.
      const storage = new FileStorage({ ...nodeFileSystem, isProcessAlive: () => undefined }, root, { lockLeaseMs: 2000 });
      const lock = join(root, 's', 'LOCK');
      await storage.destroyStore('s');
      await (await storage.openStore('s', { timeoutMs: 0 })).release();
      await writeFile(lock, JSON.stringify({ pid: 999_999_999, token: 'a-node-holder' }));

      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      const warnings: string[] = [];
      let startedWaiting!: () => void;
      const waitStarted = new Promise<void>((resolve) => (startedWaiting = resolve));
      const waiting = storage.openStore('s', { timeoutMs: 1000, onWaiting: startedWaiting, logger: { warn: (m) => warnings.push(m) } });
      await waitStarted;
      await vi.advanceTimersByTimeAsync(LOCK_WAIT_WARN_MS);
      const code = await waiting.then(
        () => 'opened',
        (e: MemWalError) => e.code,
      );
      expect(code).toBe('Locked');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('may not check whether process 999999999 is alive');
      expect(warnings[0]).toContain('once its heartbeat is 2 s old');

      const past = new Date(Date.now() - 60_000);
      await utimes(lock, past, past);
      const h = await storage.openStore('s', { timeoutMs: 0 });
      await h.release();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
