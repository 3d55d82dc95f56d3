// LanceSink: applies drained WAL entries to a Lance dataset through @lancedb/lancedb, exactly once
// per (storeId, position) (docs/scale-out.md "Exactly once"). Node only.
//
// LanceDB checks `instanceof` against the CommonJS build of apache-arrow it resolves itself, so
// every Arrow object handed to it is made by that module instance (loaded through
// createRequire from LanceDB's own path); memwal's Arrow (ESM) reaches it only as IPC bytes.
//
// Tables: the data table `<table>` holds the stores' columns plus `_memwal_store` (the store id),
// `_memwal_position` (the WAL position that wrote the row) and, for keyed stores, `_tombstone`
// (always false at rest). `<table>_memwal_positions` holds one row per store: the highest
// position applied and the epoch of that entry.
//
// Exactly once, by idempotent re-check (Lance commits one dataset at a time):
//  (1) a request is validated completely (checksum, IPC, schema, positions against the recorded
//      position) before anything is written; a refused request changes nothing;
//  (2) the data commit(s) come first, the position commit last; the applied position is only
//      ever read from the positions table, so it never runs ahead of the data;
//  (3) keyed stores: each apply writes, per key, the newest version in its run (mergeInsert on
//      `_memwal_store` + key; tombstones are upserted, then deleted by `_tombstone = true`), so
//      re-applying entries already (partly) applied converges to the same rows;
//  (4) append-only stores: before the first apply of a store in this process, and after any
//      failed apply, rows of the store with `_memwal_position` above the recorded position are
//      deleted (the leftovers of an apply whose position commit never happened), so an append
//      is never applied twice;
//  (5) one LanceSink per table at a time: applies are serialised inside the sink.

import { createRequire } from 'node:module';
import type * as ArrowModule from 'apache-arrow';
import type { Connection, Table as LanceTable } from '@lancedb/lancedb';
import type * as LanceModule from '@lancedb/lancedb';
import type { DrainSink } from '../drain/drain.js';
import { POSITION_COLUMN, STORE_ID_PATTERN, checkDrainBody, encodeDrainBatch } from '../drain/wire.js';
import type { DrainRequestMeta } from '../drain/wire.js';
import type { WalEntry } from '../engine/api.js';
import { TOMBSTONE_COLUMN } from '../data/schema.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';

const requireHere = createRequire(import.meta.url);
const lancedb = requireHere('@lancedb/lancedb') as typeof LanceModule;
/** The apache-arrow module instance LanceDB itself uses (its CommonJS build). */
const arrow = createRequire(requireHere.resolve('@lancedb/lancedb'))('apache-arrow') as typeof ArrowModule;

/** Column of the data table that names the store a row came from (Utf8, non-null). */
export const STORE_COLUMN = '_memwal_store';
/** Suffix of the table that records the applied position per store: `<table>_memwal_positions`. */
export const POSITIONS_TABLE_SUFFIX = '_memwal_positions';

const RESERVED = new Set([STORE_COLUMN, POSITION_COLUMN, TOMBSTONE_COLUMN]);

/** Options of {@link LanceSink}. */
export interface LanceSinkOptions {
  /**
   * The LanceDB database: a local directory, or an object-store URI such as `s3://bucket/path`
   * (credentials and endpoint in `storageOptions`, e.g. `{ aws_endpoint, aws_region,
   * aws_access_key_id, aws_secret_access_key, allow_http }` for an S3-compatible server).
   */
  uri: string;
  /** The data table's name (created on first use); positions go to `<table>_memwal_positions`. */
  table: string;
  /** Key columns of keyed stores (mergeInsert on `_memwal_store` + key); absent: append-only stores. */
  primaryKey?: string[];
  /** Passed to `lancedb.connect` (object-store credentials and settings). */
  storageOptions?: Record<string, string>;
  /**
   * Every this many applies, compact both tables (`optimize`: merges the small fragments each
   * apply leaves, materialises deletes, and drops versions older than Lance's default of 7 days).
   * Default 100; 0 turns it off (then run `optimize` yourself). Runs between applies.
   */
  optimizeEvery?: number;
  /** Where failures that do not fail an apply (a compaction) are reported; default `console`. */
  logger?: Logger;
}

