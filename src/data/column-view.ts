// How one opener sees its store (SPEC §9.1): the store keeps every stored column, but the opener
// sees only the columns of its own schema, in its order and under its names (a release from
// before a rename sees the renamed column under the old name). Puts go through `putSchema` (its
// hidden columns unknown to a put, written null); reads are relabelled here. Any runtime.

import { Field, RecordBatch, Schema, Table } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { StoreSchema } from './schema.js';
import { TOMBSTONE_COLUMN } from './schema.js';
import { makeBatch } from './select.js';

/** One opener's columns over a store's full schema. */
export class ColumnView {
  /** True when the opener sees the stored columns as they are (nothing to relabel or hide). */
  readonly identity: boolean;
  /** The store's schema as a put sees it: the opener's names, the stored order, hidden columns marked. */
  readonly putSchema: StoreSchema;
  /** Stored columns the opener does not see. */
  readonly hidden: string[];
  /** The opener's column names, in its order. */
  private readonly names: string[];
  /** Per opener column, the stored column's name. */
  private readonly stored: string[];
  private readonly byName: Map<string, string>;
  /** Relabelled schema per source schema, so batches of one source share one schema. */
  private readonly schemas = new WeakMap<Schema, Map<string, { schema: Schema; idx: number[] }>>();

  /** `view`: per opener column, in its order, [its name, the stored column's name] (schema-versions.ts `planSchema`). */
  constructor(
    readonly full: StoreSchema,
    view: readonly (readonly [string, string])[],
  ) {
    this.names = view.map(([n]) => n);
    this.stored = view.map(([, s]) => s);
    this.byName = new Map(view.map(([n, s]) => [n, s]));
    const seen = new Set(this.stored);
    this.hidden = full.base.fields.map((f) => f.name).filter((n) => !seen.has(n));
    this.identity =
      this.hidden.length === 0 &&
      view.length === full.base.fields.length &&
      view.every(([n, s], i) => n === s && full.base.fields[i]!.name === s);
    if (this.identity) {
      this.putSchema = full;
      return;
    }
    const openerNameOf = new Map(view.map(([n, s]) => [s, n]));
    const base = new Schema(full.base.fields.map((f) => new Field(openerNameOf.get(f.name) ?? f.name, f.type, f.nullable)));
    this.putSchema = { ...full, base, hidden: new Set(this.hidden) };
  }

  /** The opener's columns that read and write a stored column of another name: its name → the stored name. */
  aliases(): Record<string, string> {
    const out: Record<string, string> = {};
    this.names.forEach((n, i) => {
      if (n !== this.stored[i]) out[n] = this.stored[i]!;
    });
    return out;
  }

  /**
   * The stored names of the opener's `columns` (all of its columns when undefined), in that
   * order; `InvalidArgument` for a name the opener does not have (a hidden column included).
   */
  storedColumns(columns: readonly string[] | undefined): string[] | undefined {
    if (this.identity) return columns === undefined ? undefined : [...columns];
    if (columns === undefined) return [...this.stored];
    if (!Array.isArray(columns)) throw new MemWalError('InvalidArgument', 'columns must be an array of column names');
    return columns.map((c) => {
      const s = typeof c === 'string' ? this.byName.get(c) : undefined;
      if (s === undefined) throw new MemWalError('InvalidArgument', `unknown column "${String(c)}"`);
      return s;
    });
  }

  /** A row read from the store (stored names), as the opener sees it. */
  row<T extends Record<string, unknown> | undefined>(r: T): T {
    if (this.identity || r === undefined) return r;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < this.names.length; i++) out[this.names[i]!] = r[this.stored[i]!];
    return out as T;
  }

  /**
   * A query's options under the opener's names as the store takes them (`columns` and `after`
   * under the stored names; all of the opener's columns when `columns` is undefined), and the rows
   * it returns as the opener sees them: its columns only (a hidden one left out), under its names.
   */
  query<O extends { columns?: string[]; after?: Record<string, unknown> }>(
    opts: O,
  ): { opts: O; rows: (rows: Record<string, unknown>[]) => Record<string, unknown>[] } {
    const stored = this.storedColumns(opts.columns)!;
    const names = opts.columns ?? this.names;
    let after = opts.after;
    if (typeof after === 'object' && after !== null) {
      const a = after;
      after = {};
      for (const [n, s] of this.byName) if (n in a) after[s] = a[n];
    }
    const rows = (rs: Record<string, unknown>[]): Record<string, unknown>[] =>
      rs.map((r) => {
        const out: Record<string, unknown> = {};
        names.forEach((n, i) => {
          out[n] = r[stored[i]!];
        });
        return out;
      });
    return { opts: { ...opts, columns: stored, ...(after === undefined ? {} : { after }) }, rows };
  }

  /**
   * `batch` (stored names; any subset and order of stored columns, `_tombstone` kept where it is
   * when present) with only the opener's columns, in the order `columns` gives (all of the
   * opener's when undefined), under the opener's names. Shares the column data.
   */
  batch(batch: RecordBatch, columns?: readonly string[]): RecordBatch {
    if (this.identity && columns === undefined) return batch;
    const key = columns === undefined ? '' : JSON.stringify(columns);
    let bySource = this.schemas.get(batch.schema);
    if (!bySource) this.schemas.set(batch.schema, (bySource = new Map()));
    let made = bySource.get(key);
    if (!made) {
      const names = columns ?? this.names;
      const fields = batch.schema.fields;
      const idx: number[] = [];
      const out: Field[] = [];
      for (const name of names) {
        const stored = this.byName.get(name);
        const j = stored === undefined ? -1 : fields.findIndex((f) => f.name === stored);
        if (j < 0) continue;
        idx.push(j);
        out.push(new Field(name, fields[j]!.type, fields[j]!.nullable));
      }
      const t = fields.findIndex((f) => f.name === TOMBSTONE_COLUMN);
      if (t >= 0) {
        idx.push(t);
        out.push(fields[t]!);
      }
      made = { schema: new Schema(out), idx };
      bySource.set(key, made);
    }
    const { schema, idx } = made;
    return makeBatch(
      schema,
      idx.map((j) => batch.data.children[j]!),
      batch.numRows,
    );
  }

  /** `table` (stored names) as the opener sees it ({@link batch}). */
  table(table: Table): Table {
    if (this.identity) return table;
    if (table.batches.length === 0) {
      return new Table(this.batch(new RecordBatch(table.schema, undefined as never)).schema);
    }
    return new Table(table.batches.map((b) => this.batch(b)));
  }
}
