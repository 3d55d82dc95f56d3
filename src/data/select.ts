// Row selection and projection: gather chosen rows of record batches into compact new batches
// (scan, flush dedup, compaction of sparse slices) and project columns. Any runtime.

import { Data, RecordBatch, Schema, Struct, Type, makeBuilder, makeData, makeVector } from 'apache-arrow';
import type { DataType, Field } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import { TOMBSTONE_COLUMN } from './schema.js';
import { backingBytes, estimateBatchBytes } from './size.js';

/** A typed array of numbers or bigints, as gather writes them. */
export type AnyArray = {
  length: number;
  [i: number]: number | bigint;
  set(a: ArrayLike<number | bigint>, offset?: number): void;
  subarray(a: number, b?: number): AnyArray;
};
export type ArrayCtor = new (n: number) => AnyArray;

const EMPTY = new Uint8Array(0);
const INT32_MAX_BYTES = 2147483647;

function invalid(message: string): MemWalError {
  return new MemWalError('InvalidArgument', message);
}

const structTypes = new WeakMap<Schema, Struct>();

/** A RecordBatch that uses `schema` itself (RecordBatch's constructor would re-wrap it). */
export function makeBatch(schema: Schema, children: Data[], length: number): RecordBatch {
  let type = structTypes.get(schema);
  if (!type) structTypes.set(schema, (type = new Struct(schema.fields)));
  const batch = new RecordBatch(schema, makeData({ type, length, nullCount: 0, children }));
  (batch as { schema: Schema }).schema = schema;
  return batch;
}

// ---------------------------------------------------------------------------------------------
// Selecting rows

/** Batches of at least this many rows selected whole are passed through, not copied. */
const REUSE_MIN_ROWS = 1024;
/** Copied rows are cut into output batches of about this many rows. */
const MAX_BATCH_ROWS = 65536;

interface Sel {
  data: Data;
  /** Rows to take, in order; -1 = a null row (dictionary decode only). `null`: the range below. */
  idx: ArrayLike<number> | null;
  start: number;
  count: number;
}
interface BatchSel {
  batch: RecordBatch;
  idx: ArrayLike<number> | null;
  start: number;
  count: number;
}

export function allRows(batch: RecordBatch): BatchSel {
  return { batch, idx: null, start: 0, count: batch.numRows };
}

/**
 * Select rows from batches that all have `schema`'s layout, in order, into batches that use
 * the `schema` object. A part with `'all'` rows and at least 1,024 rows is passed through
 * without copying; everything else is copied column by column (typed-array gathers; exotic
 * types through apache-arrow's builder) and coalesced into batches of about 65,536 rows. Output
 * rows keep the order of `parts` and of each index list. Any runtime.
 */
export function concatRows(parts: { batch: RecordBatch; rows: number[] | 'all' }[], schema: Schema): RecordBatch[] {
  const out: RecordBatch[] = [];
  let pending: BatchSel[] = [];
  let pendingRows = 0;
  const flush = (): void => {
    if (pendingRows > 0) out.push(gatherBatch(schema, pending, pendingRows));
    pending = [];
    pendingRows = 0;
  };
  for (const { batch, rows } of parts) {
    if (batch.schema.fields.length !== schema.fields.length) {
      throw invalid(`concatRows: a batch has ${batch.schema.fields.length} columns, the schema ${schema.fields.length}`);
    }
    if (rows === 'all') {
      if (batch.numRows === 0) continue;
      if (batch.numRows >= REUSE_MIN_ROWS) {
        flush();
        out.push(batch.schema === schema ? batch : makeBatch(schema, batch.data.children, batch.numRows));
        continue;
      }
      pending.push(allRows(batch));
      pendingRows += batch.numRows;
    } else {
      if (rows.length === 0) continue;
      pending.push({ batch, idx: rows, start: 0, count: rows.length });
      pendingRows += rows.length;
    }
    if (pendingRows >= MAX_BATCH_ROWS) flush();
  }
  flush();
  return out;
}