/** Default {@link LanceSinkOptions.optimizeEvery}. */
export const DEFAULT_OPTIMIZE_EVERY = 100;

/** What one apply did. */
export interface LanceApplyResult {
  /** The store applied to. */
  storeId: string;
  /** Highest position of the store now applied and durable. */
  appliedPosition: number;
  /** Epoch recorded with it. */
  epoch: number;
  /** Rows written by this call (0 for a duplicate). */
  rows: number;
  /** True when every entry was already applied (a retried or duplicated request). */
  duplicate: boolean;
}

/** Counters of a LanceSink since it was created. */
export interface LanceSinkStats {
  /** Requests that wrote (some of) their entries. */
  applies: number;
  /** Requests whose entries were all applied before (retries, duplicates). */
  duplicates: number;
  /** Requests refused with `InvalidArgument` (nothing changed). */
  refusals: number;
  /** Requests that failed otherwise (a Lance error; the drain retries). */
  failures: number;
  /** Rows written to the data table. */
  rowsWritten: number;
  /** Request body bytes received (in-process: the encoded IPC bytes). */
  bytesReceived: number;
  /** Lance commits made (data, deletes, positions, schema changes, recovery). */
  commits: number;
  /** Compactions run (`optimizeEvery`). */
  optimizations: number;
}

interface StoreState {
  position: number;
  epoch: number;
  /** Leftovers of an interrupted apply have been removed in this process (guarantee 4). */
  recovered: boolean;
}

type ArrowTable = ArrowModule.Table;
type ArrowSchema = ArrowModule.Schema;
type ArrowField = ArrowModule.Field;
type ArrowData = ArrowModule.Data;

/**
 * Applies WAL entries of memwal stores to one Lance table, exactly once per `(storeId,
 * position)` (see the file header for how). Use it in-process as `drain(store, { sink })`, or
 * behind HTTP with {@link createDrainRequestHandler}. Node only; methods reject with
 * `MemWalError`: `InvalidArgument` for a refused request (nothing changed), `IOError` for a
 * Lance failure (retry: re-applying is safe).
 */
export class LanceSink implements DrainSink {
  private readonly options: LanceSinkOptions;
  private readonly primaryKey: readonly string[] | undefined;
  private connection: Promise<Connection> | undefined;
  private dataTable: LanceTable | undefined;
  private positionsTable: LanceTable | undefined;
  private readonly states = new Map<string, StoreState>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly counters: LanceSinkStats = {
    applies: 0,
    duplicates: 0,
    refusals: 0,
    failures: 0,
    rowsWritten: 0,
    bytesReceived: 0,
    commits: 0,
    optimizations: 0,
  };

