// LanceSink: applies drained WAL entries to a Lance dataset through @lancedb/lancedb, exactly once
// per (storeId, position) (docs/scale-out.md "Exactly once"), for many stores that need not trust
// each other (docs/scale-out.md "Running a shared sink"). Node only.
//
// Tables: the data table `<table>` holds the stores' columns plus `_memwal_store` (the store id),
// `_memwal_position` (the WAL position that wrote the row) and, for keyed stores, `_tombstone`
// (always false at rest). `<table>_memwal_positions` holds one row per store: the highest
// position applied, the epoch of that entry and the store's incarnation id (src/lance/positions.ts).
// Both are compacted every `optimizeEvery` applies (src/lance/upkeep.ts).
//
// Exactly once, by idempotent re-check (Lance commits one dataset at a time):
//  (1) a request is validated completely (checksum, stream structure against the body, values,
//      schema, positions; src/lance/request.ts) before it waits for its turn, and against the
//      table in its turn before anything is written; a refused request changes nothing. A
//      dataset is created by the commit of its first rows (the data table with the first rows,
//      the positions table with the first position), so a refusal or a failure creates none;
//  (2) the data commit(s) come first, the position commit last; the applied position is only
//      ever read from the positions table, so it never runs ahead of the data;
//  (3) keyed stores: each apply writes, per key, the newest version in its run (mergeInsert on
//      `_memwal_store` + key; tombstones are upserted, then deleted by `_tombstone = true`), so
//      re-applying entries already (partly) applied converges to the same rows;
//  (4) append-only stores: before the first apply of a store in this process, and after any
//      failed apply, rows of the store with `_memwal_position` above the recorded position are
//      deleted (the leftovers of an apply whose position commit never happened), so an append
//      is never applied twice;
//  (5) one LanceSink per table at a time: a store's requests run one after another, and the
//      table's commits are handed out in turns round-robin over the stores (src/lance/turns.ts);
//  (6) a dataset that a kill left half-created (a directory without a version: Lance's "not
//      found") reads as absent, and the next creation finishes it;
//  (7) the position is kept with the store's incarnation id: a request of a newer incarnation
//      (a store created again under the id, its positions starting at 1 again) starts from 0 and
//      its first turn deletes the store id's rows; an older incarnation is refused.

import type { Schema as EsmSchema } from 'apache-arrow';
import type { Connection, Table as LanceTable } from '@lancedb/lancedb';
import type { DrainSink } from '../drain/drain.js';
import { POSITION_COLUMN, STORE_ID_PATTERN, encodeDrainBatch, parseIncarnation } from '../drain/wire.js';
import type { DrainRequestMeta } from '../drain/wire.js';
import { TOMBSTONE_COLUMN } from '../data/schema.js';
import type { WalEntry } from '../engine/api.js';
import { MemWalError, toMemWalError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { type ArrowField, type ArrowTable, arrow, lancedb } from './lancedb.js';
import { type CheckedRequest, RESERVED, STORE_COLUMN, type SinkRules, checkOperatorSchema, checkRequest } from './request.js';
import { POSITIONS_TABLE_SUFFIX, type StoreState, isNewer, mergePosition, positionRow, readPositions, readState } from './positions.js';
import { firstColumns, paddedRowBytes, planSchema, toLance, toLanceSchema } from './table-schema.js';
import { Lanes, Turns } from './turns.js';
import { Upkeep } from './upkeep.js';

export { STORE_COLUMN };

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
  /**
   * The operator's schema: the columns stores may write, with their types (an apache-arrow
   * `Schema` as for `MemWal.open`, without memwal's own columns). The table is created with all
   * of them; a store may send any subset with the same types (the columns it leaves out must be
   * nullable), nothing else. Exclusive with `allowColumns`.
   */
  schema?: EsmSchema;
  /**
   * Without `schema`: the names of the only columns a store may write (key columns always may).
   * A column's type is set by the first request that brings it. Default: any name.
   */
  allowColumns?: readonly string[];
  /**
   * Without `schema`: most columns the table may have besides memwal's own, nested fields
   * counted; a request that would add more is refused. Default {@link DEFAULT_MAX_COLUMNS}.
   */
  maxColumns?: number;
  /**
   * Widest a row may be when null, in bytes: what every store's row is padded with for the
   * columns it does not write (fixed-size binaries their width, fixed-size lists their size
   * times their item's, a string or list its offset and one item; `rowBytes` in
   * src/lance/arrow-check.ts). A body wider than this, or a column that would make the table's
   * rows wider, is refused before the request waits for its turn (the table's: in its turn, before
   * anything changes). A commit's rows are also bounded by `maxCommitBytes`. Default
   * {@link DEFAULT_MAX_ROW_BYTES}.
   */
  maxRowBytes?: number;
  /**
   * Most bytes a commit's rows may take padded to the table's width (each row as wide as the
   * table's null row, {@link LanceSinkOptions.maxRowBytes}, plus the store id): a request whose
   * rows take more is applied in more commits, so the memory a commit needs (the padded rows,
   * copied a few times on their way into LanceDB) stays bounded by the table's width however few
   * columns the request brings. Default {@link DEFAULT_MAX_COMMIT_BYTES}.
   */
  maxCommitBytes?: number;
  /**
   * Rows per Lance commit while other stores are active (waiting for a turn, or served within
   * the last second): a larger request is applied in several commits, each its own turn, so one
   * store's large request holds the others for one commit at a time. A store alone with the
   * table commits up to 4 times as many at once (fewer commits, each scanning a keyed table for
   * its merge). Default {@link DEFAULT_MAX_ROWS_PER_COMMIT}.
   */
  maxRowsPerCommit?: number;
  /** Requests of one store that may wait at once; more are refused with `Locked` (retry). Default 4. */
  maxPendingPerStore?: number;
  /** Passed to `lancedb.connect` (object-store credentials and settings). */
  storageOptions?: Record<string, string>;
  /**
   * Every this many applies, compact both tables (`optimize`: merges the small fragments each
   * apply leaves, materialises deletes, and drops versions older than Lance's default of 7 days).
   * Default 100; 0 turns it off (then run `optimize` yourself). Runs in its own turn.
   */
  optimizeEvery?: number;
  /** Where failures that do not fail an apply (a compaction, a repair) are reported; default `console`. */
  logger?: Logger;
}

