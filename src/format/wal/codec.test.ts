// WAL frame codec: round trips, tail classification (clean / torn / corrupt) at every truncation
// point and after bit flips, and a seeded fuzz run that the scanner never throws.

import { Bool, Field, Int64, RecordBatch, Schema, Struct, Table, makeData, tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import type { MemWalError } from '../../util/errors.js';
import { encodeFrame, encodeFrameHeader, encodeFrameHeaderFromCrc, joinFrame, scanSegment } from './codec.js';
import type { SegmentScan } from './codec.js';
import { crc32c } from '../../util/crc32c.js';
import { concatBytes } from '../../util/bytes.js';
import { FRAME_CRC_OFFSET, FRAME_EPOCH_OFFSET, FRAME_HEADER_BYTES, FRAME_MAX_PAYLOAD_BYTES } from './format.js';

/** Small seeded PRNG (mulberry32): floats in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const int = (rand: () => number, n: number): number => Math.floor(rand() * n);

function randomBytes(rand: () => number, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => int(rand, 256));
}

const concat = (...parts: Uint8Array[]): Uint8Array => concatBytes(parts).slice();

/** A segment of `count` frames at consecutive positions, and the offset where each ends. */
function segment(rand: () => number, count: number, firstPosition = 1, epoch = 3) {
  const payloads = Array.from({ length: count }, () => randomBytes(rand, 1 + int(rand, 120)));
  const frames = payloads.map((p, i) => encodeFrame(epoch, firstPosition + i, p));
  const ends: number[] = [];
  let at = 0;
  for (const f of frames) ends.push((at += f.length));
  return { bytes: concat(...frames), payloads, ends };
}

/** Invariants every scan result must satisfy, whatever the input (one assertion, for speed). */
function checkInvariants(scan: SegmentScan, bytes: Uint8Array, baseOffset = 0): void {
  const problems: string[] = [];
  if (!['clean', 'torn', 'corrupt'].includes(scan.status)) problems.push(`status ${scan.status}`);
  if ((scan.reason === undefined) !== (scan.status === 'clean')) problems.push('reason iff not clean');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = baseOffset;
  for (const f of scan.frames) {
    const local = f.offset - baseOffset;
    const frameEnd = local + f.frameBytes;
    if (f.offset !== at) problems.push(`frame at ${f.offset} is not contiguous (expected ${at})`);
    if (frameEnd > bytes.length) problems.push(`frame at ${f.offset} runs past the input`);
    else {
      if (f.frameBytes !== FRAME_HEADER_BYTES + f.payload.length) problems.push(`frameBytes of ${f.offset}`);
      if (f.payload.buffer !== bytes.buffer || f.payload.byteOffset !== bytes.byteOffset + local + FRAME_HEADER_BYTES) {
        problems.push(`payload of ${f.offset} is not a view of the input`);
      }
      const stored = view.getUint32(local + FRAME_CRC_OFFSET, true);
      if (crc32c(bytes.subarray(local + FRAME_EPOCH_OFFSET, frameEnd)) !== stored) problems.push(`crc of ${f.offset}`);
    }
    if (!Number.isSafeInteger(f.epoch) || !Number.isSafeInteger(f.position) || f.position < 1) {
      problems.push(`epoch/position of ${f.offset}`);
    }
    at += f.frameBytes;
  }
  if (scan.validEnd !== at) problems.push(`validEnd ${scan.validEnd}, frames end at ${at}`);
  expect(problems).toEqual([]);
}

describe('encodeFrame / scanSegment', () => {
  it('round-trips several frames with their epoch, position, offset and payload', () => {
    const rand = mulberry32(1);
    const big = Number.MAX_SAFE_INTEGER;
    const payloads = [randomBytes(rand, 1), randomBytes(rand, 1000), randomBytes(rand, 37)];
    const meta = [
      [1, 1],
      [7, 2],
      [big, big],
    ] as const;
    const bytes = concat(...payloads.map((p, i) => encodeFrame(meta[i]![0], meta[i]![1], p)));
    const scan = scanSegment(bytes);
    expect(scan.status).toBe('clean');
    expect(scan.validEnd).toBe(bytes.length);
    expect(scan.frames.map((f) => [f.epoch, f.position, f.offset, f.frameBytes])).toEqual([
      [1, 1, 0, 29],
      [7, 2, 29, 1028],
      [big, big, 1057, 65],
    ]);
    for (const [i, f] of scan.frames.entries()) expect(f.payload).toEqual(payloads[i]);
    checkInvariants(scan, bytes);
  });

  it('writes the header fields little-endian at their documented offsets', () => {
    const frame = encodeFrame(0x0102_0304_0506, 0x0a0b_0c0d, Uint8Array.of(0xaa, 0xbb));
    const v = new DataView(frame.buffer);
    expect([...frame.subarray(0, 4)]).toEqual([0x4d, 0x57, 0x41, 0x4c]); // 'MWAL'
    expect(v.getUint32(4, true)).toBe(2);
    expect(v.getUint32(8, true)).toBe(crc32c(frame.subarray(12)));
    expect(v.getBigUint64(12, true)).toBe(0x0102_0304_0506n);
    expect(v.getBigUint64(20, true)).toBe(0x0a0b_0c0dn);
    expect([...frame.subarray(28)]).toEqual([0xaa, 0xbb]);
  });

  it('encodes the worked example of docs/format.md byte for byte', () => {
    // One row {id: 1n, _tombstone: false} in the internal schema of a store keyed on `id`.
    const fields = [new Field('id', new Int64(), false), new Field('_tombstone', new Bool(), false)];
    const id = makeData({ type: new Int64(), length: 1, nullCount: 0, data: BigInt64Array.of(1n) });
    const tombstone = makeData({ type: new Bool(), length: 1, nullCount: 0, data: Uint8Array.of(0) });
    const rows = makeData({ type: new Struct(fields), length: 1, nullCount: 0, children: [id, tombstone] });
    const payload = tableToIPC(new Table([new RecordBatch(new Schema(fields), rows)]), 'stream');
    const frame = encodeFrame(1, 1, payload);
    const hex = (b: Uint8Array): string => [...b].map((x) => x.toString(16).padStart(2, '0')).join(' ');
    expect(frame.length).toBe(428);
    expect(hex(frame.subarray(0, 16))).toBe('4d 57 41 4c 90 01 00 00 2f af e4 35 01 00 00 00');
    expect(hex(frame.subarray(16, 32))).toBe('00 00 00 00 01 00 00 00 00 00 00 00 ff ff ff ff');
    expect(hex(frame.subarray(0x194, 0x1ac))).toBe('01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ff ff ff ff 00 00 00 00');
    const [decoded] = scanSegment(frame).frames;
    expect(
      tableFromIPC(decoded!.payload)
        .toArray()
        .map((r) => r.toJSON()),
    ).toEqual([{ id: 1n, _tombstone: false }]);
  });

  it('rejects an empty payload and out-of-range epoch or position with InvalidArgument', () => {
    const p = Uint8Array.of(1);
    const bad: [number, number, Uint8Array][] = [
      [1, 1, new Uint8Array(0)],
      [-1, 1, p],
      [1.5, 1, p],
      [Number.MAX_SAFE_INTEGER + 1, 1, p],
      [1, 0, p],
      [1, Number.NaN, p],
    ];
    for (const [epoch, position, payload] of bad) {
      expect(() => encodeFrame(epoch, position, payload)).toThrowError(
        expect.objectContaining({ name: 'MemWalError', code: 'InvalidArgument' }) as MemWalError,
      );
    }
    // The size cap is checked before anything is allocated (a view claiming a huge length).
    const huge = { length: FRAME_MAX_PAYLOAD_BYTES + 1 } as Uint8Array;
    expect(() => encodeFrame(1, 1, huge)).toThrow(/payload must be/);
  });

  it('reports offsets including baseOffset when scanning from the middle of a segment', () => {
    const { bytes, ends } = segment(mulberry32(2), 3);
    const scan = scanSegment(bytes.subarray(ends[0]!), ends[0]!);
    expect(scan.status).toBe('clean');
    expect(scan.frames.map((f) => f.offset)).toEqual([ends[0], ends[1]]);
    expect(scan.frames.map((f) => f.position)).toEqual([2, 3]);
    expect(scan.validEnd).toBe(bytes.length);
  });

  it('classifies an empty input and trailing zeros as clean', () => {
    expect(scanSegment(new Uint8Array(0))).toEqual({ frames: [], status: 'clean', validEnd: 0 });
    expect(scanSegment(new Uint8Array(100)).status).toBe('clean');
    const { bytes } = segment(mulberry32(3), 2);
    for (const zeros of [1, 27, 28, 4096]) {
      const scan = scanSegment(concat(bytes, new Uint8Array(zeros)));
      expect(scan.status).toBe('clean');
      expect(scan.frames).toHaveLength(2);
      expect(scan.validEnd).toBe(bytes.length);
    }
  });

  it('keeps exactly the complete frames at every truncation point: clean at boundaries, torn elsewhere', () => {
    const { bytes, ends } = segment(mulberry32(4), 3);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const scan = scanSegment(bytes.subarray(0, cut));
      const complete = ends.filter((e) => e <= cut).length;
      expect(scan.frames).toHaveLength(complete);
      expect(scan.validEnd).toBe(complete === 0 ? 0 : ends[complete - 1]);
      expect(scan.status).toBe(cut === scan.validEnd ? 'clean' : 'torn');
      // A torn append into a zero-filled (preallocated) region is torn as well.
      const padded = concat(bytes.subarray(0, cut), new Uint8Array(bytes.length - cut + 64));
      const paddedScan = scanSegment(padded);
      expect(paddedScan.frames).toHaveLength(complete);
      expect(paddedScan.status).toBe(cut === scan.validEnd ? 'clean' : 'torn');
    }
  });

  it('classifies a bit flip in a middle frame as corrupt and keeps the frames before it', () => {
    const { bytes, ends } = segment(mulberry32(5), 3);
    const flipped = bytes.slice();
    flipped[ends[0]! + FRAME_HEADER_BYTES] = flipped[ends[0]! + FRAME_HEADER_BYTES]! ^ 0x10;
    const scan = scanSegment(flipped);
    expect(scan.status).toBe('corrupt');
    expect(scan.frames).toHaveLength(1);
    expect(scan.validEnd).toBe(ends[0]);
    expect(scan.reason).toMatch(/checksum mismatch at offset \d+/);
  });

  it('classifies a bit flip in the last frame as torn only when nothing but zeros follows', () => {
    const { bytes, ends } = segment(mulberry32(6), 3);
    const flipped = bytes.slice();
    flipped[bytes.length - 1] = flipped[bytes.length - 1]! ^ 0x01;
    expect(scanSegment(flipped)).toMatchObject({ status: 'torn', validEnd: ends[1] });
    expect(scanSegment(concat(flipped, new Uint8Array(50)))).toMatchObject({ status: 'torn', validEnd: ends[1] });
    expect(scanSegment(concat(flipped, new Uint8Array(50), Uint8Array.of(7)))).toMatchObject({
      status: 'corrupt',
      validEnd: ends[1],
    });
  });

  it('classifies a bad magic, a zero or oversized length, and an unsafe epoch or position as corrupt', () => {
    const frame = encodeFrame(1, 1, Uint8Array.of(1, 2, 3));
    const edit = (f: (v: DataView) => void, recrc = false): Uint8Array => {
      const b = frame.slice();
      const v = new DataView(b.buffer);
      f(v);
      if (recrc) v.setUint32(FRAME_CRC_OFFSET, crc32c(b.subarray(FRAME_EPOCH_OFFSET)), true);
      return b;
    };
    const cases: [string, Uint8Array][] = [
      ['bad frame magic', edit((v) => v.setUint32(0, 0x4c41574e, true))],
      ['bad frame magic', edit((v) => v.setUint32(0, 0, true))], // zero magic, but not all zero
      ['bad frame length 0', edit((v) => v.setUint32(4, 0, true))],
      [`bad frame length ${FRAME_MAX_PAYLOAD_BYTES + 1}`, edit((v) => v.setUint32(4, FRAME_MAX_PAYLOAD_BYTES + 1, true))],
      ['epoch is not a safe integer', edit((v) => v.setUint32(16, 0x200000, true), true)],
      ['position is not a positive safe integer', edit((v) => v.setUint32(24, 0xffffffff, true), true)],
      ['position is not a positive safe integer', edit((v) => v.setUint32(20, 0, true), true)],
    ];
    for (const [reason, bytes] of cases) {
      const scan = scanSegment(concat(encodeFrame(1, 1, Uint8Array.of(9)), bytes));
      expect(scan.status).toBe('corrupt');
      expect(scan.frames).toHaveLength(1);
      expect(scan.validEnd).toBe(FRAME_HEADER_BYTES + 1);
      expect(scan.reason).toContain(reason);
    }
  });

  it('classifies a bad header followed only by zeros as torn (a header torn into a zero-filled extension)', () => {
    const good = encodeFrame(1, 1, Uint8Array.of(9));
    const partialHeader = concat(good, Uint8Array.of(0x4d, 0x57), new Uint8Array(60)); // 'MW' then zeros
    expect(scanSegment(partialHeader)).toMatchObject({ status: 'torn', validEnd: good.length, frames: [{ position: 1 }] });
    const zeroLength = concat(good, encodeFrame(1, 2, Uint8Array.of(5)).subarray(0, 4), new Uint8Array(40));
    expect(scanSegment(zeroLength)).toMatchObject({ status: 'torn', validEnd: good.length });
    // The same bad header with data after it is corrupt.
    expect(scanSegment(concat(partialHeader, Uint8Array.of(1))).status).toBe('corrupt');
  });

  it('classifies fewer than 28 non-zero trailing bytes as torn and a frame past the end as torn', () => {
    expect(scanSegment(Uint8Array.of(0, 0, 1)).status).toBe('torn');
    const frame = encodeFrame(1, 1, new Uint8Array(10).fill(5));
    expect(scanSegment(frame.subarray(0, frame.length - 1))).toMatchObject({ status: 'torn', validEnd: 0 });
  });
});

