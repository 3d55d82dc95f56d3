// Arrow IPC from a client the sink does not trust (docs/scale-out.md "Limits"): the stream's
// structure is checked against the body before anything is decoded — every message inside the
// body, every buffer inside its message, every buffer long enough for the rows its field node
// declares, every nested node exactly as long as its parent gives it, the row count equal to the
// header's — so decoding allocates no more than a small multiple of the body; then the decoded values are checked for what Lance refuses (nulls in
// non-nullable fields but under a null parent, offsets out of order, invalid UTF-8). Also the column rules Lance imposes
// on names, types and nesting, a row's null width (`rowBytes`, bounded by the sink's maxRowBytes),
// the stripping of field and schema metadata (`withoutMetadata`: a store sends values, never
// encodings), and `takeRows`, the one copy the sink makes. Node only.

import { MemWalError } from '../util/errors.js';
import {
  type ArrowData,
  type ArrowField,
  type ArrowRecordBatch,
  type ArrowSchema,
  type ArrowTable,
  type ArrowType,
  arrow,
} from './lancedb.js';

const { Type } = arrow;

/** Deepest nesting a column may have (a struct of a list of … counts one level each). */
export const MAX_NESTING_DEPTH = 16;

/** Longest time zone a timestamp column may name (the longest IANA name has 32 characters). */
export const MAX_TIME_ZONE_LENGTH = 64;

/**
 * Longest name a column or nested field may have, in UTF-8 bytes. Names are kept in the table's
 * schema, which Lance writes into every manifest and data file: every later commit of every store
 * carries them (100 columns of 100 kB names made a victim's 1-row apply 20× slower and each one
 * write 15 MB, measured 2026-12-07).
 */
export const MAX_NAME_BYTES = 256;

/** Column names Lance keeps for itself. */
const LANCE_RESERVED = new Set(['_rowid', '_rowaddr', '_rowoffset', '_row_created_at_version', '_row_last_updated_at_version']);

const invalid = (message: string): MemWalError => new MemWalError('InvalidArgument', message);

/** A user-given name as it may appear in a message: quoted, control characters escaped, cut at 60. */
export function quote(name: unknown): string {
  const s = JSON.stringify(String(name));
  return s.length > 62 ? `${s.slice(0, 60)}…"` : s;
}

// ------------------------------------------------------------------ columns Lance can take

/**
 * Throws `InvalidArgument` unless `field` (at `depth`, 1 for a column) is one Lance stores: a
 * non-empty name of at most {@link MAX_NAME_BYTES} bytes without `.` (Lance's path separator), `` ` ``
 * or control characters, not one of Lance's reserved names; a type among booleans, integers,
 * floats, decimals (128/256 bit, within Arrow's precision and scale), strings, binaries, dates,
 * times, timestamps (a time zone without ":"), durations (dates, times, timestamps and durations
 * in one of Arrow's units), lists, fixed-size lists of fixed-width scalars and non-empty structs; nesting
 * at most {@link MAX_NESTING_DEPTH} deep: what LanceDB keeps without refusing or panicking.
 * Returns the number of fields it holds, itself included.
 */
