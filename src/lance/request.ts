// A drain request as a LanceSink takes it (docs/scale-out.md "Limits"): everything that can be
// checked without the table — checksum, stream structure, values, the sink's column rules and the
// operator's schema, positions — is checked here, before the request waits for its turn, and the
// rows are reduced to what will be written (keyed sinks: the newest row of each key). The per-row
// work runs in slices of at most SLICE_MS, each followed by a turn of the event loop, so a large
// request being checked does not hold the server's other requests. Node only.

import { TOMBSTONE_COLUMN } from '../data/schema.js';
import { POSITION_COLUMN, checkDrainBody } from '../drain/wire.js';
import { crc32c } from '../util/crc32c.js';
import type { DrainRequestMeta } from '../drain/wire.js';
import { MemWalError } from '../util/errors.js';
import { checkField, decodeStream, quote, rowBytes, takeRows, withoutMetadata } from './arrow-check.js';
import {
  type ArrowData,
  type ArrowField,
  type ArrowRecordBatch,
  type ArrowSchema,
  type ArrowTable,
  type ArrowType,
  arrow,
} from './lancedb.js';

/** Column of the data table that names the store a row came from (Utf8, non-null). */
export const STORE_COLUMN = '_memwal_store';

/** Columns the sink and the wire format own; no store column may take these names. */
export const RESERVED = new Set([STORE_COLUMN, POSITION_COLUMN, TOMBSTONE_COLUMN]);

const invalid = (message: string): MemWalError => new MemWalError('InvalidArgument', message);

/** What a sink accepts, from its options. */
export interface SinkRules {
  /** Key columns of keyed sinks; undefined: append-only. */
  primaryKey: readonly string[] | undefined;
  /** The operator's schema (user columns, LanceDB's Arrow), when the operator fixed it. */
  schema: ArrowSchema | undefined;
  /** The only user columns a store may write, when the operator named them (keys always may). */
  allowColumns: ReadonlySet<string> | undefined;
  /** Most user fields (nested ones counted) the table may have. */
  maxColumns: number;
  /** Widest a row of the table (and of a body) may be when null ({@link rowBytes}). */
  maxRowBytes: number;
}

/** A request that passed every check that does not need the table. */
export interface CheckedRequest {
  meta: DrainRequestMeta;
  /** The body's user columns (its fields but the sink's own). */
  columns: ArrowField[];
  /** The rows to write, in position order (keyed sinks: only the newest row of each key). */
  rows: ArrowTable;
  /** The position of each row of `rows` (ascending). */
  positions: Float64Array;
  /** Rows in the body. */
  bodyRows: number;
}

/**
 * Whether values of type `body` fit a column of type `column`: the same type, but that a nested
 * field the body has as not nullable may be nullable in the column (Lance stores a fixed-size
 * list's items as nullable, whatever the list it was created from said).
 */
export function fitsType(body: ArrowType, column: ArrowType): boolean {
  const b: ArrowField[] = body.children ?? [];
  const c: ArrowField[] = column.children ?? [];
  if (b.length === 0 || body.typeId !== column.typeId || b.length !== c.length) return arrow.util.compareTypes(body, column);
  if ((body as { listSize?: number }).listSize !== (column as { listSize?: number }).listSize) return false;
  return b.every((f, i) => f.name === c[i]!.name && (!f.nullable || c[i]!.nullable) && fitsType(f.type, c[i]!.type));
}

/** Fields of a field, itself and every nested one. */
export function countFields(f: ArrowField): number {
  return 1 + (f.type.children ?? []).reduce((n: number, c: ArrowField) => n + countFields(c), 0);
}

/** Longest the check of one request runs without giving the event loop a turn, ms. */
export const SLICE_MS = 2;
/** Rows (or checksum KiB) between two looks at the clock. */
const SLICE_STEP = 4096;

/** The time slices of one check: {@link Slices.pause} gives the event loop a turn once one is used up. */
class Slices {
  private start = performance.now();

