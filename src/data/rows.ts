// Put input -> record batches in the store's internal schema (validated, reordered, dictionary
// strings decoded, plain rows built straight into typed arrays), tombstone batches for deletes,
// and reading one row (rowObject). Plain rows are built in plain-rows.ts; row selection and
// projection live in select.ts.

import { Data, RecordBatch, Schema, Table, Type, makeVector } from 'apache-arrow';
import type { DataType, Field, Vector } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import { TOMBSTONE_COLUMN, typesEqual } from './schema.js';
import type { StoreSchema } from './schema.js';
import { allRows, compactIfSparse, gather, gatherBatch, gatherVarWidth, makeBatch, type AnyArray, type ArrayCtor } from './select.js';

export { compactIfSparse, concatRows, projectBatch } from './select.js';

import { boolData, EMPTY, invalid, type Row, rowsToBatch, unknownColumn } from './plain-rows.js';

// ---------------------------------------------------------------------------------------------
// toBatches

/**
 * Convert put input into record batches in `storeSchema.internal` (the very schema object, so batches of
 * different puts encode into one IPC stream), with `_tombstone` false when the store has one.
 * Any runtime.
 *
 * - `RecordBatch` / `Table`: columns are matched by name in any order and checked against
 *   `storeSchema.base` (types per `typesEqual`; metadata ignored). A `Dictionary<_, Utf8|LargeUtf8>`
 *   column where the schema says `Utf8`/`LargeUtf8` is decoded. A missing nullable column
 *   becomes all-null. Nullability is checked on the data: a column may be declared nullable in
 *   the input as long as it holds no null where the schema forbids one. Empty batches are
 *   dropped. A batch whose views use less than half of their backing buffers (a small slice of
 *   a big batch) is copied into compact buffers so the memtable estimate is what is resident.
 * - Plain rows (`Record<string, unknown>[]`): one batch. Accepted values per column type:
 *   Int64/Uint64 a bigint or a safe-integer number; Int8..Int32/Uint8..Uint32 an integer number
 *   (or bigint) in range; Float any number; Bool a boolean; Utf8 a string; Binary a Uint8Array;
 *   FixedSizeBinary a Uint8Array of exactly the width; Date a `Date` or epoch milliseconds;
 *   Timestamp a `Date` or epoch milliseconds (number, floored to the unit) or a bigint already
 *   in the column's unit; Time32 an integer in the unit; Time64 and Duration a bigint or
 *   safe-integer number in the unit; `null`/`undefined`/absent = null. Other types (List,
 *   Struct, Decimal, ...) go through apache-arrow's builder with the declared type, after a
 *   check that a list is an array (or a typed array), a struct an object, and each scalar
 *   inside them a value its type takes here (else the builder would coerce it).
 *
 * Throws `MemWalError('InvalidArgument')` naming the column (and row) and the reason: unknown
 * column, missing non-nullable column, type mismatch, null in a non-nullable column, a value
 * of the wrong kind or out of range. Input without rows gives no batches (`[]`): a no-op put.
 */
export function toBatches(data: RecordBatch | Table | Row[], storeSchema: StoreSchema): RecordBatch[] {
  return convertInput(data, storeSchema, 'put');
}

function convertInput(data: RecordBatch | Table | Row[], storeSchema: StoreSchema, what: 'put' | 'delete'): RecordBatch[] {
  let out: RecordBatch[];
  if (Array.isArray(data)) {
    out = data.length === 0 ? [] : [readRows(() => rowsToBatch(data, storeSchema, what), what)];
  } else if (RecordBatch.isRecordBatch(data)) {
    const b = conformBatch(data, storeSchema, what);
    out = b ? [b] : [];
  } else if (Table.isTable(data)) {
    checkColumns(data.schema, storeSchema, what);
    out = [];
    for (const batch of data.batches) {
      const b = conformBatch(batch, storeSchema, what);
      if (b) out.push(b);
    }
  } else {
    throw invalid(`${what} expects an apache-arrow RecordBatch, a Table or an array of row objects`);
  }
  return out;
}

/**
 * `build()` of plain rows. What reading the rows throws other than a MemWalError (the app's
 * getter, a Uint8Array whose buffer was transferred away) is the caller's mistake:
 * `InvalidArgument`, with the thrown error as its cause.
 */
