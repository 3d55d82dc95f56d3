// Shared by the keyed-flush attacks (not part of the package): Int64 keys at the edges of the
// number form, strings whose encodings are close, and an I/O worker served in this thread over a MessageChannel.

import type { StorageAdapter } from '../storage/adapter.js';
import { type IoScope, serveStorage } from './io-host.js';
import { type IoEndpoint, RemoteStorage } from './remote-storage.js';

const S53 = 2n ** 53n;
const S63 = 2n ** 63n;

/**
 * Int64 keys at the edges of the number form (±(2^53 − 1) and beyond), of 32 and 64 bits, and
 * keys that differ only in their high bytes (beyond 2^53 and within it), each once.
 */
export const INT64_EDGE_KEYS: readonly bigint[] = [
  ...new Set([
    0n,
    1n,
    -1n,
    S53 - 1n,
    S53,
    S53 + 1n,
    -(S53 - 1n),
    -S53,
    -S53 - 1n,
    S63 - 1n,
    -S63,
    -S63 + 1n,
    2n ** 32n,
    2n ** 32n - 1n,
    -(2n ** 32n),
    ...Array.from({ length: 16 }, (_, b) => (BigInt(b * 8 - 64) << 56n) | 5n),
    ...Array.from({ length: 16 }, (_, b) => (BigInt(b) << 48n) | 5n),
  ]),
];

const PREFIX = 'p'.repeat(300);

/**
 * Strings whose key encodings are close: empty, NUL bytes (escaped in a key), a value and its
 * extensions, non-ASCII (UTF-8 byte order differs from UTF-16 order past U+D7FF), and long shared
 * prefixes.
 */
export const EDGE_STRINGS: readonly string[] = [
  '',
  '\u0000',
  '\u0000\u0000',
  'a',
  'a\u0000',
  'ab',
  'é',
  'e\u0301',
  '日本',
  '\ud7ff',
  '\uffff',
  '😀',
  PREFIX,
  `${PREFIX}a`,
  `${PREFIX}b`,
  `${PREFIX}\u0000`,
  `${PREFIX}é`,
];

/** A RemoteStorage whose I/O "worker" serves `inner` at the other end of a MessageChannel (one Node thread). */
export function remoteOver(inner: StorageAdapter): RemoteStorage {
  return new RemoteStorage('memory', () => {
    const { port1, port2 } = new MessageChannel();
    serveStorage(port2 as unknown as IoScope, inner);
    port2.start();
    port1.start();
    return port1 as unknown as IoEndpoint;
  });
}
