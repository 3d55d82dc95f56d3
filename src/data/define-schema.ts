// Typed rows: defineSchema() builds an Arrow Schema that also carries, in its type,
// the rows a store of that schema takes (put) and gives back (get); openMemWal and MemWal.open
// infer their row types from it. Types only, plus small column builders. Any runtime.

import {
  Binary,
  Bool,
  DateDay,
  DateMillisecond,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  LargeBinary,
  LargeUtf8,
  Schema,
  TimeUnit,
  Timestamp,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
  type DataType,
  type TypeMap,
} from 'apache-arrow';
import { RENAMED_FROM } from './schema.js';

/**
 * One column of `defineSchema`: its Arrow type, whether it may hold null, and the JavaScript
 * values a put accepts (`In`) and a read gives back (`Out`). Non-nullable until `.nullable()`.
 */
export interface Column<T extends DataType = DataType, In = unknown, Out = unknown, Nullable extends boolean = boolean> {
  readonly type: T;
  readonly isNullable: Nullable;
  /** The name the stored column had before this release renamed it (`renamedFrom`). */
  readonly previousName?: string;
  /** The same column, nullable: a put may leave it out or give `null`; reads may give `null`. */
  nullable(): Column<T, In, Out, true>;
  /**
   * The same column, renamed from `name` (SPEC §9.1): on open, a stored column `name` becomes this
   * one, keeping its values (the store records the rename; later opens need not repeat it, and a
   * release from before the rename still reads it as `name`). Recorded in the Arrow field's
   * metadata (`memwal.renamedFrom`); the same as `renameColumns: { [name]: thisColumn }`.
   */
  renamedFrom(name: string): Column<T, In, Out, Nullable>;
}

function column<T extends DataType, In, Out>(type: T): Column<T, In, Out, false> {
  const make = <N extends boolean>(isNullable: N, previousName: string | undefined): Column<T, In, Out, N> => ({
    type,
    isNullable,
    ...(previousName === undefined ? {} : { previousName }),
    nullable: () => make(true, previousName),
    renamedFrom: (name: string) => {
      if (typeof name !== 'string' || name === '') throw new TypeError('renamedFrom: the previous name must be a non-empty string');
      return make(isNullable, name);
    },
  });
  return make(false, undefined);
}

/** Int8 … Int32, Uint8 … Uint32: a `number` in, a `number` out. */
export const int8 = (): Column<Int8, number, number, false> => column(new Int8());
export const int16 = (): Column<Int16, number, number, false> => column(new Int16());
export const int32 = (): Column<Int32, number, number, false> => column(new Int32());
export const uint8 = (): Column<Uint8, number, number, false> => column(new Uint8());
export const uint16 = (): Column<Uint16, number, number, false> => column(new Uint16());
export const uint32 = (): Column<Uint32, number, number, false> => column(new Uint32());
/** Int64: a `bigint` or a safe-integer `number` in, a `bigint` out (see the README on JSON). */
export const int64 = (): Column<Int64, bigint | number, bigint, false> => column(new Int64());
/** Uint64: a `bigint` or a non-negative safe-integer `number` in, a `bigint` out. */
export const uint64 = (): Column<Uint64, bigint | number, bigint, false> => column(new Uint64());
export const float32 = (): Column<Float32, number, number, false> => column(new Float32());
export const float64 = (): Column<Float64, number, number, false> => column(new Float64());
export const bool = (): Column<Bool, boolean, boolean, false> => column(new Bool());
export const utf8 = (): Column<Utf8, string, string, false> => column(new Utf8());
export const largeUtf8 = (): Column<LargeUtf8, string, string, false> => column(new LargeUtf8());
export const binary = (): Column<Binary, Uint8Array, Uint8Array, false> => column(new Binary());
export const largeBinary = (): Column<LargeBinary, Uint8Array, Uint8Array, false> => column(new LargeBinary());
/** Exactly `byteWidth` bytes. */
export const fixedSizeBinary = (byteWidth: number): Column<FixedSizeBinary, Uint8Array, Uint8Array, false> =>
  column(new FixedSizeBinary(byteWidth));
/**
 * A vector of `dim` float32s (Arrow `FixedSizeList<Float32>`, items not nullable; Lance's vector
 * column): an array of numbers or a `Float32Array` of exactly `dim` values in, an array of numbers
 * out. A vector index (`{ column, kind: 'vector', distance }`, SPEC §17.3) searches it.
 */
export const vector = (dim: number): Column<FixedSizeList<Float32>, readonly number[] | Float32Array, number[], false> => {
  if (!Number.isInteger(dim) || dim < 1) throw new TypeError(`vector: the dimension must be a positive integer, got ${String(dim)}`);
  return column(new FixedSizeList(dim, new Field('item', new Float32(), false)));
};
/** A date (days): a `Date` or epoch milliseconds in, epoch milliseconds out. */
export const dateDay = (): Column<DateDay, Date | number, number, false> => column(new DateDay());
/** A date (milliseconds): a `Date` or epoch milliseconds in, epoch milliseconds out. */
export const dateMillisecond = (): Column<DateMillisecond, Date | number, number, false> => column(new DateMillisecond());
/**
 * A timestamp in `unit` (default milliseconds): a `Date` or epoch milliseconds (or a `bigint`
 * already in the unit) in, epoch milliseconds out.
 */
