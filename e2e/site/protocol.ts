// Types only: what the e2e test page exposes to Playwright as `window.harness`, and the shapes
// its storage worker returns.

export type Layout = 'opfs' | 'indexeddb';

/** One conformance case's outcome. */
export interface CaseResult {
  layout: Layout;
  name: string;
  ok: boolean;
  error?: string;
}

/** A storage call's outcome as it crosses postMessage (MemWalError codes do not survive a throw). */
export type Outcome<T = void> = { ok: true; value: T } | { ok: false; code: string; message: string };

/** How one kind of write first failed once the quota was reached. */
export interface QuotaFailure {
  /** Bytes successfully written before the failing write. */
  bytesBefore: number;
  /** The MemWalError code (or the raw error name if it was not a MemWalError). */
  code: string;
  message: string;
}

export interface QuotaResult {
  layout: Layout;
  /** 4 MiB WAL appends to one segment until one failed; `lengthAfter` is the segment's length then. */
  wal?: QuotaFailure & { lengthAfter: number };
  /** 4 MiB table files (after the segment was removed) until one failed; undefined if none failed. */
  table?: QuotaFailure & { partialFileLeft: boolean };
}

/** What happened, step by step, when a writer in one worker was stolen from by another. */
export interface StealResult {
  secondOpenWithoutSteal: Outcome;
  stealOpen: Outcome;
  /** The old segment as the new writer reads it (its length and a checksum-ish sum). */
  oldSegmentSeenByNewWriter: Outcome<number[]>;
  oldWriterLostReason: string | undefined;
  oldWriterAppend: Outcome;
  oldWriterCommit: Outcome;
  newWriterCommit: Outcome;
  newWriterAppend: Outcome;
  /** After both workers were terminated without releasing: a third worker's open and what it reads. */
  openAfterTerminate: Outcome;
  segmentsAfterTerminate: Outcome<[string, number][]>;
}

/**
 * A stale writer that has not yet learnt that its lock was stolen (its lock loss held back) keeps
 * calling while a newer writer claims: what each of its calls did, and what the newer one sees.
 */
export interface StaleWriterResult {
  stealOpen: Outcome;
  /** The old writer creates segment 1-1 after the new writer opened, before it claimed. */
  appendInWindow: Outcome;
  newWriterClaim: Outcome;
  /** After the claim: an append to the segment it holds (lands and is replayed, or Fenced). */
  appendAfterClaim: Outcome;
  /** After the claim, every other mutation of the old writer. */
  newSegmentAfterClaim: Outcome;
  truncate: Outcome;
  removeSegment: Outcome;
  tableWrite: Outcome;
  tableRemove: Outcome;
  commitAtCurrentVersion: Outcome;
  /** What the new writer lists and reads after the claim (it waits for the old writer's handles). */
  segmentsSeenByNewWriter: Outcome<[string, number[]][]>;
  tablesSeenByNewWriter: Outcome<string[]>;
  manifestSeenByNewWriter: Outcome<[number, number] | undefined>;
  oldWriterLostReason: string | undefined;
}

/** What a writer saw when another context deleted the "memwal" database under it. */
export interface VersionChangeResult {
  lostReason: string | undefined;
  appendAfter: Outcome;
  reopenAfterRelease: Outcome;
}

/** `window.harness` of conformance.html: every call uses fresh dedicated module workers. */
export interface Harness {
  /**
   * Every conformance case; `ioWorker` false: the adapter itself on the worker's thread;
   * `'tableWriter'` (OPFS): that, with a table writer thread; `'brokenTableWriter'`: with one that dies as it starts.
   */
  conformance(layout: Layout, ioWorker: boolean | 'tableWriter' | 'brokenTableWriter'): Promise<CaseResult[]>;
  quota(layout: Layout): Promise<QuotaResult>;
  stealAcrossWorkers(layout: Layout): Promise<StealResult>;
  staleWriter(layout: Layout): Promise<StaleWriterResult>;
  databaseDeletedUnderWriter(layout: Layout): Promise<VersionChangeResult>;
  /** CRC-32C's path and results on the page's thread and in a dedicated worker. */
  crc32c(): Promise<{ page: CrcCheck; worker: CrcCheck }>;
}

/** Which path `crc32c` takes in a context, and whether it agrees with the JavaScript path. */
export interface CrcCheck {
  path: 'wasm' | 'js';
  checkValue: number;
  agrees: boolean;
}
