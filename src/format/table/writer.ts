// Writes table files of format 3 (docs/format.md §8): rows cut into bounded blocks (one Arrow
// record batch each), the block index and Bloom filter in the footer schema's metadata, and the
// index sections the caller's builders make of those same blocks (sections.ts) between the
// end-of-stream marker and the footer. The rows come in final order: sorted by key with one row
// per key for keyed stores, insertion order for append-only ones. Pure; any runtime.

import { Data, RecordBatch, RecordBatchFileWriter, Schema, Type } from 'apache-arrow';
import { type Key, type KeyEncoder, keyBytes, keyString } from '../../data/keys.js';
import type { StoreSchema } from '../../data/schema.js';
import { allRows, gatherBatch, makeBatch, rangeView } from '../../data/select.js';
import { estimateBatchBytes } from '../../data/size.js';
import { toBase64 } from '../../util/bytes.js';
import { crc32c, crc32cCombine } from '../../util/crc32c.js';
import { runSteps, type Steps } from '../../util/schedule.js';
import { BloomFilter } from './bloom.js';
import { blockRanges } from './reader.js';
import {
  ARROW_FILE_TRAILER_BYTES,
  BLOCK_MAX_ROWS,
  BLOCK_TARGET_BYTES,
  META_BLOCKS,
  META_BLOOM,
  META_FORMAT,
  META_GENERATIONS,
  META_SECTIONS,
  TABLE_FORMAT_V3,
} from './format.js';
import { encodeSectionDirectory, SECTION_AREA_ALIGN, type SectionBuilder, type SectionInfo } from './sections.js';

/** A table file ready to write, with what the manifest records of it. */
export interface BuiltTable {
  bytes: Uint8Array;
  /** CRC-32C of `bytes` (combined from the blocks' checksums, so the builder makes no pass of its own for it). */
  crc: number;
  rows: number;
  blocks: number;
  /** Smallest and largest key (encoded), keyed stores with rows only. */
  minKey?: string;
  maxKey?: string;
}

/** One block's first and last key (encoded; empty for append-only stores), row count and CRC-32C. */
export interface BlockBounds {
  rows: number;
  /** CRC-32C of the block's bytes in the file (its record-batch message). */
  crc: number;
  first: string;
  last: string;
}

/**
 * Cuts `batches` (rows in final order) into blocks of at most BLOCK_MAX_ROWS rows and about
 * `targetBytes` each (`blockTargetBytes`), copying every block into compact buffers. Any runtime.
 */
export function cutBlocks(schema: Schema, batches: readonly RecordBatch[], targetBytes = BLOCK_TARGET_BYTES): RecordBatch[] {
  return runSteps(cutBlockSteps(schema, batches, targetBytes));
}

/**
 * {@link cutBlocks} as steps, one block per step (a caller may pause between them). With `views`
 * a block that is a run of one batch's rows (a batch of a block or more: most blocks of large
 * puts) keeps views of the batch's values and offsets (`rangeView`: the IPC writer copies only
 * the run's bytes into the file, the same bytes a gather would give); only validity bitmaps are
 * copied, and a block of several batches' rows is gathered. For a caller that encodes the blocks
 * at once (the views keep the whole batches alive).
 */
export function* cutBlockSteps(
  schema: Schema,
  batches: readonly RecordBatch[],
  targetBytes = BLOCK_TARGET_BYTES,
  views = false,
): Steps<RecordBatch[]> {
  const out: RecordBatch[] = [];
  let pending: { batch: RecordBatch; idx: null; start: number; count: number }[] = [];
  let rows = 0;
  let bytes = 0;
  const flush = (): void => {
    if (rows > 0) out.push(views && pending.length === 1 ? sliceOf(schema, pending[0]!) : gatherBatch(schema, pending, rows));
    pending = [];
    rows = 0;
    bytes = 0;
  };
  for (const batch of batches) {
    const n = batch.numRows;
    if (n === 0) continue;
    const rowBytes = Math.max(1, estimateBatchBytes(batch) / n);
    let at = 0;
    while (at < n) {
      const room = Math.max(1, Math.min(BLOCK_MAX_ROWS - rows, Math.floor((targetBytes - bytes) / rowBytes)));
      const take = Math.min(room, n - at);
      const last = pending[pending.length - 1];
      if (last?.batch === batch && last.start + last.count === at) last.count += take;
      else pending.push({ batch, idx: null, start: at, count: take });
      rows += take;
      bytes += take * rowBytes;
      at += take;
      if (rows >= BLOCK_MAX_ROWS || bytes >= targetBytes) {
        flush();
        yield;
      }
    }
  }
  flush();
  return out;
}

