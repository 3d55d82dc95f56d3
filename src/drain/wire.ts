// The drain wire format (docs/scale-out.md, "Wire format"): a run of consecutive WAL entries as
// one Arrow IPC stream plus a few headers. Pure encoding and header parsing; runs in every
// runtime (browser workers, Deno, Durable Objects, Node). The decoding side that needs LanceDB's
// own Arrow module lives in src/lance/.

import { Field, Int64, RecordBatch, Schema, Struct, makeData, tableToIPC, Table } from 'apache-arrow';
import type { Data } from 'apache-arrow';
import type { WalEntry } from '../engine/api.js';
import { MemWalError } from '../util/errors.js';
import { crc32c } from '../util/crc32c.js';

/** Version of this wire format, sent as `memwal-drain-version`. Never renumbered. */
export const DRAIN_WIRE_VERSION = 1;

/** Column appended to every row on the wire: the WAL position of the entry holding the row. */
export const POSITION_COLUMN = '_memwal_position';

/** `content-type` of a drain POST body. */
export const DRAIN_CONTENT_TYPE = 'application/vnd.apache.arrow.stream';

/** Header names (lower case, as `Headers` and Node's `IncomingMessage` give them). */
export const DRAIN_HEADERS = {
  version: 'memwal-drain-version',
  firstPosition: 'memwal-first-position',
  lastPosition: 'memwal-last-position',
  epoch: 'memwal-epoch',
  rows: 'memwal-rows',
  crc32c: 'memwal-crc32c',
  incarnation: 'memwal-incarnation',
} as const;

/** An incarnation id (docs/format.md §9): 32 lowercase hex digits, the first 12 its creation time. */
export const INCARNATION_PATTERN = /^[0-9a-f]{32}$/;

/**
 * Store ids that may travel in a drain URL and a Lance predicate: memwal's store-name rule,
 * 1-200 characters of `A-Z a-z 0-9 . _ -`.
 */
export const STORE_ID_PATTERN = /^[A-Za-z0-9._-]{1,200}$/;

/** The metadata of one drain request; the body's rows carry their own positions. */
export interface DrainRequestMeta {
  /** Position of the first entry the request covers (1-based). */
  firstPosition: number;
  /** Position of the last entry it covers; every position in between is covered. */
  lastPosition: number;
  /** Writer epoch of the last entry. */
  epoch: number;
  /** Rows in the body (all entries together). */
  rows: number;
  /** CRC-32C (Castagnoli) of the body bytes. */
  crc32c: number;
  /**
   * The store's incarnation id (`walStats().incarnation`; sent by drains that know it, optional
   * on the wire). A sink refuses an incarnation older than the one it recorded for the store id
   * and starts a newer one from position 0 (docs/scale-out.md "Exactly once").
   */
  incarnation?: string;
}

/** One encoded drain request: headers' values plus the Arrow IPC stream body. */
export interface EncodedDrainBatch extends DrainRequestMeta {
  body: Uint8Array<ArrayBuffer>;
}

/**
 * Encodes consecutive WAL entries (positions strictly increasing by one, one schema) as an
 * Arrow IPC stream whose rows carry `_memwal_position`. Throws `InvalidArgument` for an empty
 * list, a gap or a schema change between entries (split the run at the change).
 */
export function encodeDrainBatch(entries: readonly WalEntry[]): EncodedDrainBatch {
  const first = entries[0];
  if (!first) throw new MemWalError('InvalidArgument', 'drain: nothing to encode');
  const base = first.data.schema;
  if (base.fields.some((f) => f.name === POSITION_COLUMN)) {
    throw new MemWalError('InvalidArgument', `drain: column "${POSITION_COLUMN}" is reserved for the drain wire format`);
  }
  const schema = new Schema([...base.fields, new Field(POSITION_COLUMN, new Int64(), false)]);
  const batches: RecordBatch[] = [];
  let rows = 0;
  let expected = first.position;
  for (const e of entries) {
    if (e.position !== expected) {
      throw new MemWalError('InvalidArgument', `drain: entries must be consecutive (expected ${expected}, got ${e.position})`);
    }
    expected += 1;
    if (!sameFields(e.data.schema, base)) {
      throw new MemWalError('InvalidArgument', `drain: entry ${e.position} has a different schema; ship it in its own batch`);
    }
    for (const b of e.data.batches) {
      if (b.numRows === 0) continue;
      const positions = new BigInt64Array(b.numRows).fill(BigInt(e.position));
      const positionData = makeData({ type: new Int64(), length: b.numRows, nullCount: 0, data: positions });
      const children: Data[] = [...b.data.children, positionData];
      batches.push(new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: b.numRows, nullCount: 0, children })));
      rows += b.numRows;
    }
  }
  const last = entries[entries.length - 1]!;
  const body = tableToIPC(new Table(schema, batches), 'stream') as Uint8Array<ArrayBuffer>;
  return { firstPosition: first.position, lastPosition: last.position, epoch: last.epoch, rows, crc32c: crc32c(body), body };
}

