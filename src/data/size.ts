// Slice-aware byte estimates of Arrow data: only the bytes a batch's views cover, never the
// whole shared ArrayBuffer behind a slice (Lance #7563 fixed a 131x over-count of exactly that).

import { Type } from 'apache-arrow';
import type { Data, RecordBatch } from 'apache-arrow';

type TypedArray = ArrayBufferView & { length: number; BYTES_PER_ELEMENT: number };

/**
 * Estimated bytes of `batch`: for each column (recursively through children and dictionaries)
 * only what its views cover: validity `ceil(length/8)` when it has nulls, fixed-width
 * `length * byteWidth` (bit-packed bools `ceil(length/8)`), offsets `(length+1) * 4` (8 for
 * Large types), variable-width data `offsets[end] - offsets[start]`, view types 16 bytes per
 * value plus their whole variadic buffers, a dictionary once per column in full.
 * An estimate: ignores padding and the JS objects around the buffers. Any runtime.
 */
export function estimateBatchBytes(batch: RecordBatch): number {
  let bytes = 0;
  for (const child of batch.data.children) bytes += estimateDataBytes(child);
  return bytes;
}

/** {@link estimateBatchBytes} for one column's `Data`. */
export function estimateDataBytes(data: Data): number {
  const n = data.length;
  let bytes = data.nullCount > 0 && data.nullBitmap ? Math.ceil(n / 8) : 0;
  switch (data.typeId) {
    case Type.Null:
      return 0;
    case Type.Bool:
      return bytes + Math.ceil(n / 8);
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary: {
      const offsets = data.valueOffsets as Int32Array | BigInt64Array | undefined;
      if (!offsets || n === 0) return bytes;
      return bytes + (n + 1) * offsets.BYTES_PER_ELEMENT + Number(offsets[n]!) - Number(offsets[0]!);
    }
    case Type.Utf8View:
    case Type.BinaryView:
      bytes += n * 16;
      for (const b of data.variadicBuffers) bytes += b.byteLength;
      return bytes;
    case Type.List:
    case Type.LargeList:
    case Type.Map: {
      const offsets = data.valueOffsets as Int32Array | BigInt64Array | undefined;
      if (!offsets || n === 0) return bytes;
      const begin = Number(offsets[0]!);
      const end = Number(offsets[n]!);
      return bytes + (n + 1) * offsets.BYTES_PER_ELEMENT + estimateDataBytes(data.children[0]!.slice(begin, end - begin));
    }
    case Type.FixedSizeList: {
      // Children are index-aligned with the list (Data.slice slices them), so [0, n*size).
      const child = data.children[0]!;
      const len = Math.min(child.length, n * data.stride);
      return bytes + estimateDataBytes(len === child.length ? child : child.slice(0, len));
    }
    case Type.Struct:
      for (const c of data.children) bytes += estimateDataBytes(c);
      return bytes;
    case Type.Union: {
      bytes += n; // type ids
      if (data.valueOffsets) bytes += n * 4; // dense: children are not sliced, count them whole
      for (const c of data.children) bytes += estimateDataBytes(c);
      return bytes;
    }
    case Type.Dictionary: {
      const indices = data.values as TypedArray | undefined;
      bytes += n * (indices?.BYTES_PER_ELEMENT ?? 4);
      for (const d of data.dictionary?.data ?? []) bytes += estimateDataBytes(d);
      return bytes;
    }
    default: {
      // Fixed width: Int, Float, Decimal, Date, Time, Timestamp, Interval, Duration, FixedSizeBinary.
      const values = data.values as TypedArray | undefined;
      return bytes + n * data.stride * (values?.BYTES_PER_ELEMENT ?? 0);
    }
  }
}

/**
 * Summed `byteLength` of the distinct ArrayBuffers that `batch`'s views (values, offsets,
 * validity, type ids, variadic buffers, children, dictionaries) point into: what keeping the
 * batch alive really retains. Any runtime.
 */
export function backingBytes(batch: RecordBatch): number {
  const seen = new Set<ArrayBufferLike>();
  for (const child of batch.data.children) collectBuffers(child, seen);
  let bytes = 0;
  for (const b of seen) bytes += b.byteLength;
  return bytes;
}

function collectBuffers(data: Data, seen: Set<ArrayBufferLike>): void {
  for (const view of [data.valueOffsets, data.values, data.nullBitmap, data.typeIds] as unknown[]) {
    if (ArrayBuffer.isView(view)) seen.add(view.buffer);
  }
  for (const v of data.variadicBuffers) seen.add(v.buffer);
  for (const c of data.children) collectBuffers(c, seen);
  for (const d of data.dictionary?.data ?? []) collectBuffers(d, seen);
}