/**
 * Rows `start..start+count` of `batch` as a batch of `schema`, their values not copied
 * (`rangeView`), or else (a type it leaves to `gather`) gathered.
 */
function sliceOf(schema: Schema, sel: { batch: RecordBatch; idx: null; start: number; count: number }): RecordBatch {
  const children: Data[] = [];
  for (let j = 0; j < schema.fields.length; j++) {
    const view = rangeView(schema.fields[j]!.type, sel.batch.data.children[j]!, sel.start, sel.count);
    if (!view) return gatherBatch(schema, [sel], sel.count);
    children.push(view);
  }
  return makeBatch(schema, children, sel.count);
}

/**
 * The rows `idx` selects from `batches` (their rows numbered consecutively), in that order, cut
 * into blocks of at most BLOCK_MAX_ROWS rows and about `targetBytes` each: one copy, a block per
 * step. A block whose rows come in long stretches of one batch (keys put in order) is gathered
 * straight from the batches, runs of consecutive rows copied whole; any other block from the
 * batches concatenated once (built on first need). Either gives the same block. `idx` may select
 * few of the rows (a keyed memtable whose keys were overwritten), so the rows' average size is
 * only the first guess: each block's own size sets the next one's rows, and a block more than
 * twice the target is gathered again with fewer rows.
 */
export function* cutSelectionSteps(
  schema: Schema,
  batches: readonly RecordBatch[],
  idx: Int32Array,
  targetBytes = BLOCK_TARGET_BYTES,
): Steps<RecordBatch[]> {
  const out: RecordBatch[] = [];
  const rowsFor = (rowBytes: number): number => Math.max(1, Math.min(BLOCK_MAX_ROWS, Math.floor(targetBytes / Math.max(1, rowBytes))));
  const starts = new Float64Array(batches.length + 1);
  for (let b = 0; b < batches.length; b++) starts[b + 1] = starts[b]! + batches[b]!.numRows;
  let flat: RecordBatch | undefined = batches.length === 1 ? batches[0] : undefined;
  const flattened = (): RecordBatch => (flat ??= gatherBatch(schema, batches.map(allRows), starts[batches.length]!));
  const gathered = (at: number, count: number): RecordBatch => {
    const rows = idx.subarray(at, at + count);
    const sels = flat ? undefined : stretches(batches, starts, rows);
    return gatherBatch(schema, sels ?? [{ batch: flattened(), idx: rows, start: 0, count }], count);
  };
  const estimate = flat ? undefined : concatEstimate(batches, starts[batches.length]!);
  let perBlock = rowsFor((estimate ?? estimateBatchBytes(flattened())) / Math.max(1, starts[batches.length]!));
  for (let at = 0; at < idx.length; ) {
    let count = Math.min(perBlock, idx.length - at);
    let block = gathered(at, count);
    let bytes = estimateBatchBytes(block);
    if (count > 1 && bytes > 2 * targetBytes) {
      count = Math.min(count - 1, rowsFor(bytes / count));
      block = gathered(at, count);
      bytes = estimateBatchBytes(block);
    }
    perBlock = rowsFor(bytes / count);
    out.push(block);
    at += count;
    yield;
  }
  return out;
}

/** A stretch of a selection is worth a selection of its own when the rows average at least this many per stretch. */
const STRETCH_MIN_ROWS = 16;

/**
 * `rows` (numbered across `batches`, whose first rows are `starts`) as selections of one batch
 * each, a selection per stretch of rows in one batch, or undefined when the stretches average
 * fewer than STRETCH_MIN_ROWS rows (scattered rows: gathering from one batch costs less).
 */