/**
 * `batch` itself (re-wrapped to use `schema` when given) when its views use at least half of
 * their backing buffers, else a compact copy, so that its estimate is what keeping it costs.
 * Use it for batches decoded from a larger buffer (WAL replay). Any runtime.
 */
export function compactIfSparse(batch: RecordBatch, schema: Schema = batch.schema): RecordBatch {
  if (batch.numRows > 0 && estimateBatchBytes(batch) * 2 < backingBytes(batch)) {
    return gatherBatch(schema, [allRows(batch)], batch.numRows);
  }
  return batch.schema === schema ? batch : makeBatch(schema, batch.data.children, batch.numRows);
}

export function gatherBatch(schema: Schema, sels: BatchSel[], n: number): RecordBatch {
  const children = schema.fields.map((f, j) =>
    gather(
      f.type,
      sels.map((s) => ({ data: s.batch.data.children[j]!, idx: s.idx, start: s.start, count: s.count })),
    ),
  );
  return makeBatch(schema, children, n);
}

function getBit(bits: Uint8Array, i: number): number {
  return (bits[i >> 3]! >> (i & 7)) & 1;
}

/** Copy the selected rows of `sels` (same type) into one compact Data of `type`. */
export function gather(type: DataType, sels: Sel[]): Data {
  let n = 0;
  for (const s of sels) n += s.count;
  // Validity first: only when some source has nulls.
  let bitmap: Uint8Array = EMPTY;
  let nullCount = 0;
  if (type.typeId !== Type.Null && type.typeId !== Type.Union && sels.some((s) => s.data.nullCount > 0)) {
    bitmap = new Uint8Array((n + 7) >> 3);
    let pos = 0;
    for (const { data, idx, start, count } of sels) {
      const src = data.nullCount > 0 ? data.nullBitmap : undefined;
      for (let k = 0; k < count; k++, pos++) {
        const r = idx ? idx[k]! : start + k;
        if (!src || getBit(src, data.offset + r)) bitmap[pos >> 3]! |= 1 << (pos & 7);
        else nullCount++;
      }
    }
  }
  const children: Field[] = type.children ?? [];
  switch (type.typeId) {
    case Type.Null:
      return new Data(type, 0, n, n);
    case Type.Bool: {
      const bits = new Uint8Array((n + 7) >> 3);
      let pos = 0;
      for (const { data, idx, start, count } of sels) {
        const src = data.values as Uint8Array;
        for (let k = 0; k < count; k++, pos++) {
          if (getBit(src, data.offset + (idx ? idx[k]! : start + k))) bits[pos >> 3]! |= 1 << (pos & 7);
        }
      }
      return new Data(type, 0, n, nullCount, [undefined, bits, bitmap]);
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary: {
      const out = gatherVarWidth(type, sels, n);
      return new Data(type, 0, n, nullCount, [out.valueOffsets, out.values, bitmap]);
    }
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const large = type.typeId === Type.LargeList;
      const offsets = large ? new BigInt64Array(n + 1) : new Int32Array(n + 1);
      const childSels: Sel[] = [];
      let pos = 0;
      let total = 0;
      for (const { data, idx, start, count } of sels) {
        const so = data.valueOffsets as unknown as AnyArray;
        if (!idx) {
          const a = Number(so[start]);
          childSels.push({ data: data.children[0]!, idx: null, start: a, count: Number(so[start + count]) - a });
        }
        const childIdx: number[] = [];
        for (let k = 0; k < count; k++) {
          const r = idx ? idx[k]! : start + k;
          const a = Number(so[r]);
          const b = Number(so[r + 1]);
          if (idx) for (let c = a; c < b; c++) childIdx.push(c);
          total += b - a;
          offsets[++pos] = large ? BigInt(total) : total;
        }
        if (idx) childSels.push({ data: data.children[0]!, idx: childIdx, start: 0, count: childIdx.length });
      }
      return new Data(type, 0, n, nullCount, [offsets, undefined, bitmap], [gather(children[0]!.type, childSels)]);
    }
    case Type.FixedSizeList: {
      const size = (type as unknown as { listSize: number }).listSize;
      const childSels = sels.map(({ data, idx, start, count }): Sel => {
        if (!idx) return { data: data.children[0]!, idx: null, start: start * size, count: count * size };
        const childIdx = new Int32Array(count * size);
        for (let k = 0; k < count; k++) for (let c = 0; c < size; c++) childIdx[k * size + c] = idx[k]! * size + c;
        return { data: data.children[0]!, idx: childIdx, start: 0, count: childIdx.length };
      });
      return new Data(type, 0, n, nullCount, [undefined, undefined, bitmap], [gather(children[0]!.type, childSels)]);
    }
    case Type.Struct:
      return new Data(
        type,
        0,
        n,
        nullCount,
        [undefined, undefined, bitmap],
        children.map((c, j) =>
          gather(
            c.type,
            sels.map((s) => ({ ...s, data: s.data.children[j]! })),
          ),
        ),
      );
    case Type.Union:
    case Type.Utf8View:
    case Type.BinaryView:
    case Type.Dictionary:
      return gatherByBuilder(type, sels);
    default:
      return new Data(type, 0, n, nullCount, [undefined, gatherFixed(type, sels, n) as never, bitmap]);
  }
}

