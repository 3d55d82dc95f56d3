// An outsider's attack on opening a store whose I/O worker fails to start or never answers: an
// open must settle with a clear MemWalError, never wait for ever.

import { describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { schema, storeName } from '../engine/testkit.test-util.js';
import { type IoEndpoint, RemoteStorage } from './remote-storage.js';

/** How an open on `spawn`'s I/O worker settles within `ms`: `opened`, `Code: message`, or `pending`. */
async function openWithin(spawn: () => IoEndpoint, ms: number, extra: { lockTimeoutMs?: number } = {}): Promise<string> {
  const storage = new RemoteStorage('memory', spawn, { warn: () => undefined }, undefined);
  const open = MemWal.open({
    name: storeName('io-open'),
    schema,
    primaryKey: ['id'],
    storage,
    logger: { warn: () => undefined },
    ...extra,
  }).then(
    async (w) => {
      await w.close();
      return 'opened';
    },
    (e: { code?: string; message: string }) => `${e.code}: ${e.message}`,
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('pending'), ms);
  });
  try {
    return await Promise.race([open, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An I/O worker that starts and takes every message, and never answers one. */
function silent(): IoEndpoint {
  const { port1 } = new MessageChannel();
  port1.start();
  return port1 as unknown as IoEndpoint;
}

describe('opening a store whose I/O worker fails', () => {
  it('an I/O worker that fails to load (its error event) rejects the open with IOError naming it', async () => {
    const failing = (): IoEndpoint => {
      const t = Object.assign(new EventTarget(), { postMessage: () => undefined });
      setTimeout(() => t.dispatchEvent(Object.assign(new Event('error'), { message: 'script failed to load' })), 20);
      return t as unknown as IoEndpoint;
    };
    expect(await openWithin(failing, 2_000)).toBe("IOError: the store's I/O worker died (script failed to load)");
  });

  it('an I/O worker that cannot be started rejects the open with IOError', async () => {
    const cannot = (): IoEndpoint => {
      throw new Error('Worker is not defined');
    };
    expect(await openWithin(cannot, 2_000)).toMatch(/^IOError: .*Worker is not defined/);
  });

  // Found by this attack, not fixed: the lock wait's limit travels to the I/O worker, which applies
  // it; one that never answers (stuck, or a script that is not an I/O worker) leaves the open
  // pending for ever even with lockTimeoutMs: 0. A fix needs a limit on this side and a way to
  // release a lock the far side grants after this side gave up (abortOpen is a request too).
  it.fails('an open with lockTimeoutMs: 0 whose I/O worker never answers settles (Locked or IOError) instead of waiting for ever', async () => {
    expect(await openWithin(silent, 3_000, { lockTimeoutMs: 0 })).not.toBe('pending');
  });
});