export function checkField(field: ArrowField, depth = 1, path = ''): number {
  const name: unknown = field.name;
  const here = path === '' ? quote(name) : `${path}.${quote(name)}`;
  if (typeof name !== 'string' || name === '') throw invalid(`schema: a column${path ? ` inside ${path}` : ''} has an empty name`);
  if (utf8Bytes(name) > MAX_NAME_BYTES) throw invalid(`schema: column ${here}: names may be at most ${MAX_NAME_BYTES} bytes (UTF-8)`);
  if ([...name].some((c) => c === '.' || c === '`' || c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    throw invalid(`schema: column ${here}: names may not hold ".", "\`" or control characters`);
  }
  if (depth === 1 && LANCE_RESERVED.has(name)) throw invalid(`schema: column ${here} is a name Lance reserves`);
  if (depth > MAX_NESTING_DEPTH) throw invalid(`schema: column ${here} is nested deeper than ${MAX_NESTING_DEPTH} levels`);
  const t = field.type as ArrowType & Record<string, number>;
  switch (t.typeId) {
    case Type.Bool:
    case Type.Int:
    case Type.Float:
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
      return 1;
    case Type.Date:
      // Arrow's units; LanceDB panics on any other number.
      if (t.unit !== arrow.DateUnit.DAY && t.unit !== arrow.DateUnit.MILLISECOND) throw badUnit(here, t.unit!);
      return 1;
    case Type.Duration:
      if (!isTimeUnit(t.unit!)) throw badUnit(here, t.unit!);
      return 1;
    case Type.Timestamp: {
      if (!isTimeUnit(t.unit!)) throw badUnit(here, t.unit!);
      // Lance keeps a timestamp's type as "timestamp:<unit>:<zone>" and panics on a zone holding ":".
      const zone = (t as unknown as { timezone?: string | null }).timezone ?? '';
      if (
        zone.includes(':') ||
        zone.length > MAX_TIME_ZONE_LENGTH ||
        [...zone].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)
      ) {
        throw invalid(
          `schema: column ${here}: time zone ${quote(zone)} is not one Lance can keep (an IANA name such as "Europe/Paris", or an offset without ":" such as "+0530")`,
        );
      }
      return 1;
    }
    case Type.Time: {
      if (!isTimeUnit(t.unit!)) throw badUnit(here, t.unit!);
      // Arrow's pairs: 32 bits hold seconds or milliseconds, 64 bits micro- or nanoseconds.
      const wide = t.unit === arrow.TimeUnit.MICROSECOND || t.unit === arrow.TimeUnit.NANOSECOND;
      if (t.bitWidth !== (wide ? 64 : 32))
        throw invalid(`schema: column ${here}: a ${t.bitWidth}-bit time cannot hold ${arrow.TimeUnit[t.unit!]}`);
      return 1;
    }
    case Type.Decimal: {
      if (t.bitWidth !== 128 && t.bitWidth !== 256) throw invalid(`schema: column ${here}: ${t.bitWidth}-bit decimals are not supported`);
      // Arrow's own bounds (LanceDB panics past them): 1-38 digits in 128 bits, 1-76 in 256; a scale of -128 up to the precision.
      const most = t.bitWidth === 128 ? 38 : 76;
      if (!(t.precision! >= 1 && t.precision! <= most && t.scale! >= -128 && t.scale! <= t.precision!)) {
        throw invalid(
          `schema: column ${here}: a ${t.bitWidth}-bit decimal of precision ${t.precision} and scale ${t.scale} (precision 1-${most}, scale -128 to the precision)`,
        );
      }
      return 1;
    }
    case Type.FixedSizeBinary:
      if (!(t.byteWidth! >= 1)) throw invalid(`schema: column ${here}: a fixed-size binary needs a width of at least 1`);
      return 1;
    case Type.FixedSizeList:
      if (!(t.listSize! >= 1)) throw invalid(`schema: column ${here}: a fixed-size list needs a size of at least 1`);
      // LanceDB panics on values of other items (strings, binaries) or refuses them (structs, lists).
      if (!fixedWidth(t.children[0]!.type)) {
        throw invalid(
          `schema: column ${here}: a fixed-size list's items must be of a fixed-width type (numbers, dates, times, fixed-size binaries; not booleans), got ${t.children[0]!.type}`,
        );
      }
      return 1 + checkField(t.children[0]!, depth + 1, here);
    case Type.List:
    case Type.LargeList:
      return 1 + checkField(t.children[0]!, depth + 1, here);
    case Type.Struct: {
      if (t.children.length === 0) throw invalid(`schema: column ${here} is a struct without fields`);
      const names = new Set<string>();
      let n = 1;
      for (const child of t.children) {
        if (names.has(child.name)) throw invalid(`schema: column ${here} has two fields named ${quote(child.name)}`);
        names.add(child.name);
        n += checkField(child, depth + 1, here);
      }
      return n;
    }
    default:
      throw invalid(`schema: column ${here} has type ${String(field.type)}, which a Lance table cannot hold`);
  }
}