/** Default {@link LanceSinkOptions.optimizeEvery}. */
export const DEFAULT_OPTIMIZE_EVERY = 100;
/** Default {@link LanceSinkOptions.maxColumns}. */
export const DEFAULT_MAX_COLUMNS = 100;
/** Default {@link LanceSinkOptions.maxRowBytes}: 16 KiB (a 3,072-dimension Float32 vector and some columns). */
export const DEFAULT_MAX_ROW_BYTES = 16 * 1024;
/** Default {@link LanceSinkOptions.maxCommitBytes}: 16 MiB (4,096 rows of 4 KiB; 1,024 of the default widest row). */
export const DEFAULT_MAX_COMMIT_BYTES = 16 * 1024 * 1024;
/** Default {@link LanceSinkOptions.maxRowsPerCommit}. */
export const DEFAULT_MAX_ROWS_PER_COMMIT = 4096;
/** Default {@link LanceSinkOptions.maxPendingPerStore}. */
export const DEFAULT_MAX_PENDING_PER_STORE = 4;

/** What one apply did. */
/** Where a request applies from: its store's state, whether it starts a newer incarnation, what is applied. */
type ApplyStart = { state: StoreState; newer: boolean; applied: { position: number; epoch: number } };

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
  /** Requests turned away with `Locked`: their store already had `maxPendingPerStore` waiting. */
  busy: number;
  /** Requests that failed otherwise (a Lance error; the drain retries). */
  failures: number;
  /** Rows written to the data table. */
  rowsWritten: number;
  /** Request body bytes received (in-process: the encoded IPC bytes). */
  bytesReceived: number;
  /** Lance commits made (data, deletes, positions, schema changes, recovery). */
  commits: number;
  /** Tables compacted (`optimizeEvery`; the data and the positions table count one each). */
  optimizations: number;
  /**
   * Compactions that failed (logged; that table is tried again after `optimizeEvery` × 2, 4, …
   * up to 64 more applies; the other table's compaction goes on).
   */
  optimizeFailures: number;
}

/** A store counts as active while it waits for a turn or for this long after its last one. */
const ACTIVE_WITHIN_MS = 1000;
/** A store alone with the table (no other store active) commits up to this many times `maxRowsPerCommit` at once. */
const ALONE_FACTOR = 4;

/**
 * Applies WAL entries of memwal stores to one Lance table, exactly once per `(storeId,
 * position)` (see the file header for how). Use it in-process as `drain(store, { sink })`, or
 * behind HTTP with {@link createDrainRequestHandler}. Node only; methods reject with
 * `MemWalError`: `InvalidArgument` for a refused request (nothing changed), `Locked` when the
 * store has too many requests waiting, `IOError` for a Lance failure (retry: re-applying is safe).
 */
