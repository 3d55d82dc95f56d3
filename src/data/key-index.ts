// KeyIndex: primary key → row ordinal. Number keys (single integer-like key columns) live in an
// open-addressing table over typed arrays — no per-row string, no Map entry, no boxing — which
// made keyed ingest and replay several times faster; string keys use a Map.

import type { Key } from './keys.js';

/** Spread an integer-valued double over 32 bits (both halves, multiplicative mixing). */
function hashNumber(k: number): number {
  const lo = k | 0;
  const hi = (k / 4294967296) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x27d4eb2d), 0x9e3779b1);
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca6b) ^ (h >>> 13);
}

/** Linear probing at a load factor of at most 1/2; NaN marks a free slot (keys are integers). */
class NumberTable {
  private keys: Float64Array;
  private vals: Int32Array;
  private mask: number;
  size = 0;

  constructor() {
    this.keys = new Float64Array(1024).fill(NaN);
    this.vals = new Int32Array(1024);
    this.mask = 1023;
  }

  set(k: number, v: number): void {
    if ((this.size + 1) * 2 > this.keys.length) this.grow();
    const keys = this.keys;
    const mask = this.mask;
    let i = hashNumber(k) & mask;
    for (;;) {
      const cur = keys[i]!;
      if (cur === k) {
        this.vals[i] = v;
        return;
      }
      if (Number.isNaN(cur)) {
        keys[i] = k;
        this.vals[i] = v;
        this.size += 1;
        return;
      }
      i = (i + 1) & mask;
    }
  }

  get(k: number): number | undefined {
    const keys = this.keys;
    const mask = this.mask;
    let i = hashNumber(k) & mask;
    for (;;) {
      const cur = keys[i]!;
      if (cur === k) return this.vals[i];
      if (Number.isNaN(cur)) return undefined;
      i = (i + 1) & mask;
    }
  }

  *entries(): IterableIterator<[number, number]> {
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (!Number.isNaN(keys[i]!)) yield [keys[i]!, this.vals[i]!];
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldVals = this.vals;
    this.keys = new Float64Array(oldKeys.length * 2).fill(NaN);
    this.vals = new Int32Array(oldKeys.length * 2);
    this.mask = oldKeys.length * 2 - 1;
    this.size = 0;
    for (let i = 0; i < oldKeys.length; i++) if (!Number.isNaN(oldKeys[i]!)) this.set(oldKeys[i]!, oldVals[i]!);
  }
}

/**
 * Key → row ordinal (a non-negative int32), newest `set` wins. Iterates `[key, ordinal]` in no
 * particular order. Any runtime.
 */
export class KeyIndex {
  private numbers: NumberTable | undefined;
  private strings: Map<string, number> | undefined;

  /** Number of distinct keys. */
  get size(): number {
    return (this.numbers?.size ?? 0) + (this.strings?.size ?? 0);
  }

  set(key: Key, ordinal: number): void {
    if (typeof key === 'number') (this.numbers ??= new NumberTable()).set(key, ordinal);
    else (this.strings ??= new Map()).set(key, ordinal);
  }

  get(key: Key): number | undefined {
    return typeof key === 'number' ? this.numbers?.get(key) : this.strings?.get(key);
  }

  *[Symbol.iterator](): IterableIterator<[Key, number]> {
    if (this.numbers) yield* this.numbers.entries();
    if (this.strings) yield* this.strings;
  }
}