  /** Throws `InvalidArgument` for a bad table name or key; connects lazily. */
  constructor(options: LanceSinkOptions) {
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(options.table)) {
      throw new MemWalError('InvalidArgument', `LanceSink: table must be 1-100 characters of A-Z a-z 0-9 _ -, got ${options.table}`);
    }
    const every = options.optimizeEvery ?? DEFAULT_OPTIMIZE_EVERY;
    if (!Number.isSafeInteger(every) || every < 0) {
      throw new MemWalError('InvalidArgument', `LanceSink: optimizeEvery must be an integer >= 0, got ${options.optimizeEvery}`);
    }
    if (options.primaryKey !== undefined) {
      if (options.primaryKey.length === 0) throw new MemWalError('InvalidArgument', 'LanceSink: primaryKey must name at least one column');
      const reserved = options.primaryKey.find((k) => RESERVED.has(k));
      if (reserved) throw new MemWalError('InvalidArgument', `LanceSink: primaryKey column ${reserved} is reserved`);
    }
    this.options = options;
    this.primaryKey = options.primaryKey;
  }

  /** Highest applied position of `storeId` (0: none). Rejects `InvalidArgument` for a bad id. */
  appliedPosition(storeId: string): Promise<number> {
    checkStoreId(storeId);
    return this.serial(async () => (await this.storeState(storeId)).position);
  }

  /** Every store's recorded position and epoch, for monitoring. */
  positions(): Promise<{ storeId: string; position: number; epoch: number }[]> {
    return this.serial(async () => {
      const t = await this.openPositions(false);
      if (!t) return [];
      const rows = (await t.query().toArrow()).toArray() as { store: string; position: bigint; epoch: bigint }[];
      return rows.map((r) => ({ storeId: r.store, position: Number(r.position), epoch: Number(r.epoch) }));
    });
  }

  /**
   * In-process apply (the {@link DrainSink} contract): consecutive entries of one schema, made
   * by memwal's Arrow; they cross to LanceDB's Arrow as IPC bytes.
   */
  async apply(storeId: string, entries: readonly WalEntry[]): Promise<{ appliedPosition: number }> {
    const batch = encodeDrainBatch(entries);
    return this.applyEncoded(storeId, batch, batch.body);
  }

  /**
   * Apply one drain request as it came over the wire (docs/scale-out.md "Wire format"): `meta`
   * from its headers, `body` the Arrow IPC stream. Rejects `InvalidArgument` (nothing changed)
   * for a body whose checksum, IPC, row count, schema or positions do not hold, and for a first
   * position beyond the applied one + 1 or an epoch below the recorded one.
   */
  applyEncoded(storeId: string, meta: DrainRequestMeta, body: Uint8Array): Promise<LanceApplyResult> {
    return this.serial(async () => {
      this.counters.bytesReceived += body.byteLength;
      let plan: Plan | LanceApplyResult;
      try {
        checkStoreId(storeId);
        plan = await this.plan(storeId, meta, body);
      } catch (e) {
        const err = toMemWalError(e, `apply to ${storeId}`);
        if (err.code === 'InvalidArgument') this.counters.refusals += 1;
        else this.counters.failures += 1;
        throw err;
      }
      if ('duplicate' in plan) {
        this.counters.duplicates += 1;
        return plan;
      }
      try {
        return await this.write(storeId, plan);
      } catch (e) {
        this.states.delete(storeId); // reload the recorded position and re-run recovery (guarantee 4)
        this.counters.failures += 1;
        throw toMemWalError(e, `apply to ${storeId} in Lance table ${this.options.table}`);
      }
    });
  }

  /** The data table (a LanceDB `Table`) for queries; undefined before the first apply. */
  async table(): Promise<LanceTable | undefined> {
    return this.serial(() => this.openData());
  }

  /** Counters since this sink was created. */
  stats(): LanceSinkStats {
    return { ...this.counters };
  }

  /** Close the LanceDB connection (pending applies finish first). */
  async close(): Promise<void> {
    await this.serial(async () => {
      this.dataTable?.close();
      this.positionsTable?.close();
      if (this.connection) (await this.connection).close();
      this.connection = undefined;
      this.dataTable = undefined;
      this.positionsTable = undefined;
    });
  }

  // ------------------------------------------------------------------ validation (guarantee 1)

  private async plan(storeId: string, meta: DrainRequestMeta, body: Uint8Array): Promise<Plan | LanceApplyResult> {
    checkDrainBody(meta, body);
    let decoded: ArrowTable;
    try {
      decoded = arrow.tableFromIPC(body);
    } catch (e) {
      throw new MemWalError('InvalidArgument', `body: not an Arrow IPC stream (${(e as Error).message})`);
    }
    if (decoded.numRows !== meta.rows) {
      throw new MemWalError('InvalidArgument', `body: ${decoded.numRows} rows, header memwal-rows says ${meta.rows}`);
    }
    const columns = this.checkWireSchema(decoded.schema);
    const skipRows = checkPositions(decoded, meta);
    const state = await this.storeState(storeId);
    if (meta.lastPosition <= state.position) {
      return { storeId, appliedPosition: state.position, epoch: state.epoch, rows: 0, duplicate: true };
    }
    if (meta.firstPosition > state.position + 1) {
      throw new MemWalError(
        'InvalidArgument',
        `positions skip: request starts at ${meta.firstPosition}, but ${storeId} has applied up to ${state.position}`,
      );
    }
    if (meta.epoch < state.epoch) {
      throw new MemWalError('InvalidArgument', `epoch goes backwards: request epoch ${meta.epoch}, recorded ${state.epoch}`);
    }
    const existing = await this.openData();
    const target = existing ? await existing.schema() : undefined;
    const schemaPlan = planSchema(columns, target, this.primaryKey !== undefined);
    // Rows at or below the applied position were applied before: skip them (a retry).
    const fresh = decoded.slice(skipRows(state.position));
    return { table: fresh, meta, schema: schemaPlan, rows: fresh.numRows, exists: existing !== undefined };
  }

  /** The wire schema's user columns; throws `InvalidArgument` if it does not fit this sink. */
  private checkWireSchema(schema: ArrowSchema): ArrowField[] {
    const position = schema.fields.find((f) => f.name === POSITION_COLUMN);
    if (!position || !arrow.DataType.isInt(position.type) || position.type.bitWidth !== 64) {
      throw new MemWalError('InvalidArgument', `schema: column ${POSITION_COLUMN} (Int64) is missing`);
    }
    const tombstone = schema.fields.find((f) => f.name === TOMBSTONE_COLUMN);
    if (this.primaryKey) {
      if (!tombstone || !arrow.DataType.isBool(tombstone.type)) {
        throw new MemWalError('InvalidArgument', `schema: this sink takes keyed stores, and column ${TOMBSTONE_COLUMN} (Bool) is missing`);
      }
      for (const k of this.primaryKey) {
        const f = schema.fields.find((x) => x.name === k);
        if (!f) throw new MemWalError('InvalidArgument', `schema: key column ${k} is missing`);
        if (f.nullable) throw new MemWalError('InvalidArgument', `schema: key column ${k} is nullable`);
      }
    } else if (tombstone) {
      throw new MemWalError(
        'InvalidArgument',
        `schema: this sink takes append-only stores, and the body has ${TOMBSTONE_COLUMN} (a keyed store)`,
      );
    }
    if (schema.fields.some((f) => f.name === STORE_COLUMN)) {
      throw new MemWalError('InvalidArgument', `schema: column ${STORE_COLUMN} is reserved`);
    }
    return schema.fields.filter((f) => !RESERVED.has(f.name));
  }

  // ------------------------------------------------------------------ writing (guarantees 2-4)

  private async write(storeId: string, plan: Plan): Promise<LanceApplyResult> {
    const state = await this.storeState(storeId);
    let table = await this.openData();
    if (!table) {
      table = await this.createData(plan.schema.target);
    } else if (plan.schema.added.length > 0) {
      await table.addColumns(plan.schema.added);
      this.counters.commits += 1;
    }
    const target = await table.schema();
    if (!state.recovered) {
      await this.recover(table, storeId, state.position);
      state.recovered = true;
    }
    const keyed = this.primaryKey !== undefined;
    const rows = keyed ? newestPerKey(plan.table, this.primaryKey!) : plan.table;
    const data = toLance(rows, target, storeId);
    if (data.numRows > 0) {
      if (keyed) {
        await table
          .mergeInsert([STORE_COLUMN, ...this.primaryKey!])
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .execute(data);
        this.counters.commits += 1;
        if (countTrue(rows, TOMBSTONE_COLUMN) > 0) {
          await table.delete(`${STORE_COLUMN} = '${storeId}' AND ${TOMBSTONE_COLUMN} = true`);
          this.counters.commits += 1;
        }
      } else {
        await table.add(data);
        this.counters.commits += 1;
      }
    }
    await this.recordPosition(storeId, plan.meta.lastPosition, plan.meta.epoch);
    state.position = plan.meta.lastPosition;
    state.epoch = plan.meta.epoch;
    this.counters.applies += 1;
    this.counters.rowsWritten += plan.rows;
    await this.maybeOptimize(table);
    return { storeId, appliedPosition: state.position, epoch: state.epoch, rows: plan.rows, duplicate: false };
  }

  /**
   * Compact both tables every `optimizeEvery` applies. A failure is counted and logged, not
   * thrown: the apply it follows is already durable, and the next round tries again.
   */
  private async maybeOptimize(table: LanceTable): Promise<void> {
    const every = this.options.optimizeEvery ?? DEFAULT_OPTIMIZE_EVERY;
    if (every === 0 || this.counters.applies % every !== 0) return;
    try {
      await table.optimize();
      await this.positionsTable?.optimize();
      this.counters.optimizations += 1;
    } catch (e) {
      this.counters.failures += 1;
      (this.options.logger ?? console).warn(
        `memwal: optimize of Lance table ${this.options.table} failed (retried after ${every} more applies)`,
        e,
      );
    }
  }

  /** Remove what an interrupted apply of `storeId` left beyond `position` (guarantees 3, 4). */
  private async recover(table: LanceTable, storeId: string, position: number): Promise<void> {
    const leftovers = this.primaryKey
      ? `${STORE_COLUMN} = '${storeId}' AND ${TOMBSTONE_COLUMN} = true`
      : `${STORE_COLUMN} = '${storeId}' AND ${POSITION_COLUMN} > ${position}`;
    if ((await table.countRows(leftovers)) === 0) return;
    await table.delete(leftovers);
    this.counters.commits += 1;
  }

  private async recordPosition(storeId: string, position: number, epoch: number): Promise<void> {
    const row = new arrow.Table({
      store: arrow.vectorFromArray([storeId], new arrow.Utf8()),
      position: arrow.vectorFromArray([BigInt(position)], new arrow.Int64()),
      epoch: arrow.vectorFromArray([BigInt(epoch)], new arrow.Int64()),
    });
    const t = (await this.openPositions(true))!;
    await t
      .mergeInsert('store')
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute(withSchema(row, await t.schema()));
    this.counters.commits += 1;
  }

  // ------------------------------------------------------------------ tables and state

  private async storeState(storeId: string): Promise<StoreState> {
    const cached = this.states.get(storeId);
    if (cached) return cached;
    const t = await this.openPositions(false);
    let state: StoreState = { position: 0, epoch: 0, recovered: false };
    if (t) {
      const rows = (await t.query().where(`store = '${storeId}'`).toArrow()).toArray() as { position: bigint; epoch: bigint }[];
      if (rows.length > 1) throw new MemWalError('Corruption', `${this.positionsName()} holds ${rows.length} rows for ${storeId}`);
      if (rows[0]) state = { position: Number(rows[0].position), epoch: Number(rows[0].epoch), recovered: false };
    }
    this.states.set(storeId, state);
    return state;
  }

  private connect(): Promise<Connection> {
    this.connection ??= lancedb.connect(this.options.uri, { storageOptions: this.options.storageOptions });
    this.connection.catch(() => {
      this.connection = undefined;
    });
    return this.connection;
  }

  private positionsName(): string {
    return `${this.options.table}${POSITIONS_TABLE_SUFFIX}`;
  }

  private async openData(): Promise<LanceTable | undefined> {
    if (this.dataTable) return this.dataTable;
    const db = await this.connect();
    if (!(await db.tableNames()).includes(this.options.table)) return undefined;
    this.dataTable = await db.openTable(this.options.table);
    return this.dataTable;
  }

  private async createData(schema: ArrowSchema): Promise<LanceTable> {
    const db = await this.connect();
    this.dataTable = await db.createEmptyTable(this.options.table, schema, { existOk: true });
    this.counters.commits += 1;
    return this.dataTable;
  }

  private async openPositions(create: boolean): Promise<LanceTable | undefined> {
    if (this.positionsTable) return this.positionsTable;
    const db = await this.connect();
    const name = this.positionsName();
    if ((await db.tableNames()).includes(name)) {
      this.positionsTable = await db.openTable(name);
    } else if (create) {
      const schema = new arrow.Schema([
        new arrow.Field('store', new arrow.Utf8(), false),
        new arrow.Field('position', new arrow.Int64(), false),
        new arrow.Field('epoch', new arrow.Int64(), false),
      ]);
      this.positionsTable = await db.createEmptyTable(name, schema, { existOk: true });
      this.counters.commits += 1;
    }
    return this.positionsTable;
  }

  /** Run `op` after every earlier call (guarantee 5). */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

