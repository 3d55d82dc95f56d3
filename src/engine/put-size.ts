// A put's size, counted before anything is applied or logged (README `maxPutBytes`): its batches'
// estimated bytes as a memtable holds them (lsm/memtable.ts `estimateInsertBytes`) and what it
// adds to the memtable's indexes (`prepareIndexing`: the index work is done here, once, and handed
// to the insert) — exact for ordered indexes, an upper bound for text and vector indexes.

import type { RecordBatch } from 'apache-arrow';
import type { Key } from '../data/keys.js';
import { type PreparedIndexing, estimateInsertBytes } from '../lsm/memtable.js';
import { MemWalError } from '../util/errors.js';
import type { Tier } from './tier.js';

/** A put, sized and prepared: per batch its data bytes; their sum; rows; each batch's index work. */
export interface SizedPut {
  sizes: number[];
  bytes: number;
  rows: number;
  prepared: PreparedIndexing[] | undefined;
}

/**
 * Size `batches` (keys `keys`) and prepare their index work; `InvalidArgument` (nothing written)
 * when their data bytes plus the index bytes pass `maxPutBytes`.
 */
export function sizePut(tier: Tier, maxPutBytes: number, batches: RecordBatch[], keys: ArrayLike<Key>[] | undefined): SizedPut {
  const sizes = batches.map((b, i) => estimateInsertBytes(b, keys?.[i]));
  let bytes = 0;
  let rows = 0;
  for (let i = 0; i < batches.length; i++) {
    bytes += sizes[i]!;
    rows += batches[i]!.numRows;
  }
  const prepared = bytes > maxPutBytes ? undefined : tier.prepareIndexing(batches, keys);
  let indexBytes = 0;
  for (const p of prepared ?? []) indexBytes += p.bytes;
  if (bytes + indexBytes > maxPutBytes) {
    const index = indexBytes > 0 ? ` (${indexBytes} of them in its indexes)` : '';
    throw new MemWalError(
      'InvalidArgument',
      `put of ${rows} rows is about ${bytes + indexBytes} bytes${index}, more than maxPutBytes (${maxPutBytes}); split it into smaller puts; nothing was written`,
    );
  }
  return { sizes, bytes, rows, prepared };
}
