// A LanceSink's positions table, `<table>_memwal_positions`: one row per store with the highest
// position applied, the epoch of that entry and the store's incarnation id (docs/scale-out.md
// "Exactly once"), and the rule that compares a request's incarnation with the recorded one.

import type { Table as LanceTable } from '@lancedb/lancedb';
import { MemWalError } from '../util/errors.js';
import { type ArrowTable, arrow } from './lancedb.js';
import { withSchema } from './table-schema.js';

/** Suffix of the table that records the applied position per store: `<table>_memwal_positions`. */
export const POSITIONS_TABLE_SUFFIX = '_memwal_positions';

/** What a sink knows of one store: its recorded position and whether its leftovers were removed. */
export interface StoreState {
  position: number;
  epoch: number;
  /** The store's incarnation the position belongs to; undefined when recorded without one. */
  incarnation: string | undefined;
  /** Leftovers of an interrupted apply have been removed in this process (guarantee 4 of src/lance/sink.ts). */
  recovered: boolean;
}

/** A row of `<table>_memwal_positions` (`incarnation` absent from tables made before it was kept). */
interface PositionRow {
  store: string;
  position: bigint;
  epoch: bigint;
  incarnation?: string | null;
}

/** The positions table's incarnation column (nullable: positions recorded without one). */
const INCARNATION_FIELD = new arrow.Field('incarnation', new arrow.Utf8(), true);

/** Every store's recorded position, epoch and incarnation id (absent if recorded without one). */
export async function readPositions(t: LanceTable): Promise<{ storeId: string; position: number; epoch: number; incarnation?: string }[]> {
  const rows = (await t.query().toArrow()).toArray() as PositionRow[];
  return rows.map((r) => ({
    storeId: r.store,
    position: Number(r.position),
    epoch: Number(r.epoch),
    ...(r.incarnation ? { incarnation: r.incarnation } : {}),
  }));
}

/** The recorded state of `storeId` in positions table `t` (named `name`; absent: nothing applied). */
export async function readState(t: LanceTable | undefined, name: string, storeId: string): Promise<StoreState> {
  if (!t) return { position: 0, epoch: 0, incarnation: undefined, recovered: false };
  const rows = (await t.query().where(`store = '${storeId}'`).toArrow()).toArray() as PositionRow[];
  if (rows.length > 1) throw new MemWalError('Corruption', `${name} holds ${rows.length} rows for ${storeId}`);
  const r = rows[0];
  return r
    ? { position: Number(r.position), epoch: Number(r.epoch), incarnation: r.incarnation ?? undefined, recovered: false }
    : { position: 0, epoch: 0, incarnation: undefined, recovered: false };
}

/** The positions table's row for one store, with the table's schema. */
export function positionRow(storeId: string, position: number, epoch: number, incarnation: string | undefined): ArrowTable {
  const row = new arrow.Table({
    store: arrow.vectorFromArray([storeId], new arrow.Utf8()),
    position: arrow.vectorFromArray([BigInt(position)], new arrow.Int64()),
    epoch: arrow.vectorFromArray([BigInt(epoch)], new arrow.Int64()),
    incarnation: arrow.vectorFromArray([incarnation ?? null], new arrow.Utf8()),
  });
  const schema = new arrow.Schema([
    new arrow.Field('store', new arrow.Utf8(), false),
    new arrow.Field('position', new arrow.Int64(), false),
    new arrow.Field('epoch', new arrow.Int64(), false),
    INCARNATION_FIELD,
  ]);
  return withSchema(row, schema);
}

/** Upserts `row` ({@link positionRow}) into the existing positions table `t`; returns the commits made. */
export async function mergePosition(t: LanceTable, row: ArrowTable): Promise<number> {
  let commits = 0;
  // A positions table made before incarnations were kept gains the column (null for its rows).
  if (!(await t.schema()).fields.some((f) => f.name === INCARNATION_FIELD.name)) {
    await t.addColumns([INCARNATION_FIELD]);
    commits += 1;
  }
  await t.mergeInsert('store').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(row);
  return commits + 1;
}

/**
 * Whether `incarnation` (of a request) is newer than the one recorded for the store: then its
 * positions start again from 0. Throws `InvalidArgument` for an older one, whose store was
 * created again under the same id since. Without an incarnation on either side: the same.
 * Incarnation ids sort by creation time (docs/format.md §9).
 */
export function isNewer(storeId: string, state: StoreState, incarnation: string | undefined): boolean {
  if (incarnation === undefined || state.incarnation === undefined || incarnation === state.incarnation) return false;
  if (incarnation > state.incarnation) return true;
  throw new MemWalError(
    'InvalidArgument',
    `store ${storeId} was created again since this request's store (incarnation ${incarnation} is older than the recorded ${state.incarnation}); nothing of the older store is applied any more`,
  );
}
