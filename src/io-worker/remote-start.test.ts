// An I/O worker that fails to start or never answers (say, a bundle whose worker script lost its
// starter): the open settles with a clear MemWalError, never waits for ever.

import { describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { schema, storeName } from '../engine/testkit.test-util.js';
import { type IoEndpoint, RemoteStorage } from './remote-storage.js';

const quiet = { warn: () => undefined };
const openOn = (storage: RemoteStorage) =>
  MemWal.open({ name: storeName(), schema, primaryKey: ['id'], storage, logger: quiet, lockTimeoutMs: 1_000 } as never);

describe('an I/O worker that does not start', () => {
  for (const [how, spawn] of [
    [
      'fails to load (an error event before any answer)',
      () => {
        const { port1 } = new MessageChannel();
        setTimeout(() => port1.dispatchEvent(new Event('error')), 5);
        port1.start();
        return port1 as unknown as IoEndpoint;
      },
    ],
    [
      'cannot be constructed (spawn throws)',
      () => {
        throw new DOMException('blocked by CSP', 'SecurityError');
      },
    ],
    [
      'loads but never answers',
      () => {
        const { port1 } = new MessageChannel();
        port1.start();
        return port1 as unknown as IoEndpoint;
      },
    ],
  ] as const) {
    it(`an open whose I/O worker ${how} rejects with a MemWalError`, async () => {
      const storage = new RemoteStorage('memory', spawn, quiet, undefined, 2_000);
      const settled = await Promise.race([
        openOn(storage).then(
          () => 'opened',
          (e: { name?: string; code?: string }) => `${e.name}:${e.code}`,
        ),
        new Promise((r) => setTimeout(() => r('still waiting after 20 s'), 20_000)),
      ]);
      expect(settled).toMatch(/^MemWalError:/);
    }, 30_000);
  }
});