function readRows<T>(build: () => T, what: string): T {
  try {
    return build();
  } catch (e) {
    if (e instanceof MemWalError) throw e;
    throw new MemWalError('InvalidArgument', `${what}: reading the rows failed: ${e instanceof Error ? e.message : String(e)}`, {
      cause: e,
    });
  }
}

/** Names in `input` that the store does not have, or that appear twice: InvalidArgument. */
function checkColumns(input: Schema, storeSchema: StoreSchema, what: string): Map<string, number> {
  const byName = new Map<string, number>();
  input.fields.forEach((f, j) => {
    if (byName.has(f.name)) throw invalid(`${what}: the input has two columns named "${f.name}"`);
    if (storeSchema.hidden?.has(f.name) || !storeSchema.base.fields.some((b) => b.name === f.name)) {
      throw unknownColumn(f.name, storeSchema, what);
    }
    byName.set(f.name, j);
  });
  return byName;
}

function conformBatch(batch: RecordBatch, storeSchema: StoreSchema, what: string): RecordBatch | null {
  const byName = checkColumns(batch.schema, storeSchema, what);
  const n = batch.numRows;
  const children = storeSchema.base.fields.map((field) => {
    const j = byName.get(field.name);
    if (j === undefined) {
      if (!field.nullable) throw invalid(`${what}: missing non-nullable column "${field.name}"`);
      return zeroData(field.type, n, true);
    }
    let data = batch.data.children[j]!;
    const got = batch.schema.fields[j]!.type;
    if (typesEqual(field.type, got)) {
      if (data.type !== field.type) data = data.clone(field.type);
    } else if (isStringType(field.type) && got.typeId === Type.Dictionary && isStringType(got.dictionary)) {
      data = n === 0 ? zeroData(field.type, 0, false) : decodeDictionaryStrings(data, field.type);
    } else {
      throw invalid(`${what}: column "${field.name}" has type ${String(got)}, expected ${String(field.type)}`);
    }
    checkShape(data, field.name, what);
    if (!field.nullable && n > 0 && data.nullCount > 0) {
      throw invalid(`${what}: column "${field.name}" is non-nullable but holds ${data.nullCount} null value(s)`);
    }
    return data;
  });
  if (n === 0) return null;
  if (storeSchema.hasTombstone) children.push(boolData(n, false));
  return compactIfSparse(makeBatch(storeSchema.internal, children, n));
}

/**
 * Refuses (`InvalidArgument`) a column whose `Data` apache-arrow's IPC writer cannot encode or
 * would encode as other rows, in it or any child: nulls without a validity bitmap, no values or
 * value offsets, offsets below 0, decreasing or past the values. The WAL entry
 * is encoded after the put is admitted, and an entry that cannot be encoded (a null count
 * without a bitmap) failed its append and poisoned the writer: every other put of the store
 * failed with it. O(rows) over a variable-width or list column's offsets; unions, dictionaries
 * and view types are left to the encoder.
 */