interface SchemaPlan {
  /** The data table's schema after this apply (the wire's columns + the sink's own). */
  target: ArrowSchema;
  /** Nullable columns the wire has and the table lacks: added (all null) before the data commit. */
  added: ArrowField[];
}

interface Plan {
  table: ArrowTable;
  meta: DrainRequestMeta;
  schema: SchemaPlan;
  rows: number;
  exists: boolean;
}

/**
 * How the wire's user columns fit the table: same names and types; a wire column the table lacks
 * is added if nullable (docs/impl.md §12); a table column the wire lacks is
 * written as null if nullable (a dropped field). Anything else is `InvalidArgument`.
 */
function planSchema(columns: ArrowField[], table: ArrowSchema | undefined, keyed: boolean): SchemaPlan {
  const own = [
    new arrow.Field(STORE_COLUMN, new arrow.Utf8(), false),
    new arrow.Field(POSITION_COLUMN, new arrow.Int64(), false),
    ...(keyed ? [new arrow.Field(TOMBSTONE_COLUMN, new arrow.Bool(), false)] : []),
  ];
  if (!table) return { target: new arrow.Schema([...columns, ...own]), added: [] };
  const wire = new Map(columns.map((f) => [f.name, f]));
  for (const f of own) {
    const t = table.fields.find((x) => x.name === f.name);
    if (!t || !arrow.util.compareTypes(t.type, f.type)) {
      throw new MemWalError(
        'InvalidArgument',
        `schema: the Lance table has no ${f.name} column of type ${f.type} (was it made for a different kind of store?)`,
      );
    }
  }
  for (const t of table.fields) {
    if (RESERVED.has(t.name)) continue;
    const w = wire.get(t.name);
    if (!w) {
      if (!t.nullable) throw new MemWalError('InvalidArgument', `schema: column ${t.name} of the Lance table is missing and not nullable`);
      continue;
    }
    if (!arrow.util.compareTypes(w.type, t.type)) {
      throw new MemWalError('InvalidArgument', `schema: column ${t.name} is ${w.type} in the body but ${t.type} in the Lance table`);
    }
    if (w.nullable && !t.nullable) {
      throw new MemWalError('InvalidArgument', `schema: column ${t.name} is nullable in the body but not in the Lance table`);
    }
  }
  const added = columns.filter((f) => !table.fields.some((t) => t.name === f.name));
  const notNull = added.find((f) => !f.nullable);
  if (notNull) {
    throw new MemWalError(
      'InvalidArgument',
      `schema: column ${notNull.name} is new and not nullable; Lance can only add nullable columns to existing rows`,
    );
  }
  return { target: new arrow.Schema([...table.fields, ...added]), added };
}

