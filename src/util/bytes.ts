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

/** The base64 alphabet's character codes (standard, RFC 4648 §4). */
const BASE64 = new TextEncoder().encode('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const PAD = 61; // '='
const ascii = new TextDecoder();

/**
 * Base64 of `bytes` (standard alphabet, padded: what `btoa` gives). Written as ASCII bytes and
 * decoded to a string once: a table file's footer holds its Bloom filter and block index this
 * way, megabytes for a large keyed flush, where building a binary string first cost a pass of its
 * own and `btoa` another.
 */
export function toBase64(bytes: Uint8Array): string {
  const n = bytes.length;
  const out = new Uint8Array(Math.ceil(n / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o] = BASE64[v >>> 18]!;
    out[o + 1] = BASE64[(v >>> 12) & 63]!;
    out[o + 2] = BASE64[(v >>> 6) & 63]!;
    out[o + 3] = BASE64[v & 63]!;
    o += 4;
  }
  if (i < n) {
    const v = (bytes[i]! << 16) | (i + 1 < n ? bytes[i + 1]! << 8 : 0);
    out[o] = BASE64[v >>> 18]!;
    out[o + 1] = BASE64[(v >>> 12) & 63]!;
    out[o + 2] = i + 1 < n ? BASE64[(v >>> 6) & 63]! : PAD;
    out[o + 3] = PAD;
  }
  return ascii.decode(out);
}

/** The bytes of base64 `b64`; throws (a DOMException or TypeError) when it is not base64. */
export function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}
