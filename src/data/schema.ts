// The store's schemas: the user's `base` schema and the `internal` one that memtables, WAL
// entries and table files hold (base + `_tombstone` when there is a primary key), plus schema
// equality, a readable difference, and the base64 Arrow IPC encoding kept in the manifest.

import type { ResolvedIndex } from './index-keys.js';
import { Bool, Field, Schema, Table, Type, tableFromIPC, tableToIPC } from 'apache-arrow';
import type { DataType } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import { fromBase64, toBase64 } from '../util/bytes.js';

/** Name of the internal delete-marker column appended to keyed stores' batches. Never renamed. */
export const TOMBSTONE_COLUMN = '_tombstone';

/** Field metadata key of `Column.renamedFrom` (define-schema.ts): the name the column had before (SPEC §9.1). */
export const RENAMED_FROM = 'memwal.renamedFrom';

/** The store's schemas: what users put (`base`) and what memtables/WAL/table files hold (`internal`). */
export interface StoreSchema {
  /** The user's schema (field and schema metadata dropped). */
  base: Schema;
  /** `base` + a non-nullable Bool `_tombstone` field last when `primaryKey.length > 0`; else `=== base`. */
  internal: Schema;
  primaryKey: string[];
  /** Indices of the key columns in `base` (the same in `internal`), in `primaryKey` order. */
  keyIndices: number[];
  hasTombstone: boolean;
  /**
   * Columns of `base` an opener does not see (SPEC §9.1): a put may not name them and writes null
   * to them. Absent: none. Only the put path's view of the schema has any (data/column-view.ts).
   */
  hidden?: ReadonlySet<string>;
  /**
   * The ordered indexes whose sections the store's table builds write (SPEC §17; the engine's
   * declared indexes, given to its jobs). Absent: none.
   */
  indexes?: readonly ResolvedIndex[];
}

/**
 * Validate a user schema and primary key and build the store's schemas. Any runtime.
 *
 * Throws `MemWalError('InvalidArgument')` naming the column when: the schema has no fields, two
 * fields share a name, a field is named `_tombstone`, a column is dictionary-encoded (anywhere,
 * nested included: table files are Arrow IPC *files*, which cannot hold the per-put
 * dictionaries such columns would get; declare the value type instead — dictionary-encoded
 * input is decoded to it), a key column is missing, listed twice, nullable, or of a type other
 * than Int*, Uint*, Utf8, LargeUtf8, Binary, LargeBinary, FixedSizeBinary, Bool, Date*,
 * Timestamp*, Time*, Duration* (floats and everything else are rejected).
 */
export function makeStoreSchema(schema: Schema, primaryKey: string[]): StoreSchema {
  if (!(schema instanceof Schema)) throw invalid('schema must be an apache-arrow Schema');
  if (schema.fields.length === 0) throw invalid('schema has no fields');
  const names = new Map<string, number>();
  const fields = schema.fields.map((f, i) => {
    if (typeof f.name !== 'string' || f.name === '') throw invalid(`schema field ${i} has no name`);
    if (names.has(f.name)) throw invalid(`schema has two fields named "${f.name}"`);
    if (f.name === TOMBSTONE_COLUMN) {
      throw invalid(`column "${TOMBSTONE_COLUMN}" is reserved for memwal's delete markers; rename it`);
    }
    if (containsDictionary(f.type)) {
      throw invalid(
        `column "${f.name}": dictionary-encoded columns are not supported (declare the value type, ` +
          `e.g. Utf8; dictionary-encoded input is decoded to it)`,
      );
    }
    names.set(f.name, i);
    return new Field(f.name, f.type, f.nullable);
  });
  const base = new Schema(fields);

  if (!Array.isArray(primaryKey)) throw invalid('primaryKey must be an array of column names');
  const keyIndices: number[] = [];
  for (const name of primaryKey) {
    const i = names.get(name);
    if (i === undefined) throw invalid(`primary key column "${String(name)}" is not in the schema`);
    if (keyIndices.includes(i)) throw invalid(`primary key lists column "${name}" twice`);
    const f = fields[i]!;
    if (f.nullable) throw invalid(`primary key column "${name}" must be non-nullable`);
    if (!isKeyType(f.type)) {
      throw invalid(
        `primary key column "${name}" has unsupported type ${String(f.type)} ` +
          `(allowed: integers, strings, binary, bool, date, time, timestamp, duration)`,
      );
    }
    keyIndices.push(i);
  }
  const hasTombstone = keyIndices.length > 0;
  const internal = hasTombstone ? new Schema([...fields, new Field(TOMBSTONE_COLUMN, new Bool(), false)]) : base;
  return { base, internal, primaryKey: [...primaryKey], keyIndices, hasTombstone };
}

/** Can a column of this type be a primary-key column? */
function isKeyType(t: DataType): boolean {
  switch (t.typeId) {
    case Type.Int:
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
    case Type.FixedSizeBinary:
    case Type.Bool:
    case Type.Date:
    case Type.Timestamp:
    case Type.Time:
    case Type.Duration:
      return true;
    default:
      return false;
  }
}

function containsDictionary(t: DataType): boolean {
  if (t.typeId === Type.Dictionary) return true;
  return (t.children ?? []).some((c: Field) => containsDictionary(c.type));
}

