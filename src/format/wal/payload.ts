// A WAL entry's payload (docs/format.md §4) as Arrow: an IPC stream in a schema the store
// recorded. Used by recovery, replay, tail and the I/O worker's flush. Any runtime.

import { type Schema, type Table, tableFromIPC } from 'apache-arrow';
import { schemasEqual } from '../../data/schema.js';
import { MemWalError } from '../../util/errors.js';

/** A WAL entry as read back: its position, the epoch of the writer that wrote it, its payload bytes. */
export interface WalPayload {
  position: number;
  epoch: number;
  payload: Uint8Array;
}

/** Accepts a payload's schema, written by writer `epoch`: the store's, or one of its recorded versions. */
export type SchemaCheck = Schema | ((schema: Schema, epoch: number) => boolean);

/**
 * A WAL payload as a Table in a schema `known` accepts (the store's schema, or one of its recorded
 * versions). `copy`: decode from a copy of just this payload, so the batches own a compact buffer
 * instead of viewing the whole segment. Throws `Corruption`.
 */
export function decodePayload(e: WalPayload, known: SchemaCheck, copy: boolean): Table {
  const { payload, position } = e;
  let table: Table;
  try {
    table = tableFromIPC(copy ? payload.slice() : payload) as Table;
  } catch (e) {
    throw new MemWalError('Corruption', `WAL entry ${position}: payload is not an Arrow IPC stream: ${String(e)}`);
  }
  const ok = typeof known === 'function' ? known(table.schema, e.epoch) : schemasEqual(table.schema, known);
  if (!ok) throw new MemWalError('Corruption', `WAL entry ${position}: its schema is none the store recorded`);
  return table;
}