/**
 * Rows `start..start+count` of `data` (of `type`) without copying their values: the values and
 * offsets stay views of `data`'s (an Arrow IPC writer writes only the range's bytes of those, and
 * rebases offsets itself), while validity bitmaps and Bool values, which the writer would write
 * whole from bit 0 of the source, are copied to hold exactly the range. Encoded, it is byte for
 * byte what {@link gather} of the range encodes to. Undefined for the types left to `gather`
 * (unions, view types, dictionaries).
 */
export function rangeView(type: DataType, data: Data, start: number, count: number): Data | undefined {
  let bitmap: Uint8Array = EMPTY;
  let nullCount = 0;
  if (type.typeId !== Type.Null && type.typeId !== Type.Union && data.nullCount > 0) {
    bitmap = new Uint8Array((count + 7) >> 3);
    const src = data.nullBitmap!;
    for (let k = 0, r = data.offset + start; k < count; k++, r++) {
      if (getBit(src, r)) bitmap[k >> 3]! |= 1 << (k & 7);
      else nullCount++;
    }
  }
  const children: Field[] = type.children ?? [];
  switch (type.typeId) {
    case Type.Null:
      return new Data(type, 0, count, count);
    case Type.Bool: {
      const bits = new Uint8Array((count + 7) >> 3);
      const src = data.values as Uint8Array;
      for (let k = 0, r = data.offset + start; k < count; k++, r++) if (getBit(src, r)) bits[k >> 3]! |= 1 << (k & 7);
      return new Data(type, 0, count, nullCount, [undefined, bits, bitmap]);
    }
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary: {
      const offsets = (data.valueOffsets as unknown as AnyArray).subarray(start, start + count + 1);
      return new Data(type, 0, count, nullCount, [offsets as never, data.values, bitmap]);
    }
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const large = type.typeId === Type.LargeList;
      const so = data.valueOffsets as unknown as AnyArray;
      const a = Number(so[start]);
      const child = rangeView(children[0]!.type, data.children[0]!, a, Number(so[start + count]) - a);
      if (!child) return undefined;
      const offsets = large ? new BigInt64Array(count + 1) : new Int32Array(count + 1);
      for (let k = 1; k <= count; k++) offsets[k] = large ? BigInt(Number(so[start + k]) - a) : Number(so[start + k]) - a;
      return new Data(type, 0, count, nullCount, [offsets, undefined, bitmap], [child]);
    }
    case Type.FixedSizeList: {
      const size = (type as unknown as { listSize: number }).listSize;
      const child = rangeView(children[0]!.type, data.children[0]!, start * size, count * size);
      return child && new Data(type, 0, count, nullCount, [undefined, undefined, bitmap], [child]);
    }
    case Type.Struct: {
      const kids: Data[] = [];
      for (let j = 0; j < children.length; j++) {
        const kid = rangeView(children[j]!.type, data.children[j]!, start, count);
        if (!kid) return undefined;
        kids.push(kid);
      }
      return new Data(type, 0, count, nullCount, [undefined, undefined, bitmap], kids);
    }
    case Type.Union:
    case Type.Utf8View:
    case Type.BinaryView:
    case Type.Dictionary:
      return undefined;
    default: {
      const stride = data.stride;
      const values = (data.values as unknown as AnyArray).subarray(start * stride, (start + count) * stride);
      return new Data(type, 0, count, nullCount, [undefined, values as never, bitmap]);
    }
  }
}

