// The I/O plane: the inline plane frames an entry as encodeFrame does and writes through the
// handle; an adapter's placement is chosen by the code that built it, else inline.

import { describe, expect, it } from 'vitest';
import { encodeFrame } from '../format/wal/codec.js';
import { MemoryStorage } from '../storage/memory.js';
import { crc32c } from '../util/crc32c.js';
import { inlinePlacement, inlinePlane, placementOf, placeStorage } from './io-plane.js';

describe('the inline I/O plane', () => {
  it("appends an entry's frame, byte for byte encodeFrame's, with and without the payload's CRC-32C; resolves its length", async () => {
    const adapter = new MemoryStorage();
    const { handle, plane } = await placementOf(adapter).openStore('io-plane-inline', {});
    const a = new Uint8Array([1, 2, 3, 4, 5]);
    const b = new Uint8Array([9, 8, 7]);
    const lengthA = await plane.appendEntry('1-1', 0, 1, 1, a, crc32c(a));
    const lengthB = await plane.appendEntry('1-1', lengthA, 1, 2, b);
    const frameA = encodeFrame(1, 1, a);
    const frameB = encodeFrame(1, 2, b);
    expect([lengthA, lengthB]).toEqual([frameA.length, frameB.length]);
    expect(await handle.walRead('1-1')).toEqual(Uint8Array.from([...frameA, ...frameB]));
    await plane.writeTable('1-1-0.arrow', new Uint8Array([4, 4]));
    expect(await handle.tableRead('1-1-0.arrow')).toEqual(new Uint8Array([4, 4]));
    await handle.release();
  });

  it('a rejected append leaves the segment as it was (the handle decides)', async () => {
    const adapter = new MemoryStorage();
    const handle = await adapter.openStore('io-plane-reject', {});
    const plane = inlinePlane(handle);
    await expect(plane.appendEntry('1-1', 7, 1, 1, new Uint8Array([1]))).rejects.toMatchObject({ code: 'IOError' });
    expect(await handle.walList()).toEqual([]);
    await handle.release();
  });
});

describe('placement', () => {
  it('an adapter is inline unless placed; a placed one opens through its placement, and a wrapper of it is inline again', async () => {
    const adapter = new MemoryStorage();
    const opened: string[] = [];
    placeStorage(adapter, {
      openStore: (name, options) => {
        opened.push(name);
        return inlinePlacement(adapter).openStore(name, options);
      },
    });
    const { handle } = await placementOf(adapter).openStore('placed', {});
    await handle.release();
    expect(opened).toEqual(['placed']);
    const wrapper = {
      layout: adapter.layout,
      inner: adapter,
      openStore: adapter.openStore.bind(adapter),
      destroyStore: adapter.destroyStore.bind(adapter),
    };
    const wrapped = await placementOf(wrapper).openStore('wrapped', {});
    await wrapped.handle.release();
    expect(opened).toEqual(['placed']);
  });
});
