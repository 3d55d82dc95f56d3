// The data table's schema as the sink keeps it (docs/scale-out.md "Running a shared sink"): how
// a request's columns fit the table (what is added, what is refused), the sink's own columns, and
// the conversion of checked rows into LanceDB's Arrow under the table's schema. Node only.

import { Schema as EsmSchema, Table as EsmTable, tableToIPC as esmTableToIPC } from 'apache-arrow';
import { TOMBSTONE_COLUMN } from '../data/schema.js';
import { POSITION_COLUMN } from '../drain/wire.js';
import { MemWalError } from '../util/errors.js';
import { checkValues, quote, rowBytes } from './arrow-check.js';
import { type ArrowData, type ArrowField, type ArrowSchema, type ArrowTable, type ArrowType, arrow } from './lancedb.js';
import { RESERVED, STORE_COLUMN, type SinkRules, countFields, fitsType } from './request.js';

export interface SchemaPlan {
  /** The data table's schema after this write (the table's columns + the added ones). */
  target: ArrowSchema;
  /** Nullable columns the rows have and the table lacks: added (all null) before the data commit. */
  added: ArrowField[];
}

/** `columns` followed by the sink's own columns. */
export function ownColumns(columns: ArrowField[], keyed: boolean): ArrowSchema {
  return new arrow.Schema([
    ...columns,
    new arrow.Field(STORE_COLUMN, new arrow.Utf8(), false),
    new arrow.Field(POSITION_COLUMN, new arrow.Int64(), false),
    ...(keyed ? [new arrow.Field(TOMBSTONE_COLUMN, new arrow.Bool(), false)] : []),
  ]);
}

/**
 * The data table's schema when the first rows create it: the operator's `schema`, else the
 * request's `columns` with every column but the key columns made nullable (its nested fields as
 * they are), then the sink's own columns. The first store's nullability is its own business: a
 * column it holds non-nullable in its store would otherwise be one every later store must bring
 * ("a non-nullable column this request lacks"), so whoever reaches a fresh sink first could lock
 * every other store out. Its rows still carry their values; key columns stay non-nullable (every
 * request of a keyed sink brings them, non-nullable: `checkColumns` in src/lance/request.ts).
 */
export function firstColumns(columns: ArrowField[], rules: SinkRules): ArrowSchema {
  const user =
    rules.schema?.fields ?? columns.map((f) => (f.nullable || rules.primaryKey?.includes(f.name) ? f : f.clone({ nullable: true })));
  return ownColumns([...user], rules.primaryKey !== undefined);
}

/**
 * Bytes one row of `storeId` takes on its way into Lance: the table's columns (or, before the
 * table, the ones its first rows create) and the request's `columns` the table lacks, each at its
 * null width ({@link rowBytes}: what the row is padded with where it has no value), plus the
 * store id that fills `_memwal_store`. What a commit of that store's rows holds per row, at least.
 */
export function paddedRowBytes(columns: ArrowField[], table: ArrowSchema | undefined, rules: SinkRules, storeId: string): number {
  const fields = table?.fields ?? firstColumns(columns, rules).fields;
  const added = columns.filter((f) => !fields.some((t) => t.name === f.name));
  const width = [...fields, ...added].reduce((n, f) => n + rowBytes(f.type), 0);
  return width + new TextEncoder().encode(storeId).length;
}

/**
 * How the rows' user columns fit the table: same names and types; a column the table lacks is
 * added if nullable (docs/impl.md §12) and within `maxColumns` and `maxRowBytes` (or the
 * operator's schema); a table column the rows lack is written as null if nullable (a dropped
 * field). Anything else is `InvalidArgument`, in words about the request and the sink's rules
 * only (never the table's other columns, their types or their number).
 */
export function planSchema(columns: ArrowField[], table: ArrowSchema, rules: SinkRules): SchemaPlan {
  for (const f of ownColumns([], rules.primaryKey !== undefined).fields) {
    const t = table.fields.find((x) => x.name === f.name);
    if (!t || !arrow.util.compareTypes(t.type, f.type)) {
      throw new MemWalError(
        'InvalidArgument',
        `schema: the Lance table has no ${f.name} column of type ${f.type} (was it made for a different kind of store?)`,
      );
    }
  }
  const wire = new Map(columns.map((f) => [f.name, f]));
  for (const t of table.fields) {
    if (RESERVED.has(t.name)) continue;
    const w = wire.get(t.name);
    if (!w) {
      // Not named: the table's columns are other stores' too, and a refusal tells a store only of its own.
      if (!t.nullable) throw new MemWalError('InvalidArgument', 'schema: the Lance table has a non-nullable column this request lacks');
      continue;
    }
    if (!fitsType(w.type, t.type) || (w.nullable && !t.nullable)) throw unfit(w);
  }
  const added = columns.filter((f) => !table.fields.some((t) => t.name === f.name));
  // One refusal whether the column is new or another store's: a refusal tells a store only of its request.
  const unaddable = added.find((f) => !allNullable(f));
  if (unaddable) throw unfit(unaddable);
  if (added.length > 0 && !rules.schema) {
    const count = (fields: ArrowField[]) => fields.reduce((n, f) => n + (RESERVED.has(f.name) ? 0 : countFields(f)), 0);
    if (count(table.fields) + count(added) > rules.maxColumns) {
      throw new MemWalError(
        'InvalidArgument',
        `schema: this sink takes no more columns (maxColumns ${rules.maxColumns}, nested fields counted); ${added.map((f) => quote(f.name)).join(', ')} cannot be added`,
      );
    }
  }
  if (added.length > 0) {
    const width = (fields: ArrowField[]) => fields.reduce((n, f) => n + rowBytes(f.type), 0);
    if (width(table.fields) + width(added) > rules.maxRowBytes) {
      throw new MemWalError(
        'InvalidArgument',
        `schema: this sink's rows can grow by no more bytes (maxRowBytes ${rules.maxRowBytes}); ${added.map((f) => quote(f.name)).join(', ')} cannot be added`,
      );
    }
  }
  return { target: new arrow.Schema([...table.fields, ...added]), added };
}