function stretches(
  batches: readonly RecordBatch[],
  starts: Float64Array,
  rows: Int32Array,
): { batch: RecordBatch; idx: Int32Array; start: number; count: number }[] | undefined {
  const n = rows.length;
  const local = new Int32Array(n);
  const out: { batch: RecordBatch; idx: Int32Array; start: number; count: number }[] = [];
  let b = -1;
  let from = 0;
  for (let k = 0; k < n; k++) {
    const r = rows[k]!;
    if (b < 0 || r < starts[b]! || r >= starts[b + 1]!) {
      if (b >= 0) out.push({ batch: batches[b]!, idx: local.subarray(from, k), start: 0, count: k - from });
      if ((out.length + 1) * STRETCH_MIN_ROWS > n) return undefined;
      b = batchOf(starts, r);
      from = k;
    }
    local[k] = r - starts[b]!;
  }
  if (b >= 0) out.push({ batch: batches[b]!, idx: local.subarray(from, n), start: 0, count: n - from });
  return out;
}

/** The batch holding row `r`: the last `b` with `starts[b] <= r` (binary search). */
function batchOf(starts: Float64Array, r: number): number {
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid]! <= r) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * `estimateBatchBytes` of `batches` (`rows` rows in all) gathered into one batch, without
 * gathering them: what `gather` makes of each column, for the fixed-width, Bool, Null and
 * variable-width columns; undefined when a column has another type.
 */
function concatEstimate(batches: readonly RecordBatch[], rows: number): number | undefined {
  if (batches.length === 0) return 0;
  let bytes = 0;
  const fields = batches[0]!.schema.fields;
  for (let j = 0; j < fields.length; j++) {
    const type = fields[j]!.type;
    let nulls = false;
    let varBytes = 0;
    for (const b of batches) {
      const d = b.data.children[j]!;
      if (d.nullCount > 0) nulls = true;
      if (d.length > 0 && d.valueOffsets) varBytes += Number(d.valueOffsets[d.length]!) - Number(d.valueOffsets[0]!);
    }
    if (type.typeId !== Type.Null && nulls) bytes += Math.ceil(rows / 8);
    switch (type.typeId) {
      case Type.Null:
        break;
      case Type.Bool:
        bytes += Math.ceil(rows / 8);
        break;
      case Type.Utf8:
      case Type.Binary:
        if (rows > 0) bytes += (rows + 1) * 4 + varBytes;
        break;
      case Type.LargeUtf8:
      case Type.LargeBinary:
        if (rows > 0) bytes += (rows + 1) * 8 + varBytes;
        break;
      case Type.Int:
      case Type.Float:
      case Type.Decimal:
      case Type.Date:
      case Type.Time:
      case Type.Timestamp:
      case Type.Interval:
      case Type.Duration:
      case Type.FixedSizeBinary: {
        const Ctor = type.ArrayType as unknown as { BYTES_PER_ELEMENT: number };
        bytes += rows * new Data(type, 0, 0).stride * Ctor.BYTES_PER_ELEMENT;
        break;
      }
      default:
        return undefined;
    }
  }
  return bytes;
}

/**
 * The block index as stored: u32 count, then per block u32 rows, u32 crc, u32 len + first key,
 * u32 len + last key (all little-endian).
 */
export function encodeBlockIndex(blocks: readonly BlockBounds[]): Uint8Array {
  let size = 4;
  for (const b of blocks) size += 16 + b.first.length + b.last.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  const u32 = (v: number): void => {
    view.setUint32(at, v, true);
    at += 4;
  };
  const key = (k: string): void => {
    u32(k.length);
    out.set(keyBytes(k), at);
    at += k.length;
  };
  u32(blocks.length);
  for (const b of blocks) {
    u32(b.rows);
    u32(b.crc);
    key(b.first);
    key(b.last);
  }
  return out;
}

/**
 * Encode `blocks` (from {@link cutBlocks}, rows in final order) as a format-3 table file holding
 * generations `minGeneration..maxGeneration`. With `keyEncoder` (keyed stores) the blocks' key
 * bounds and a Bloom filter of every key go into the footer; `sections` build the file's index
 * sections from the same blocks. Any runtime.
 */