/** The headers of a drain POST for `batch` (the caller adds `authorization`). */
export function drainRequestHeaders(batch: DrainRequestMeta): Record<string, string> {
  return {
    'content-type': DRAIN_CONTENT_TYPE,
    [DRAIN_HEADERS.version]: String(DRAIN_WIRE_VERSION),
    [DRAIN_HEADERS.firstPosition]: String(batch.firstPosition),
    [DRAIN_HEADERS.lastPosition]: String(batch.lastPosition),
    [DRAIN_HEADERS.epoch]: String(batch.epoch),
    [DRAIN_HEADERS.rows]: String(batch.rows),
    [DRAIN_HEADERS.crc32c]: String(batch.crc32c),
    ...(batch.incarnation !== undefined ? { [DRAIN_HEADERS.incarnation]: batch.incarnation } : {}),
  };
}

/**
 * The `memwal-incarnation` header's value, or undefined without one; `InvalidArgument` when it is
 * not an incarnation id.
 */
export function parseIncarnation(raw: string | null | undefined): string | undefined {
  if (raw === null || raw === undefined) return undefined;
  if (!INCARNATION_PATTERN.test(raw)) {
    throw new MemWalError(
      'InvalidArgument',
      `header ${DRAIN_HEADERS.incarnation}: expected 32 lowercase hex digits, got ${raw.slice(0, 40)}`,
    );
  }
  return raw;
}

/**
 * Reads and checks the drain headers of a request (`get` returns a header by lower-case name).
 * Throws `InvalidArgument` naming the header for a missing or malformed one (`memwal-incarnation`
 * may be absent), an unknown version, or `lastPosition < firstPosition`.
 */
export function parseDrainHeaders(get: (name: string) => string | null | undefined): DrainRequestMeta {
  const version = get(DRAIN_HEADERS.version);
  if (version !== String(DRAIN_WIRE_VERSION)) {
    throw new MemWalError('InvalidArgument', `header ${DRAIN_HEADERS.version}: expected ${DRAIN_WIRE_VERSION}, got ${version ?? 'none'}`);
  }
  const int = (name: string, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const raw = get(name);
    const n = raw !== null && raw !== undefined && /^[0-9]{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new MemWalError('InvalidArgument', `header ${name}: expected an integer >= ${min}, got ${raw ?? 'none'}`);
    }
    return n;
  };
  const meta: DrainRequestMeta = {
    firstPosition: int(DRAIN_HEADERS.firstPosition, 1),
    lastPosition: int(DRAIN_HEADERS.lastPosition, 1),
    epoch: int(DRAIN_HEADERS.epoch, 1),
    rows: int(DRAIN_HEADERS.rows, 0),
    crc32c: int(DRAIN_HEADERS.crc32c, 0, 0xffffffff),
  };
  const incarnation = parseIncarnation(get(DRAIN_HEADERS.incarnation));
  if (incarnation !== undefined) meta.incarnation = incarnation;
  if (meta.lastPosition < meta.firstPosition) {
    throw new MemWalError('InvalidArgument', `positions go backwards: first ${meta.firstPosition}, last ${meta.lastPosition}`);
  }
  return meta;
}

/** The Arrow IPC end-of-stream marker every drain body ends with: continuation, then length 0. */
const END_OF_STREAM = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];

/**
 * Throws `InvalidArgument` unless `body` has the CRC-32C the headers announced and ends with the
 * IPC end-of-stream marker (a stream cut at a message boundary would otherwise decode as a
 * shorter, valid one). `actual`: the body's CRC-32C when the caller computed it already (in
 * slices, say); computed here otherwise.
 */
export function checkDrainBody(meta: DrainRequestMeta, body: Uint8Array, actual = crc32c(body)): void {
  const tail = body.subarray(body.length - END_OF_STREAM.length);
  if (body.length < END_OF_STREAM.length || END_OF_STREAM.some((b, i) => tail[i] !== b)) {
    throw new MemWalError('InvalidArgument', 'body: the Arrow IPC stream has no end-of-stream marker (truncated)');
  }
  if (actual !== meta.crc32c) {
    throw new MemWalError(
      'InvalidArgument',
      `body: CRC-32C ${actual} does not match header ${DRAIN_HEADERS.crc32c} ${meta.crc32c} (truncated or corrupted)`,
    );
  }
}

function sameFields(a: Schema, b: Schema): boolean {
  if (a.fields.length !== b.fields.length) return false;
  return a.fields.every((f, i) => {
    const g = b.fields[i]!;
    return f.name === g.name && f.nullable === g.nullable && String(f.type) === String(g.type);
  });
}
