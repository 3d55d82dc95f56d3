// The `ordered` index section (docs/format.md §8 "Index sections"): one ordered index's entries
// for the rows of one table file, sorted by (index key, primary key), each with the row's position
// in the file. Built from the blocks the file holds (sections.ts), so it lists exactly the index
// keys of the file's rows: a delete marker has none, a row with a null indexed value none, a
// multi-entry row one per distinct element. Pure; any runtime.

import type { RecordBatch } from 'apache-arrow';
import { indexKeysOfRow, type ResolvedIndex } from '../../data/index-keys.js';
import { type Key, keyString } from '../../data/keys.js';
import type { StoreSchema } from '../../data/schema.js';
import { MemWalError } from '../../util/errors.js';
import type { SectionBuilder, SectionId } from './sections.js';

/** The kind of an ordered (BTree) index's section. */
export const ORDERED_SECTION_KIND = 'ordered';

/** The section id of index `ix` as it is defined now: its columns, their encodings and multiEntry. */
export function orderedSectionId(ix: ResolvedIndex): SectionId {
  return {
    kind: ORDERED_SECTION_KIND,
    name: ix.name,
    spec: JSON.stringify({ columns: ix.columns, kinds: ix.kinds, multiEntry: ix.multiEntry }),
  };
}

/** An ordered section, decoded: entry `i` is index key `keys[i]` of the row at `rows[i]`, whose primary key is `pks[i]` (encoded). */
export interface OrderedSection {
  keys: string[];
  pks: string[];
  rows: Uint32Array;
}

/** The index keys of `block`'s live rows, appended to `out` (a plain function: the per-row loop of a build step). */
function addRows(
  ix: ResolvedIndex,
  storeSchema: StoreSchema,
  block: RecordBatch,
  firstRow: number,
  keys: ArrayLike<Key>,
  out: { keys: string[]; pks: string[]; rows: number[] },
): void {
  const get = ix.columns.map((c) => {
    const v = block.getChild(c);
    return v ? (r: number) => v.get(r) : () => null;
  });
  const tomb = storeSchema.hasTombstone ? block.getChildAt(storeSchema.internal.fields.length - 1) : null;
  const row: Record<string, unknown> = {};
  for (let r = 0; r < block.numRows; r++) {
    if (tomb?.get(r) === true) continue;
    for (let c = 0; c < get.length; c++) row[ix.columns[c]!] = get[c]!(r);
    const ks = indexKeysOfRow(ix, row);
    if (ks.length === 0) continue;
    const pk = keyString(keys[r]!, storeSchema);
    for (const k of ks) {
      out.keys.push(k);
      out.pks.push(pk);
      out.rows.push(firstRow + r);
    }
  }
}

/** The builder of index `ix`'s section in a table build of `storeSchema` (keyed stores: indexes need a primary key). */
export function orderedSectionBuilder(ix: ResolvedIndex, storeSchema: StoreSchema): SectionBuilder {
  const entries = { keys: [] as string[], pks: [] as string[], rows: [] as number[] };
  return {
    ...orderedSectionId(ix),
    addBlock(block, firstRow, keys) {
      if (!keys) throw new MemWalError('NotSupported', `index ${ix.name}: an ordered section needs a primary key`);
      addRows(ix, storeSchema, block, firstRow, keys, entries);
    },
    finish() {
      return encodeOrderedSection(entries.keys, entries.pks, entries.rows);
    },
  };
}

/**
 * Entries `keys[i]`, `pks[i]`, `rows[i]` (any order) as section bytes: count:u32, then in
 * (key, pk) order each as shared:varint suffixLen:varint suffix pkLen:varint pk row:varint, where
 * `shared` is how many leading bytes the key has in common with the entry before it.
 */
export function encodeOrderedSection(keys: readonly string[], pks: readonly string[], rows: readonly number[]): Uint8Array {
  const n = keys.length;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => {
    const ka = keys[a]!;
    const kb = keys[b]!;
    if (ka !== kb) return ka < kb ? -1 : 1;
    const pa = pks[a]!;
    const pb = pks[b]!;
    return pa < pb ? -1 : pa > pb ? 1 : 0;
  });
  let size = 4;
  for (let i = 0; i < n; i++) size += 20 + keys[i]!.length + pks[i]!.length;
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, n, true);
  let at = 4;
  const varint = (v: number): void => {
    while (v >= 0x80) {
      out[at++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    out[at++] = v;
  };
  const chars = (s: string, from: number): void => {
    for (let i = from; i < s.length; i++) out[at++] = s.charCodeAt(i);
  };
  let prev = '';
  for (let j = 0; j < n; j++) {
    const i = order[j]!;
    const key = keys[i]!;
    const pk = pks[i]!;
    let shared = 0;
    const most = Math.min(prev.length, key.length);
    while (shared < most && prev.charCodeAt(shared) === key.charCodeAt(shared)) shared++;
    varint(shared);
    varint(key.length - shared);
    chars(key, shared);
    varint(pk.length);
    chars(pk, 0);
    varint(rows[i]!);
    prev = key;
  }
  return out.slice(0, at);
}

/** Chars of `bytes[from, to)` as a string (one char per byte). */
function text(bytes: Uint8Array, from: number, to: number): string {
  let s = '';
  for (let at = from; at < to; at += 8192) {
    s += String.fromCharCode.apply(null, bytes.subarray(at, Math.min(to, at + 8192)) as unknown as number[]);
  }
  return s;
}

/**
 * Decodes an ordered section of table file `file` with `rows` rows. `Corruption` when it is cut
 * short, has bytes past its last entry, is out of (key, pk) order, or names a row past the file's.
 */
export function decodeOrderedSection(bytes: Uint8Array, file: string, name: string, fileRows: number): OrderedSection {
  const corrupt = (why: string): MemWalError => new MemWalError('Corruption', `table file ${file}: index section ${name} ${why}`);
  if (bytes.length < 4) throw corrupt('is cut short');
  const n = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  // Every entry takes at least 4 bytes: a count beyond that is damage, not an allocation to make.
  if (n > (bytes.length - 4) / 4) throw corrupt(`claims ${n} entries in ${bytes.length} bytes`);
  const keys: string[] = new Array(n);
  const pks: string[] = new Array(n);
  const rows = new Uint32Array(n);
  let at = 4;
  const varint = (): number => {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (at >= bytes.length) throw corrupt('is cut short');
      const b = bytes[at++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
      if (scale > 2 ** 49) throw corrupt('holds a varint that is too long');
    }
  };
  let prev = '';
  let prevPk = '';
  for (let i = 0; i < n; i++) {
    const shared = varint();
    const suffix = varint();
    if (shared > prev.length || at + suffix > bytes.length) throw corrupt(`is damaged at entry ${i}`);
    const key = (shared === 0 ? '' : prev.slice(0, shared)) + text(bytes, at, at + suffix);
    at += suffix;
    const pkLen = varint();
    if (at + pkLen > bytes.length) throw corrupt('is cut short');
    const pk = text(bytes, at, at + pkLen);
    at += pkLen;
    const row = varint();
    if (row >= fileRows) throw corrupt(`names row ${row} of a ${fileRows}-row file`);
    if (i > 0 && (key < prev || (key === prev && pk <= prevPk))) throw corrupt(`is out of order at entry ${i}`);
    keys[i] = key;
    pks[i] = pk;
    rows[i] = row;
    prev = key;
    prevPk = pk;
  }
  if (at !== bytes.length) throw corrupt(`has ${bytes.length - at} bytes past its last entry`);
  return { keys, pks, rows };
}
