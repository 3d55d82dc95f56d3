// Background jobs, a part of the I/O plane (io-plane.ts, docs/impl.md §11): building the table
// file of a frozen memtable and the outputs of a compaction — the CPU-heavy work (sorting,
// encoding, CRCs, merging). The inline implementation runs them on the engine's thread (Node,
// Deno, workerd); a browser store runs them in its I/O worker (io-worker/remote-storage.ts),
// which keeps the bytes it built and writes them there when the engine names the file. Either way
// the engine names, writes (through the plane) and commits.

import type { RecordBatch } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { TableFileEntry } from '../format/manifest/manifest.js';
import { BLOCK_MAX_ROWS, blockTargetBytes } from '../format/table/format.js';
import { type MergeSource, mergeSorted } from './merge.js';
import { type IndexEntries, indexEntries, sortedOrder } from './sorted.js';
import { type BuiltTable, cutBlockSteps, cutSelectionSteps, encodeTableSteps } from '../format/table/writer.js';
import { orderedSectionBuilder } from '../format/table/ordered-section.js';
import type { SectionBuilder } from '../format/table/sections.js';
import { runStepsSliced, type Steps, yieldToEventLoop } from '../util/schedule.js';
import { type Key, type KeyEncoder, makeKeyEncoder } from '../data/keys.js';
import type { MemTable } from './memtable.js';
import type { StoreSchema } from '../data/schema.js';
import { estimateBatchBytes } from '../data/size.js';
import type { OpenTable } from './table-cache.js';
import { decodePayload, type WalPayload } from '../format/wal/payload.js';
import type { SchemaVersions } from '../format/schema-versions.js';

/** A frozen memtable to write: its rows in memory, and where its WAL entries are (remote jobs read them there). */
export interface FlushJob {
  memtable: MemTable;
  generation: number;
  /** Positions of the WAL entries holding its batches (contiguous: an entry never spans two memtables). */
  firstPosition: number;
  lastPosition: number;
  /** The WAL segments that hold those positions. */
  segments: { name: string; firstPosition: number; lastPosition: number }[];
}

/** Table files to merge into level 1. */
export interface CompactJob {
  /** Keyed: level-0 inputs (oldest first) then level-1 inputs (key order); append-only: generation order. */
  inputs: TableFileEntry[];
  /** How many of `inputs` are level-0 files (keyed). */
  level0: number;
  minGeneration: number;
  maxGeneration: number;
  /** Output files are cut at about this many estimated bytes. */
  targetBytes: number;
}

/**
 * A table file a job built, held where the job ran (its bytes need not be on the engine's
 * thread): what the manifest records of it, and how to write it. The holder keeps the bytes
 * until `write` or `release`, whichever comes first; a table is written at most once (a retry
 * builds again).
 */
export interface JobTable {
  /** The file's length in bytes. */
  readonly length: number;
  /** CRC-32C of the file. */
  readonly crc: number;
  readonly rows: number;
  readonly blocks: number;
  /** Smallest and largest key (encoded), keyed stores with rows only. */
  readonly minKey?: string;
  readonly maxKey?: string;
  /**
   * Write it as new table file `name` of its store, where the plane that built it keeps it,
   * durable on resolve, with the store handle's guarantees (fencing; a failed write leaves no
   * file). The kept bytes are released whatever the outcome: a second call rejects `IOError`.
   */
  write(name: string): Promise<void>;
  /** Drop the kept bytes unwritten (idempotent; nothing to drop after `write`). */
  release(): void;
}

/** A table built on this thread as a JobTable: `write` hands its bytes over to `writeTable` (the plane's). */
export function jobTableOf(built: BuiltTable, writeTable: (name: string, bytes: Uint8Array) => Promise<void>): JobTable {
  let bytes: Uint8Array | undefined = built.bytes;
  const { crc, rows, blocks, minKey, maxKey } = built;
  return {
    length: built.bytes.length,
    crc,
    rows,
    blocks,
    ...(minKey !== undefined && { minKey }),
    ...(maxKey !== undefined && { maxKey }),
    async write(name) {
      const b = bytes;
      bytes = undefined;
      if (!b) throw new MemWalError('IOError', `table file ${name}: its built bytes were already written or released`);
      await writeTable(name, b);
    },
    release() {
      bytes = undefined;
    },
  };
}

/**
 * Who builds table files (`IoPlane.jobs`). Implementations write or commit nothing by themselves: the
 * engine names each table and writes it (`JobTable.write`) or releases it.
 */