describe('encodeFrameHeaderFromCrc', () => {
  it("builds encodeFrameHeader's bytes from the payload's length and CRC-32C, for any length", () => {
    const rand = mulberry32(23);
    for (const n of [1, 3, 7, 8, 63, 64, 65, 1000, 4096, 70_001]) {
      const payload = randomBytes(rand, n);
      for (const [epoch, position] of [
        [0, 1],
        [7, 123_456],
        [2 ** 40 + 3, 2 ** 45 + 9],
      ] as const) {
        const fromCrc = encodeFrameHeaderFromCrc(epoch, position, n, crc32c(payload));
        expect(fromCrc, `n=${n}`).toEqual(encodeFrameHeader(epoch, position, payload));
        expect(Buffer.from(joinFrame(fromCrc, payload)).equals(encodeFrame(epoch, position, payload))).toBe(true);
      }
    }
  });

  it("trusts the CRC it is given: a frame built from another payload's CRC is rejected at replay", () => {
    const rand = mulberry32(5);
    const good = encodeFrame(1, 1, randomBytes(rand, 300));
    const payload = randomBytes(rand, 500);
    const other = payload.slice();
    other[499] = other[499]! ^ 1;
    const bad = joinFrame(encodeFrameHeaderFromCrc(1, 2, payload.length, crc32c(other)), payload);
    const scan = scanSegment(concat(good, bad));
    expect(scan.frames.map((f) => f.position)).toEqual([1]);
    expect(scan.status).toBe('torn');
  });

  it('rejects a CRC that is not an unsigned 32-bit integer and the lengths encodeFrameHeader rejects', () => {
    for (const crc of [-1, 2 ** 32, 1.5, Number.NaN])
      expect(() => encodeFrameHeaderFromCrc(1, 1, 10, crc)).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    for (const n of [0, FRAME_MAX_PAYLOAD_BYTES + 1, 2.5])
      expect(() => encodeFrameHeaderFromCrc(1, 1, n, 0)).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
  });
});