function checkShape(d: Data, column: string, what: string): void {
  const type = d.type;
  const bad = (why: string): never => {
    throw invalid(`${what}: column "${column}" (${String(type)}, ${d.length} rows) ${why}; nothing was written`);
  };
  const id = type.typeId;
  if (d.length === 0 || id === Type.Null || id === Type.Union || id === Type.Dictionary || id === Type.Utf8View || id === Type.BinaryView)
    return;
  if (d.nullCount > 0 && !(d.nullBitmap instanceof Uint8Array)) bad(`has ${d.nullCount} null(s) but no validity bitmap`);
  const values = d.values as unknown as ArrayLike<number> | undefined;
  const list = id === Type.List || id === Type.LargeList || id === Type.Map;
  if (!list && id !== Type.Struct && id !== Type.FixedSizeList && !ArrayBuffer.isView(values)) bad('has no values');
  // Fixed-width values too short for the rows read past their end as 0 (a key column so read
  // overwrote the row of key 0). apache-arrow slices these values to the rows (`stride` a row);
  // a Bool column's bits it leaves whole and indexes from `offset`. A column of nulls only may have
  // none (apache-arrow's makeData gives it none).
  if (d.nullCount === d.length) {
    // nothing of its values is read
  } else if (id === Type.Bool) {
    if (values!.length * 8 < d.offset + d.length) bad(`has ${values!.length} bytes of values for ${d.length} rows`);
  } else if (FIXED_WIDTH.has(id) && values!.length < d.length * d.stride) {
    bad(`has ${values!.length} values for ${d.length} rows of ${d.stride}`);
  }
  if (list || id === Type.Utf8 || id === Type.Binary || id === Type.LargeUtf8 || id === Type.LargeBinary) {
    const o = d.valueOffsets as unknown as ArrayLike<number | bigint> | undefined;
    if (!ArrayBuffer.isView(o)) bad('has no value offsets');
    // Fewer offsets than rows + 1 is what apache-arrow's makeData gives a column of nulls only.
    const offsets = o!;
    const last = Math.min(d.length, offsets.length - 1);
    if (last >= 0 && Number(offsets[0]) < 0) bad('has a value offset below 0');
    const down = offsets instanceof Int32Array ? firstDecrease32(offsets, last) : firstDecrease(offsets, last);
    if (down >= 0) bad(`has value offsets that decrease at row ${down}`);
    if (!list && last === d.length && Number(offsets[last]) > values!.length) bad('has value offsets past its values');
  }
  const children = type.children ?? [];
  for (let j = 0; j < children.length; j++) {
    const child = d.children[j] as Data | undefined;
    if (!child) bad(`has no data for its child ${JSON.stringify(children[j]!.name)}`);
    checkShape(child!, `${column}.${children[j]!.name}`, what);
  }
}

/** Types whose values are `stride` elements a row of one typed array. */
const FIXED_WIDTH = new Set<Type>([
  Type.Int,
  Type.Float,
  Type.Date,
  Type.Time,
  Type.Timestamp,
  Type.Duration,
  Type.Interval,
  Type.Decimal,
  Type.FixedSizeBinary,
]);

/** The first row `i < last` whose offset `o[i + 1]` is below `o[i]`, or -1 (monomorphic for 32-bit offsets). */
function firstDecrease32(o: Int32Array, last: number): number {
  let prev = o[0]!;
  for (let i = 1; i <= last; i++) {
    const x = o[i]!;
    if (x < prev) return i - 1;
    prev = x;
  }
  return -1;
}

function firstDecrease(o: ArrayLike<number | bigint>, last: number): number {
  for (let i = 0; i < last; i++) if (o[i]! > o[i + 1]!) return i;
  return -1;
}

function isStringType(t: DataType | undefined): boolean {
  return t?.typeId === Type.Utf8 || t?.typeId === Type.LargeUtf8;
}

/** Dictionary<_, Utf8|LargeUtf8> -> plain `target` (Utf8 or LargeUtf8) strings, bytes copied. */
function decodeDictionaryStrings(data: Data, target: DataType): Data {
  const n = data.length;
  const chunks = data.dictionary?.data ?? [];
  const dict =
    chunks.length === 1
      ? chunks[0]!
      : gather(
          target,
          chunks.map((d) => ({ data: d, idx: null, start: 0, count: d.length })),
        );
  const indices = data.values as unknown as AnyArray;
  const idx = new Int32Array(n);
  const checkNulls = data.nullCount > 0 || dict.nullCount > 0;
  let nullCount = 0;
  let bitmap: Uint8Array | undefined;
  for (let i = 0; i < n; i++) {
    const k = Number(indices[i]);
    if (checkNulls && (!data.getValid(i) || !dict.getValid(k))) {
      bitmap ??= new Uint8Array((n + 7) >> 3).fill(0xff);
      bitmap[i >> 3]! &= ~(1 << (i & 7));
      nullCount++;
      idx[i] = -1;
    } else {
      idx[i] = k;
    }
  }
  const out = gatherVarWidth(target, [{ data: dict, idx, start: 0, count: n }], n);
  return new Data(target, 0, n, nullCount, [out.valueOffsets, out.values, bitmap ?? EMPTY]);
}

// ---------------------------------------------------------------------------------------------
// Tombstones

const keySchemas = new WeakMap<StoreSchema, StoreSchema>();

