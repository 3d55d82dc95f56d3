// serveIoRole with a wrapper (IoRoleOptions.wrap): the engine's stores stay placed in the I/O
// worker, whose adapter is the wrapper, so a fault wrapper (the demo's, demo-io.worker.ts) sits
// under the I/O plane: flushes are still built in the I/O worker and written there, through it.
// The I/O worker is served in this Node thread over a MessageChannel, on IndexedDB (fake-indexeddb).

import 'fake-indexeddb/auto';
import { Field, Int32, Schema } from 'apache-arrow';
import { expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { FaultInjectingStorage } from '../testing/fault.js';
import { type IoRoleScope, serveIoRole, spawnIoWorker } from './browser.js';
import { type IoEndpoint, RemoteStorage } from './remote-storage.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('v', new Int32(), true)]);

it('a wrapped I/O role: flushes are built and written in the I/O worker, through the wrapper, whose faults they meet', async () => {
  let faults: FaultInjectingStorage | undefined;
  const wrapped: StorageAdapter[] = [];
  const ops: string[] = [];
  const storage = new RemoteStorage('indexeddb', () =>
    spawnIoWorker(() => {
      const { port1, port2 } = new MessageChannel();
      serveIoRole(port2 as unknown as IoRoleScope, {
        wrap: (adapter) => {
          wrapped.push(adapter);
          faults = new FaultInjectingStorage(adapter);
          return faults;
        },
      });
      port2.start();
      port1.start();
      return {
        postMessage: (message: { op?: string }, transfer: Transferable[]) => {
          if (message.op) ops.push(message.op);
          port1.postMessage(message, transfer);
        },
        addEventListener: (type: 'message' | 'error', listener: (ev: Event) => void) =>
          (port1.addEventListener as (t: string, l: (ev: Event) => void) => void)(type, listener),
      } as unknown as IoEndpoint;
    }, 'indexeddb'),
  );
  const w = await MemWal.open({
    name: `wrapped-role-${Date.now()}`,
    schema,
    primaryKey: ['id'],
    storage,
    flushRetry: { baseMs: 1, maxMs: 5 },
    logger: { warn: () => undefined },
  });
  expect(wrapped.map((a) => a.layout)).toEqual(['indexeddb']);
  await w.put(Array.from({ length: 50 }, (_, id) => ({ id, v: id * 2 })));
  faults!.failNext('tableWrite', 2);
  await w.forceSealActive();
  await w.waitForFlushDrain();
  expect((await w.writeStats()).flushFailureCount).toBe(2); // the writes passed the wrapper
  expect(ops).toContain('buildFlush'); // built in the I/O worker
  expect(ops).toContain('tableWriteBuilt'); // and written there
  expect(ops).not.toContain('tableWriteOpen'); // never streamed from the engine's thread
  expect((await w.scan()).numRows).toBe(50);
  expect(await w.get({ id: 7 })).toEqual({ id: 7, v: 14 });
  await w.close();
  expect(await storage.send('builtKept')).toBe(0);
});