/** Fixed-width values (stride-aware: Decimal, FixedSizeBinary, Interval). */
function gatherFixed(type: DataType, sels: Sel[], n: number): AnyArray {
  const stride = new Data(type, 0, 0).stride;
  const out = new (type.ArrayType as ArrayCtor)(n * stride);
  let pos = 0;
  for (const { data, idx, start, count } of sels) {
    const src = data.values as unknown as AnyArray;
    if (!idx) {
      out.set(src.subarray(start * stride, (start + count) * stride), pos * stride);
    } else if (stride === 1) {
      gatherFixedRuns(out, src, idx, count, pos);
    } else {
      for (let k = 0; k < count; k++) out.set(src.subarray(idx[k]! * stride, (idx[k]! + 1) * stride), (pos + k) * stride);
    }
    pos += count;
  }
  return out;
}

/** Offsets + bytes of variable-width rows; a -1 index is an empty (null) row. */
export function gatherVarWidth(type: DataType, sels: Sel[], n: number): { valueOffsets: Int32Array | BigInt64Array; values: Uint8Array } {
  let total = 0;
  for (const { data, idx, start, count } of sels) {
    const so = data.valueOffsets as unknown as AnyArray;
    if (!idx) {
      total += Number(so[start + count]) - Number(so[start]);
    } else {
      for (let k = 0; k < count; k++) {
        const r = idx[k]!;
        if (r >= 0) total += Number(so[r + 1]) - Number(so[r]);
      }
    }
  }
  const large = type.typeId === Type.LargeUtf8 || type.typeId === Type.LargeBinary;
  if (!large && total > INT32_MAX_BYTES) throw invalid(`more than 2 GiB of ${String(type)} data in one batch`);
  // 32-bit offsets are written in place (no second pass converting them); 64-bit ones as numbers, then bigints.
  const offsets = large ? new Float64Array(n + 1) : new Int32Array(n + 1);
  const values = new Uint8Array(total);
  let pos = 0;
  let row = 0;
  for (const { data, idx, start, count } of sels) {
    const so = data.valueOffsets as unknown as AnyArray;
    const src = data.values as Uint8Array;
    if (!idx) {
      const base = Number(so[start]);
      values.set(src.subarray(base, Number(so[start + count])), pos);
      for (let k = 1; k <= count; k++) offsets[row + k] = pos + Number(so[start + k]) - base;
      pos = offsets[row + count]!;
    } else if (so instanceof Int32Array && offsets instanceof Int32Array) {
      pos = gatherVarRuns(offsets, values, so, src, idx, count, row, pos);
    } else {
      for (let k = 0; k < count; k++) {
        const r = idx[k]!;
        if (r >= 0) {
          const a = Number(so[r]);
          const b = Number(so[r + 1]);
          values.set(src.subarray(a, b), pos);
          pos += b - a;
        }
        offsets[row + k + 1] = pos;
      }
    }
    row += count;
  }
  const valueOffsets = offsets instanceof Int32Array ? offsets : BigInt64Array.from(offsets, (o) => BigInt(o));
  return { valueOffsets, values };
}

/** Runs of consecutive rows shorter than this are copied value by value (a `set` costs more). */
const RUN_COPY_MIN = 16;

/**
 * `out[pos + k] = src[idx[k]]` for `k < count`: a run of at least RUN_COPY_MIN consecutive
 * source rows (ids put in order) as one `set`, shorter ones value by value.
 */
