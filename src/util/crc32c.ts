// CRC-32C (Castagnoli), the checksum of WAL frames and table files: slicing-by-16 in a small
// WebAssembly module where the runtime compiles one, else the same in JavaScript (docs/impl.md,
// "CRC-32C"). Runtime-agnostic.

import { CRC32C_WASM_BASE64 } from './crc32c-wasm.js';

/** Reflected Castagnoli polynomial. */
const POLY = 0x82f63b78;

/**
 * Slicing-by-16 tables, 256 entries each: entry `k * 256 + b` is the CRC contribution of byte `b`
 * followed by `k` zero bytes; table 0 is the classic byte-at-a-time table.
 */
const TABLES = buildTables();
const [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15] = Array.from({ length: 16 }, (_, k) =>
  TABLES.subarray(k * 256, (k + 1) * 256),
);

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function buildTables(): Uint32Array {
  const t = new Uint32Array(16 * 256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let i = 0; i < 8; i++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[b] = c;
  }
  for (let k = 1; k < 16; k++) {
    for (let b = 0; b < 256; b++) {
      const prev = t[(k - 1) * 256 + b]!;
      t[k * 256 + b] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  return t;
}

/** Inputs shorter than this take the JavaScript path (the module's call and copy cost more). */
const WASM_MIN_BYTES = 128;
/** Where the module's memory holds the bytes of one call: after the 16 KiB of tables. */
const WASM_CHUNK_AT = 16 * 1024;
/** Bytes copied into the module's memory per call. */
const WASM_CHUNK_BYTES = 64 * 1024;

interface WasmCrc {
  /** The module's memory: the tables, then the chunk. */
  memory: Uint8Array;
  /** `crc(at, length, register) -> register` over `memory[at, at + length)`. */
  crc: (at: number, length: number, register: number) => number;
}

/** The instantiated module; `null` where this runtime cannot compile it; `undefined` until tried. */
let wasm: WasmCrc | null | undefined;

/**
 * Compiles and instantiates the module, synchronously, on first use. Returns `null` where
 * WebAssembly or `atob` is missing or compiling from bytes is refused (Cloudflare Workers, a page
 * whose CSP lacks `'wasm-unsafe-eval'`): the JavaScript path then serves every call.
 */
function loadWasm(): WasmCrc | null {
  try {
    if (typeof WebAssembly !== 'object' || typeof atob !== 'function') return null;
    const bytes = Uint8Array.from(atob(CRC32C_WASM_BASE64), (c) => c.charCodeAt(0));
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
    const memory = new Uint8Array((exports.m as WebAssembly.Memory).buffer);
    const view = new DataView(memory.buffer);
    for (let i = 0; i < TABLES.length; i++) view.setUint32(4 * i, TABLES[i]!, true);
    return { memory, crc: exports.crc as WasmCrc['crc'] };
  } catch {
    return null;
  }
}

/**
 * CRC-32C of `bytes` (standard init and final xor, so `crc32c("123456789") === 0xE3069283`),
 * as an unsigned 32-bit number.
 *
 * `seed` continues a running checksum: `crc32c(b, crc32c(a)) === crc32c(concat(a, b))`; the
 * default 0 starts a new one. Inputs of 128 bytes or more go through the WebAssembly module, 64 KiB
 * copied into its memory per call, where the runtime compiles it (the first such call tries);
 * the JavaScript path gives the same result. Never throws; runs in every runtime.
 */
export function crc32c(bytes: Uint8Array, seed = 0): number {
  const n = bytes.length;
  if (n >= WASM_MIN_BYTES) {
    if (wasm === undefined) wasm = loadWasm();
    if (wasm !== null) {
      const { memory, crc } = wasm;
      let register = ~seed;
      for (let at = 0; at < n; at += WASM_CHUNK_BYTES) {
        const chunk = bytes.subarray(at, at + WASM_CHUNK_BYTES);
        memory.set(chunk, WASM_CHUNK_AT);
        register = crc(WASM_CHUNK_AT, chunk.length, register);
      }
      return ~register >>> 0;
    }
  }
  return crc32cJs(bytes, seed);
}

/**
 * Which path {@link crc32c} takes for inputs of 128 bytes and more in this runtime: `'wasm'` where
 * the module compiles, `'js'` elsewhere (tries the module on first call). Never throws.
 */
export function crc32cPath(): 'wasm' | 'js' {
  if (wasm === undefined) wasm = loadWasm();
  return wasm === null ? 'js' : 'wasm';
}

/**
 * {@link crc32c} in JavaScript, slicing-by-16: reads aligned 32-bit words on little-endian hosts,
 * bytes elsewhere. Exported for tests, which compare it with the module; never throws.
 */
export function crc32cJs(bytes: Uint8Array, seed = 0): number {
  const t0 = T0!,
    t1 = T1!,
    t2 = T2!,
    t3 = T3!,
    t4 = T4!,
    t5 = T5!,
    t6 = T6!,
    t7 = T7!,
    t8 = T8!,
    t9 = T9!,
    t10 = T10!,
    t11 = T11!,
    t12 = T12!,
    t13 = T13!,
    t14 = T14!,
    t15 = T15!;
  let crc = ~seed;
  const n = bytes.length;
  let i = 0;
  if (LITTLE_ENDIAN && n >= 64) {
    // Byte-wise up to a 4-byte boundary, then four 32-bit words per step.
    const lead = (4 - (bytes.byteOffset & 3)) & 3;
    for (; i < lead; i++) crc = (crc >>> 8) ^ t0[(crc ^ bytes[i]!) & 0xff]!;
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + i, (n - i) >>> 2);
    const steps = words.length >>> 2;
    for (let w = 0; w < 4 * steps; w += 4) {
      const a = crc ^ words[w]!;
      const b = words[w + 1]!;
      const c = words[w + 2]!;
      const d = words[w + 3]!;
      crc =
        t15[a & 0xff]! ^
        t14[(a >>> 8) & 0xff]! ^
        t13[(a >>> 16) & 0xff]! ^
        t12[a >>> 24]! ^
        t11[b & 0xff]! ^
        t10[(b >>> 8) & 0xff]! ^
        t9[(b >>> 16) & 0xff]! ^
        t8[b >>> 24]! ^
        t7[c & 0xff]! ^
        t6[(c >>> 8) & 0xff]! ^
        t5[(c >>> 16) & 0xff]! ^
        t4[c >>> 24]! ^
        t3[d & 0xff]! ^
        t2[(d >>> 8) & 0xff]! ^
        t1[(d >>> 16) & 0xff]! ^
        t0[d >>> 24]!;
    }
    i += steps * 16;
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
