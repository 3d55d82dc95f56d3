// Schema evolution (docs/impl.md §12): which changes a store's schema may undergo (added nullable
// columns, dropped non-key columns), the versions the manifest records, and the projection of
// data written in an older version onto the current one (added columns null, dropped ones gone).
// Pure; any runtime.

import type { RecordBatch, Schema, Table } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { Manifest, SchemaVersion } from './manifest/manifest.js';
import { nullData } from '../data/rows.js';
import {
  decodeSchema,
  encodeSchema,
  makeStoreSchema,
  type StoreSchema,
  schemasEqual,
  TOMBSTONE_COLUMN,
  typesEqual,
} from '../data/schema.js';
import { makeBatch } from '../data/select.js';

/** A recorded schema version, decoded. */
export interface DecodedVersion {
  version: number;
  schema: Schema;
  writerEpoch?: number;
}

/**
 * Where each column of each version in `chain` (oldest first, each evolved from the one before it)
 * was introduced: the version number, per field. A field continues the same-named field of the
 * version just before it; any other field is new in its own version. A column's identity is its
 * name and where it was introduced, so a column dropped and later added again is a new column,
 * whatever its type (docs/impl.md §12).
 */
export function columnOrigins(chain: readonly Pick<DecodedVersion, 'version' | 'schema'>[]): number[][] {
  const origins: number[][] = [];
  for (let i = 0; i < chain.length; i++) {
    const before = i > 0 ? chain[i - 1]!.schema.fields : [];
    origins.push(
      chain[i]!.schema.fields.map((f) => {
        const j = before.findIndex((b) => b.name === f.name);
        return j >= 0 ? origins[i - 1]![j]! : chain[i]!.version;
      }),
    );
  }
  return origins;
}

/**
 * Why the store whose versions are `recorded` (oldest first; the last is the current one) cannot
 * take `wanted` (a sentence naming the field and the rule), or undefined when it can: every column
 * of `wanted` is a column of the current version, with the type and nullability it had in every
 * recorded version where it is the same column (same name, same origin), or a new nullable column;
 * every key column stays; other columns may go.
 */
export function evolutionProblem(
  recorded: readonly Pick<DecodedVersion, 'version' | 'schema'>[],
  wanted: Schema,
  primaryKey: readonly string[],
): string | undefined {
  const names = new Set(wanted.fields.map((f) => f.name));
  for (const k of primaryKey) {
    if (!names.has(k)) return `key column "${k}" cannot be dropped (rule: the primary key never changes)`;
  }
  const next = recorded[recorded.length - 1]!.version + 1;
  const origins = columnOrigins([...recorded, { version: next, schema: wanted }]);
  const wantedOrigins = origins[recorded.length]!;
  for (const [i, f] of wanted.fields.entries()) {
    if (wantedOrigins[i] === next) {
      if (!f.nullable) return `new column "${f.name}" must be nullable (rule: rows written before it have no value for it)`;
      continue;
    }
    for (const [r, v] of recorded.entries()) {
      const j = v.schema.fields.findIndex((x, k) => x.name === f.name && origins[r]![k] === wantedOrigins[i]);
      if (j < 0) continue;
      const old = v.schema.fields[j]!;
      const where = r === recorded.length - 1 ? '' : ` (as recorded in schema version ${v.version})`;
      if (!typesEqual(old.type, f.type)) {
        return `column "${f.name}" changes type from ${String(old.type)}${where} to ${String(f.type)} (rule: a kept column keeps its type)`;
      }
      if (old.nullable !== f.nullable) {
        return `column "${f.name}" changes from ${old.nullable ? 'nullable' : 'non-nullable'}${where} to ${f.nullable ? 'nullable' : 'non-nullable'} (rule: a kept column keeps its nullability)`;
      }
    }
  }
  return undefined;
}

/**
 * Recorded `versions`, decoded, oldest first. Throws `Corruption` when one is not an allowed
 * evolution of every version before it (no release records such a chain).
 */
export function decodeVersions(versions: readonly SchemaVersion[], primaryKey: readonly string[]): DecodedVersion[] {
  const chain = versions.map((v) => ({ ...v, schema: decodeSchema(v.schema) })).sort((a, b) => a.version - b.version);
  for (let i = 1; i < chain.length; i++) {
    const problem = evolutionProblem(chain.slice(0, i), chain[i]!.schema, primaryKey);
    if (problem)
      throw new MemWalError('Corruption', `manifest: schema version ${chain[i]!.version} breaks the evolution rules: ${problem}`);
  }
  return chain;
}

/** Open errors that are a schema the store cannot take (`onSchemaMismatch` decides what happens). */
const schemaMismatches = new WeakSet<MemWalError>();

/** The `InvalidArgument` for a store whose recorded schema cannot evolve into the given one. */
export function schemaMismatchError(name: string, problem: string): MemWalError {
  const e = new MemWalError('InvalidArgument', `option schema: store ${name} cannot take the given schema: ${problem}`);
  schemaMismatches.add(e);
  return e;
}

/** Whether `e`, or an error it was caused by, is a {@link schemaMismatchError}. */
export function isSchemaMismatch(e: unknown): boolean {
  for (let x = e; x instanceof MemWalError; x = x.cause) if (schemaMismatches.has(x)) return true;
  return false;
}

/** The recorded schema versions of a manifest (format 1: just its schema, as version 1). */
export function recordedVersions(m: Pick<Manifest, 'schemas' | 'schemaVersion' | 'schema'>): SchemaVersion[] {
  return m.schemas ?? [{ version: m.schemaVersion ?? 1, schema: m.schema }];
}