/** Whether `unit` is one of Arrow's four time units (seconds to nanoseconds). */
const isTimeUnit = (unit: number): boolean =>
  unit === arrow.TimeUnit.SECOND ||
  unit === arrow.TimeUnit.MILLISECOND ||
  unit === arrow.TimeUnit.MICROSECOND ||
  unit === arrow.TimeUnit.NANOSECOND;

const badUnit = (here: string, unit: number): MemWalError => invalid(`schema: column ${here}: unit ${unit} is not one Arrow defines`);

const utf8Bytes = (s: string): number => new TextEncoder().encode(s).byteLength;

/**
 * Bytes one row of a column of type `t` takes when it is null — what every other store's row
 * is padded with once the column is in the table — counting a list as if it held one item (so
 * that a wide type inside a list is bounded too): fixed-width values their width, a fixed-size
 * list its size times its item's, a struct the sum of its fields, a string, binary or list its
 * offset (4 or 8 bytes, plus one item), a boolean 1. In doubles: the widths are Int32s of the
 * stream, so even 16 levels of them multiplied stay finite and compare rightly with a budget.
 */
export function rowBytes(t: ArrowType): number {
  const u = t as ArrowType & Record<string, number>;
  switch (u.typeId) {
    case Type.Bool:
      return 1;
    case Type.Utf8:
    case Type.Binary:
      return 4;
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return 8;
    case Type.List:
      return 4 + rowBytes(u.children[0]!.type);
    case Type.LargeList:
      return 8 + rowBytes(u.children[0]!.type);
    case Type.FixedSizeList:
      return Math.max(0, u.listSize!) * rowBytes(u.children[0]!.type);
    case Type.Struct:
      return (u.children as ArrowField[]).reduce((n, c) => n + rowBytes(c.type), 0);
    default:
      return byteWidth(u);
  }
}

/** `field` without metadata, at every depth (its type rebuilt with bare nested fields). */
export function bareField(field: ArrowField): ArrowField {
  return new arrow.Field(field.name, bareType(field.type), field.nullable);
}

function bareType(t: ArrowType): ArrowType {
  const children: ArrowField[] | undefined = t.children;
  if (!children || children.length === 0) return t;
  // The same class and parameters (listSize, …), its fields bare.
  return Object.assign(Object.create(Object.getPrototypeOf(t)), t, { children: children.map(bareField) });
}

/**
 * `table` with no field or schema metadata at any depth: the same data, under bare types. A
 * store sends values; what metadata would say to Lance (its encodings: compression, blobs,
 * packed structs; extension types) is the operator's (docs/scale-out.md "Values, not extras").
 */
export function withoutMetadata(table: ArrowTable): ArrowTable {
  const schema = new arrow.Schema(table.schema.fields.map(bareField));
  const retype = (data: ArrowData, type: ArrowType): ArrowData => {
    const children = (type.children ?? []).map((c: ArrowField, i: number) => retype(data.children[i]!, c.type));
    return data.clone(type, data.offset, data.length, data.nullCount, data.buffers, children);
  };
  const batches = table.batches.map((b) => {
    const d = b.data;
    const children = schema.fields.map((f, i) => retype(d.children[i]!, f.type));
    return new arrow.RecordBatch(schema, d.clone(new arrow.Struct(schema.fields), d.offset, d.length, d.nullCount, d.buffers, children));
  });
  return new arrow.Table(schema, batches);
}

// ------------------------------------------------------------------ the stream, before decoding

/** Limits of a body's schema. */
export interface StreamLimits {
  /** Most fields the schema may hold, nested ones included. */
  maxFields: number;
  /** Widest a row of the body's columns may be ({@link rowBytes}, the sink's own columns included). */
  maxRowBytes: number;
}

interface BufferRegion {
  offset: number;
  length: number;
}

interface BatchHeader {
  length: number;
  nodes: { length: number; nullCount: number }[];
  buffers: BufferRegion[];
  compression: unknown;
}

