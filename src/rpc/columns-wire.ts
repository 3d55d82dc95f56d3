// A put's rows the page built into columns (WireColumns, client-rows.ts), read back on the worker
// as a RecordBatch of the store's schema after checking each buffer's shape. Worker side only:
// kept out of arrow-wire.ts, whose module the page also loads (for a scan's Table).
// Any runtime with postMessage.

import { Data, type LargeUtf8, RecordBatch, Schema, Struct, Type, type Utf8 } from 'apache-arrow';
import { EMPTY, builtHere } from '../data/row-columns.js';
import { MemWalError } from '../util/errors.js';
import type { WireColumns } from './protocol.js';

const isView = (b: unknown): b is ArrayBufferView => ArrayBuffer.isView(b);

/** Cleared bits among the first `n` of `bitmap` (-1 when it is shorter than `n` bits). */
function nullsIn(bitmap: Uint8Array, n: number): number {
  if (bitmap.length < (n + 7) >> 3) return -1;
  let valid = 0;
  for (let i = 0; i < n >> 3; i++) {
    let b = bitmap[i]!;
    while (b) {
      b &= b - 1;
      valid++;
    }
  }
  for (let i = n & ~7; i < n; i++) valid += (bitmap[i >> 3]! >> (i & 7)) & 1;
  return n - valid;
}

/**
 * The RecordBatch of `w`, a put's rows the page built into columns of `schema` (the store's),
 * named by `w.names` in any order (views over the received buffers, nothing copied). The engine's
 * put checks it as any RecordBatch (names, types, nulls in non-nullable columns); first each
 * buffer's shape is checked here, so that a page that sends what the builders would not (an
 * unknown, repeated or missing name, a short buffer, offsets out of bounds or decreasing, a wrong
 * array type, a null count its bitmap does not hold) is refused `InvalidArgument` before anything
 * is written:
 * O(columns + rows / 8), and O(rows) over a variable-width column's offsets. Worker side.
 */
export function decodeColumns(w: WireColumns, schema: Schema): RecordBatch {
  const n = w.length;
  const bad = (why: string): never => {
    throw new MemWalError(
      'InvalidArgument',
      `put: the columns sent by the page do not fit the store's schema: ${why}; nothing was written`,
    );
  };
  if (!Number.isSafeInteger(n) || n < 1) bad(`length ${String(n)}`);
  const k = Array.isArray(w.names) ? w.names.length : -1;
  if (k < 0 || !Array.isArray(w.nullCounts) || w.nullCounts.length !== k || !Array.isArray(w.buffers) || w.buffers.length !== 3 * k) {
    bad('names, null counts and buffers do not match');
  }
  // Every column of the store, each once, as the builders send them: a put's length is then
  // backed by buffers the page sent (a message naming no column must not have the worker fill
  // billions of null rows), and a name that is not a string is refused like any unknown one.
  if (k !== schema.fields.length) bad(`${k} columns named, the store has ${schema.fields.length}`);
  const named = new Set<string>();
  const fields = w.names.map((name) => {
    const field = typeof name === 'string' && !named.has(name) ? schema.fields.find((f) => f.name === name) : undefined;
    if (!field)
      bad(
        typeof name !== 'string'
          ? `a column name of type ${typeof name}`
          : named.has(name)
            ? `column ${JSON.stringify(name)} named twice`
            : `no column ${JSON.stringify(name)}`,
      );
    named.add(name);
    return field!;
  });
  const children = new Array<Data>(k);
  for (let j = 0; j < k; j++) {
    const field = fields[j]!;
    const type = field.type;
    const varWidth =
      type.typeId === Type.Utf8 || type.typeId === Type.LargeUtf8 || type.typeId === Type.Binary || type.typeId === Type.LargeBinary;
    const at = (why: string): never => bad(`column "${field.name}": ${why}`);
    if (!builtHere(type as never)) at(`type ${String(type)} is not built on the page`);
    const nullCount = w.nullCounts[j];
    if (!Number.isSafeInteger(nullCount) || nullCount! < 0 || nullCount! > n) at(`null count ${String(nullCount)}`);
    const offsets = w.buffers[3 * j];
    const values = w.buffers[3 * j + 1];
    const validity = w.buffers[3 * j + 2];
    if (!isView(values) || values.constructor !== type.ArrayType) at('values of the wrong array type');
    if (validity !== undefined && !(validity instanceof Uint8Array)) at('a validity bitmap that is not a Uint8Array');
    const hasBitmap = validity !== undefined && validity.byteLength > 0;
    if ((nullCount! > 0 || hasBitmap) && (!hasBitmap || nullsIn(validity as Uint8Array, n) !== nullCount)) {
      at(`a validity bitmap that does not hold ${String(nullCount)} nulls in ${n} rows`);
    }
    const v = values as ArrayBufferView & { length: number };
    if (!varWidth) {
      if (offsets !== undefined) at('value offsets in a fixed-width column');
      const need = type.typeId === Type.Bool ? (n + 7) >> 3 : n;
      if (v.length < need) at(`${v.length} values for ${n} rows`);
    } else {
      if (!isView(offsets) || offsets.constructor !== (type as Utf8 | LargeUtf8).OffsetArrayType)
        at('value offsets of the wrong array type');
      const o = offsets as unknown as ArrayLike<number | bigint>;
      if (o.length < n + 1 || Number(o[0]) !== 0) at('value offsets that do not start at 0 for every row');
      for (let i = 0; i < n; i++) if (o[i]! > o[i + 1]!) at(`value offsets that decrease at row ${i}`);
      if (Number(o[n]) > v.length) at(`value offsets past the ${v.length} value bytes`);
    }
    children[j] = new Data(type, 0, n, nullCount!, [offsets, values, validity ?? EMPTY] as never);
  }
  const sent = new Schema(fields);
  return new RecordBatch(sent, new Data(new Struct(fields), 0, n, 0, [undefined, undefined, undefined] as never, children) as Data<Struct>);
}
