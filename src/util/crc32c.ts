// CRC-32C (Castagnoli), the checksum of WAL frames and table files, computed slicing-by-8.
// Runtime-agnostic.

/** Reflected Castagnoli polynomial. */
const POLY = 0x82f63b78;

/**
 * Slicing-by-8 tables: `Tk[b]` is the CRC contribution of byte `b` followed by `k` zero bytes.
 * `T0` is the classic byte-at-a-time table.
 */
const [T0, T1, T2, T3, T4, T5, T6, T7] = buildTables();

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function buildTables(): Uint32Array[] {
  const t = new Uint32Array(8 * 256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let i = 0; i < 8; i++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[b] = c;
  }
  for (let k = 1; k < 8; k++) {
    for (let b = 0; b < 256; b++) {
      const prev = t[(k - 1) * 256 + b]!;
      t[k * 256 + b] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  return Array.from({ length: 8 }, (_, k) => t.subarray(k * 256, (k + 1) * 256));
}

/**
 * CRC-32C of `bytes` (standard init and final xor, so `crc32c("123456789") === 0xE3069283`),
 * as an unsigned 32-bit number.
 *
 * `seed` continues a running checksum: `crc32c(b, crc32c(a)) === crc32c(concat(a, b))`; the
 * default 0 starts a new one. Reads aligned 32-bit words on little-endian hosts.
 * Never throws; runs in every runtime.
 */
export function crc32c(bytes: Uint8Array, seed = 0): number {
  const t0 = T0!,
    t1 = T1!,
    t2 = T2!,
    t3 = T3!,
    t4 = T4!,
    t5 = T5!,
    t6 = T6!,
    t7 = T7!;
  let crc = ~seed;
  const n = bytes.length;
  let i = 0;
  if (LITTLE_ENDIAN && n >= 64) {
    // Byte-wise up to a 4-byte boundary, then two 32-bit words per step (2-3x the byte path).
    const lead = (4 - (bytes.byteOffset & 3)) & 3;
    for (; i < lead; i++) crc = (crc >>> 8) ^ t0[(crc ^ bytes[i]!) & 0xff]!;
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + i, (n - i) >>> 2);
    const pairs = words.length >>> 1;
    for (let w = 0; w < pairs; w++) {
      const lo = crc ^ words[2 * w]!;
      const hi = words[2 * w + 1]!;
      crc =
        t7[lo & 0xff]! ^
        t6[(lo >>> 8) & 0xff]! ^
        t5[(lo >>> 16) & 0xff]! ^
        t4[lo >>> 24]! ^
        t3[hi & 0xff]! ^
        t2[(hi >>> 8) & 0xff]! ^
        t1[(hi >>> 16) & 0xff]! ^
        t0[hi >>> 24]!;
    }
    i += pairs * 8;
  }
  // Eight bytes per step, read byte by byte so neither alignment nor endianness matters.
  for (; i + 8 <= n; i += 8) {
    const lo = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[bytes[i + 4]!]! ^
      t2[bytes[i + 5]!]! ^
      t1[bytes[i + 6]!]! ^
      t0[bytes[i + 7]!]!;
  }
  for (; i < n; i++) crc = (crc >>> 8) ^ t0[(crc ^ bytes[i]!) & 0xff]!;
  return ~crc >>> 0;
}

/** `a * b` modulo the polynomial, both reflected (zlib's `multmodp`). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/**
 * `X2N[k]` = x^(2^k) modulo the polynomial (reflected), k < 31. For CRC-32C, x^(2^31) is x again
 * (zlib's CRC-32 repeats after 32 squarings, this one after 31), so x^(2^k) is `X2N[k % 31]`.
 */
const X2N = (() => {
  const t = new Uint32Array(31);
  let p = 0x40000000; // x^1
  t[0] = p;
  for (let k = 1; k < 31; k++) t[k] = p = multModP(p, p);
  return t;
})();

/**
 * CRC-32C of the concatenation `a ‖ b` from `crcA` = CRC-32C of `a`, `crcB` = CRC-32C of `b` and
 * `lengthB` = `b`'s length in bytes (zlib's `crc32_combine`): about 2 µs whatever the lengths, so
 * checksums of pieces combine into the whole's without a pass over its bytes. Never throws.
 */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  // crcA times x^(8 * lengthB): square-and-multiply over the bits of lengthB (k starts at 3: 8 = 2^3).
  let p = 0x80000000; // x^0
  let k = 3;
  for (let n = lengthB; n > 0; n = Math.floor(n / 2), k++) if (n % 2) p = multModP(X2N[k % 31]!, p);
  return (multModP(p, crcA) ^ crcB) >>> 0;
}