describe('scanSegment fuzz (seeded)', () => {
  const statusesSeen = new Set<string>();

  it('never throws on random bytes, with or without embedded valid frames', () => {
    const rand = mulberry32(0xdec0de);
    for (let i = 0; i < 500; i++) {
      const noise = randomBytes(rand, int(rand, 200));
      const bytes = rand() < 0.5 ? noise : concat(segment(rand, int(rand, 3)).bytes, noise);
      const base = int(rand, 1000);
      const scan = scanSegment(bytes, base);
      checkInvariants(scan, bytes, base);
      statusesSeen.add(scan.status);
    }
  });

  it('never reports corrupt for a truncation of a valid segment, and keeps its complete frames', () => {
    const rand = mulberry32(0x7a11);
    for (let i = 0; i < 500; i++) {
      const { bytes, ends, payloads } = segment(rand, 1 + int(rand, 5));
      const cut = int(rand, bytes.length + 1);
      const zeros = rand() < 0.3 ? int(rand, 100) : 0;
      const input = concat(bytes.subarray(0, cut), new Uint8Array(zeros));
      const scan = scanSegment(input);
      checkInvariants(scan, input);
      expect(scan.status).not.toBe('corrupt');
      expect(scan.frames).toHaveLength(ends.filter((e) => e <= cut).length);
      for (const [k, f] of scan.frames.entries()) expect(f.payload).toEqual(payloads[k]);
      statusesSeen.add(scan.status);
    }
  });

  it('detects every single bit flip of a valid segment and keeps the frames before it', () => {
    const rand = mulberry32(0xb17f);
    for (let i = 0; i < 500; i++) {
      const { bytes, ends } = segment(rand, 1 + int(rand, 5));
      const at = int(rand, bytes.length);
      const input = bytes.slice();
      input[at] = input[at]! ^ (1 << int(rand, 8));
      const scan = scanSegment(input);
      checkInvariants(scan, input);
      expect(scan.status).not.toBe('clean');
      expect(scan.frames).toHaveLength(ends.filter((e) => e <= at).length);
      statusesSeen.add(scan.status);
    }
  });

  it('keeps every frame of a valid segment followed by random garbage', () => {
    const rand = mulberry32(0x6a7b);
    for (let i = 0; i < 500; i++) {
      const { bytes, ends } = segment(rand, int(rand, 4));
      const garbage = randomBytes(rand, int(rand, 80));
      const input = concat(bytes, garbage);
      const scan = scanSegment(input);
      checkInvariants(scan, input);
      expect(scan.frames).toHaveLength(ends.length);
      if (garbage.every((b) => b === 0)) expect(scan.status).toBe('clean');
      else expect(scan.status).not.toBe('clean');
      statusesSeen.add(scan.status);
    }
    expect([...statusesSeen].sort()).toEqual(['clean', 'corrupt', 'torn']); // the fuzz reached every class
  });
});