/**
 * The manifest fields that record `wanted` as the store's schema: unchanged when it equals the
 * current one, else a new version appended, recorded by the claim of `writerEpoch`. Throws
 * `InvalidArgument` naming the field and rule when the change is not allowed, `Corruption` when
 * the recorded versions are not a chain of allowed changes.
 */
export function evolveManifest(
  m: Manifest,
  wanted: Schema,
  primaryKey: readonly string[],
  storeName: string,
  writerEpoch: number,
): Pick<Manifest, 'schema' | 'schemaVersion' | 'schemas'> {
  const versions = recordedVersions(m);
  const current = m.schemaVersion ?? versions[versions.length - 1]!.version;
  if (schemasEqual(decodeSchema(m.schema), wanted)) return { schema: m.schema, schemaVersion: current, schemas: versions };
  const problem = evolutionProblem(decodeVersions(versions, primaryKey), wanted, primaryKey);
  if (problem) throw new MemWalError('InvalidArgument', `option schema: store ${storeName} cannot take the given schema: ${problem}`);
  const next = Math.max(...versions.map((v) => v.version)) + 1;
  const schema = encodeSchema(wanted);
  return { schema, schemaVersion: next, schemas: [...versions, { version: next, schema, writerEpoch }] };
}

/** One version as the projection sees it. */
interface KnownVersion {
  version: number;
  storeSchema: StoreSchema;
  writerEpoch: number | undefined;
  /** Per field of the current internal schema: the index of the same column in this version's, or -1. */
  sources: number[];
}

/**
 * Every schema version of a store, as internal schemas, and the projection onto the current one,
 * column by identity (name and origin, {@link columnOrigins}).
 */
export class SchemaVersions {
  /** Oldest first. */
  private readonly chain: KnownVersion[];
  private readonly byVersion = new Map<number, KnownVersion>();

  /**
   * `versions` must hold `currentVersion`, whose schema is `current`. Throws `Corruption` when the
   * versions are not a chain of allowed changes.
   */
  constructor(
    readonly current: StoreSchema,
    readonly currentVersion: number,
    versions: readonly SchemaVersion[],
  ) {
    const decoded = decodeVersions(versions, current.primaryKey);
    const origins = columnOrigins(decoded);
    // The tombstone column (keyed stores) is one column in every version.
    const idsOf = (i: number): string[] => [...origins[i]!.map((o, k) => `${o}:${decoded[i]!.schema.fields[k]!.name}`), TOMBSTONE_COLUMN];
    const at = decoded.findIndex((v) => v.version === currentVersion);
    if (at < 0) throw new MemWalError('Corruption', `manifest: schema version ${currentVersion} is not among the recorded versions`);
    const currentIds = idsOf(at);
    this.chain = decoded.map((v, i) => {
      const storeSchema = v.version === currentVersion ? current : makeStoreSchema(v.schema, current.primaryKey);
      const ids = idsOf(i).slice(0, storeSchema.internal.fields.length);
      return { version: v.version, storeSchema, writerEpoch: v.writerEpoch, sources: currentIds.map((id) => ids.indexOf(id)) };
    });
    for (const v of this.chain) this.byVersion.set(v.version, v);
  }

  /** The internal schema data of `version` was written in (unknown version: `Corruption`). */
  internalOf(version: number | undefined): Schema {
    const known = this.byVersion.get(version ?? 1);
    if (known) return known.storeSchema.internal;
    if (version === undefined) return this.current.internal;
    throw new MemWalError('Corruption', `data written with schema version ${version}, which the manifest does not record`);
  }

  /**
   * The version a WAL entry of writer `epoch` whose payload has `schema` was written in, or
   * undefined when none fits. A writer writes in the version current at its claim: the newest
   * whose `writerEpoch` is at most its epoch. Versions recorded without a `writerEpoch` (by the
   * first release with schema versions) are told apart by their schemas: the newest that matches.
   */
  versionOfEntry(schema: Schema, epoch: number): number | undefined {
    let from = 0;
    let to = this.chain.length;
    for (const [i, v] of this.chain.entries()) {
      if (v.writerEpoch === undefined) continue;
      if (v.writerEpoch > epoch) {
        to = i;
        break;
      }
      from = i;
    }
    for (let i = to - 1; i >= from; i--) if (schemasEqual(this.chain[i]!.storeSchema.internal, schema)) return this.chain[i]!.version;
    return undefined;
  }

  /** The batches of WAL entry `position` (`t`, written by writer `epoch`) in the current schema; `Corruption` when no version fits. */
  projectEntry(t: Table, epoch: number, position: number): RecordBatch[] {
    const version = this.versionOfEntry(t.schema, epoch);
    if (version === undefined) throw new MemWalError('Corruption', `WAL entry ${position}: its schema is none the store recorded`);
    return t.batches.map((b) => this.project(b, version));
  }

  /** `batch`, written in `version` (absent: 1), in the current schema: new columns null, dropped ones gone. */
  project(batch: RecordBatch, version: number | undefined): RecordBatch {
    const target = this.current.internal;
    if (batch.schema === target) return batch;
    const from = this.byVersion.get(version ?? 1);
    if (!from) throw new MemWalError('Corruption', `data written with schema version ${version}, which the manifest does not record`);
    const n = batch.numRows;
    const children = target.fields.map((f, i) => {
      const j = from.sources[i]!;
      return j >= 0 ? batch.data.children[j]! : nullData(f.type, n);
    });
    return makeBatch(target, children, n);
  }

  /** True when every version is the current one (nothing to project). */
  get single(): boolean {
    return this.byVersion.size === 1;
  }

  /** The versions as recorded (for the I/O worker). */
  static encode(m: Pick<Manifest, 'schemas' | 'schemaVersion' | 'schema'>): SchemaVersion[] {
    return m.schemas ?? [{ version: m.schemaVersion ?? 1, schema: m.schema }];
  }
}
