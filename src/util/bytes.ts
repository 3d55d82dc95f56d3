// Byte-array helpers shared by the engine, the adapters and the tests. A leaf module: it imports
// nothing of memwal. Runs in every runtime.

/** The bytes of `parts` in one new array (the single part itself when there is one). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
