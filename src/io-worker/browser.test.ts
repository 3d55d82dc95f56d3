// spawnIoWorker with a starter that records the workers it starts (Node: MessageChannel, no
// Worker): the OPFS table writer thread starts when tables are coming, not with the I/O worker.

import { describe, expect, it } from 'vitest';
import { spawnIoWorker } from './browser.js';
import type { IoEndpoint } from './remote-storage.js';

/** A started worker as the starter saw it: its name, what was posted to it, its listeners. */
interface Started {
  name: string;
  posted: unknown[];
  errors: ((ev: Event) => void)[];
  terminated: boolean;
}

function starter(failFor?: string): { start: (name: string) => IoEndpoint; started: Started[] } {
  const started: Started[] = [];
  const start = (name: string): IoEndpoint => {
    if (name === failFor) throw new Error('no second worker here');
    const w: Started = { name, posted: [], errors: [], terminated: false };
    started.push(w);
    return {
      postMessage: (message: unknown) => w.posted.push(message),
      addEventListener: (type: string, listener: (ev: Event) => void) => {
        if (type === 'error') w.errors.push(listener);
      },
      terminate: () => {
        w.terminated = true;
      },
    } as unknown as IoEndpoint;
  };
  return { start, started };
}

describe('spawnIoWorker', () => {
  it('OPFS: the I/O worker gets its port to the table writer thread at once; the thread starts, with the other end, when tables are coming, once', () => {
    const { start, started } = starter();
    const endpoint = spawnIoWorker(start, 'opfs');
    expect(started.map((w) => w.name)).toEqual(['memwal-io-opfs']);
    const first = started[0]!.posted[0] as { layout: string; tableWriter: MessagePort };
    expect(first.layout).toBe('opfs');
    expect(first.tableWriter).toBeInstanceOf(MessagePort);
    endpoint.tablesAhead?.();
    endpoint.tablesAhead?.();
    expect(started.map((w) => w.name)).toEqual(['memwal-io-opfs', 'memwal-io-tables']);
    const writer = started[1]!;
    expect(writer.posted).toHaveLength(1);
    const port = (writer.posted[0] as { tableWriter: MessagePort }).tableWriter;
    expect(port).toBeInstanceOf(MessagePort);
    expect(port).not.toBe(first.tableWriter);
    first.tableWriter.close();
    port.close();
  });

  it("the writer's error event is the I/O worker's, for listeners added before and after it started; terminate ends both", () => {
    const { start, started } = starter();
    const endpoint = spawnIoWorker(start, 'opfs');
    const heard: string[] = [];
    endpoint.addEventListener('error', () => heard.push('before'));
    endpoint.tablesAhead?.();
    endpoint.addEventListener('error', () => heard.push('after'));
    const [io, writer] = started;
    for (const l of writer!.errors) l(new Event('error'));
    expect(heard).toEqual(['before', 'after']);
    expect(io!.errors).toHaveLength(2);
    endpoint.terminate?.();
    expect([io!.terminated, writer!.terminated]).toEqual([true, true]);
  });

  it('no writer thread after terminate, where a second worker cannot start (the I/O worker writes its tables), or for IndexedDB', () => {
    const ended = starter();
    const a = spawnIoWorker(ended.start, 'opfs');
    a.terminate?.();
    a.tablesAhead?.();
    expect(ended.started.map((w) => w.name)).toEqual(['memwal-io-opfs']);
    const failing = starter('memwal-io-tables');
    const b = spawnIoWorker(failing.start, 'opfs');
    expect(() => b.tablesAhead?.()).not.toThrow();
    expect(failing.started.map((w) => w.name)).toEqual(['memwal-io-opfs']);
    const idb = starter();
    const c = spawnIoWorker(idb.start, 'indexeddb');
    c.tablesAhead?.();
    expect(idb.started.map((w) => w.name)).toEqual(['memwal-io-indexeddb']);
    expect(idb.started[0]!.posted[0]).toEqual({ layout: 'indexeddb', tableWriter: undefined });
    for (const w of [ended, failing]) (w.started[0]!.posted[0] as { tableWriter: MessagePort }).tableWriter.close();
  });
});
