// Plain rows built into Arrow columns in the page, so a put crosses to the worker as transferred
// buffers (WireColumns: no schema, no object a column) instead of a structured clone of every row object, which costs the page
// to write and the worker to read more than the build itself. The columns come from the builders
// the engine uses (data/row-columns.ts), so the worker receives the bytes it would have built.
// Anything the builders do not take (another column type, a row that is not a plain object, an
// unknown column, a bad value) crosses as the rows themselves, and the worker builds them or
// refuses them with its own error. Any runtime with postMessage.

import { buildColumnBuffers, builtHere, type ColumnFaults, type ColumnSpec } from '../data/row-columns.js';
import type { WireColumns, WireSchema } from './protocol.js';

/** How {@link rowsToWire} builds a store's rows: its columns (in the schema's order) and their names. */
export interface RowPlan {
  specs: ColumnSpec[];
  names: Record<string, true>;
  /** The columns' names in `specs`' order, as WireColumns carries them. */
  order: string[];
}

/** The plan for a store of `schema` (as plain data), or undefined when a column is of a type not built here. */
export function rowPlan(schema: WireSchema): RowPlan | undefined {
  const specs: ColumnSpec[] = [];
  const names: Record<string, true> = Object.create(null) as Record<string, true>;
  for (const f of schema.fields) {
    const type = f.type as ColumnSpec['type'];
    if (!builtHere(type)) return undefined;
    specs.push({ name: f.name, nullable: f.nullable, type });
    names[f.name] = true;
  }
  return { specs, names, order: specs.map((s) => s.name) };
}

/** What the builders throw here: the rows go as they are. */
const notBuilt = (): Error => new Error('not built in the page');
const FAULTS: ColumnFaults = { bad: notBuilt, missing: notBuilt, tooBig: notBuilt };

/**
 * `rows` as the store's columns (WireColumns), each buffer its own (to transfer), or
 * undefined when they are better sent as they are: no rows, a row that is not a plain object
 * (a class instance, a proxy of one, an array), a key the store does not have, or a value the
 * column does not take (the worker says which, with its own message).
 */
export function rowsToWire(rows: readonly unknown[], plan: RowPlan): WireColumns | undefined {
  try {
    return build(rows, plan);
  } catch {
    return undefined; // a NotBuilt, or a getter or proxy trap that threw: the clone meets it as before
  }
}

function build(rows: readonly unknown[], plan: RowPlan): WireColumns | undefined {
  const n = rows.length;
  if (n === 0) return undefined;
  const { names } = plan;
  for (let i = 0; i < n; i++) {
    const row = rows[i];
    if (typeof row !== 'object' || row === null) return undefined;
    const proto = Object.getPrototypeOf(row) as unknown;
    if (proto !== Object.prototype && proto !== null) return undefined;
    for (const k in row) if (names[k] !== true) return undefined;
  }
  const plain = rows as readonly Record<string, unknown>[];
  const { specs } = plan;
  const nullCounts: number[] = new Array<number>(specs.length);
  const buffers: (ArrayBufferView | undefined)[] = new Array<ArrayBufferView | undefined>(3 * specs.length);
  for (let j = 0; j < specs.length; j++) {
    const c = buildColumnBuffers(plain, specs[j]!, FAULTS);
    nullCounts[j] = c.nullCount;
    buffers[3 * j] = c.valueOffsets;
    buffers[3 * j + 1] = c.values;
    buffers[3 * j + 2] = c.nullCount > 0 ? c.nullBitmap : undefined;
  }
  return { kind: 'columns', length: n, names: plan.order, nullCounts, buffers };
}