export interface BackgroundJobs {
  /** The table file of `job.memtable`, built. */
  buildFlush(job: FlushJob): Promise<JobTable>;
  /** The outputs of a compaction, built one at a time (the caller writes or releases each before asking for the next). */
  compactionOutputs(job: CompactJob, signal: AbortSignal | undefined): AsyncIterable<JobTable>;
}

/**
 * Builds the table file of rows that a key index points at (keyed) or of every row in order
 * (append-only). `entries` is the index's copy; without it (rows decoded from the WAL) the newest
 * row per key is found here. Runs in slices of about SLICE_MS with a turn of the event loop
 * between them, so a worker that builds tables still serves its other requests (WAL appends).
 * Any runtime.
 */
export function buildFlushTable(
  storeSchema: StoreSchema,
  keyEncoder: KeyEncoder | undefined,
  batches: readonly RecordBatch[],
  generation: number,
  entries?: IndexEntries,
): Promise<BuiltTable> {
  return runStepsSliced(flushTableSteps(storeSchema, keyEncoder, batches, generation, entries));
}

/**
 * The table file of generation `generation` from its WAL entries (`entries`, in position order):
 * each decoded and projected onto the store's current schema version, then `buildFlushTable`.
 * A flush built away from the engine's thread: in the I/O worker, or on the OPFS table writer
 * thread (docs/impl.md §11). Any runtime.
 */
export async function buildFlushFromWal(
  storeSchema: StoreSchema,
  versions: SchemaVersions,
  entries: readonly WalPayload[],
  generation: number,
): Promise<BuiltTable> {
  const batches: RecordBatch[] = [];
  for (const e of entries) {
    const t = decodePayload(e, (s, epoch) => versions.versionOfEntry(s, epoch) !== undefined, false);
    batches.push(...versions.projectEntry(t, e.epoch, e.position));
  }
  const keyEncoder = storeSchema.primaryKey.length > 0 ? makeKeyEncoder(storeSchema) : undefined;
  return buildFlushTable(storeSchema, keyEncoder, batches, generation);
}

function* flushTableSteps(
  storeSchema: StoreSchema,
  keyEncoder: KeyEncoder | undefined,
  batches: readonly RecordBatch[],
  generation: number,
  entries: IndexEntries | undefined,
): Steps<BuiltTable> {
  if (keyEncoder) {
    let index = entries;
    if (!index) {
      const perBatch: ArrayLike<Key>[] = [];
      for (const b of batches) {
        perBatch.push(keyEncoder(b));
        yield;
      }
      index = { keys: concatKeys(perBatch) };
    }
    const order = sortedOrder(storeSchema, batches, batches.length, index);
    yield;
    const blocks = yield* cutSelectionSteps(storeSchema.internal, order.rows, order.ordinals, blockTargetBytes(true));
    return yield* encodeTableSteps(
      storeSchema,
      storeSchema.internal,
      keyEncoder,
      blocks,
      generation,
      generation,
      order.keys,
      sectionBuilders(storeSchema),
    );
  }
  return yield* tableSteps(storeSchema, undefined, batches, generation, generation);
}

/**
 * The keys of consecutive batches as one array: a `Float64Array` when every batch's keys are
 * numbers (a loop of its own: V8 cannot optimize a hot loop inside a generator while it runs).
 */
function concatKeys(perBatch: readonly ArrayLike<Key>[]): ArrayLike<Key> {
  let n = 0;
  for (const k of perBatch) n += k.length;
  if (perBatch.every((k) => k instanceof Float64Array)) {
    const out = new Float64Array(n);
    let at = 0;
    for (const k of perBatch as Float64Array[]) {
      out.set(k, at);
      at += k.length;
    }
    return out;
  }
  const out: Key[] = new Array(n);
  let at = 0;
  for (const k of perBatch) for (let r = 0; r < k.length; r++) out[at++] = k[r]!;
  return out;
}

/** Rows in final order, cut into blocks and encoded as one table file, a block per step. */
function* tableSteps(
  storeSchema: StoreSchema,
  keyEncoder: KeyEncoder | undefined,
  rows: readonly RecordBatch[],
  minGeneration: number,
  maxGeneration: number,
): Steps<BuiltTable> {
  const blocks = yield* cutBlockSteps(storeSchema.internal, rows, blockTargetBytes(storeSchema.primaryKey.length > 0), true);
  return yield* encodeTableSteps(
    storeSchema,
    storeSchema.internal,
    keyEncoder,
    blocks,
    minGeneration,
    maxGeneration,
    undefined,
    sectionBuilders(storeSchema),
  );
}

