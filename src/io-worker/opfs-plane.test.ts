// The OPFS adapter's plane: a WAL entry goes to the handle as two parts, its header and the
// payload itself (no joined copy); whole and kept tables go to the handle's table writer paths.

import { describe, expect, it } from 'vitest';
import { encodeFrameHeader } from '../format/wal/codec.js';
import type { OpfsStoreHandle } from '../storage/opfs.js';
import { crc32c } from '../util/crc32c.js';
import { opfsPlane } from './opfs-plane.js';

describe('the OPFS plane', () => {
  it("hands the handle the entry's header and the payload itself as two parts, and tables whole or kept", async () => {
    const calls: unknown[][] = [];
    const handle = {
      walAppendParts: async (...a: unknown[]) => void calls.push(['parts', ...a]),
      tableWriteBytes: async (...a: unknown[]) => void calls.push(['bytes', ...a]),
      tableWriteKept: async (...a: unknown[]) => void calls.push(['kept', ...a]),
    } as unknown as OpfsStoreHandle;
    const plane = opfsPlane(handle);
    const payload = new Uint8Array([4, 5, 6]);
    expect(await plane.appendEntry('2-7', 0, 2, 7, payload, crc32c(payload))).toBe(encodeFrameHeader(2, 7, payload).length + 3);
    expect(calls[0]).toEqual(['parts', '2-7', 0, [encodeFrameHeader(2, 7, payload), payload]]);
    expect((calls[0]![3] as Uint8Array[])[1]).toBe(payload);
    const bytes = new Uint8Array([1]);
    await plane.writeTable('1-1-0.arrow', bytes);
    await plane.writeKept('1-1-1.arrow', 3);
    expect(calls.slice(1)).toEqual([
      ['bytes', '1-1-0.arrow', bytes],
      ['kept', '1-1-1.arrow', 3],
    ]);
  });
});