/**
 * Decodes an Arrow IPC stream of `rows` rows after checking its structure against the bytes
 * (see the file header); then checks its values ({@link checkValues}). Throws `InvalidArgument`
 * with a plain message for anything out of place. Leading record batches for which `applied`
 * holds (every row applied before: a re-sent request) are left out of the table, their values
 * unchecked: they are never written, so only the rest of the body costs a check.
 */
export function decodeStream(
  body: Uint8Array,
  rows: number,
  limits: StreamLimits,
  applied: (batch: ArrowRecordBatch) => boolean = () => false,
): ArrowTable {
  let schema: ArrowSchema | undefined;
  let total = 0;
  const reader = new arrow.MessageReader(body);
  for (;;) {
    const message = step(() => reader.next());
    if (message.done) break;
    const m = message.value;
    if (m.isSchema()) {
      if (schema) throw invalid('body: a second schema message');
      schema = step(() => m.header());
      let fields = 0;
      for (const f of schema.fields) {
        fields += checkField(f);
        if (fields > limits.maxFields) throw invalid(`schema: more than ${limits.maxFields} columns (nested fields counted)`);
      }
      const width = schema.fields.reduce((n, f) => n + rowBytes(f.type), 0);
      if (width > limits.maxRowBytes) {
        throw invalid(
          `schema: a row of this body's columns takes ${width} bytes even when null, more than the ${limits.maxRowBytes} this sink takes (maxRowBytes; fixed-size binaries and lists count their whole width)`,
        );
      }
    } else if (m.isRecordBatch()) {
      if (!schema) throw invalid('body: a record batch before the schema');
      const header = step(() => m.header()) as unknown as BatchHeader;
      const batchBody = step(() => reader.readMessageBody(m.bodyLength));
      checkBatch(schema, header, batchBody);
      total += header.length;
      if (total > rows) throw invalid(`body: more than the ${rows} rows header memwal-rows declares`);
    } else {
      throw invalid('body: only a schema and record batches are accepted (no dictionary batches)');
    }
  }
  if (!schema) throw invalid('body: not an Arrow IPC stream (no schema)');
  if (total !== rows) throw invalid(`body: ${total} rows, header memwal-rows says ${rows}`);
  const table = step(() => arrow.tableFromIPC(body));
  let skip = 0;
  while (skip < table.batches.length && applied(table.batches[skip]!)) skip++;
  let changed = skip > 0;
  const batches = table.batches.slice(skip).map((batch) => {
    const children = schema!.fields.map((f, i) => checkValues(f, batch.data.children[i]!, quote(f.name)));
    if (children.every((c, i) => c === batch.data.children[i])) return batch;
    changed = true;
    const d = batch.data;
    return new arrow.RecordBatch(table.schema, d.clone(d.type, d.offset, d.length, d.nullCount, d.buffers, children));
  });
  return changed ? new arrow.Table(table.schema, batches) : table;
}

/** `read()`, with whatever the Arrow reader throws on bytes that are not a stream turned into a refusal. */
function step<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof MemWalError) throw e;
    const message = String((e as Error)?.message ?? e);
    const detail = e instanceof RangeError && /call stack/i.test(message) ? 'nested too deeply' : message.slice(0, 200);
    throw invalid(`body: not an Arrow IPC stream (${detail})`);
  }
}

/**
 * Whether `t` may be a fixed-size list's item: a type of one whole number of bytes (numbers,
 * dates, times, fixed-size binaries). Not a fixed-size list: LanceDB panics on some lists of them
 * (FixedSizeList(128) of FixedSizeList(2, Int8) with values); not a boolean: LanceDB panics on some
 * sizes of those (4,097 and 65,536 items, not 4,096 or 4,104; measured here with one row).
 */
function fixedWidth(t: ArrowType): boolean {
  return byteWidth(t as ArrowType & Record<string, number>) > 0;
}

/** Bytes one value of a fixed-width type takes; 0 for the other types. */
function byteWidth(t: ArrowType & Record<string, number>): number {
  switch (t.typeId) {
    case Type.Int:
    case Type.Decimal:
    case Type.Time:
      return t.bitWidth! / 8;
    case Type.Float:
      return [2, 4, 8][t.precision!]!;
    case Type.Date:
      return t.unit === arrow.DateUnit.DAY ? 4 : 8;
    case Type.Timestamp:
    case Type.Duration:
      return 8;
    case Type.FixedSizeBinary:
      return t.byteWidth!;
    default:
      return 0;
  }
}