  /** Gives the event loop a turn (other requests' I/O and checks) if this slice has run SLICE_MS. */
  async pause(): Promise<void> {
    if (performance.now() - this.start < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.start = performance.now();
  }
}

/**
 * Checks a drain request against the sink's rules and reduces it to the rows to write, in time
 * slices (the file header). Rejects `InvalidArgument` with a plain message for anything a client
 * got wrong. `appliedPosition`: the store's applied position — the body's leading record batches
 * whose rows all lie at or below it (a re-sent request, mostly applied) are left out of `rows`
 * after the checksum and structure checks, their values and keys never looked at: only the
 * part still to apply costs a check.
 */
export async function checkRequest(
  meta: DrainRequestMeta,
  body: Uint8Array,
  rules: SinkRules,
  appliedPosition = 0,
): Promise<CheckedRequest> {
  const slices = new Slices();
  let crc = 0;
  for (let at = 0; at < body.length; at += SLICE_STEP * 1024) {
    crc = crc32c(body.subarray(at, at + SLICE_STEP * 1024), crc);
    await slices.pause();
  }
  checkDrainBody(meta, body, crc);
  const userFields = rules.schema ? rules.schema.fields.reduce((n, f) => n + countFields(f), 0) : rules.maxColumns;
  // + _tombstone, _memwal_position; then without metadata: a store brings values, never encodings.
  const applied = (batch: ArrowRecordBatch): boolean => allAtOrBelow(batch.getChild(POSITION_COLUMN)?.data, appliedPosition);
  const table = withoutMetadata(decodeStream(body, meta.rows, { maxFields: userFields + 2, maxRowBytes: rules.maxRowBytes }, applied));
  await slices.pause();
  const columns = checkColumns(table.schema, rules);
  const positions = await checkPositions(table, meta, slices);
  if (!rules.primaryKey) return { meta, columns, rows: table, positions, bodyRows: meta.rows };
  return { meta, columns, ...(await newestPerKey(table, positions, rules.primaryKey, slices)), bodyRows: meta.rows };
}

/**
 * Whether a record batch's position column (before its type is checked: anything but one
 * non-null signed Int64 chunk answers false, and the batch is checked in full) holds only
 * positions at or below `position`.
 */
function allAtOrBelow(chunks: readonly ArrowData[] | undefined, position: number): boolean {
  if (position <= 0 || chunks?.length !== 1) return false;
  const data = chunks[0]!;
  if (!(data.values instanceof BigInt64Array) || data.nullCount !== 0) return false;
  const values = data.values.subarray(data.offset, data.offset + data.length);
  const bound = BigInt(position);
  for (let i = 0; i < values.length; i++) if (values[i]! > bound) return false;
  return true;
}

/** Key column types: those memwal accepts as keys. */
const KEY_TYPES = new Set<number>([
  arrow.Type.Int,
  arrow.Type.Utf8,
  arrow.Type.LargeUtf8,
  arrow.Type.Binary,
  arrow.Type.LargeBinary,
  arrow.Type.FixedSizeBinary,
  arrow.Type.Bool,
  arrow.Type.Date,
  arrow.Type.Timestamp,
  arrow.Type.Time,
  arrow.Type.Duration,
]);

/**
 * Throws `InvalidArgument` unless an operator's schema can be a sink's: columns Lance can hold
 * (see {@link checkField}), none of memwal's own names, a row within `maxRowBytes`, the key
 * columns among them, non-nullable and of a key type. (The operator's field metadata is kept:
 * the operator may choose Lance encodings; a store may not.)
 */
export function checkOperatorSchema(schema: ArrowSchema, primaryKey: readonly string[] | undefined, maxRowBytes: number): void {
  const names = new Set<string>();
  for (const f of schema.fields) {
    if (RESERVED.has(f.name)) throw invalid(`LanceSink: schema column ${f.name} is reserved for memwal`);
    if (names.has(f.name)) throw invalid(`LanceSink: schema has two columns named ${quote(f.name)}`);
    names.add(f.name);
    checkField(f);
  }
  const width = schema.fields.reduce((n, f) => n + rowBytes(f.type), 0);
  if (width > maxRowBytes) throw invalid(`LanceSink: a row of schema takes ${width} bytes, more than maxRowBytes (${maxRowBytes})`);
  for (const k of primaryKey ?? []) {
    const f = schema.fields.find((x) => x.name === k);
    if (!f) throw invalid(`LanceSink: primaryKey column ${quote(k)} is not in schema`);
    if (f.nullable || !KEY_TYPES.has(f.type.typeId)) {
      throw invalid(`LanceSink: primaryKey column ${quote(k)} must be non-nullable and of a key type, got ${f.type}`);
    }
  }
}

/** The body schema's user columns; throws `InvalidArgument` if they do not fit the rules. */
function checkColumns(schema: ArrowSchema, rules: SinkRules): ArrowField[] {
  const byName = new Map<string, ArrowField>();
  for (const f of schema.fields) {
    if (byName.has(f.name)) throw invalid(`schema: two columns named ${quote(f.name)}`);
    byName.set(f.name, f);
  }
  const position = byName.get(POSITION_COLUMN);
  const type = position?.type as (ArrowType & { bitWidth?: number; isSigned?: boolean }) | undefined;
  if (!position || !arrow.DataType.isInt(type) || type.bitWidth !== 64 || !type.isSigned || position.nullable) {
    throw invalid(`schema: column ${POSITION_COLUMN} must be a non-nullable Int64`);
  }
  if (byName.has(STORE_COLUMN)) throw invalid(`schema: column ${STORE_COLUMN} is reserved`);
  const tombstone = byName.get(TOMBSTONE_COLUMN);
  if (rules.primaryKey) {
    if (!tombstone || !arrow.DataType.isBool(tombstone.type) || tombstone.nullable) {
      throw invalid(`schema: this sink takes keyed stores, and a non-nullable Bool column ${TOMBSTONE_COLUMN} is missing`);
    }
    for (const k of rules.primaryKey) {
      const f = byName.get(k);
      if (!f) throw invalid(`schema: key column ${quote(k)} is missing`);
      if (f.nullable) throw invalid(`schema: key column ${quote(k)} is nullable`);
      if (!KEY_TYPES.has(f.type.typeId)) throw invalid(`schema: key column ${quote(k)} has type ${String(f.type)}, which cannot be a key`);
    }
  } else if (tombstone) {
    throw invalid(`schema: this sink takes append-only stores, and the body has ${TOMBSTONE_COLUMN} (a keyed store)`);
  }
  const columns = schema.fields.filter((f) => !RESERVED.has(f.name));
  if (rules.schema) {
    for (const f of columns) {
      const own = rules.schema.fields.find((o) => o.name === f.name);
      if (!own) throw invalid(`schema: column ${quote(f.name)} is not a column of this sink`);
      if (!fitsType(f.type, own.type)) {
        throw invalid(`schema: column ${quote(f.name)} is ${f.type} in the body but ${own.type} in this sink's schema`);
      }
      if (f.nullable && !own.nullable)
        throw invalid(`schema: column ${quote(f.name)} is nullable in the body but not in this sink's schema`);
    }
    const missing = rules.schema.fields.find((o) => !o.nullable && !byName.has(o.name));
    if (missing) throw invalid(`schema: column ${quote(missing.name)} of this sink's schema is missing and not nullable`);
  } else {
    if (rules.allowColumns) {
      const stray = columns.find((f) => !rules.allowColumns!.has(f.name) && !rules.primaryKey?.includes(f.name));
      if (stray) throw invalid(`schema: column ${quote(stray.name)} is not a column of this sink`);
    }
    const fields = columns.reduce((n, f) => n + countFields(f), 0);
    if (fields > rules.maxColumns) throw invalid(`schema: ${fields} columns, more than the ${rules.maxColumns} columns this sink takes`);
  }
  return columns;
}

/**
 * Positions must stay in [first, last] and never decrease (they are Int64 without nulls and
 * present for every row: the stream checks saw to that). Returns them as numbers, exact since
 * `last` is a safe integer.
 */
async function checkPositions(t: ArrowTable, meta: DrainRequestMeta, slices: Slices): Promise<Float64Array> {
  const out = new Float64Array(t.numRows);
  const last = BigInt(meta.lastPosition);
  let prev = BigInt(meta.firstPosition);
  let i = 0;
  for (const batch of t.batches) {
    const data = batch.getChild(POSITION_COLUMN)!.data[0]!;
    const values = data.values as BigInt64Array;
    for (let k = 0; k < data.length; k++, i++) {
      if (k % SLICE_STEP === 0) await slices.pause();
      const p = values[k]!;
      if (p < prev) throw invalid(`positions go backwards: row ${i} has position ${p} after ${prev}`);
      if (p > last) throw invalid(`row ${i} has position ${p}, beyond the request's last position ${last}`);
      out[i] = Number(p);
      prev = p;
    }
  }
  return out;
}

/** The identity of row `i` of a key column's (decoded) data: its value's bytes. */
function keyOf(data: ArrowData, i: number): string {
  const offsets = data.valueOffsets as Int32Array | BigInt64Array | undefined;
  const values = data.values as ArrayLike<number | bigint> & { buffer: ArrayBufferLike; byteOffset: number };
  if (offsets) {
    const start = Number(offsets[i]!);
    return Buffer.from(values.buffer, values.byteOffset + start, Number(offsets[i + 1]!) - start).toString('latin1');
  }
  if (data.type.typeId === arrow.Type.Bool) return String(((values[i >> 3] as number) >> (i & 7)) & 1);
  const stride = data.stride;
  let s = String(values[i * stride]);
  for (let k = 1; k < stride; k++) s += `,${values[i * stride + k]}`;
  return s;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The identity of each row of a single key column: for integers (of up to 64 bits) the value as
 * a number where it is exact (within ±2^53), else {@link keyOf}'s string. Equal values give
 * equal identities, different ones different identities (a number never equals a string in a
 * Set). About three times as fast as the string for every row, which made the newest-row pass
 * most of the server's time under a flood of large keyed requests.
 */
function singleKeyOf(data: ArrowData): (i: number) => string | number {
  const values = data.values as unknown;
  if (!data.valueOffsets && data.stride === 1 && data.type.typeId !== arrow.Type.Bool) {
    if (values instanceof BigInt64Array || values instanceof BigUint64Array) {
      return (i) => {
        const v = values[i]!;
        return v >= -MAX_SAFE && v <= MAX_SAFE ? Number(v) : String(v);
      };
    }
    if (
      values instanceof Int32Array ||
      values instanceof Int16Array ||
      values instanceof Int8Array ||
      values instanceof Uint32Array ||
      values instanceof Uint16Array ||
      values instanceof Uint8Array
    ) {
      return (i) => values[i]!;
    }
  }
  return (i) => keyOf(data, i);
}

/**
 * The identity of row `i` of composite key columns: each part prefixed with its length, so that
 * parts holding any character (a "\u0000" included) never run into each other.
 */
function compositeKeyOf(cols: ArrowData[], i: number): string {
  let id = '';
  for (const c of cols) {
    const part = keyOf(c, i);
    id += `${part.length}:${part}`;
  }
  return id;
}

/**
 * The newest row of each key (the last one in position order: later rows of a key are newer), in
 * position order, with their positions. Re-applying such a run converges to the same rows
 * whatever was applied before (docs/scale-out.md "Exactly once").
 */
async function newestPerKey(
  t: ArrowTable,
  positions: Float64Array,
  key: readonly string[],
  slices: Slices,
): Promise<{ rows: ArrowTable; positions: Float64Array }> {
  const seen = new Set<string | number>();
  const keep = new Uint8Array(t.numRows);
  let kept = 0;
  const batches = t.batches;
  let end = t.numRows;
  for (let b = batches.length - 1; b >= 0; b--) {
    const batch = batches[b]!;
    const cols = key.map((k) => batch.getChild(k)!.data[0]!);
    const single = cols.length === 1 ? singleKeyOf(cols[0]!) : undefined;
    end -= batch.numRows;
    for (let i = batch.numRows - 1; i >= 0; i--) {
      if (i % SLICE_STEP === 0) await slices.pause();
      const id = single ? single(i) : compositeKeyOf(cols, i);
      if (seen.has(id)) continue;
      seen.add(id);
      keep[end + i] = 1;
      kept += 1;
    }
  }
  if (kept === t.numRows) return { rows: t, positions };
  const out: ArrowModuleRecordBatch[] = [];
  const keptPositions = new Float64Array(kept);
  let at = 0;
  let base = 0;
  for (const batch of batches) {
    const local: number[] = [];
    for (let i = 0; i < batch.numRows; i++) {
      if (i % SLICE_STEP === 0) await slices.pause();
      if (keep[base + i]) {
        local.push(i);
        keptPositions[at++] = positions[base + i]!;
      }
    }
    base += batch.numRows;
    if (local.length === 0) continue;
    const rows = Int32Array.from(local);
    const children = batch.data.children.map((c) => takeRows(c, rows));
    const data = arrow.makeData({ type: new arrow.Struct(t.schema.fields), length: rows.length, nullCount: 0, children });
    out.push(new arrow.RecordBatch(t.schema, data));
  }
  return { rows: new arrow.Table(t.schema, out), positions: keptPositions };
}

type ArrowModuleRecordBatch = InstanceType<typeof arrow.RecordBatch>;