export class LanceSink implements DrainSink {
  private readonly options: LanceSinkOptions;
  private readonly rules: SinkRules;
  private readonly maxRowsPerCommit: number;
  private readonly maxCommitBytes: number;
  private readonly lanes: Lanes;
  private readonly turns = new Turns();
  private connection: Promise<Connection> | undefined;
  private dataTable: Promise<LanceTable | undefined> | undefined;
  private positionsTable: Promise<LanceTable | undefined> | undefined;
  private readonly states = new Map<string, Promise<StoreState>>();
  private readonly counters: LanceSinkStats = {
    applies: 0,
    duplicates: 0,
    refusals: 0,
    busy: 0,
    failures: 0,
    rowsWritten: 0,
    bytesReceived: 0,
    commits: 0,
    optimizations: 0,
    optimizeFailures: 0,
  };
  private readonly upkeep: Upkeep;

  /** Throws `InvalidArgument` for a bad table name, key, schema or limit; connects lazily. */
  constructor(options: LanceSinkOptions) {
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(options.table)) {
      throw new MemWalError('InvalidArgument', `LanceSink: table must be 1-100 characters of A-Z a-z 0-9 _ -, got ${options.table}`);
    }
    const int = (name: keyof LanceSinkOptions, fallback: number, min: number): number => {
      const v = (options[name] as number | undefined) ?? fallback;
      if (!Number.isSafeInteger(v) || v < min)
        throw new MemWalError('InvalidArgument', `LanceSink: ${name} must be an integer >= ${min}, got ${v}`);
      return v;
    };
    const optimizeEvery = int('optimizeEvery', DEFAULT_OPTIMIZE_EVERY, 0);
    if (options.primaryKey !== undefined) {
      if (options.primaryKey.length === 0) throw new MemWalError('InvalidArgument', 'LanceSink: primaryKey must name at least one column');
      const reserved = options.primaryKey.find((k) => RESERVED.has(k));
      if (reserved) throw new MemWalError('InvalidArgument', `LanceSink: primaryKey column ${reserved} is reserved`);
    }
    if (options.schema && options.allowColumns) {
      throw new MemWalError('InvalidArgument', 'LanceSink: give either schema or allowColumns, not both');
    }
    if (options.allowColumns && !options.allowColumns.every((c) => typeof c === 'string')) {
      throw new MemWalError('InvalidArgument', 'LanceSink: allowColumns must be column names');
    }
    const maxRowBytes = int('maxRowBytes', DEFAULT_MAX_ROW_BYTES, 64);
    const schema = options.schema && toLanceSchema(options.schema);
    if (schema) checkOperatorSchema(schema, options.primaryKey, maxRowBytes);
    this.rules = {
      primaryKey: options.primaryKey,
      schema,
      allowColumns: options.allowColumns && new Set(options.allowColumns),
      maxColumns: int('maxColumns', DEFAULT_MAX_COLUMNS, 1),
      maxRowBytes,
    };
    this.maxRowsPerCommit = int('maxRowsPerCommit', DEFAULT_MAX_ROWS_PER_COMMIT, 1);
    this.maxCommitBytes = int('maxCommitBytes', DEFAULT_MAX_COMMIT_BYTES, 1);
    this.lanes = new Lanes(int('maxPendingPerStore', DEFAULT_MAX_PENDING_PER_STORE, 1));
    this.options = options;
    const open = (name: string) => (name === options.table ? this.openData() : this.openPositions());
    this.upkeep = new Upkeep(optimizeEvery, [options.table, this.positionsName()], open, this.counters, options.logger ?? console);
  }

  /**
   * Highest applied position of `storeId` (0: none, or `incarnation` is newer than the recorded
   * one: a store created again under the id). Rejects `InvalidArgument` for a bad id or
   * incarnation, and for an incarnation older than the recorded one.
   */
  async appliedPosition(storeId: string, incarnation?: string): Promise<number> {
    checkStoreId(storeId);
    parseIncarnation(incarnation);
    const state = await this.stateOf(storeId);
    return isNewer(storeId, state, incarnation) ? 0 : state.position;
  }

  /** Every store's recorded position, epoch and incarnation id (absent if recorded without one), for monitoring. */
  async positions(): Promise<{ storeId: string; position: number; epoch: number; incarnation?: string }[]> {
    const t = await this.openPositions();
    return t ? readPositions(t) : [];
  }

  /**
   * In-process apply (the {@link DrainSink} contract): consecutive entries of one schema, made
   * by memwal's Arrow; they cross to LanceDB's Arrow as IPC bytes.
   */
  async apply(storeId: string, entries: readonly WalEntry[], incarnation?: string): Promise<{ appliedPosition: number }> {
    const batch = encodeDrainBatch(entries);
    return this.applyEncoded(storeId, { ...batch, ...(incarnation !== undefined ? { incarnation } : {}) }, batch.body);
  }

  /**
   * Apply one drain request as it came over the wire (docs/scale-out.md "Wire format"): `meta`
   * from its headers, `body` the Arrow IPC stream. Rejects `InvalidArgument` (nothing changed)
   * for a body whose checksum, structure, values, row count, schema or positions do not hold,
   * and for a first position beyond the applied one + 1 or an epoch below the recorded one.
   * Everything that does not need the table is checked before the request waits for its turn.
   */
  applyEncoded(storeId: string, meta: DrainRequestMeta, body: Uint8Array): Promise<LanceApplyResult> {
    this.counters.bytesReceived += body.byteLength;
    try {
      checkStoreId(storeId);
      parseIncarnation(meta.incarnation);
    } catch (e) {
      return Promise.reject(this.count(toMemWalError(e, `apply to ${storeId}`)));
    }
    // In the store's lane (its requests in order, a bounded number at once): what the headers
    // decide (startOf), then the body, checked in time slices (src/lance/request.ts), then turns.
    return this.lanes
      .run(storeId, async () => {
        const start = await this.startOf(storeId, meta);
        if ('duplicate' in start) return start;
        let request: CheckedRequest;
        try {
          request = await checkRequest(meta, body, this.rules, start.applied.position);
        } catch (e) {
          throw this.count(toMemWalError(e, `apply to ${storeId}`));
        }
        return this.applyChecked(storeId, request, start);
      })
      .catch((e: unknown) => {
        if ((e as MemWalError).code === 'Locked') this.counters.busy += 1;
        throw e;
      });
  }

  /** The data table (a LanceDB `Table`) for queries; undefined before the first rows. */
  table(): Promise<LanceTable | undefined> {
    return this.openData();
  }

  /** Counters since this sink was created. */
  stats(): LanceSinkStats {
    return { ...this.counters };
  }

  /** Close the LanceDB connection (pending applies finish first). */
  async close(): Promise<void> {
    await this.lanes.idle();
    (await this.dataTable?.catch(() => undefined))?.close();
    (await this.positionsTable?.catch(() => undefined))?.close();
    if (this.connection) (await this.connection).close();
    this.connection = undefined;
    this.dataTable = undefined;
    this.positionsTable = undefined;
  }

  // ------------------------------------------------------------------ applying (guarantees 1-5)

  /** Counts a refusal or failure, and returns it. */
  private count(err: MemWalError): MemWalError {
    if (err.code === 'InvalidArgument') this.counters.refusals += 1;
    else this.counters.failures += 1;
    return err;
  }

  /**
   * What a request's headers decide in its store's lane (every earlier request of the store done):
   * a duplicate's answer, a refusal (positions skip, an older epoch or incarnation), else the state
   * it applies from. The body is unread: a re-sent applied request (200, which no cooldown holds) costs no check.
   */
  private async startOf(storeId: string, meta: DrainRequestMeta): Promise<ApplyStart | LanceApplyResult> {
    let state: StoreState;
    try {
      state = await this.stateOf(storeId);
    } catch (e) {
      throw this.count(toMemWalError(e, `apply to ${storeId}: reading its position`));
    }
    // A newer incarnation of the store (created again under this id) starts from nothing applied.
    let newer: boolean;
    try {
      newer = isNewer(storeId, state, meta.incarnation);
    } catch (e) {
      throw this.count(toMemWalError(e, `apply to ${storeId}`));
    }
    const applied = newer ? { position: 0, epoch: 0 } : { position: state.position, epoch: state.epoch };
    if (meta.lastPosition <= applied.position) {
      this.counters.duplicates += 1;
      return { storeId, appliedPosition: applied.position, epoch: applied.epoch, rows: 0, duplicate: true };
    }
    if (meta.firstPosition > applied.position + 1) {
      throw this.count(
        new MemWalError(
          'InvalidArgument',
          `positions skip: request starts at ${meta.firstPosition}, but ${storeId} has applied up to ${applied.position}`,
        ),
      );
    }
    if (meta.epoch < applied.epoch) {
      throw this.count(new MemWalError('InvalidArgument', `epoch goes backwards: request epoch ${meta.epoch}, recorded ${applied.epoch}`));
    }
    return { state, newer, applied };
  }

  private async applyChecked(storeId: string, { meta, ...request }: CheckedRequest, start: ApplyStart): Promise<LanceApplyResult> {
    const { state, newer, applied } = start;
    // Rows at or below the applied position were applied before: skip them (a retry).
    let skip = 0;
    while (skip < request.positions.length && request.positions[skip]! <= applied.position) skip++;
    const fresh = skip === 0 ? request.rows : request.rows.slice(skip);
    const deletes = this.rules.primaryKey !== undefined && hasTrue(fresh, TOMBSTONE_COLUMN);
    let at = 0;
    try {
      let done = false;
      while (!done) {
        await this.turns.run(storeId, async () => {
          // While other stores are active a turn is one commit of maxRowsPerCommit rows; alone, larger;
          // either way no more than maxCommitBytes padded to the table's width (which other stores set).
          const alone = !this.turns.othersActive(storeId, ACTIVE_WITHIN_MS);
          const byRows = this.maxRowsPerCommit * (alone ? ALONE_FACTOR : 1);
          const width = paddedRowBytes(request.columns, await (await this.openData())?.schema(), this.rules, storeId);
          const rows = fresh.slice(
            at,
            Math.min(fresh.numRows, at + Math.min(byRows, Math.max(1, Math.floor(this.maxCommitBytes / width)))),
          );
          if (newer && at === 0) {
            await this.recover(storeId, 0, true); // the old incarnation's rows, and any of an earlier try
          } else if (!state.recovered) {
            await this.recover(storeId, state.position);
          }
          state.recovered = true;
          if (rows.numRows > 0) await this.write(storeId, request.columns, rows);
          at += rows.numRows;
          done = at >= fresh.numRows;
          if (!done) return;
          if (deletes) {
            await (await this.openData())!.delete(`${STORE_COLUMN} = '${storeId}' AND ${TOMBSTONE_COLUMN} = true`);
            this.counters.commits += 1;
          }
          const incarnation = meta.incarnation ?? state.incarnation;
          await this.recordPosition(storeId, meta.lastPosition, meta.epoch, incarnation);
          state.position = meta.lastPosition;
          state.epoch = meta.epoch;
          state.incarnation = incarnation;
        });
      }
    } catch (e) {
      const err = toMemWalError(e, `apply to ${storeId} in Lance table ${this.options.table}`);
      // Reload the position and re-run recovery (guarantee 4), unless refused before any row was
      // written: the state holds, and refusals cost no positions read and recovery scan each.
      if (at > 0 || err.code !== 'InvalidArgument') this.states.delete(storeId);
      throw this.count(err);
    }
    this.counters.applies += 1;
    this.counters.rowsWritten += fresh.numRows;
    await this.upkeep.maybeOptimize(this.turns);
    return { storeId, appliedPosition: state.position, epoch: state.epoch, rows: fresh.numRows, duplicate: false };
  }

  /**
   * Writes `rows` of `storeId` (in its turn): creates the data table with them if it does not
   * exist (its user columns nullable but the keys, unless the operator set `schema`), else adds the nullable columns it lacks (taken out again if the write then fails)
   * and merges (keyed) or appends them. Throws `InvalidArgument` before changing anything if the
   * columns do not fit the table.
   */
  private async write(storeId: string, columns: ArrowField[], rows: ArrowTable): Promise<void> {
    const table = await this.openData();
    if (!table) {
      const target = firstColumns(columns, this.rules);
      const db = await this.connect();
      this.dataTable = Promise.resolve(await db.createTable(this.options.table, toLance(rows, target, storeId)));
      this.counters.commits += 1;
      return;
    }
    const plan = planSchema(columns, await table.schema(), this.rules);
    if (plan.added.length > 0) {
      await table.addColumns(plan.added);
      this.counters.commits += 1;
    }
    try {
      const data = toLance(rows, plan.target, storeId);
      if (this.rules.primaryKey) {
        await table
          .mergeInsert([STORE_COLUMN, ...this.rules.primaryKey])
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .execute(data);
      } else {
        await table.add(data);
      }
      this.counters.commits += 1;
    } catch (e) {
      if (plan.added.length > 0) await this.dropColumns(table, plan.added);
      throw e;
    }
  }

  /** Takes out columns a failed write added (a failed request changes no schema); logs if it cannot. */
  private async dropColumns(table: LanceTable, added: ArrowField[]): Promise<void> {
    try {
      await table.dropColumns(added.map((f) => f.name));
      this.counters.commits += 1;
    } catch (e) {
      (this.options.logger ?? console).warn(
        `memwal: could not take out the columns ${added.map((f) => f.name).join(', ')} after a failed write to Lance table ${this.options.table}`,
        e,
      );
    }
  }

  /**
   * Remove what an interrupted apply of `storeId` left beyond `position` (guarantees 3, 4), or
   * with `everything` all its rows (a newer incarnation replaces the old one's, guarantee 7).
   */
  private async recover(storeId: string, position: number, everything = false): Promise<void> {
    const table = await this.openData();
    if (!table) return;
    const leftovers = everything
      ? `${STORE_COLUMN} = '${storeId}'`
      : this.rules.primaryKey
        ? `${STORE_COLUMN} = '${storeId}' AND ${TOMBSTONE_COLUMN} = true`
        : `${STORE_COLUMN} = '${storeId}' AND ${POSITION_COLUMN} > ${position}`;
    if ((await table.countRows(leftovers)) === 0) return;
    await table.delete(leftovers);
    this.counters.commits += 1;
  }

  private async recordPosition(storeId: string, position: number, epoch: number, incarnation: string | undefined): Promise<void> {
    const row = positionRow(storeId, position, epoch, incarnation);
    const t = await this.openPositions();
    if (t) {
      this.counters.commits += await mergePosition(t, row);
    } else {
      const db = await this.connect();
      this.positionsTable = Promise.resolve(await db.createTable(this.positionsName(), row));
      this.counters.commits += 1;
    }
  }

  // ------------------------------------------------------------------ tables and state (guarantee 6)

  private stateOf(storeId: string): Promise<StoreState> {
    let state = this.states.get(storeId);
    if (!state) {
      state = this.loadState(storeId);
      this.states.set(storeId, state);
      state.catch(() => this.states.delete(storeId));
    }
    return state;
  }

  private async loadState(storeId: string): Promise<StoreState> {
    return readState(await this.openPositions(), this.positionsName(), storeId);
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

  private openData(): Promise<LanceTable | undefined> {
    this.dataTable ??= this.open(this.options.table, () => (this.dataTable = undefined));
    return this.dataTable;
  }

  private openPositions(): Promise<LanceTable | undefined> {
    this.positionsTable ??= this.open(this.positionsName(), () => (this.positionsTable = undefined));
    return this.positionsTable;
  }

  /**
   * The dataset `name`, or undefined (and `forget` called, so the next call looks again) when it
   * does not exist or has no version yet: a creation a kill interrupted leaves its directory,
   * which `tableNames()` lists and `openTable()` refuses as "not found"; the next creation of
   * the dataset finishes it.
   */
  private async open(name: string, forget: () => void): Promise<LanceTable | undefined> {
    try {
      const db = await this.connect();
      if (!(await db.tableNames()).includes(name)) {
        forget();
        return undefined;
      }
      return await db.openTable(name);
    } catch (e) {
      forget();
      if (!/was not found/i.test(String((e as Error)?.message))) throw e;
      (this.options.logger ?? console).warn(
        `memwal: Lance dataset ${name} has no version (its creation was interrupted); the next apply creates it`,
      );
      return undefined;
    }
  }
}

/** Whether a non-nullable Bool column holds a true, from its bits (the iterator held the thread 150+ ms per 100k rows). */
function hasTrue(t: ArrowTable, column: string): boolean {
  for (const data of t.getChild(column)!.data) {
    const bits = data.values as Uint8Array;
    for (let i = data.offset, end = data.offset + data.length; i < end; i++) if ((bits[i >> 3]! >> (i & 7)) & 1) return true;
  }
  return false;
}

function checkStoreId(storeId: string): void {
  if (typeof storeId !== 'string' || !STORE_ID_PATTERN.test(storeId)) {
    throw new MemWalError('InvalidArgument', `storeId must be 1-200 characters of A-Z a-z 0-9 . _ -, got ${String(storeId).slice(0, 50)}`);
  }
}

/** LanceDB's apache-arrow module instance (for tests and callers that build Arrow for LanceDB). */
export const lanceArrow = arrow;
