// The OPFS WAL append over a sync access handle (in Node, a fake handle over a byte array): a frame
// written as two parts (header, then payload at its offset) is the joined frame, and an append
// that fails partway leaves the segment as it was.

import { describe, expect, it } from 'vitest';
import { encodeFrame, encodeFrameHeader, scanSegment } from '../format/wal/codec.js';
import { appendToSegment, type SyncAccessHandle } from './opfs-files.js';

/** A sync access handle over bytes in memory; `failWrite(n)` makes the n-th write (0-based) write half and report it. */
function fakeHandle(initial: Uint8Array, failWrite = -1): SyncAccessHandle & { bytes(): Uint8Array; flushes: number } {
  let data = initial.slice();
  let writes = 0;
  const handle = {
    flushes: 0,
    bytes: () => data.slice(),
    getSize: () => data.length,
    read: (buf: Uint8Array, opts?: { at?: number }) => {
      const part = data.subarray(opts?.at ?? 0, (opts?.at ?? 0) + buf.length);
      buf.set(part);
      return part.length;
    },
    write: (buf: Uint8Array, opts?: { at?: number }) => {
      const at = opts?.at ?? 0;
      const n = writes++ === failWrite ? buf.length >> 1 : buf.length;
      if (at + n > data.length) {
        const grown = new Uint8Array(at + n);
        grown.set(data);
        data = grown;
      }
      data.set(buf.subarray(0, n), at);
      return n;
    },
    truncate: (size: number) => {
      data = data.slice(0, size);
    },
    flush: () => {
      handle.flushes++;
    },
    close: () => undefined,
  };
  return handle as unknown as SyncAccessHandle & { bytes(): Uint8Array; flushes: number };
}

describe('OPFS WAL append', () => {
  it('a frame appended as header and payload is the joined frame, with one flush', () => {
    const payload = Uint8Array.from({ length: 1000 }, (_, i) => i * 7);
    const first = encodeFrame(3, 1, new Uint8Array([9, 9, 9]));
    const h = fakeHandle(first);
    appendToSegment(h, '3-1', first.length, [encodeFrameHeader(3, 2, payload), payload]);
    const joined = encodeFrame(3, 2, payload);
    expect(h.bytes().subarray(first.length)).toEqual(joined);
    expect(h.flushes).toBe(1);
    const scan = scanSegment(h.bytes());
    expect(scan.frames.map((f) => f.position)).toEqual([1, 2]);
    expect(scan.status).toBe('clean');
  });

  it('a two-part append that fails halfway leaves the segment as it was', () => {
    const payload = new Uint8Array(4096).fill(5);
    const before = encodeFrame(1, 1, new Uint8Array([1, 2, 3]));
    for (const failing of [0, 1]) {
      const h = fakeHandle(before, failing);
      expect(() => appendToSegment(h, '1-1', before.length, [encodeFrameHeader(1, 2, payload), payload])).toThrow(/wrote \d+ of \d+ bytes/);
      expect(h.bytes()).toEqual(before);
    }
  });

  it('an append at an offset other than the segment length is refused and writes nothing', () => {
    const before = encodeFrame(1, 1, new Uint8Array([1]));
    const h = fakeHandle(before);
    expect(() => appendToSegment(h, '1-1', before.length + 1, [new Uint8Array(8)])).toThrow(/append at offset/);
    expect(h.bytes()).toEqual(before);
  });
});
