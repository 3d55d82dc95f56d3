// Seeded clustered float32 vectors for tests and benches of vector search: `clusters` centres drawn
// uniformly from [-1, 1]^dim, each vector a centre (chosen uniformly) plus Gaussian noise of
// standard deviation `spread` per coordinate (Box-Muller over mulberry32). Same seed, same vectors.

/** mulberry32: a seeded generator of floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A generator of clustered vectors (the module's header says how they are drawn). */
export function clusteredVectors(opts: { dim: number; clusters: number; spread: number; seed: number }): () => Float32Array {
  const rand = mulberry32(opts.seed);
  const gauss = (): number => {
    const u = 1 - rand();
    const v = rand();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
  const centres: Float32Array[] = [];
  for (let c = 0; c < opts.clusters; c++) centres.push(Float32Array.from({ length: opts.dim }, () => rand() * 2 - 1));
  return () => {
    const c = centres[Math.floor(rand() * centres.length)]!;
    const out = new Float32Array(opts.dim);
    for (let i = 0; i < opts.dim; i++) out[i] = c[i]! + gauss() * opts.spread;
    return out;
  };
}
