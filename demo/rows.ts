// Row shapes of the demo load and a cheap batch source for them. The payload columns come from
// a pool of random (incompressible) rows built once per shape; each batch gets fresh ids and
// timestamps and a slice of the pool, so building a put costs microseconds and what the page's
// main thread pays under load is what memwal's client costs (IPC encoding and the transfer).

import { Binary, Field, Float64, Int64, RecordBatch, Schema, Struct, Table, Utf8, makeData, type Data } from 'apache-arrow';

export interface Shape {
  /** What the select shows. */
  label: string;
  schema: Schema;
  /** Rows in the payload pool (also the largest single RecordBatch; bigger puts are Tables). */
  poolRows: number;
  /** Builds the pool's payload columns (every field after `id` and `ts`), `poolRows` long. */
  pool(rows: number): Data[];
}

const LEVELS = ['debug', 'info', 'info', 'info', 'warn', 'error'];
const ALPHABET = new TextEncoder().encode('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_:/.');

function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let at = 0; at < length; at += 65536) crypto.getRandomValues(out.subarray(at, Math.min(at + 65536, length)));
  return out;
}

function float64Column(rows: number): Data<Float64> {
  const values = new Float64Array(rows);
  for (let i = 0; i < rows; i++) values[i] = Math.random() * 1000;
  return makeData({ type: new Float64(), length: rows, nullCount: 0, data: values });
}

/** A Utf8 column of random text, `min`..`max` characters a row, encoded by hand (no builder). */
function textColumn(rows: number, min: number, max: number): Data<Utf8> {
  const offsets = new Int32Array(rows + 1);
  const lengths = randomBytes(rows);
  for (let i = 0; i < rows; i++) offsets[i + 1] = offsets[i]! + min + (lengths[i]! % (max - min + 1));
  const bytes = randomBytes(offsets[rows]!);
  for (let i = 0; i < bytes.length; i++) bytes[i] = ALPHABET[bytes[i]! % ALPHABET.length]!;
  return makeData({ type: new Utf8(), length: rows, nullCount: 0, valueOffsets: offsets, data: bytes });
}

function levelColumn(rows: number): Data<Utf8> {
  const encoded = LEVELS.map((l) => new TextEncoder().encode(l));
  const picks = randomBytes(rows);
  const offsets = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) offsets[i + 1] = offsets[i]! + encoded[picks[i]! % encoded.length]!.length;
  const bytes = new Uint8Array(offsets[rows]!);
  for (let i = 0; i < rows; i++) bytes.set(encoded[picks[i]! % encoded.length]!, offsets[i]!);
  return makeData({ type: new Utf8(), length: rows, nullCount: 0, valueOffsets: offsets, data: bytes });
}

function binaryColumn(rows: number, size: number): Data<Binary> {
  const offsets = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) offsets[i + 1] = (i + 1) * size;
  return makeData({ type: new Binary(), length: rows, nullCount: 0, valueOffsets: offsets, data: randomBytes(rows * size) });
}

const idTs = [new Field('id', new Int64(), false), new Field('ts', new Float64(), false)];

/** The shapes, keyed by the `shape` URL parameter. Every shape's primary key is `id`. */
export const SHAPES = {
  narrow: {
    label: 'narrow — id, ts, value (24 B/row)',
    schema: new Schema([...idTs, new Field('value', new Float64(), false)]),
    poolRows: 16_384,
    pool: (rows: number) => [float64Column(rows)],
  },
  event: {
    label: 'event — id, ts, level, message, value (~100 B/row)',
    schema: new Schema([
      ...idTs,
      new Field('level', new Utf8(), false),
      new Field('message', new Utf8(), false),
      new Field('value', new Float64(), true),
    ]),
    poolRows: 8192,
    pool: (rows: number) => [levelColumn(rows), textColumn(rows, 32, 96), float64Column(rows)],
  },
  blob: {
    label: 'blob — id, ts, 1 KiB binary payload',
    schema: new Schema([...idTs, new Field('payload', new Binary(), false)]),
    poolRows: 2048,
    pool: (rows: number) => [binaryColumn(rows, 1024)],
  },
} satisfies Record<string, Shape>;

export type ShapeName = keyof typeof SHAPES;

/**
 * Batches of one shape. With no key space, ids increase (`id` is the primary key; they start at
 * a value derived from the clock, so a reopened store gets new rows, not upserts of old ones).
 * With a key space of `n`, each batch takes a run of consecutive ids from a random start in
 * `[0, n)` (wrapping around): every id is rewritten about as often as every other, which is what
 * makes compaction merge (newest version wins). A key space smaller than a batch is taken as the
 * batch's size, so no batch holds an id twice.
 */
export class RowSource {
  readonly shape: Shape;
  private pool: Data[] | undefined;
  private poolAt = 0;
  private nextId: number;

  constructor(
    name: ShapeName,
    readonly keySpace = 0,
  ) {
    this.shape = SHAPES[name];
    this.nextId = Date.now() * 1000;
  }

  /** Build the payload pool now (a few ms, once), so the first put does not pay for it. */
  prepare(): void {
    this.pool ??= this.shape.pool(this.shape.poolRows);
  }

  /** `rows` rows: one RecordBatch, or a Table of several when `rows` exceeds the pool. */
  next(rows: number): RecordBatch | Table {
    if (rows <= this.shape.poolRows) return this.batch(rows);
    const batches: RecordBatch[] = [];
    for (let left = rows; left > 0; left -= this.shape.poolRows) batches.push(this.batch(Math.min(left, this.shape.poolRows)));
    return new Table(batches);
  }

  private batch(rows: number): RecordBatch {
    this.prepare();
    const pool = this.pool!;
    if (this.poolAt + rows > this.shape.poolRows) this.poolAt = 0;
    const at = this.poolAt;
    this.poolAt += rows;

    // Int64 ids written as two 32-bit halves: no BigInt per row.
    const ids = new BigInt64Array(rows);
    const halves = new Uint32Array(ids.buffer);
    const now = Date.now();
    const ts = new Float64Array(rows);
    // A batch never holds an id twice: the key space is at least the batch.
    const space = this.keySpace > 0 ? Math.max(this.keySpace, rows) : 0;
    const first = space > 0 ? Math.floor(Math.random() * space) : this.nextId;
    for (let i = 0; i < rows; i++) {
      const id = space > 0 ? (first + i) % space : first + i;
      halves[2 * i] = id >>> 0;
      halves[2 * i + 1] = Math.floor(id / 4294967296);
      ts[i] = now;
    }
    if (space === 0) this.nextId += rows;

    const children: Data[] = [
      makeData({ type: new Int64(), length: rows, nullCount: 0, data: ids }),
      makeData({ type: new Float64(), length: rows, nullCount: 0, data: ts }),
      ...pool.map((d) => d.slice(at, rows)),
    ];
    const schema = this.shape.schema;
    return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows, nullCount: 0, children }));
  }
}