/**
 * Positions must stay in [first, last] and never decrease. Returns a function giving the index of
 * the first row above an applied position.
 */
function checkPositions(t: ArrowTable, meta: DrainRequestMeta): (applied: number) => number {
  const col = t.getChild(POSITION_COLUMN)!;
  if (col.nullCount > 0) throw new MemWalError('InvalidArgument', `${POSITION_COLUMN}: null positions`);
  const positions = new Float64Array(t.numRows);
  let i = 0;
  let prev = meta.firstPosition;
  for (const v of col) {
    const p = Number(v as bigint);
    if (p < prev) throw new MemWalError('InvalidArgument', `positions go backwards: row ${i} has position ${p} after ${prev}`);
    if (p > meta.lastPosition) {
      throw new MemWalError('InvalidArgument', `row ${i} has position ${p}, beyond the request's last position ${meta.lastPosition}`);
    }
    positions[i++] = p;
    prev = p;
  }
  return (applied) => {
    let k = 0;
    while (k < positions.length && positions[k]! <= applied) k++;
    return k;
  };
}

/** Rows of `t` keeping only the last row of each key (the newest version in this run). */
function newestPerKey(t: ArrowTable, key: readonly string[]): ArrowTable {
  const cols = key.map((k) => t.getChild(k)!);
  const seen = new Set<unknown>();
  const keep: number[] = [];
  for (let i = t.numRows - 1; i >= 0; i--) {
    const k = cols.length === 1 ? keyPart(cols[0]!.get(i)) : cols.map((c) => keyPart(c.get(i))).join('\u0001');
    if (seen.has(k)) continue;
    seen.add(k);
    keep.push(i);
  }
  if (keep.length === t.numRows) return t;
  keep.reverse();
  const vectors: Record<string, ArrowModule.Vector> = {};
  for (const f of t.schema.fields) {
    const col = t.getChild(f.name)!;
    vectors[f.name] = arrow.vectorFromArray(
      keep.map((i) => col.get(i)),
      f.type,
    );
  }
  return withSchema(new arrow.Table(vectors), t.schema);
}