export const timestamp = (
  unit: TimeUnit = TimeUnit.MILLISECOND,
  timezone?: string,
): Column<Timestamp, Date | number | bigint, number, false> => column(new Timestamp(unit, timezone));

/** The columns given to `defineSchema`, by name (the schema keeps their order). */
export type Columns = Record<string, Column<DataType, unknown, unknown, boolean>>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type InOf<C> = C extends Column<DataType, infer In, unknown, boolean> ? In : never;
type OutOf<C> = C extends Column<DataType, unknown, infer Out, boolean> ? Out : never;
type NullableKeys<C extends Columns> = { [K in keyof C]: C[K]['isNullable'] extends true ? K : never }[keyof C];
type RequiredKeys<C extends Columns> = Exclude<keyof C, NullableKeys<C>>;

/** A row a put accepts: non-nullable columns required, nullable ones optional (absent = null). */
export type InputRow<C extends Columns> = Simplify<{ [K in RequiredKeys<C>]: InOf<C[K]> } & { [K in NullableKeys<C>]?: InOf<C[K]> | null }>;
/** A row as `get` returns it: every column, `null` where a nullable column holds none. */
export type OutputRow<C extends Columns> = Simplify<
  { [K in RequiredKeys<C>]: OutOf<C[K]> } & { [K in NullableKeys<C>]: OutOf<C[K]> | null }
>;

declare const ROW_TYPES: unique symbol;

/**
 * An Arrow `Schema` that carries its row types (a type-level mark only: at run time it is a
 * plain `Schema`). Made by `defineSchema`.
 */
export type TypedSchema<C extends Columns> = Schema<ColumnTypes<C>> & {
  readonly [ROW_TYPES]?: { input: InputRow<C>; output: OutputRow<C>; columns: ColumnTypes<C> };
};

/** The Arrow type of each column (an apache-arrow `TypeMap`, as `Table<T>` takes it). */
export type ColumnTypes<C extends Columns> = { [K in keyof C & string]: C[K]['type'] };

/**
 * The Arrow schema of `columns`, in their order, typed so that a store opened with it
 * (`openMemWal({ schema })`, `MemWal.open({ schema })`) types `put`, `get`, `delete` and
 * `scan`. Throws `TypeError` for a column that was not made by the builders here.
 *
 * ```ts
 * const schema = defineSchema({ id: int64(), title: utf8(), done: bool(), note: utf8().nullable() });
 * const db = await openMemWal({ name: 'todos', schema, primaryKey: ['id'] });
 * await db.put([{ id: 1, title: 'milk', done: false }]); // note may be left out
 * const row = await db.get({ id: 1n }); // { id: bigint; title: string; done: boolean; note: string | null } | undefined
 * ```
 */
export function defineSchema<const C extends Columns>(columns: C): TypedSchema<C> {
  const fields = Object.entries(columns).map(([name, c]) => {
    if (typeof c !== 'object' || c === null || typeof c.isNullable !== 'boolean' || !c.type) {
      throw new TypeError(`defineSchema: column "${name}" must be made by a column builder such as int64() or utf8()`);
    }
    const metadata = c.previousName === undefined ? undefined : new Map([[RENAMED_FROM, c.previousName]]);
    return new Field(name, c.type, c.isNullable, metadata);
  });
  return new Schema(fields) as TypedSchema<C>;
}

/**
 * The row types of a store: what `put` accepts (`input`), what `get` returns (`output`), the
 * key `get`/`delete` take (`key`) and the Arrow columns of `scan` (`columns`).
 */
export interface RowTypes {
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  key: Record<string, unknown>;
  columns: TypeMap;
}

/** The row types of a store opened with a plain Arrow `Schema`: any object. */
export interface UntypedRows {
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  key: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: Arrow's own default for an unknown Table type
  columns: any;
}

/**
 * The type parameter of `MemWal`, `MemWalClient` and `MemWalApi`: a schema from `defineSchema`
 * (`MemWalClient<typeof schema>`) or row types (`RowsOf<typeof schema, 'id'>`, `UntypedRows`).
 * A schema alone does not say which columns are the key, so its key type is any subset of its
 * columns; `RowsOf<typeof schema, 'id'>` names them.
 */
export type RowsParam = RowTypes | Schema;

/** The row types a {@link RowsParam} stands for: row types as they are, a schema's by `RowsOf<S, string>`. */
export type RowTypesOf<R extends RowsParam> = R extends RowTypes ? R : R extends Schema ? RowsOf<R, string> : never;

/** The column names of a store's rows (`string` for an untyped store). */
export type ColumnName<R extends RowsParam> = keyof RowTypesOf<R>['output'] & string;

/**
 * The row types of schema `S` with primary key columns `K`: typed when `S` came from
 * `defineSchema`, `UntypedRows` for any other Schema. `K = string` (key columns not known): a
 * key may give any of the columns.
 */
export type RowsOf<S extends Schema, K extends string = never> = S extends { readonly [ROW_TYPES]?: infer T }
  ? NonNullable<T> extends {
      input: infer In extends Record<string, unknown>;
      output: infer Out extends Record<string, unknown>;
      columns: infer M extends TypeMap;
    }
    ? { input: In; output: Out; key: string extends K ? Partial<In> : Simplify<Pick<In, K & keyof In>>; columns: M }
    : UntypedRows
  : UntypedRows;

/** The column names schema `S` has (`string` for an untyped schema). */
export type SchemaColumn<S extends Schema> = ColumnName<RowsOf<S>>;