/**
 * The builders of a table file's index sections: one per index of `storeSchema.indexes`, fed the
 * very blocks the file holds (a flush's or a compaction's output alike), so a file and its
 * sections never disagree.
 */
function sectionBuilders(storeSchema: StoreSchema): SectionBuilder[] {
  return (storeSchema.indexes ?? []).map((ix) => orderedSectionBuilder(ix, storeSchema));
}

/** A block-by-block source over one table file's rows (bypassing the block cache). */
function tableSource(t: OpenTable): MergeSource {
  let i = 0;
  return {
    async next() {
      if (i >= t.blocks.length) return undefined;
      const b = await t.block(i++, false);
      return { batch: b.batch, keys: b.keys ?? [] };
    },
  };
}

/** A source over several non-overlapping files in key order (level 1). */
function chainSource(files: OpenTable[]): MergeSource {
  const sources = files.map(tableSource);
  let i = 0;
  return {
    async next() {
      while (i < sources.length) {
        const run = await sources[i]!.next();
        if (run) return run;
        i++;
      }
      return undefined;
    },
  };
}

/** Append-only inputs concatenated in generation order, block by block. */
async function* concatenated(tables: OpenTable[]): AsyncGenerator<RecordBatch> {
  for (const t of tables) {
    for (let i = 0; i < t.blocks.length; i++) yield (await t.block(i, false)).batch;
  }
}

/**
 * The outputs of compacting `tables` (opened `job.inputs`, same order): keyed, a merge in key
 * order where the newest version wins and deletes are dropped (level 1 is the bottom: nothing
 * older can hold a deleted key); append-only, the rows concatenated. Cut at `job.targetBytes`.
 * Holds one block per input and one output's blocks. Any runtime.
 */
export async function* buildCompactionOutputs(
  storeSchema: StoreSchema,
  keyEncoder: KeyEncoder | undefined,
  job: CompactJob,
  tables: OpenTable[],
  signal: AbortSignal | undefined,
): AsyncGenerator<BuiltTable> {
  const rowsOf = keyEncoder
    ? mergeSorted([...tables.slice(0, job.level0).reverse().map(tableSource), chainSource(tables.slice(job.level0))], {
        schema: storeSchema.internal,
        storeSchema,
        tombstone: storeSchema.internal.fields.length - 1,
        dropTombstones: true,
        rows: BLOCK_MAX_ROWS,
      })
    : concatenated(tables);
  let pending: RecordBatch[] = [];
  let pendingBytes = 0;
  const build = (): Promise<BuiltTable> => {
    const rows = pending;
    pending = [];
    pendingBytes = 0;
    return runStepsSliced(tableSteps(storeSchema, keyEncoder, rows, job.minGeneration, job.maxGeneration));
  };
  for await (const batch of rowsOf) {
    if (signal?.aborted) throw new MemWalError('Aborted', 'compaction stopped: the store is closing');
    pending.push(batch);
    pendingBytes += estimateBatchBytes(batch);
    if (pendingBytes >= job.targetBytes) yield await build();
    await yieldToEventLoop();
  }
  if (pending.length > 0) yield await build();
}

/** The jobs run on the engine's own thread. */
export class InlineJobs implements BackgroundJobs {
  constructor(
    private readonly storeSchema: StoreSchema,
    private readonly keyEncoder: KeyEncoder | undefined,
    private readonly open: (entry: TableFileEntry) => Promise<OpenTable>,
    /** Writes a table built here (the inline plane's `writeTable`). */
    private readonly writeTable: (name: string, bytes: Uint8Array) => Promise<void>,
  ) {}

  async buildFlush(job: FlushJob): Promise<JobTable> {
    const m = job.memtable;
    return jobTableOf(
      await buildFlushTable(
        this.storeSchema,
        this.keyEncoder,
        m.batches,
        job.generation,
        m.keyIndex ? indexEntries(m.keyIndex) : undefined,
      ),
      this.writeTable,
    );
  }

  async *compactionOutputs(job: CompactJob, signal: AbortSignal | undefined): AsyncGenerator<JobTable> {
    const tables = await Promise.all(job.inputs.map((t) => this.open(t)));
    for await (const built of buildCompactionOutputs(this.storeSchema, this.keyEncoder, job, tables, signal))
      yield jobTableOf(built, this.writeTable);
  }
}