function keyPart(v: unknown): unknown {
  if (v instanceof Uint8Array) return `b:${Array.from(v, (b) => b.toString(16).padStart(2, '0')).join('')}`;
  if (typeof v === 'object' && v !== null) return `o:${String(v)}`;
  return typeof v === 'string' ? `s:${v}` : `${typeof v}:${String(v)}`;
}

function countTrue(t: ArrowTable, column: string): number {
  let n = 0;
  for (const v of t.getChild(column)!) if (v === true) n++;
  return n;
}

/**
 * The rows of `t` in the data table's schema: its columns by name, `_memwal_store` filled with
 * the store id, columns the wire lacks filled with nulls.
 */
function toLance(t: ArrowTable, target: ArrowSchema, storeId: string): ArrowTable {
  const batches = t.batches.map((b) => {
    const children = target.fields.map((f): ArrowData => {
      if (f.name === STORE_COLUMN) return constantUtf8(storeId, b.numRows);
      const child = b.getChild(f.name);
      if (child) return child.data[0]!;
      return arrow.vectorFromArray(new Array(b.numRows).fill(null), f.type).data[0]!;
    });
    const data = arrow.makeData({ type: new arrow.Struct(target.fields), length: b.numRows, nullCount: 0, children });
    return new arrow.RecordBatch(target, data);
  });
  return new arrow.Table(target, batches);
}