/**
 * A batch in `storeSchema.internal` with one row per given key: key columns copied, `_tombstone` true,
 * every other column null (non-nullable ones get the type's default: 0, '', false, empty bytes,
 * epoch 0). Only key columns may be given, in any order; values follow {@link toBatches}'s
 * rules. Throws `NotSupported` when the store has no primary key, `InvalidArgument` for a
 * non-key column, a missing key column or a bad value (`NotSupported` too for a store with a
 * Union column, which has no null or default to fill). Undefined when there are no keys (a
 * no-op delete). Any runtime.
 */
export function tombstoneBatch(keys: Table | RecordBatch | Row[], storeSchema: StoreSchema): RecordBatch | undefined {
  if (!storeSchema.hasTombstone) throw new MemWalError('NotSupported', 'delete needs a primary key; this store has none');
  let kss = keySchemas.get(storeSchema);
  if (!kss) {
    const base = new Schema(storeSchema.keyIndices.map((i) => storeSchema.base.fields[i]!));
    kss = { base, internal: base, primaryKey: [], keyIndices: [], hasTombstone: false };
    keySchemas.set(storeSchema, kss);
  }
  const parts = convertInput(keys, kss, 'delete');
  if (parts.length === 0) return undefined;
  const n = parts.reduce((s, b) => s + b.numRows, 0);
  const keyData = parts.length === 1 ? parts[0]!.data.children : gatherBatch(kss.base, parts.map(allRows), n).data.children;
  const children = storeSchema.internal.fields.map((f, j) => {
    const k = storeSchema.keyIndices.indexOf(j);
    if (k >= 0) return keyData[k]!;
    if (f.name === TOMBSTONE_COLUMN) return boolData(n, true);
    return zeroData(f.type, n, f.nullable);
  });
  return makeBatch(storeSchema.internal, children, n);
}

/** Is row `row` of an internal-schema batch a delete marker? False when there is no `_tombstone`. */
export function isTombstoneRow(batch: RecordBatch, row: number): boolean {
  const fields = batch.schema.fields;
  const last = fields.length - 1;
  const j = fields[last]?.name === TOMBSTONE_COLUMN ? last : fields.findIndex((f) => f.name === TOMBSTONE_COLUMN);
  if (j < 0) return false;
  const d = batch.data.children[j]!;
  const bit = d.offset + row;
  return ((d.values as Uint8Array)[bit >> 3]! & (1 << (bit & 7))) !== 0;
}

/** A Bool column of `n` values, all `value`, no nulls. */

/**
 * `n` rows of `type`, all null (`allNull`) or all the type's default: zero bytes, so 0, '',
 * false, empty bytes/lists, epoch 0; struct children are null where nullable.
 */
/** `n` nulls of `type` (a column added by schema evolution, for rows written before it). */
export function nullData(type: DataType, n: number): Data {
  return zeroData(type, n, true);
}

