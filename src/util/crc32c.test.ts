// CRC-32C: known vectors, chunked continuation, agreement with a bitwise reference, on both paths
// (the WebAssembly module and the JavaScript fallback).

import { afterEach, describe, expect, it, vi } from 'vitest';
import { crc32c, crc32cCombine, crc32cJs, crc32cPath } from './crc32c.js';

const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Bit-at-a-time reference, obviously correct and slow. */
function crcReference(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let i = 0; i < 8; i++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

/** {@link crcReference} of `bytes.subarray(0, n)` for each `n` of `lengths`, in one pass. */
function referencePrefixes(bytes: Uint8Array, lengths: number[]): Map<number, number> {
  const wanted = new Set(lengths);
  const out = new Map<number, number>();
  let c = 0xffffffff;
  for (let n = 0; n <= bytes.length; n++) {
    if (wanted.has(n)) out.set(n, ~c >>> 0);
    if (n === bytes.length) break;
    c ^= bytes[n]!;
    for (let i = 0; i < 8; i++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return out;
}

function pseudoRandomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe('crc32c', () => {
  it('matches the published check value and RFC 3720 vectors', () => {
    expect(crc32c(ascii('123456789'))).toBe(0xe3069283);
    expect(crc32cJs(ascii('123456789'))).toBe(0xe3069283);
    const repeated = new Uint8Array(9 * 1000).map((_, i) => ascii('123456789')[i % 9]!);
    expect(crc32c(repeated)).toBe(crcReference(repeated)); // the module's path (128 bytes and more)
    expect(crc32c(new Uint8Array(0))).toBe(0);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // 32 zero bytes
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43); // 32 0xFF bytes
    const inc = Uint8Array.from({ length: 32 }, (_, i) => i);
    expect(crc32c(inc)).toBe(0x46dd794e); // 0x00..0x1F
    const dec = Uint8Array.from({ length: 32 }, (_, i) => 31 - i);
    expect(crc32c(dec)).toBe(0x113fdb5c); // 0x1F..0x00
  });

  it('agrees with a bitwise reference for every length 0..100 and every alignment', () => {
    const data = pseudoRandomBytes(120, 7);
    for (let start = 0; start < 8; start++) {
      for (let len = 0; start + len <= 108; len++) {
        const view = data.subarray(start, start + len);
        expect(crc32c(view)).toBe(crcReference(view));
      }
    }
  });

  it('continues a running checksum across chunks at any split point', () => {
    const data = pseudoRandomBytes(77, 99);
    const whole = crc32c(data);
    for (let cut = 0; cut <= data.length; cut++) {
      expect(crc32c(data.subarray(cut), crc32c(data.subarray(0, cut)))).toBe(whole);
    }
    // three chunks
    const a = data.subarray(0, 10);
    const b = data.subarray(10, 50);
    const c = data.subarray(50);
    expect(crc32c(c, crc32c(b, crc32c(a)))).toBe(whole);
  });

  it('hashes MB-sized input fast (throughput logged)', () => {
    const data = pseudoRandomBytes(8 << 20, 3);
    let crc = 0;
    let bestMs = Infinity;
    for (let rep = 0; rep < 5; rep++) {
      const t0 = performance.now();
      crc = crc32c(data);
      bestMs = Math.min(bestMs, performance.now() - t0);
    }
    console.log(
      `crc32c: 8 MiB in ${bestMs.toFixed(1)} ms (best of 5, first runs warm the JIT) = ${((8 / bestMs) * 1000).toFixed(0)} MiB/s`,
    );
    expect(crc).toBe(crc32c(data.subarray(4 << 20), crc32c(data.subarray(0, 4 << 20))));
  });

  it('combines the checksums of two pieces into the checksum of their concatenation', () => {
    const all = pseudoRandomBytes(70_000, 7);
    for (const cut of [0, 1, 3, 8, 63, 64, 1000, 65_536, 69_999, 70_000]) {
      const a = all.subarray(0, cut);
      const b = all.subarray(cut);
      expect(crc32cCombine(crc32c(a), crc32c(b), b.length)).toBe(crc32c(all));
    }
    expect(crc32cCombine(crc32c(ascii('12345')), crc32c(ascii('6789')), 4)).toBe(0xe3069283);
  });

  it('combines across a second piece of 512 MiB and more as across shorter pieces one after another', () => {
    // No bytes needed: combining with a zero checksum shifts crcA by lengthB bytes, and shifting by
    // n then by m is shifting by n + m. Steps of 2^28 bytes stay within what the test above checks.
    const crcA = crc32c(ascii('123456789'));
    for (const length of [2 ** 29, 2 ** 29 + 3, 2 ** 30, 3 * 2 ** 29 + 5, 2 ** 32 + 7, 2 ** 36]) {
      let stepped = crcA;
      for (let left = length; left > 0; left -= Math.min(left, 2 ** 28)) stepped = crc32cCombine(stepped, 0, Math.min(left, 2 ** 28));
      expect(crc32cCombine(crcA, 0, length)).toBe(stepped);
      expect(crc32cCombine(crcA, 0x1234abcd, length)).toBe((stepped ^ 0x1234abcd) >>> 0);
    }
  });

  it('takes the WebAssembly path in Node', () => {
    crc32c(new Uint8Array(WASM_MIN));
    expect(crc32cPath()).toBe('wasm');
  });

  it('agrees with the reference for random lengths, offsets and running seeds, on both paths', () => {
    const shared = pseudoRandomBytes(300_000, 11);
    let x = 12345;
    const next = (m: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return Math.floor((x / 2 ** 32) * m);
    };
    for (let round = 0; round < 120; round++) {
      const length = round < 60 ? next(1000) : next(100_001);
      const start = next(shared.length - length + 1);
      const a = shared.subarray(start, start + length);
      const cut = next(length + 1);
      const expected = crcReference(a);
      expect(crc32c(a)).toBe(expected);
      expect(crc32cJs(a)).toBe(expected);
      // seeds continue: crc32c(b, crc32c(a)) === crc32c(a ‖ b), with the split anywhere
      expect(crc32c(a.subarray(cut), crc32c(a.subarray(0, cut)))).toBe(expected);
      expect(crc32cJs(a.subarray(cut), crc32cJs(a.subarray(0, cut)))).toBe(expected);
      expect(crc32c(a.subarray(cut), crc32cJs(a.subarray(0, cut)))).toBe(expected);
    }
  });

  it('agrees with the reference at every chunk, step and threshold boundary', () => {
    const shared = pseudoRandomBytes(3 * CHUNK + 64, 5);
    const lengths = [
      ...Array.from({ length: 40 }, (_, i) => WASM_MIN - 20 + i), // the JavaScript/module threshold
      ...[CHUNK, 2 * CHUNK, 3 * CHUNK].flatMap((c) => Array.from({ length: 35 }, (_, i) => c - 17 + i)), // 64 KiB copies
    ];
    for (const start of [0, 1, 2, 3, 4, 7, 8, 15]) {
      const expectedByLength = referencePrefixes(shared.subarray(start), lengths);
      for (const length of lengths) {
        const a = shared.subarray(start, start + length);
        const expected = expectedByLength.get(length);
        expect(crc32c(a), `length ${length} at ${start}`).toBe(expected);
        expect(crc32cJs(a), `length ${length} at ${start} (js)`).toBe(expected);
        expect(crc32c(a, 0xdeadbeef)).toBe(crc32cJs(a, 0xdeadbeef));
      }
    }
  });
});

/** The module's threshold and chunk, as in crc32c.ts. */
const WASM_MIN = 128;
const CHUNK = 64 * 1024;

describe('crc32c without WebAssembly (Cloudflare Workers, a strict CSP)', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.resetModules();
  });

  it('falls back to JavaScript with the same results when WebAssembly is absent', async () => {
    vi.stubGlobal('WebAssembly', undefined);
    vi.resetModules();
    const fresh = await import('./crc32c.js');
    const data = pseudoRandomBytes(200_000, 9);
    expect(fresh.crc32c(data)).toBe(crcReference(data));
    expect(fresh.crc32cPath()).toBe('js');
  });

  it('falls back to JavaScript when compiling from bytes is refused', async () => {
    const refusing = {
      ...WebAssembly,
      // biome-ignore lint/correctness/noComponentHookFactories: a WebAssembly.Module stand-in, not a React component
      Module: function Module() {
        throw new WebAssembly.CompileError('Wasm code generation disallowed by embedder');
      },
    };
    vi.stubGlobal('WebAssembly', refusing);
    vi.resetModules();
    const fresh = await import('./crc32c.js');
    const data = pseudoRandomBytes(70_000, 10);
    expect(fresh.crc32c(data, 7)).toBe(crc32cJs(data, 7));
    expect(fresh.crc32cPath()).toBe('js');
  });
});
