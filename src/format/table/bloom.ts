// The Bloom filter of a table file's keys (docs/format.md §8): double hashing over one 64-bit
// hash of the key, so a `get` skips a file without reading a block ~99 % of the time for an
// absent key. Keys in their memwal form (a number for single integer-like key columns, else the
// order-preserving encoding), each value has exactly one form. Any runtime.

import type { Key } from '../../data/keys.js';
import { BLOOM_BITS_PER_KEY, BLOOM_HASHES } from './format.js';

/** Two 32-bit hashes of a key (h1, h2), from its number bits or its byte string. */
function hashKey(k: Key, out: Uint32Array): void {
  if (typeof k === 'number') {
    const lo = k | 0;
    const hi = Math.floor(k / 4294967296) | 0;
    let a = Math.imul(lo ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(hi, 0xc2b2ae35);
    a ^= a >>> 16;
    a = Math.imul(a, 0x7feb352d);
    a ^= a >>> 15;
    let b = Math.imul(hi ^ 0x27d4eb2f, 0x165667b1) ^ Math.imul(lo, 0x9e3779b1);
    b ^= b >>> 13;
    b = Math.imul(b, 0x846ca68b);
    b ^= b >>> 16;
    out[0] = a >>> 0;
    out[1] = (b | 1) >>> 0;
    return;
  }
  // FNV-1a, two lanes with different offsets.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  a ^= a >>> 15;
  b ^= b >>> 13;
  out[0] = a >>> 0;
  out[1] = (Math.imul(b, 0x85ebca6b) | 1) >>> 0;
}

const scratch = new Uint32Array(2);

/** Set `k`'s probe bits in a filter of `m` bits (any size). */
function probe(bits: Uint8Array, m: number, hashes: number, k: Key): void {
  hashKey(k, scratch);
  const h1 = scratch[0]!;
  const h2 = scratch[1]!;
  for (let i = 0; i < hashes; i++) {
    const at = ((h1 + Math.imul(i, h2)) >>> 0) % m;
    bits[at >>> 3]! |= 1 << (at & 7);
  }
}

/** A Bloom filter: `bits.length * 8` bits, `hashes` probes per key. */
export class BloomFilter {
  private readonly m: number;

  constructor(
    readonly bits: Uint8Array,
    readonly hashes: number,
  ) {
    this.m = bits.length * 8;
  }

  /** An empty filter sized for `keys` keys at `BLOOM_BITS_PER_KEY`. */
  static forKeys(keys: number): BloomFilter {
    const bytes = Math.max(8, Math.ceil((keys * BLOOM_BITS_PER_KEY) / 8));
    return new BloomFilter(new Uint8Array(bytes), BLOOM_HASHES);
  }

  add(k: Key): void {
    this.addRange([k], 0, 1);
  }

  /**
   * Add `keys[from, to)`, each as `add` would. One loop over the keys, with the filter's size in
   * a local known to be an unsigned 32-bit integer: V8 then takes each probe's modulo as an
   * integer division rather than a floating-point one, the larger part of a probe's cost.
   */
  addRange(keys: ArrayLike<Key>, from: number, to: number): void {
    const bits = this.bits;
    const hashes = this.hashes;
    if (this.m > 0xffffffff) {
      for (let i = from; i < to; i++) probe(bits, this.m, hashes, keys[i]!);
      return;
    }
    const m = this.m >>> 0;
    for (let i = from; i < to; i++) {
      hashKey(keys[i]!, scratch);
      const h1 = scratch[0]!;
      const h2 = scratch[1]!;
      for (let j = 0; j < hashes; j++) {
        const at = ((h1 + Math.imul(j, h2)) >>> 0) % m;
        bits[at >>> 3]! |= 1 << (at & 7);
      }
    }
  }

  /** False only when `k` was never added. */
  mayContain(k: Key): boolean {
    hashKey(k, scratch);
    const h1 = scratch[0]!;
    const h2 = scratch[1]!;
    for (let i = 0; i < this.hashes; i++) {
      const bit = (h1 + Math.imul(i, h2)) >>> 0;
      const at = bit % this.m;
      if ((this.bits[at >>> 3]! & (1 << (at & 7))) === 0) return false;
    }
    return true;
  }

  /** `hashes` (u8) then the bits. */
  encode(): Uint8Array {
    const out = new Uint8Array(1 + this.bits.length);
    out[0] = this.hashes;
    out.set(this.bits, 1);
    return out;
  }

  static decode(bytes: Uint8Array): BloomFilter {
    return new BloomFilter(bytes.slice(1), bytes[0]!);
  }
}