function zeroData(type: DataType, n: number, allNull: boolean): Data {
  const bitmap = allNull ? new Uint8Array((n + 7) >> 3) : EMPTY;
  const nulls = allNull ? n : 0;
  const children: Field[] = type.children ?? [];
  switch (type.typeId) {
    case Type.Null:
      return new Data(type, 0, n, n);
    case Type.Bool:
      return new Data(type, 0, n, nulls, [undefined, new Uint8Array((n + 7) >> 3), bitmap]);
    case Type.Utf8:
    case Type.Binary:
      return new Data(type, 0, n, nulls, [new Int32Array(n + 1), EMPTY, bitmap]);
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return new Data(type, 0, n, nulls, [new BigInt64Array(n + 1), EMPTY, bitmap]);
    case Type.List:
    case Type.Map:
      return new Data(type, 0, n, nulls, [new Int32Array(n + 1), undefined, bitmap], [zeroData(children[0]!.type, 0, false)]);
    case Type.LargeList:
      return new Data(type, 0, n, nulls, [new BigInt64Array(n + 1), undefined, bitmap], [zeroData(children[0]!.type, 0, false)]);
    case Type.FixedSizeList: {
      const size = (type as unknown as { listSize: number }).listSize;
      return new Data(type, 0, n, nulls, [undefined, undefined, bitmap], [zeroData(children[0]!.type, n * size, false)]);
    }
    case Type.Struct:
      return new Data(
        type,
        0,
        n,
        nulls,
        [undefined, undefined, bitmap],
        children.map((c) => zeroData(c.type, n, c.nullable)),
      );
    case Type.Utf8View:
    case Type.BinaryView:
      return new Data(type, 0, n, nulls, [undefined, new Uint8Array(n * 16), bitmap]);
    case Type.Dictionary: // not in store schemas (makeStoreSchema rejects them)
    case Type.Union:
      throw new MemWalError('NotSupported', `no default value for a column of type ${String(type)}`);
    default: {
      const stride = new Data(type, 0, 0).stride;
      return new Data(type, 0, n, nulls, [undefined, new (type.ArrayType as ArrayCtor)(n * stride) as never, bitmap]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reading rows

/**
 * One row as a plain object (without `_tombstone` unless `columns` names it), with
 * apache-arrow's natural values: Int64 as bigint, Timestamp/Date as epoch milliseconds,
 * Time64/Duration as bigint, Struct and Map as plain objects, List as an array (nested ones
 * too), null as `null`; every typed array in it (Binary, Decimal, Interval values) a copy, never
 * a view of a memtable's or a cached block's buffers. Structured-cloneable.
 * Throws `InvalidArgument` for an unknown column. Any runtime.
 */
export function rowObject(batch: RecordBatch, row: number, columns?: string[]): Row {
  const fields = batch.schema.fields;
  const vectors = vectorsOf(batch);
  const out: Row = {};
  if (columns === undefined) {
    for (let j = 0; j < fields.length; j++) {
      const name = fields[j]!.name;
      if (name !== TOMBSTONE_COLUMN) out[name] = plainValue(batch.data.children[j]!, row, vectors, j);
    }
  } else {
    for (const name of columns) {
      const j = fields.findIndex((f) => f.name === name);
      if (j < 0) throw invalid(`unknown column "${name}"`);
      out[name] = plainValue(batch.data.children[j]!, row, vectors, j);
    }
  }
  return out;
}

/**
 * Each batch's column vectors, made on first use and kept while the batch lives: a query or a
 * getMany that materializes thousands of rows of one memtable batch or table block makes them
 * once, not once a row and column.
 */
const batchVectors = new WeakMap<RecordBatch, (Vector | undefined)[]>();

function vectorsOf(batch: RecordBatch): (Vector | undefined)[] {
  let v = batchVectors.get(batch);
  if (!v) batchVectors.set(batch, (v = []));
  return v;
}

/**
 * `rowObject` of `batch` for many rows: its column vectors are made once, so each row costs only
 * its values (a cached table block answers many point reads).
 */
export function rowReader(batch: RecordBatch): (row: number) => Row {
  const fields = batch.schema.fields;
  const names: string[] = [];
  const columns: { data: Data; vector: Vector }[] = [];
  for (let j = 0; j < fields.length; j++) {
    if (fields[j]!.name === TOMBSTONE_COLUMN) continue;
    const data = batch.data.children[j]!;
    names.push(fields[j]!.name);
    columns.push({ data, vector: makeVector(data) });
  }
  return (row) => {
    const out: Row = {};
    for (let j = 0; j < names.length; j++) {
      const c = columns[j]!;
      out[names[j]!] = c.data.getValid(row) ? plain(c.vector.get(row)) : null;
    }
    return out;
  };
}

function plainValue(data: Data, row: number, vectors: (Vector | undefined)[], j: number): unknown {
  return data.getValid(row) ? plain((vectors[j] ??= makeVector(data)).get(row)) : null;
}

/**
 * An Arrow getter's value as plain data of its own: a struct or map row (nested ones too) as an
 * object, a list as an array, each typed array (binary, decimal, interval values) a copy of its
 * own class. Arrow's values view the store's buffers and its rows and vectors cannot be
 * structured-cloned; a row read back is the caller's to change or post.
 */
function plain(v: unknown): unknown {
  if (typeof v !== 'object' || v === null || v instanceof Date) return v;
  if (ArrayBuffer.isView(v)) return Object.setPrototypeOf((v as Uint8Array).slice(), Object.getPrototypeOf(v));
  if (Array.isArray(v)) return v.map(plain);
  if (Object.getPrototypeOf(v) !== Object.prototype) {
    const json = (v as { toJSON?: () => unknown }).toJSON; // a Vector (list), a StructRow or a MapRow
    return typeof json === 'function' ? plain(json.call(v)) : v;
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = plain(x);
  return out;
}
