// Shared pieces of the drain and Lance sink tests: schemas, a seeded random write load of puts,
// overwrites and deletes, and the model check's two sides (rows of a store's scan() and rows of
// the Lance table for that store) in one comparable form. Node only (tests).

import { createRequire } from 'node:module';
import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import type { Table } from 'apache-arrow';
import type * as LanceModule from '@lancedb/lancedb';
import type { MemWalApi } from '../engine/api.js';
import { int } from '../testing/rng.js';
import { STORE_COLUMN } from './sink.js';

const lancedb = createRequire(import.meta.url)('@lancedb/lancedb') as typeof LanceModule;

/** Keyed test schema: `id` is the key. */
export const keyedSchema = new Schema([
  new Field('id', new Int64(), false),
  new Field('name', new Utf8(), true),
  new Field('score', new Float64(), true),
]);

/** Append-only test schema. */
export const appendSchema = new Schema([new Field('seq', new Int64(), false), new Field('note', new Utf8(), true)]);

/**
 * `ops` random operations on a keyed store over `keys` ids: puts of 1-20 rows (new ids and
 * overwrites, some with null fields) and deletes of 1-5 ids. Each op is awaited (durable).
 */
export async function randomKeyedLoad(store: MemWalApi, r: () => number, ops: number, keys = 200): Promise<void> {
  for (let i = 0; i < ops; i++) {
    if (r() < 0.2) {
      const ids = Array.from({ length: 1 + int(r, 5) }, () => ({ id: int(r, keys) }));
      await store.delete(ids);
    } else {
      const rows = Array.from({ length: 1 + int(r, 20) }, () => ({
        id: int(r, keys),
        name: r() < 0.1 ? null : `n${int(r, 1e6)}`,
        score: r() < 0.1 ? null : Math.round(r() * 1e6) / 100,
      }));
      await store.put(rows);
    }
  }
}

/** `ops` appends of 1-20 rows to an append-only store, `seq` counting from `from`. Returns the next seq. */
export async function randomAppendLoad(store: MemWalApi, r: () => number, ops: number, from = 0): Promise<number> {
  let seq = from;
  for (let i = 0; i < ops; i++) {
    const rows = Array.from({ length: 1 + int(r, 20) }, () => ({ seq: seq++, note: r() < 0.1 ? null : `x${int(r, 1e6)}` }));
    await store.put(rows);
  }
  return seq;
}

/** Rows of an Arrow table restricted to `columns`, as sorted JSON strings (bigint as decimal). */
export function comparableRows(t: Table, columns: readonly string[]): string[] {
  const out: string[] = [];
  const cols = columns.map((c) => t.getChild(c)!);
  for (let i = 0; i < t.numRows; i++) {
    out.push(JSON.stringify(cols.map((c) => normalise(c.get(i)))));
  }
  return out.sort();
}

function normalise(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v === undefined) return null;
  return v;
}

/** The scan() side of the model check. */
export async function scanRows(store: MemWalApi, schema: Schema): Promise<string[]> {
  return comparableRows(
    await store.scan(),
    schema.fields.map((f) => f.name),
  );
}

/** The Lance side: rows of `storeId` in `table` at `uri`, read with LanceDB directly. */
export async function lanceRows(uri: string, table: string, storeId: string, schema: Schema): Promise<string[]> {
  const db = await lancedb.connect(uri);
  try {
    if (!(await db.tableNames()).includes(table)) return [];
    const t = await db.openTable(table);
    const rows = await t
      .query()
      .where(`${STORE_COLUMN} = '${storeId}'`)
      .select(schema.fields.map((f) => f.name))
      .toArrow();
    t.close();
    return comparableRows(
      rows as unknown as Table,
      schema.fields.map((f) => f.name),
    );
  } finally {
    db.close();
  }
}

/** Every row of the Lance table (all stores), for checks that nothing changed. */
export async function lanceSnapshot(uri: string, table: string): Promise<{ version: number; rows: string[] }> {
  const db = await lancedb.connect(uri);
  try {
    if (!(await db.tableNames()).includes(table)) return { version: 0, rows: [] };
    const t = await db.openTable(table);
    const all = (await t.query().toArrow()) as unknown as Table;
    const version = await t.version();
    t.close();
    return {
      version,
      rows: comparableRows(
        all,
        all.schema.fields.map((f) => f.name),
      ),
    };
  } finally {
    db.close();
  }
}