const isSize = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

/**
 * One record batch's field nodes and buffers, walked in the order the IPC format lays them out
 * (depth first, a validity buffer first for each node), against the schema and the batch's body.
 */
function checkBatch(schema: ArrowSchema, header: BatchHeader, body: Uint8Array): void {
  if (header.compression != null) throw invalid('body: compressed record batches are not accepted');
  if (!isSize(header.length)) throw invalid(`body: a record batch declares ${header.length} rows`);
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let nodeAt = 0;
  let bufferAt = 0;
  const buffer = (column: string): BufferRegion => {
    const b = header.buffers[bufferAt++];
    if (!b) throw invalid(`body: column ${column}: the record batch has fewer buffers than its schema needs`);
    if (!isSize(b.offset) || !isSize(b.length) || b.offset + b.length > body.byteLength) {
      throw invalid(`body: column ${column}: a buffer lies outside its record batch`);
    }
    return b;
  };
  const need = (b: BufferRegion, bytes: number, column: string, rows: number, what: string): void => {
    if (b.length < bytes) {
      throw invalid(`body: column ${column}: its ${what} buffer holds ${b.length} bytes, ${rows} rows need ${bytes}`);
    }
  };
  /** The `i`-th offset of an offsets buffer (Int32, or Int64 when `wide`). */
  const offsetAt = (b: BufferRegion, i: number, wide: boolean): number =>
    wide ? Number(view.getBigInt64(b.offset + i * 8, true)) : view.getInt32(b.offset + i * 4, true);
  /** Checks an offsets buffer of `rows` rows pointing into `target` bytes (or child rows); returns the last offset. */
  const offsets = (column: string, rows: number, wide: boolean): number => {
    const b = buffer(column);
    if (rows === 0) return 0;
    need(b, (rows + 1) * (wide ? 8 : 4), column, rows, 'offsets');
    const first = offsetAt(b, 0, wide);
    const last = offsetAt(b, rows, wide);
    if (!(first >= 0 && last >= first && Number.isSafeInteger(last))) throw invalid(`body: column ${column}: its offsets run backwards`);
    return last;
  };
  /**
   * `rows`: what its batch or parent holds for it, which its node must declare exactly — a
   * struct's fields its length, a list's items its last offset, a fixed-size list's items its
   * length × size (what apache-arrow writes). Longer children were taken once: LanceDB refused the
   * structs (a 500) and the value checks walked every declared slot (a 4 MB body of 14 nested
   * structs of 32M rows under one null row: 54 s of the event loop).
   */
  const visit = (field: ArrowField, column: string, rows: number): void => {
    const node = header.nodes[nodeAt++];
    if (!node) throw invalid(`body: column ${column}: the record batch has fewer field nodes than its schema needs`);
    const { length, nullCount } = node;
    if (!isSize(length) || !isSize(nullCount) || nullCount > length) throw invalid(`body: column ${column}: a malformed field node`);
    if (length !== rows) {
      throw invalid(`body: column ${column} has ${length} rows where its record batch or parent has ${rows}`);
    }
    const validity = buffer(column);
    if (nullCount > 0) need(validity, Math.ceil(length / 8), column, length, 'validity');
    const t = field.type as ArrowType & Record<string, number>;
    switch (t.typeId) {
      case Type.Bool:
        need(buffer(column), Math.ceil(length / 8), column, length, 'data');
        return;
      case Type.Utf8:
      case Type.Binary:
      case Type.LargeUtf8:
      case Type.LargeBinary: {
        const last = offsets(column, length, t.typeId === Type.LargeUtf8 || t.typeId === Type.LargeBinary);
        const data = buffer(column);
        if (last > data.length) throw invalid(`body: column ${column}: its offsets point past its data buffer`);
        return;
      }
      case Type.List:
      case Type.LargeList: {
        const last = offsets(column, length, t.typeId === Type.LargeList);
        visit(t.children[0]!, `${column}.${quote(t.children[0]!.name)}`, last);
        return;
      }
      case Type.FixedSizeList:
        visit(t.children[0]!, `${column}.${quote(t.children[0]!.name)}`, length * t.listSize!);
        return;
      case Type.Struct:
        for (const child of t.children) visit(child, `${column}.${quote(child.name)}`, length);
        return;
      default:
        need(buffer(column), length * byteWidth(t), column, length, 'data');
    }
  };
  for (const f of schema.fields) visit(f, quote(f.name), header.length);
  if (nodeAt !== header.nodes.length || bufferAt !== header.buffers.length) {
    throw invalid('body: a record batch has more field nodes or buffers than its schema');
  }
}

