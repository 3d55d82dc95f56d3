// analyzeWal at the byte level (LevelDB's log_test.cc): segments built frame by frame, then cut,
// zero-filled, superseded or damaged, and what open must conclude from each.

import { Field, Int64, Schema, Table, tableToIPC, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { concatBytes } from '../util/bytes.js';
import { encodeFrame } from '../format/wal/codec.js';
import { analyzeWal, type ReadSegment, validatePayloads } from './recovery.js';

const schema = new Schema([new Field('id', new Int64(), true)]);
const payload = (id: number): Uint8Array => tableToIPC(new Table({ id: vectorFromArray([BigInt(id)], new Int64()) }), 'stream');

/** A segment `{epoch}-{first}` holding frames for positions first..first+n-1. */
function segment(epoch: number, first: number, n: number): ReadSegment {
  const frames = Array.from({ length: n }, (_, i) => encodeFrame(epoch, first + i, payload(first + i)));
  return { name: `${epoch}-${first}`, epoch, firstPosition: first, bytes: concatBytes(frames) };
}

const keepAll = { mustKeepAfter: 0, durableUpTo: 0 };
const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

describe('analyzeWal', () => {
  it('reads contiguous entries across segments and epochs', () => {
    const a = analyzeWal([segment(1, 1, 3), segment(1, 4, 2), segment(2, 6, 1)], keepAll);
    expect(a.entries.map((e) => e.position)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(a.torn).toEqual([]);
    expect(a.lastPosition).toBe(6);
    expect(a.segments.map((s) => [s.name, s.lastPosition])).toEqual([
      ['1-1', 3],
      ['1-4', 5],
      ['2-6', 6],
    ]);
  });

  it('a cut inside the last frame of the newest segment is a torn tail above positionHint', () => {
    const s = segment(1, 1, 3);
    const cut = { ...s, bytes: s.bytes.subarray(0, s.bytes.length - 5) };
    const a = analyzeWal([cut], { mustKeepAfter: 0, durableUpTo: 2 });
    expect(a.entries.map((e) => e.position)).toEqual([1, 2]);
    expect(a.torn).toHaveLength(1);
    expect(a.torn[0]!.position).toBe(3);
  });

  it('the same cut at or below positionHint is Corruption: that entry was recorded as durable', () => {
    const s = segment(1, 1, 3);
    const cut = { ...s, bytes: s.bytes.subarray(0, s.bytes.length - 5) };
    expect(codeOf(() => analyzeWal([cut], { mustKeepAfter: 0, durableUpTo: 3 }))).toBe('Corruption');
  });

  it('a log that ends below positionHint is Corruption, even when the cut falls between frames', () => {
    const s = segment(1, 1, 4);
    const twoFrames = segment(1, 1, 2).bytes.length;
    const cut = { ...s, bytes: s.bytes.subarray(0, twoFrames) };
    expect(codeOf(() => analyzeWal([cut], { mustKeepAfter: 3, durableUpTo: 4 }))).toBe('Corruption');
  });

  it('an empty log below positionHint is fine when everything is covered by table files', () => {
    const a = analyzeWal([], { mustKeepAfter: 7, durableUpTo: 7 });
    expect(a.lastPosition).toBe(0);
  });

  it('a zero-filled extension after the last frame is clean; garbage after a bad frame is Corruption', () => {
    const s = segment(1, 1, 2);
    const zeros = { ...s, bytes: concatBytes([s.bytes, new Uint8Array(64)]) };
    expect(analyzeWal([zeros], keepAll).torn).toEqual([]);
    const damaged = s.bytes.slice();
    damaged[40] = (damaged[40]! + 1) & 0xff; // inside frame 1's payload
    expect(codeOf(() => analyzeWal([{ ...s, bytes: damaged }], keepAll))).toBe('Corruption');
  });

  it('a torn frame in a segment that is not the last of its epoch is Corruption', () => {
    const s = segment(1, 1, 2);
    const cut = { ...s, bytes: s.bytes.subarray(0, s.bytes.length - 3) };
    expect(codeOf(() => analyzeWal([cut, segment(1, 3, 1)], keepAll))).toBe('Corruption');
  });

  it("an older epoch's entries at or beyond a newer epoch's first position are superseded, torn or not", () => {
    const old = segment(1, 1, 4);
    const tornOld = { ...old, bytes: old.bytes.subarray(0, old.bytes.length - 7) };
    const a = analyzeWal([tornOld, segment(2, 3, 2)], keepAll);
    expect(a.entries.map((e) => [e.position, e.epoch])).toEqual([
      [1, 1],
      [2, 1],
      [3, 2],
      [4, 2],
    ]);
    expect(a.torn).toEqual([]);
  });

  it('a frame whose position does not follow its segment is Corruption', () => {
    const bad: ReadSegment = {
      name: '1-1',
      epoch: 1,
      firstPosition: 1,
      bytes: concatBytes([encodeFrame(1, 1, payload(1)), encodeFrame(1, 3, payload(3))]),
    };
    expect(codeOf(() => analyzeWal([bad], keepAll))).toBe('Corruption');
  });

  it('a gap after the replay cursor is Corruption', () => {
    expect(codeOf(() => analyzeWal([segment(1, 5, 2)], { mustKeepAfter: 2, durableUpTo: 0 }))).toBe('Corruption');
    expect(analyzeWal([segment(1, 5, 2)], { mustKeepAfter: 4, durableUpTo: 0 }).entries).toHaveLength(2);
  });

  it('validatePayloads rejects a payload that is not Arrow, or not in the store schema, naming its position', () => {
    const a = analyzeWal(
      [
        {
          name: '1-1',
          epoch: 1,
          firstPosition: 1,
          bytes: concatBytes([encodeFrame(1, 1, payload(1)), encodeFrame(1, 2, new Uint8Array([9, 9, 9]))]),
        },
      ],
      keepAll,
    );
    expect(() => validatePayloads(a.entries, 0, schema)).toThrow(/entry 2/);
    expect(() => validatePayloads(a.entries, 2, schema)).not.toThrow(); // covered by table files: not read
    const other = new Schema([new Field('id', new Int64(), false)]);
    expect(() => validatePayloads(a.entries.slice(0, 1), 0, other)).toThrow(/schema is none the store recorded/);
  });
});