export function encodeTable(
  storeSchema: StoreSchema,
  schema: Schema,
  keyEncoder: KeyEncoder | undefined,
  blocks: readonly RecordBatch[],
  minGeneration: number,
  maxGeneration: number,
  sections: readonly SectionBuilder[] = [],
): BuiltTable {
  return runSteps(encodeTableSteps(storeSchema, schema, keyEncoder, blocks, minGeneration, maxGeneration, undefined, sections));
}

/**
 * {@link encodeTable} as steps of about one block each (a caller may pause between them).
 * `sortedKeys`, when the caller has them: the keys of every row of `blocks`, in order (a flush's
 * sort made them), so the blocks' keys are not encoded again. Each of `sections` is fed every
 * block with its first row's position and its keys, in file order, then finished.
 */
export function* encodeTableSteps(
  storeSchema: StoreSchema,
  schema: Schema,
  keyEncoder: KeyEncoder | undefined,
  blocks: readonly RecordBatch[],
  minGeneration: number,
  maxGeneration: number,
  sortedKeys?: ArrayLike<Key>,
  sections: readonly SectionBuilder[] = [],
): Steps<BuiltTable> {
  let rows = 0;
  for (const b of blocks) rows += b.numRows;
  const bounds: BlockBounds[] = [];
  const bloom = keyEncoder ? BloomFilter.forKeys(rows) : undefined;
  let at = 0;
  for (const b of blocks) {
    if (!keyEncoder) {
      for (const s of sections) s.addBlock(b, at, undefined);
      bounds.push({ rows: b.numRows, crc: 0, first: '', last: '' });
      at += b.numRows;
      continue;
    }
    const keys: ArrayLike<Key> = sortedKeys ?? keyEncoder(b);
    const from = sortedKeys ? at : 0;
    const to = from + b.numRows;
    bloom!.addRange(keys, from, to);
    if (sections.length > 0) {
      const own = sortedKeys ? subKeys(sortedKeys, from, to) : keys;
      for (const s of sections) s.addBlock(b, at, own);
    }
    bounds.push({ rows: b.numRows, crc: 0, first: keyString(keys[from]!, storeSchema), last: keyString(keys[to - 1]!, storeSchema) });
    at += b.numRows;
    yield;
  }
  const area = yield* sectionArea(sections);
  // The block CRCs cover the blocks' bytes in the file, which only an encoding tells, and the
  // block index that holds them is in the file's metadata. The index has the same length
  // whatever its CRCs are, so: encode once with zero CRCs, checksum the blocks where they landed,
  // and write the real index over the placeholder wherever it stands outside the blocks (the
  // footer's schema; the same length, so nothing moves). Encoding twice would cost a copy of the
  // whole table.
  const metadata = new Map<string, string>([
    [META_FORMAT, String(TABLE_FORMAT_V3)],
    [META_GENERATIONS, `${minGeneration}-${maxGeneration}`],
    [META_BLOCKS, toBase64(encodeBlockIndex(bounds))],
  ]);
  if (bloom) metadata.set(META_BLOOM, toBase64(bloom.encode()));
  metadata.set(META_SECTIONS, toBase64(area.directory));
  const placeholder = metadata.get(META_BLOCKS)!;
  let bytes = yield* encode(schema, blocks, metadata);
  const located = blockRanges(bytes);
  for (let i = 0; i < bounds.length; i++) {
    const r = located[i]!;
    bounds[i]!.crc = crc32c(bytes.subarray(r.offset, r.offset + r.length));
    yield;
  }
  const index = toBase64(encodeBlockIndex(bounds));
  const first = located.length > 0 ? located[0]!.offset : bytes.length;
  const last = located.length > 0 ? located[located.length - 1]!.offset + located[located.length - 1]!.length : first;
  overwrite(bytes, placeholder, index, 0, first);
  let crc: number;
  if (overwrite(bytes, placeholder, index, last, bytes.length) === 0) {
    // Not where it should be (an Arrow writer that lays metadata out otherwise): encode again.
    metadata.set(META_BLOCKS, index);
    bytes = withArea(yield* encode(schema, blocks, metadata), area.bytes);
    crc = crc32c(bytes);
  } else {
    // The file's checksum: the bytes around the blocks and the section area, with the blocks'
    // and the area's own checksums combined in.
    const footerAt = footerStart(bytes);
    crc = crc32c(bytes.subarray(0, first));
    let at = first;
    for (let i = 0; i < located.length; i++) {
      const r = located[i]!;
      crc = crc32cCombine(crc32c(bytes.subarray(at, r.offset), crc), bounds[i]!.crc, r.length);
      at = r.offset + r.length;
    }
    crc = crc32c(bytes.subarray(at, footerAt), crc);
    crc = crc32cCombine(crc, area.crc, area.bytes.length);
    crc = crc32c(bytes.subarray(footerAt), crc);
    bytes = withArea(bytes, area.bytes);
  }
  const built: BuiltTable = { bytes, crc, rows, blocks: blocks.length };
  if (keyEncoder && bounds.length > 0) {
    built.minKey = bounds[0]!.first;
    built.maxKey = bounds[bounds.length - 1]!.last;
  }
  return built;
}