// ------------------------------------------------------------------ the values, after decoding

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Throws `InvalidArgument` for what Lance would refuse in decoded, structurally sound data: a null
 * in a non-nullable field, offsets that run backwards, strings that are not UTF-8 or cut a
 * character. A null in a non-nullable field is allowed where an enclosing field is null (`hidden`:
 * 1 for such slots) — memwal writes the fields of a null struct or list as nulls too — and such a
 * field is returned without its validity (its values there are never read), since Lance refuses
 * nulls in a non-nullable field even under a null parent. Returns `data`, or its copy so changed.
 */
export function checkValues(field: ArrowField, data: ArrowData, column: string, hidden?: Uint8Array): ArrowData {
  let out = data;
  if (!field.nullable && data.nullCount > 0) {
    for (let i = 0; i < data.length; i++) {
      if (!data.getValid(i) && !hidden?.[i]) throw invalid(`column ${column} is not nullable but holds ${data.nullCount} null(s)`);
    }
    const b = data.buffers;
    out = data.clone(data.type, data.offset, data.length, 0, [b[0], b[1], undefined, b[3]] as never);
  }
  const t = field.type;
  const offsets = data.valueOffsets as Int32Array | BigInt64Array | undefined;
  if (offsets && data.length > 0) {
    for (let i = 0; i < data.length; i++) {
      if (offsets[i + 1]! < offsets[i]!) throw invalid(`body: column ${column}: its offsets run backwards`);
    }
  }
  if ((t.typeId === Type.Utf8 || t.typeId === Type.LargeUtf8) && data.length > 0) {
    const values = data.values as Uint8Array;
    const first = Number(offsets![0]!);
    const last = Number(offsets![data.length]!);
    try {
      utf8.decode(values.subarray(first, last));
    } catch {
      throw invalid(`body: column ${column} holds bytes that are not UTF-8`);
    }
    for (let i = 1; i < data.length; i++) {
      const at = Number(offsets![i]!);
      if (at < last && (values[at]! & 0xc0) === 0x80) throw invalid(`body: column ${column}: a string boundary cuts a character`);
    }
  }
  const children: ArrowField[] = t.children ?? [];
  if (children.length === 0) return out;
  const under = childrenHidden(data, hidden);
  const checked = children.map((child, i) => checkValues(child, data.children[i]!, `${column}.${quote(child.name)}`, under));
  if (checked.every((c, i) => c === data.children[i])) return out;
  return out.clone(out.type, out.offset, out.length, out.nullCount, out.buffers, checked);
}

/**
 * Which child slots of nested `data` lie under a null — the slot of `data` that holds them null,
 * or hidden itself; undefined when none does.
 */
function childrenHidden(data: ArrowData, hidden: Uint8Array | undefined): Uint8Array | undefined {
  if (data.nullCount === 0 && !hidden) return undefined;
  const child = data.children[0]!;
  const out = new Uint8Array(child.length);
  /** Slot `i` of `data` holds child slots [from, to). */
  const mark = (i: number, from: number, to: number): void => {
    if (hidden?.[i] || !data.getValid(i)) out.fill(1, Math.max(0, from), Math.min(child.length, to));
  };
  const offsets = data.valueOffsets as Int32Array | BigInt64Array | undefined;
  for (let i = 0; i < data.length; i++) {
    if (data.type.typeId === Type.Struct) mark(i, i, i + 1);
    else if (data.type.typeId === Type.FixedSizeList) {
      const size = (data.type as ArrowType & { listSize: number }).listSize;
      mark(i, i * size, (i + 1) * size);
    } else if (offsets) mark(i, Number(offsets[i]!), Number(offsets[i + 1]!));
  }
  return out;
}