/**
 * The refusal of a column that neither fits the table's column of its name nor can be added:
 * in the request's terms and the rule's, the same whether the table has such a column or not.
 */
function unfit(f: ArrowField): MemWalError {
  return new MemWalError(
    'InvalidArgument',
    `schema: column ${quote(f.name)} (${f.type}, ${f.nullable ? 'nullable' : 'not nullable'}) does not fit this sink's table: a column's type and nullability are set by the first request that brings it, and a column added later must be nullable, its nested fields too (an operator's schema can hold others from the start)`,
  );
}

/** Whether `f` and every field nested in it are nullable. */
function allNullable(f: ArrowField): boolean {
  return f.nullable && (f.type.children ?? []).every((c: ArrowField) => allNullable(c));
}

/**
 * An operator's schema in LanceDB's Arrow (an apache-arrow Schema of either module instance),
 * through IPC, so that its types are of the classes decoded bodies have (`compareTypes` checks
 * constructors).
 */
export function toLanceSchema(schema: EsmSchema | ArrowSchema): ArrowSchema {
  if (!(schema instanceof EsmSchema) || schema.fields.length === 0) {
    throw new MemWalError('InvalidArgument', 'LanceSink: schema must be an apache-arrow Schema with at least one field');
  }
  // Schema's instanceof answers for either module instance; a type's tells them apart.
  const bytes = schema.fields.every((f) => (f.type as unknown) instanceof arrow.DataType)
    ? arrow.tableToIPC(new arrow.Table(schema as unknown as ArrowSchema), 'stream')
    : esmTableToIPC(new EsmTable(schema), 'stream');
  return arrow.tableFromIPC(bytes).schema;
}

/**
 * The rows of `t` in the data table's schema: its columns by name, `_memwal_store` filled with
 * the store id, columns the rows lack filled with nulls.
 */
export function toLance(t: ArrowTable, target: ArrowSchema, storeId: string): ArrowTable {
  const batches = t.batches.map((b) => {
    const children = target.fields.map((f): ArrowData => {
      if (f.name === STORE_COLUMN) return constantUtf8(storeId, b.numRows);
      const child = b.getChild(f.name);
      if (child) return withType(child.data[0]!, f.type); // the table's nested nullability (fitsType)
      // A column the rows lack: null, its non-nullable nested fields without nulls (Lance refuses those).
      return checkValues(f, arrow.vectorFromArray(new Array(b.numRows).fill(null), f.type).data[0]!, f.name);
    });
    const data = arrow.makeData({ type: new arrow.Struct(target.fields), length: b.numRows, nullCount: 0, children });
    return new arrow.RecordBatch(target, data);
  });
  return new arrow.Table(target, batches);
}

/** `data` as of type `type`, which it fits ({@link fitsType}): the same buffers, the column's nested fields. */
function withType(data: ArrowData, type: ArrowType): ArrowData {
  const children = (type.children ?? []).map((c: ArrowField, i: number) => withType(data.children[i]!, c.type));
  return data.clone(type, data.offset, data.length, data.nullCount, data.buffers, children);
}

/** `t`'s data under `schema` (same column order and types; nullability and metadata from `schema`). */
export function withSchema(t: ArrowTable, schema: ArrowSchema): ArrowTable {
  const batches = t.batches.map((b) => {
    const children = schema.fields.map((f) => b.getChild(f.name)!.data[0]!);
    return new arrow.RecordBatch(
      schema,
      arrow.makeData({ type: new arrow.Struct(schema.fields), length: b.numRows, nullCount: 0, children }),
    );
  });
  return new arrow.Table(schema, batches);
}

function constantUtf8(value: string, length: number): ArrowData {
  const bytes = new TextEncoder().encode(value);
  const data = new Uint8Array(bytes.length * length);
  const offsets = new Int32Array(length + 1);
  for (let i = 0; i < length; i++) {
    data.set(bytes, i * bytes.length);
    offsets[i + 1] = (i + 1) * bytes.length;
  }
  return arrow.makeData({ type: new arrow.Utf8(), length, nullCount: 0, valueOffsets: offsets, data });
}
