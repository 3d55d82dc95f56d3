// Reads what memwal needs from Arrow IPC FlatBuffers — from a file footer the record-batch blocks
// and the schema's custom metadata (Arrow's File.fbs / Schema.fbs), from a record-batch message
// its field nodes and buffers (Message.fbs) — so that table files are indexed and their blocks
// located without apache-arrow internals. Pure; any runtime.

/** A record batch's place in the file (Arrow's `Block`). */
export interface FooterBlock {
  offset: number;
  metaDataLength: number;
  bodyLength: number;
}

/** What `readFooter` returns. */
export interface FooterInfo {
  blocks: FooterBlock[];
  metadata: Map<string, string>;
}

/** Bounds-checked little-endian reads over one buffer. */
class Fb {
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private need(at: number, size: number): void {
    if (!(at >= 0 && at + size <= this.bytes.length))
      throw new Error(`footer: read of ${size} bytes at ${at} is outside its ${this.bytes.length}`);
  }

  u8(at: number): number {
    this.need(at, 1);
    return this.bytes[at]!;
  }
  u16(at: number): number {
    this.need(at, 2);
    return this.view.getUint16(at, true);
  }

  u32(at: number): number {
    this.need(at, 4);
    return this.view.getUint32(at, true);
  }

  i32(at: number): number {
    this.need(at, 4);
    return this.view.getInt32(at, true);
  }

  i64(at: number): number {
    this.need(at, 8);
    const v = this.view.getBigInt64(at, true);
    if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`footer: ${v} is not a safe offset`);
    return Number(v);
  }

  /** Where a table's field `index` lives, or undefined when it is absent (default). */
  field(table: number, index: number): number | undefined {
    const vtable = table - this.i32(table);
    const vtableSize = this.u16(vtable);
    const slot = 4 + 2 * index;
    if (slot >= vtableSize) return undefined;
    const off = this.u16(vtable + slot);
    return off === 0 ? undefined : table + off;
  }

  /** Follow the offset stored at `at` (a table, vector or string). */
  deref(at: number): number {
    return at + this.u32(at);
  }

  string(at: number): string {
    const len = this.u32(at);
    this.need(at + 4, len);
    return new TextDecoder().decode(this.bytes.subarray(at + 4, at + 4 + len));
  }
}

/**
 * The record-batch blocks and schema metadata of an Arrow IPC file footer (the FlatBuffer between
 * the data and the trailing length + `ARROW1`). Throws an Error on anything out of bounds.
 */
export function readFooter(footer: Uint8Array): FooterInfo {
  const fb = new Fb(footer);
  const root = fb.deref(0);
  // Footer: 0 version, 1 schema, 2 dictionaries, 3 recordBatches, 4 custom_metadata.
  const blocks: FooterBlock[] = [];
  const batchesAt = fb.field(root, 3);
  if (batchesAt !== undefined) {
    const vec = fb.deref(batchesAt);
    const n = fb.u32(vec);
    for (let i = 0; i < n; i++) {
      const b = vec + 4 + 24 * i; // struct Block { offset: long; metaDataLength: int; (pad); bodyLength: long }
      blocks.push({ offset: fb.i64(b), metaDataLength: fb.i32(b + 8), bodyLength: fb.i64(b + 16) });
    }
  }
  const metadata = new Map<string, string>();
  const schemaAt = fb.field(root, 1);
  if (schemaAt !== undefined) {
    const schema = fb.deref(schemaAt);
    // Schema: 0 endianness, 1 fields, 2 custom_metadata, 3 features.
    const metaAt = fb.field(schema, 2);
    if (metaAt !== undefined) {
      const vec = fb.deref(metaAt);
      const n = fb.u32(vec);
      for (let i = 0; i < n; i++) {
        const kv = fb.deref(vec + 4 + 4 * i);
        const k = fb.field(kv, 0);
        const v = fb.field(kv, 1);
        if (k !== undefined) metadata.set(fb.string(fb.deref(k)), v === undefined ? '' : fb.string(fb.deref(v)));
      }
    }
  }
  return { blocks, metadata };
}

/** One field node of a record batch (Arrow's `FieldNode`). */
export interface FieldNode {
  length: number;
  nullCount: number;
}

/** One buffer of a record batch's body (Arrow's `Buffer`): bytes from the start of the body. */
export interface BodyBuffer {
  offset: number;
  length: number;
}

/** What `readRecordBatchHeader` returns. */
export interface RecordBatchHeader {
  length: number;
  nodes: FieldNode[];
  buffers: BodyBuffer[];
  /** The body is compressed (memwal never writes that; a reader falls back to apache-arrow). */
  compressed: boolean;
}

/** Arrow's `MessageHeader` union tag of a record batch. */
const HEADER_RECORD_BATCH = 3;

/**
 * The row count, field nodes and body buffers of an Arrow IPC record-batch message (`message`:
 * the Message FlatBuffer, without the continuation marker and length). Throws an Error when it is
 * not a record batch or anything is out of bounds.
 */
export function readRecordBatchHeader(message: Uint8Array): RecordBatchHeader {
  const fb = new Fb(message);
  const root = fb.deref(0);
  // Message: 0 version, 1 header_type, 2 header, 3 bodyLength, 4 custom_metadata.
  const typeAt = fb.field(root, 1);
  const headerAt = fb.field(root, 2);
  if (typeAt === undefined || fb.u8(typeAt) !== HEADER_RECORD_BATCH || headerAt === undefined)
    throw new Error('not a record batch message');
  const rb = fb.deref(headerAt);
  // RecordBatch: 0 length, 1 nodes, 2 buffers, 3 compression, 4 variadicBufferCounts.
  const lengthAt = fb.field(rb, 0);
  const pairs = (index: number): [number, number][] => {
    const at = fb.field(rb, index);
    if (at === undefined) return [];
    const vec = fb.deref(at);
    const n = fb.u32(vec);
    const out: [number, number][] = [];
    for (let i = 0; i < n; i++) out.push([fb.i64(vec + 4 + 16 * i), fb.i64(vec + 12 + 16 * i)]); // two longs per struct
    return out;
  };
  return {
    length: lengthAt === undefined ? 0 : fb.i64(lengthAt),
    nodes: pairs(1).map(([length, nullCount]) => ({ length, nullCount })),
    buffers: pairs(2).map(([offset, length]) => ({ offset, length })),
    compressed: fb.field(rb, 3) !== undefined,
  };
}