/**
 * Structural type equality: type id and parameters (bit width, signedness, precision, unit,
 * timezone, byte width, list size, ...) and children recursively (their types and nullability;
 * a list's child field name is ignored, as writers disagree on "item"/"element"). Unlike
 * apache-arrow's comparator it does not depend on which class built the type (`new Int64()` and
 * an IPC-decoded `Int_(true, 64)` are equal). `Dictionary<Int32, Utf8>` is NOT equal to `Utf8`.
 */
export function typesEqual(a: DataType, b: DataType): boolean {
  if (a === b) return true;
  if (a.typeId !== b.typeId) return false;
  const x = a as DataType & Record<string, unknown>;
  const y = b as DataType & Record<string, unknown>;
  switch (a.typeId) {
    case Type.Int:
      return x.bitWidth === y.bitWidth && x.isSigned === y.isSigned;
    case Type.Float:
      return x.precision === y.precision;
    case Type.Decimal:
      return x.precision === y.precision && x.scale === y.scale && x.bitWidth === y.bitWidth;
    case Type.Date:
    case Type.Interval:
    case Type.Duration:
      return x.unit === y.unit;
    case Type.Time:
      return x.unit === y.unit && x.bitWidth === y.bitWidth;
    case Type.Timestamp:
      return x.unit === y.unit && (x.timezone ?? null) === (y.timezone ?? null);
    case Type.FixedSizeBinary:
      return x.byteWidth === y.byteWidth;
    case Type.FixedSizeList:
      return x.listSize === y.listSize && childrenEqual(a, b, false);
    case Type.List:
    case Type.LargeList:
      return childrenEqual(a, b, false);
    case Type.Map:
      return x.keysSorted === y.keysSorted && childrenEqual(a, b, true);
    case Type.Struct:
      return childrenEqual(a, b, true);
    case Type.Union:
      return x.mode === y.mode && String(x.typeIds) === String(y.typeIds) && childrenEqual(a, b, true);
    case Type.Dictionary:
      return (
        x.isOrdered === y.isOrdered &&
        typesEqual(x.indices as DataType, y.indices as DataType) &&
        typesEqual(x.dictionary as DataType, y.dictionary as DataType)
      );
    default:
      return true; // Null, Bool, Utf8, LargeUtf8, Binary, LargeBinary, views: no parameters
  }
}

function childrenEqual(a: DataType, b: DataType, namesMatter: boolean): boolean {
  const ca: Field[] = a.children ?? [];
  const cb: Field[] = b.children ?? [];
  return (
    ca.length === cb.length &&
    ca.every((f, i) => (!namesMatter || f.name === cb[i]!.name) && f.nullable === cb[i]!.nullable && typesEqual(f.type, cb[i]!.type))
  );
}

/** Same field names, types ({@link typesEqual}), nullability and order; metadata ignored. */
export function schemasEqual(a: Schema, b: Schema): boolean {
  return describeSchemaDifference(a, b) === undefined;
}

/**
 * A human sentence for the first difference between `a` (for reopen: the stored schema) and
 * `b` (the given one), or `undefined` when they are equal per {@link schemasEqual}.
 */
export function describeSchemaDifference(a: Schema, b: Schema): string | undefined {
  const n = Math.max(a.fields.length, b.fields.length);
  for (let i = 0; i < n; i++) {
    const fa = a.fields[i];
    const fb = b.fields[i];
    if (!fa) return `the given schema has an extra column "${fb!.name}" at position ${i}`;
    if (!fb) return `the given schema lacks column "${fa.name}" (position ${i})`;
    if (fa.name !== fb.name) return `column ${i} is "${fa.name}" in the stored schema but "${fb.name}" in the given one`;
    if (!typesEqual(fa.type, fb.type)) {
      return `column "${fa.name}" is ${String(fa.type)} in the stored schema but ${String(fb.type)} in the given one`;
    }
    if (fa.nullable !== fb.nullable) {
      return `column "${fa.name}" is ${fa.nullable ? 'nullable' : 'non-nullable'} in the stored schema but ${fb.nullable ? 'nullable' : 'non-nullable'} in the given one`;
    }
  }
  return undefined;
}

/**
 * Base64 of an Arrow IPC stream that holds `s` and no record batches (field metadata kept as
 * given). Uses `btoa`, present in Node ≥ 16, browsers, Deno and workerd.
 */
export function encodeSchema(s: Schema): string {
  return toBase64(tableToIPC(new Table(s), 'stream'));
}

/** Inverse of {@link encodeSchema}. Throws `MemWalError('Corruption')` on anything else. */
export function decodeSchema(b64: string): Schema {
  let schema: Schema;
  try {
    schema = (tableFromIPC(fromBase64(b64)) as Table).schema;
  } catch (e) {
    throw new MemWalError('Corruption', `stored schema is not a base64 Arrow IPC stream: ${String(e)}`, { cause: e });
  }
  if (!schema || schema.fields.length === 0) throw new MemWalError('Corruption', 'stored schema has no fields');
  return schema;
}

function invalid(message: string): MemWalError {
  return new MemWalError('InvalidArgument', message);
}