/** `keys[from, to)` (a view when typed). */
function subKeys(keys: ArrayLike<Key>, from: number, to: number): ArrayLike<Key> {
  if (keys instanceof Float64Array) return keys.subarray(from, to);
  return Array.prototype.slice.call(keys, from, to) as Key[];
}

/** The section area of `sections` (each finished, a step each), padded, with its directory and CRC-32C. */
function* sectionArea(sections: readonly SectionBuilder[]): Steps<{ bytes: Uint8Array; crc: number; directory: Uint8Array }> {
  const parts: Uint8Array[] = [];
  const infos: SectionInfo[] = [];
  let length = 0;
  for (const s of sections) {
    const bytes = s.finish();
    infos.push({ kind: s.kind, name: s.name, spec: s.spec, offset: length, length: bytes.length, crc: crc32c(bytes) });
    parts.push(bytes);
    length += bytes.length;
    yield;
  }
  const padded = Math.ceil(length / SECTION_AREA_ALIGN) * SECTION_AREA_ALIGN;
  const bytes = new Uint8Array(padded);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  const crc = crc32c(bytes);
  return { bytes, crc, directory: encodeSectionDirectory({ areaLength: padded, areaCrc: crc, sections: infos }) };
}

/** Where the footer of Arrow file `bytes` starts. */
function footerStart(bytes: Uint8Array): number {
  return (
    bytes.length -
    ARROW_FILE_TRAILER_BYTES -
    new DataView(bytes.buffer, bytes.byteOffset).getInt32(bytes.length - ARROW_FILE_TRAILER_BYTES, true)
  );
}

/** Arrow file `bytes` with `area` between its end-of-stream marker and its footer (itself when empty). */
function withArea(bytes: Uint8Array, area: Uint8Array): Uint8Array {
  if (area.length === 0) return bytes;
  const at = footerStart(bytes);
  const out = new Uint8Array(bytes.length + area.length);
  out.set(bytes.subarray(0, at), 0);
  out.set(area, at);
  out.set(bytes.subarray(at), at + area.length);
  return out;
}

/**
 * Writes the ASCII string `to` over each occurrence of `from` (the same length) in
 * `bytes[start, end)`; returns how many it replaced.
 */
function overwrite(bytes: Uint8Array, from: string, to: string, start: number, end: number): number {
  const a = new TextEncoder().encode(from);
  const b = new TextEncoder().encode(to);
  let count = 0;
  for (let at = bytes.indexOf(a[0]!, start); at >= 0 && at + a.length <= end; at = bytes.indexOf(a[0]!, at + 1)) {
    let i = 1;
    while (i < a.length && bytes[at + i] === a[i]) i++;
    if (i < a.length) continue;
    bytes.set(b, at);
    count++;
    at += a.length - 1;
  }
  return count;
}

/** The Arrow IPC file of `blocks` with `metadata` on its schema, one block per step. */
function* encode(schema: Schema, blocks: readonly RecordBatch[], metadata: Map<string, string>): Steps<Uint8Array> {
  const withMeta = new Schema(schema.fields, metadata);
  const writer = new RecordBatchFileWriter();
  writer.reset(undefined, withMeta);
  for (const b of blocks) {
    writer.write(new RecordBatch(withMeta, b.data));
    yield;
  }
  writer.finish();
  return writer.toUint8Array(true);
}
