// Reads table files of formats 2 and 3 (docs/format.md §8) without reading them whole: the footer
// gives the block offsets (Arrow's own) and memwal's block index, Bloom filter and (format 3)
// section directory (schema metadata); a block is one ranged read, checked against its CRC,
// decoded on its own: its columns are views of the block's bytes, nothing copied or materialised.
// An index section is one ranged read too, checked against its CRC. Pure; any runtime.

import { type Data, type DataType, type RecordBatch, type Schema, Table, Type, makeData, tableFromIPC, tableToIPC } from 'apache-arrow';
import { MemWalError } from '../../util/errors.js';
import { keyFromBytes } from '../../data/keys.js';
import { concatBytes, fromBase64 } from '../../util/bytes.js';
import { crc32c, crc32cCombine } from '../../util/crc32c.js';
import { BloomFilter } from './bloom.js';
import { type FooterInfo, type RecordBatchHeader, readFooter, readRecordBatchHeader } from './footer.js';
import { makeBatch } from '../../data/select.js';
import {
  ARROW_FILE_TRAILER_BYTES,
  META_BLOCKS,
  META_BLOOM,
  META_FORMAT,
  META_GENERATIONS,
  META_SECTIONS,
  TABLE_FORMAT_V2,
  TABLE_FORMAT_V3,
} from './format.js';
import { decodeSectionDirectory, type SectionInfo } from './sections.js';

/** Where one block lives in the file, and what memwal's index says of it. */
export interface BlockInfo {
  offset: number;
  length: number;
  rows: number;
  crc: number;
  /** First and last key (encoded); empty strings for append-only stores. */
  first: string;
  last: string;
}

/** Everything a reader needs to find a key or walk the rows, from the footer alone. */
export interface TableIndex {
  blocks: BlockInfo[];
  bloom: BloomFilter | undefined;
  minGeneration: number;
  maxGeneration: number;
  /** The schema its blocks decode in (the store's, for the file's schema version). */
  schema: Schema;
  /** An Arrow IPC stream's schema message for `schema`, to decode one block on its own. */
  streamHead: Uint8Array;
  /** Bytes of the footer (counted against the block cache's neighbours: indexes stay resident). */
  footerBytes: number;
  /** The file's format: 2, or 3 (with index sections). */
  format: number;
  /** Its index sections (format 3; none in format 2), each at `sectionAreaStart + offset`. */
  sections: SectionInfo[];
  /** Where the section area starts in the file (just before the footer). */
  sectionAreaStart: number;
}

const EOS = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

function corrupt(name: string, why: string): MemWalError {
  return new MemWalError('Corruption', `table file ${name}: ${why}`);
}

/** The record-batch blocks of an Arrow IPC file held whole (used when writing). */
export function blockRanges(file: Uint8Array): { offset: number; length: number }[] {
  const footer = decodeFooter(
    file.subarray(file.length - ARROW_FILE_TRAILER_BYTES - footerLength(file, 'file'), file.length - ARROW_FILE_TRAILER_BYTES),
    'file',
  );
  return footer.blocks.map((b) => ({ offset: b.offset, length: b.metaDataLength + b.bodyLength }));
}

function footerLength(trailer: Uint8Array, name: string): number {
  const t = trailer.subarray(trailer.length - ARROW_FILE_TRAILER_BYTES);
  const magic = String.fromCharCode(...t.subarray(4));
  if (magic !== 'ARROW1') throw corrupt(name, 'no Arrow file trailer');
  return new DataView(t.buffer, t.byteOffset, 4).getInt32(0, true);
}

function decodeFooter(bytes: Uint8Array, name: string): FooterInfo {
  try {
    return readFooter(bytes);
  } catch (e) {
    throw corrupt(name, `its Arrow footer does not decode (${String(e)})`);
  }
}

