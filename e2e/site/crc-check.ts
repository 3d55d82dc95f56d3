// CRC-32C in this context (the page or a worker): the path it takes, the check value, and
// agreement with the JavaScript path over 200 kB at an odd offset.

import { crc32c, crc32cJs, crc32cPath } from '../../src/util/crc32c.js';
import type { CrcCheck } from './protocol.js';

export function crc32cCheck(): CrcCheck {
  const bytes = Uint8Array.from({ length: 200_003 }, (_, i) => (i * 2654435761) >>> 24).subarray(3);
  const checkValue = crc32c(new TextEncoder().encode('123456789'.repeat(20)).subarray(0, 9));
  const agrees = crc32c(bytes) === crc32cJs(bytes) && crc32c(bytes.subarray(70_000), crc32c(bytes.subarray(0, 70_000))) === crc32cJs(bytes);
  return { path: crc32cPath(), checkValue, agrees };
}
