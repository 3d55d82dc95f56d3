// A tiny seeded PRNG (mulberry32) so fault injection and randomized tests are reproducible.
// Runs in every runtime.

/**
 * A deterministic generator of floats in [0, 1) from a 32-bit `seed` (mulberry32). Not for
 * cryptography. Runs in every runtime.
 */
export function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform integer in [0, n) drawn from `r`; `n` is a positive integer. */
export function int(r: () => number, n: number): number {
  return Math.floor(r() * n);
}
