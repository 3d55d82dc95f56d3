// Table files of the previous format (2: docs/format.md §8, no index sections), made from files of
// the current one, for tests and the simulation: a store holding them is a store a release before
// index sections wrote. The rows, blocks, block key bounds, Bloom filter and generation range stay
// as they were; the section directory goes, the format says 2, and the block checksums are those
// of the blocks where they land in the new file.

import { RecordBatch, Schema, Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import { toBase64 } from '../../util/bytes.js';
import { crc32c } from '../../util/crc32c.js';
import { META_BLOCKS, META_FORMAT, META_SECTIONS, TABLE_FORMAT_V2, TABLE_FORMAT_V3 } from './format.js';
import { blockRanges, readTableIndex } from './reader.js';
import { type BlockBounds, encodeBlockIndex } from './writer.js';

/** `bytes` (a table file of format 3) as a format-2 file, with its CRC-32C as the manifest records it. */
export async function asFormat2(bytes: Uint8Array): Promise<{ bytes: Uint8Array; checksum: string }> {
  const file = tableFromIPC(bytes);
  const meta = new Map(file.schema.metadata);
  if (meta.get(META_FORMAT) !== String(TABLE_FORMAT_V3)) throw new Error(`not a format-3 table file (format ${meta.get(META_FORMAT)})`);
  const index = await readTableIndex('previous-format fixture', bytes.length, async (o, n) => bytes.subarray(o, o + n), file.schema);
  const bounds: BlockBounds[] = index.blocks.map((b) => ({ rows: b.rows, crc: 0, first: b.first, last: b.last }));
  meta.set(META_FORMAT, String(TABLE_FORMAT_V2));
  meta.delete(META_SECTIONS);
  const encode = (): Uint8Array => {
    const schema = new Schema(file.schema.fields, meta);
    return tableToIPC(
      new Table(
        schema,
        file.batches.map((b) => new RecordBatch(schema, b.data)),
      ),
      'file',
    );
  };
  // The block index has the same length whatever its checksums, so the blocks land at the same
  // offsets in both encodings: checksum them in the first, then write the real index.
  const first = encode();
  const placed = blockRanges(first);
  bounds.forEach((b, i) => {
    const r = placed[i]!;
    b.crc = crc32c(first.subarray(r.offset, r.offset + r.length));
  });
  meta.set(META_BLOCKS, toBase64(encodeBlockIndex(bounds)));
  const out = encode();
  const again = blockRanges(out);
  if (again.some((r, i) => r.offset !== placed[i]!.offset || r.length !== placed[i]!.length)) throw new Error('blocks moved');
  return { bytes: out, checksum: crc32c(out).toString(16).padStart(8, '0') };
}