// ------------------------------------------------------------------ taking rows

/**
 * The rows `rows` (ascending indices) of decoded data `data` (offset 0, as decoded), copied into
 * new buffers: values, validity, offsets and children alike.
 */
export function takeRows(data: ArrowData, rows: Int32Array): ArrowData {
  if (data.offset !== 0) throw new Error('takeRows: sliced data (only decoded data, at offset 0, is taken)');
  const n = rows.length;
  const t = data.type as ArrowType & Record<string, number>;
  let nullCount = 0;
  let nullBitmap: Uint8Array | undefined;
  if (data.nullCount > 0) {
    nullBitmap = new Uint8Array(Math.ceil(n / 8));
    for (let k = 0; k < n; k++) {
      if (data.getValid(rows[k]!)) nullBitmap[k >> 3]! |= 1 << (k & 7);
      else nullCount += 1;
    }
  }
  const base = { type: t, length: n, nullCount, ...(nullBitmap ? { nullBitmap } : {}) };
  switch (t.typeId) {
    case Type.Bool: {
      const from = data.values as Uint8Array;
      const bits = new Uint8Array(Math.ceil(n / 8));
      for (let k = 0; k < n; k++) if ((from[rows[k]! >> 3]! >> (rows[k]! & 7)) & 1) bits[k >> 3]! |= 1 << (k & 7);
      return arrow.makeData({ ...base, data: bits } as never);
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary:
    case Type.List:
    case Type.LargeList: {
      const from = data.valueOffsets as Int32Array | BigInt64Array;
      const wide = from instanceof BigInt64Array;
      const offsets = wide ? new BigInt64Array(n + 1) : new Int32Array(n + 1);
      const spans: number[] = [];
      let total = 0;
      for (let k = 0; k < n; k++) {
        const start = Number(from[rows[k]!]!);
        const end = Number(from[rows[k]! + 1]!);
        spans.push(start, end);
        total += end - start;
        offsets[k + 1] = (wide ? BigInt(total) : total) as never;
      }
      if (t.typeId === Type.List || t.typeId === Type.LargeList) {
        const childRows = new Int32Array(total);
        let at = 0;
        for (let s = 0; s < spans.length; s += 2) for (let r = spans[s]!; r < spans[s + 1]!; r++) childRows[at++] = r;
        return arrow.makeData({ ...base, valueOffsets: offsets, child: takeRows(data.children[0]!, childRows) } as never);
      }
      const values = data.values as Uint8Array;
      const bytes = new Uint8Array(total);
      let at = 0;
      for (let s = 0; s < spans.length; s += 2) {
        bytes.set(values.subarray(spans[s]!, spans[s + 1]!), at);
        at += spans[s + 1]! - spans[s]!;
      }
      return arrow.makeData({ ...base, valueOffsets: offsets, data: bytes } as never);
    }
    case Type.FixedSizeList: {
      const size = t.listSize!;
      const childRows = new Int32Array(n * size);
      for (let k = 0; k < n; k++) for (let j = 0; j < size; j++) childRows[k * size + j] = rows[k]! * size + j;
      return arrow.makeData({ ...base, child: takeRows(data.children[0]!, childRows) } as never);
    }
    case Type.Struct:
      return arrow.makeData({ ...base, children: data.children.map((c) => takeRows(c, rows)) } as never);
    default: {
      const from = data.values as unknown as { subarray(a: number, b: number): ArrayLike<number> } & ArrayLike<number>;
      const stride = data.stride;
      const values = new (from.constructor as new (n: number) => { set(a: ArrayLike<number>, at: number): void })(n * stride);
      for (let k = 0; k < n; k++) values.set(from.subarray(rows[k]! * stride, (rows[k]! + 1) * stride), k * stride);
      return arrow.makeData({ ...base, data: values } as never);
    }
  }
}
