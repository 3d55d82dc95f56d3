// Schema evolution (docs/impl.md §12): which changes a store's schema may undergo (added nullable
// columns, dropped non-key columns), the versions the manifest records, and the projection of
// data written in an older version onto the current one (added columns null, dropped ones gone).
// Pure; any runtime.

import type { RecordBatch, Schema } from 'apache-arrow';
import { MemWalError } from '../errors.js';
import type { Manifest, SchemaVersion } from '../manifest/manifest.js';
import { nullData } from './rows.js';
import { decodeSchema, encodeSchema, makeStoreSchema, type StoreSchema, schemasEqual, typesEqual } from './schema.js';
import { makeBatch } from './select.js';

/**
 * Why `stored` cannot become `wanted` (a sentence naming the field and the rule), or undefined when
 * it can: every column of `wanted` is a column of `stored` with the same type and nullability, or a
 * new nullable column; every key column stays as it is; columns may go, except key columns.
 */
export function evolutionProblem(stored: Schema, wanted: Schema, primaryKey: readonly string[]): string | undefined {
  const before = new Map(stored.fields.map((f) => [f.name, f]));
  const after = new Map(wanted.fields.map((f) => [f.name, f]));
  for (const k of primaryKey) {
    if (!after.has(k)) return `key column "${k}" cannot be dropped (rule: the primary key never changes)`;
  }
  for (const f of wanted.fields) {
    const old = before.get(f.name);
    if (!old) {
      if (!f.nullable) return `new column "${f.name}" must be nullable (rule: rows written before it have no value for it)`;
      continue;
    }
    if (!typesEqual(old.type, f.type)) {
      return `column "${f.name}" changes type from ${String(old.type)} to ${String(f.type)} (rule: a kept column keeps its type)`;
    }
    if (old.nullable !== f.nullable) {
      return `column "${f.name}" changes from ${old.nullable ? 'nullable' : 'non-nullable'} to ${f.nullable ? 'nullable' : 'non-nullable'} (rule: a kept column keeps its nullability)`;
    }
  }
  return undefined;
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
export function recordedVersions(m: Manifest): SchemaVersion[] {
  return m.schemas ?? [{ version: m.schemaVersion ?? 1, schema: m.schema }];
}

/**
 * The manifest fields that record `wanted` as the store's schema: unchanged when it equals the
 * current one, else a new version appended. Throws `InvalidArgument` naming the field and rule
 * when the change is not allowed.
 */
export function evolveManifest(
  m: Manifest,
  wanted: Schema,
  primaryKey: readonly string[],
  storeName: string,
): Pick<Manifest, 'schema' | 'schemaVersion' | 'schemas'> {
  const versions = recordedVersions(m);
  const current = m.schemaVersion ?? versions[versions.length - 1]!.version;
  const stored = decodeSchema(m.schema);
  if (schemasEqual(stored, wanted)) return { schema: m.schema, schemaVersion: current, schemas: versions };
  const problem = evolutionProblem(stored, wanted, primaryKey);
  if (problem) throw new MemWalError('InvalidArgument', `option schema: store ${storeName} cannot take the given schema: ${problem}`);
  const next = Math.max(...versions.map((v) => v.version)) + 1;
  const schema = encodeSchema(wanted);
  return { schema, schemaVersion: next, schemas: [...versions, { version: next, schema }] };
}

/** Every schema version of a store, as internal schemas, and the projection onto the current one. */
export class SchemaVersions {
  private readonly byVersion = new Map<number, StoreSchema>();

  constructor(
    readonly current: StoreSchema,
    readonly currentVersion: number,
    versions: readonly SchemaVersion[],
  ) {
    for (const v of versions) {
      this.byVersion.set(v.version, v.version === currentVersion ? current : makeStoreSchema(decodeSchema(v.schema), current.primaryKey));
    }
    this.byVersion.set(currentVersion, current);
  }

  /** The internal schema data of `version` was written in (unknown version: `Corruption`). */
  internalOf(version: number | undefined): Schema {
    const ss = this.byVersion.get(version ?? 1) ?? (version === undefined ? this.current : undefined);
    if (!ss) throw new MemWalError('Corruption', `data written with schema version ${version}, which the manifest does not record`);
    return ss.internal;
  }

  /** Whether `schema` (a WAL payload's) is the internal schema of some recorded version. */
  knows(schema: Schema): boolean {
    for (const ss of this.byVersion.values()) if (schemasEqual(ss.internal, schema)) return true;
    return false;
  }

  /** `batch` (in one of the versions' internal schemas) in the current one: new columns null, dropped ones gone. */
  project(batch: RecordBatch): RecordBatch {
    const target = this.current.internal;
    if (batch.schema === target) return batch;
    const n = batch.numRows;
    const children = target.fields.map((f) => {
      const i = batch.schema.fields.findIndex((x) => x.name === f.name);
      return i >= 0 ? batch.data.children[i]! : nullData(f.type, n);
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