/** Parses the block index stored under META_BLOCKS. */
function decodeBlockIndex(bytes: Uint8Array, name: string): Omit<BlockInfo, 'offset' | 'length'>[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const u32 = (): number => {
    if (at + 4 > bytes.length) throw corrupt(name, 'block index is cut short');
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const key = (): string => {
    const n = u32();
    if (at + n > bytes.length) throw corrupt(name, 'block index is cut short');
    const k = keyFromBytes(bytes.subarray(at, at + n));
    at += n;
    return k;
  };
  const count = u32();
  const out: Omit<BlockInfo, 'offset' | 'length'>[] = [];
  for (let i = 0; i < count; i++) out.push({ rows: u32(), crc: u32(), first: key(), last: key() });
  return out;
}

/**
 * Reads the index of a format-2 table file of `size` bytes through `read(offset, length)`: one
 * ranged read of the last 64 KiB (and one more when the footer is larger). Throws `Corruption`
 * when the trailer, footer or index is damaged or the file is not format 2. With `checksum` (the
 * manifest's, 8 hex digits) the file's CRC-32C is also taken from the bytes outside its blocks
 * (one more read: the schema message before the first block) and the block index's CRCs, and
 * must match: a footer, block index or Bloom filter damaged into something that still decodes
 * (a flipped bit in the Bloom filter made keys it holds read as absent) is `Corruption` too.
 */
export async function readTableIndex(
  name: string,
  size: number,
  read: (offset: number, length: number) => Promise<Uint8Array>,
  schema: Schema,
  checksum?: string,
): Promise<TableIndex> {
  if (size < 16) throw corrupt(name, `${size} bytes is too short for an Arrow file`);
  const tailLength = Math.min(size, 64 * 1024);
  let tail = await read(size - tailLength, tailLength);
  const length = footerLength(tail, name);
  if (!(length > 0 && length + ARROW_FILE_TRAILER_BYTES <= size)) throw corrupt(name, `footer length ${length} does not fit`);
  if (length + ARROW_FILE_TRAILER_BYTES > tailLength) {
    const more = await read(size - ARROW_FILE_TRAILER_BYTES - length, length + ARROW_FILE_TRAILER_BYTES - tailLength);
    tail = concatBytes([more, tail]);
  }
  const footer = decodeFooter(tail.subarray(tail.length - ARROW_FILE_TRAILER_BYTES - length, tail.length - ARROW_FILE_TRAILER_BYTES), name);
  const meta = footer.metadata;
  const format = Number(meta.get(META_FORMAT));
  if (meta.get(META_FORMAT) !== String(format) || (format !== TABLE_FORMAT_V2 && format !== TABLE_FORMAT_V3))
    throw corrupt(name, `footer says format ${meta.get(META_FORMAT) ?? 'none'}, not ${TABLE_FORMAT_V2} or ${TABLE_FORMAT_V3}`);
  const gens = /^(\d+)-(\d+)$/.exec(meta.get(META_GENERATIONS) ?? '');
  if (!gens) throw corrupt(name, 'no generation range in the footer');
  let described: Omit<BlockInfo, 'offset' | 'length'>[];
  let bloom: BloomFilter | undefined;
  try {
    described = decodeBlockIndex(fromBase64(meta.get(META_BLOCKS) ?? ''), name);
    const b = meta.get(META_BLOOM);
    bloom = b ? BloomFilter.decode(fromBase64(b)) : undefined;
  } catch (e) {
    if (e instanceof MemWalError) throw e;
    throw corrupt(name, `its index is not base64 (${String(e)})`);
  }
  const footerAt = size - ARROW_FILE_TRAILER_BYTES - length;
  let area = { areaLength: 0, areaCrc: 0, sections: [] as SectionInfo[] };
  if (format === TABLE_FORMAT_V3) {
    const dir = meta.get(META_SECTIONS);
    if (dir === undefined) throw corrupt(name, 'format 3 without a section directory');
    let dirBytes: Uint8Array;
    try {
      dirBytes = fromBase64(dir);
    } catch (e) {
      throw corrupt(name, `its section directory is not base64 (${String(e)})`);
    }
    area = decodeSectionDirectory(dirBytes, name);
  }
  const sectionAreaStart = footerAt - area.areaLength;
  const ranges = footer.blocks;
  if (ranges.length !== described.length) throw corrupt(name, `${ranges.length} record batches but ${described.length} indexed blocks`);
  const blocks = ranges.map((r, i) => ({ ...described[i]!, offset: r.offset, length: r.metaDataLength + r.bodyLength }));
  const dataEnd = blocks.reduce((end, b) => Math.max(end, b.offset + b.length), 0);
  if (sectionAreaStart < dataEnd) throw corrupt(name, `its ${area.areaLength}-byte section area overlaps its blocks`);
  if (checksum !== undefined) {
    const tailStart = size - tail.length;
    const span = (from: number, to: number): Uint8Array | Promise<Uint8Array> =>
      to <= from ? new Uint8Array(0) : from >= tailStart ? tail.subarray(from - tailStart, to - tailStart) : read(from, to - from);
    let crc = 0;
    let at = 0;
    for (const b of blocks) {
      if (b.offset < at || b.offset + b.length > size)
        throw corrupt(name, `block at byte ${b.offset} overlaps another or runs past the end`);
      crc = crc32cCombine(crc32c(await span(at, b.offset), crc), b.crc, b.length);
      at = b.offset + b.length;
    }
    // The section area counts by its own CRC (not read here: a query reads a section when it needs it).
    crc = crc32cCombine(crc32c(await span(at, sectionAreaStart), crc), area.areaCrc, area.areaLength);
    const whole = (crc32c(await span(footerAt, size), crc) >>> 0).toString(16).padStart(8, '0');
    if (whole !== checksum) {
      throw corrupt(name, `its footer, block index or Bloom filter is damaged (CRC-32C ${whole} from them, ${checksum} in the manifest)`);
    }
  }
  const head = tableToIPC(new Table(schema), 'stream');
  return {
    blocks,
    bloom,
    minGeneration: Number(gens[1]),
    maxGeneration: Number(gens[2]),
    schema,
    streamHead: head.subarray(0, head.length - EOS.length),
    footerBytes: length + (bloom?.bits.length ?? 0),
    format,
    sections: area.sections,
    sectionAreaStart,
  };
}

/** Section `s` of `index` from its bytes (one ranged read), checked against its CRC: `Corruption` naming the file and section. */
export function checkSection(name: string, index: TableIndex, s: SectionInfo, bytes: Uint8Array): Uint8Array {
  if (bytes.length !== s.length || crc32c(bytes) !== s.crc)
    throw corrupt(name, `index section ${s.kind} ${s.name} (at byte ${index.sectionAreaStart + s.offset}) fails its checksum`);
  return bytes;
}

/**
 * Decodes block `i` from its bytes (one ranged read), checking its CRC. Throws `Corruption`. The
 * columns are views of `bytes` (copied once only when the body is not 8-byte aligned).
 */
export function decodeBlock(name: string, index: TableIndex, i: number, bytes: Uint8Array): RecordBatch {
  const info = index.blocks[i]!;
  if (bytes.length !== info.length || crc32c(bytes) !== info.crc)
    throw corrupt(name, `block ${i} (at byte ${info.offset}) fails its checksum`);
  try {
    const batch = loadBlock(index.schema, bytes);
    if (batch) {
      if (batch.numRows !== info.rows) throw new Error(`${batch.numRows} rows, expected ${info.rows}`);
      return batch;
    }
    const t = tableFromIPC(concatBytes([index.streamHead, bytes, EOS])) as Table;
    if (t.batches.length !== 1 || t.numRows !== info.rows) throw new Error(`${t.numRows} rows, expected ${info.rows}`);
    return t.batches[0]!;
  } catch (e) {
    throw corrupt(name, `block ${i} does not decode (${String(e)})`);
  }
}

/**
 * A record-batch message (`bytes`: continuation marker, length, Message FlatBuffer, body) as a
 * batch of `schema` whose buffers are views of the body, or undefined when a column's type is one
 * this loader leaves to apache-arrow (unions, views, dictionaries, null) or the body is
 * compressed. Throws an Error on anything out of bounds.
 */
function loadBlock(schema: Schema, bytes: Uint8Array): RecordBatch | undefined {
  if (!schema.fields.every((f) => loadable(f.type))) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const continued = view.getInt32(0, true) === -1;
  const prefix = continued ? 8 : 4;
  const metaLength = view.getInt32(continued ? 4 : 0, true);
  if (!(metaLength > 0 && prefix + metaLength <= bytes.length)) throw new Error(`message length ${metaLength} does not fit`);
  const header = readRecordBatchHeader(bytes.subarray(prefix, prefix + metaLength));
  if (header.compressed) return undefined;
  let body = bytes.subarray(prefix + metaLength);
  if (body.byteOffset % 8 !== 0) body = body.slice();
  const children = new BodyLoader(body, header).many(schema.fields.map((f) => f.type));
  return makeBatch(schema, children, header.length);
}

/** Types {@link BodyLoader} builds (the rest decode through apache-arrow). */
function loadable(type: DataType): boolean {
  switch (type.typeId) {
    case Type.Int:
    case Type.Float:
    case Type.Bool:
    case Type.Decimal:
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
    case Type.Interval:
    case Type.Duration:
    case Type.FixedSizeBinary:
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
      return true;
    case Type.List:
    case Type.LargeList:
    case Type.FixedSizeList:
    case Type.Struct:
    case Type.Map:
      return type.children.every((c) => loadable(c.type));
    default:
      return false;
  }
}

/** Arrow's column layout over one record batch's nodes and buffers, depth first (as Arrow's VectorLoader). */
class BodyLoader {
  private node = 0;
  private buffer = 0;

  constructor(
    private readonly body: Uint8Array,
    private readonly header: RecordBatchHeader,
  ) {}

  many(types: readonly DataType[]): Data[] {
    return types.map((t) => this.one(t));
  }

  private one(type: DataType): Data {
    const node = this.header.nodes[this.node++];
    if (!node) throw new Error('fewer field nodes than columns');
    const { length, nullCount } = node;
    const validity = this.next();
    const nullBitmap = nullCount > 0 ? validity : new Uint8Array(0);
    const base = { type, length, nullCount, nullBitmap } as const;
    switch (type.typeId) {
      case Type.Utf8:
      case Type.LargeUtf8:
      case Type.Binary:
      case Type.LargeBinary:
        return makeData({ ...base, valueOffsets: this.next(), data: this.next() } as never);
      case Type.List:
      case Type.LargeList:
      case Type.Map:
        return makeData({ ...base, valueOffsets: this.next(), child: this.one(type.children[0]!.type) } as never);
      case Type.FixedSizeList:
        return makeData({ ...base, child: this.one(type.children[0]!.type) } as never);
      case Type.Struct:
        return makeData({ ...base, children: this.many(type.children.map((c) => c.type)) } as never);
      default:
        return makeData({ ...base, data: this.next() } as never);
    }
  }

  /** The next body buffer, as a view. */
  private next(): Uint8Array {
    const b = this.header.buffers[this.buffer++];
    if (!b) throw new Error('fewer buffers than the columns need');
    if (b.offset + b.length > this.body.length) throw new Error(`buffer at ${b.offset} (${b.length} bytes) is outside the body`);
    return this.body.subarray(b.offset, b.offset + b.length);
  }
}