function gatherFixedRuns(out: AnyArray, src: AnyArray, idx: ArrayLike<number>, count: number, pos: number): void {
  for (let k = 0; k < count; ) {
    const r = idx[k]!;
    let end = k + 1;
    while (end < count && idx[end] === r + (end - k)) end++;
    if (end - k >= RUN_COPY_MIN) out.set(src.subarray(r, r + (end - k)), pos + k);
    else for (let j = k; j < end; j++) out[pos + j] = src[r + (j - k)]!;
    k = end;
  }
}

/**
 * The idx path of {@link gatherVarWidth} for 32-bit offsets `so`: rows `idx[0..count)` of `src`
 * appended at `values[pos]`, their end offsets at `offsets[row + 1..]`; returns the new `pos`. A
 * run of consecutive source rows is copied as one range; short values byte by byte (a `subarray`
 * and `set` per value cost more than the bytes). A -1 index is an empty row.
 */
function gatherVarRuns(
  offsets: Int32Array,
  values: Uint8Array,
  so: Int32Array,
  src: Uint8Array,
  idx: ArrayLike<number>,
  count: number,
  row: number,
  pos: number,
): number {
  for (let k = 0; k < count; ) {
    const r = idx[k]!;
    if (r < 0) {
      offsets[row + ++k] = pos;
      continue;
    }
    let end = k + 1;
    while (end < count && idx[end] === r + (end - k)) end++;
    const a = so[r]!;
    const b = so[r + (end - k)]!;
    if (b - a > 32) values.set(src.subarray(a, b), pos);
    else for (let i = a; i < b; i++) values[pos + i - a] = src[i]!;
    for (let j = k; j < end; j++) offsets[row + j + 1] = pos + so[r + (j - k) + 1]! - a;
    pos += b - a;
    k = end;
  }
  return pos;
}

/** Last resort: values through apache-arrow's Vector getter and builder. */
function gatherByBuilder(type: DataType, sels: Sel[]): Data {
  const builder = makeBuilder({ type, nullValues: [null, undefined] });
  for (const { data, idx, start, count } of sels) {
    const v = makeVector(data);
    for (let k = 0; k < count; k++) builder.append(v.get(idx ? idx[k]! : start + k));
  }
  return builder.finish().flush();
}

// ---------------------------------------------------------------------------------------------
// Projection

const projections = new WeakMap<Schema, Map<string, Schema>>();

/**
 * Keep `columns` (all when `undefined`) in the given order, without `_tombstone` when
 * `dropTombstone`, else with it appended last if the batch has it. Shares column data; the
 * projected schema object is cached per (schema, columns), so projections of batches with one
 * schema share one schema. Throws `InvalidArgument` for an unknown or repeated column. Any runtime.
 */
export function projectBatch(batch: RecordBatch, columns: string[] | undefined, dropTombstone: boolean): RecordBatch {
  const fields = batch.schema.fields;
  let names: string[];
  if (columns === undefined) {
    names = fields.map((f) => f.name).filter((name) => !dropTombstone || name !== TOMBSTONE_COLUMN);
  } else {
    if (dropTombstone && columns.includes(TOMBSTONE_COLUMN)) throw invalid(`unknown column "${TOMBSTONE_COLUMN}"`);
    names = [...columns];
    const hasTombstone = fields.some((f) => f.name === TOMBSTONE_COLUMN);
    if (!dropTombstone && hasTombstone && !names.includes(TOMBSTONE_COLUMN)) names.push(TOMBSTONE_COLUMN);
  }
  if (names.length === fields.length && names.every((name, j) => fields[j]!.name === name)) return batch;
  const idx = names.map((name, k) => {
    const j = fields.findIndex((f) => f.name === name);
    if (j < 0) throw invalid(`unknown column "${name}"`);
    if (names.indexOf(name) !== k) throw invalid(`column "${name}" is listed twice`);
    return j;
  });
  let cache = projections.get(batch.schema);
  if (!cache) projections.set(batch.schema, (cache = new Map()));
  const cacheKey = JSON.stringify(names);
  let schema = cache.get(cacheKey);
  if (!schema) cache.set(cacheKey, (schema = new Schema(idx.map((j) => fields[j]!))));
  return makeBatch(
    schema,
    idx.map((j) => batch.data.children[j]!),
    batch.numRows,
  );
}