/** `t`'s data under `schema` (same column order and types; nullability and metadata from `schema`). */
function withSchema(t: ArrowTable, schema: ArrowSchema): ArrowTable {
  const batches = t.batches.map((b) => {
    const children = schema.fields.map((f) => b.getChild(f.name)!.data[0]!);
    return new arrow.RecordBatch(
      schema,
      arrow.makeData({ type: new arrow.Struct(schema.fields), length: b.numRows, nullCount: 0, children }),
    );
  });
  return new arrow.Table(schema, batches);
}

function constantUtf8(value: string, length: number): ArrowData {
  const bytes = new TextEncoder().encode(value);
  const data = new Uint8Array(bytes.length * length);
  const offsets = new Int32Array(length + 1);
  for (let i = 0; i < length; i++) {
    data.set(bytes, i * bytes.length);
    offsets[i + 1] = (i + 1) * bytes.length;
  }
  return arrow.makeData({ type: new arrow.Utf8(), length, nullCount: 0, valueOffsets: offsets, data });
}

function checkStoreId(storeId: string): void {
  if (typeof storeId !== 'string' || !STORE_ID_PATTERN.test(storeId)) {
    throw new MemWalError('InvalidArgument', `storeId must be 1-200 characters of A-Z a-z 0-9 . _ -, got ${String(storeId).slice(0, 50)}`);
  }
}

/** LanceDB's apache-arrow module instance (for tests and callers that build Arrow for LanceDB). */
export const lanceArrow: typeof ArrowModule = arrow;
