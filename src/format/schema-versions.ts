// Schema evolution (docs/impl.md §12): which changes a store's schema may undergo (added nullable
// columns, kept columns hidden from an opener that lacks them, drops an opener names, renames),
// the versions the manifest records, and the projection of data written in an older version onto
// the current one (added columns null, dropped ones gone, renamed ones under their new name).
// Pure; any runtime.

import { Field, type RecordBatch, Schema, type Table } from 'apache-arrow';
import { MemWalError } from '../util/errors.js';
import type { Manifest, SchemaVersion } from './manifest/manifest.js';
import { nullData } from '../data/rows.js';
import {
  decodeSchema,
  encodeSchema,
  makeStoreSchema,
  RENAMED_FROM,
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
  /** New name → the name the same column had in the version before (format 3). */
  renamed?: Record<string, string>;
}

type ChainLink = Pick<DecodedVersion, 'version' | 'schema' | 'renamed'>;

/**
 * The identity of each column of each version in `chain` (oldest first, each evolved from the one
 * before it), per field: `"<version>:<name>"` of the version that introduced it and the name it
 * had there. A field continues the field of the version just before it that has its name, or the
 * name its version's `renamed` gives; any other field is new in its own version. So a column
 * dropped and later added again is a new column, whatever its type, and a renamed column is the
 * same column (docs/impl.md §12).
 */
export function columnIds(chain: readonly ChainLink[]): string[][] {
  const ids: string[][] = [];
  for (let i = 0; i < chain.length; i++) {
    const before = i > 0 ? chain[i - 1]!.schema.fields : [];
    const renamed = chain[i]!.renamed ?? {};
    ids.push(
      chain[i]!.schema.fields.map((f) => {
        const was = Object.hasOwn(renamed, f.name) ? renamed[f.name]! : f.name;
        const j = before.findIndex((b) => b.name === was);
        return j >= 0 ? ids[i - 1]![j]! : `${chain[i]!.version}:${f.name}`;
      }),
    );
  }
  return ids;
}

/**
 * Why the store whose versions are `recorded` (oldest first; the last is the current one) cannot
 * take `wanted` as its next version (`renamed`: new name → old name, as recorded), a sentence
 * naming the field and the rule, or undefined when it can: every column of `wanted` is a column of
 * the current version (by name, or by a rename of it), with the type and nullability it had in
 * every recorded version where it is the same column, or a new nullable column; every key column
 * stays; other columns may go.
 */
export function evolutionProblem(
  recorded: readonly ChainLink[],
  wanted: Schema,
  primaryKey: readonly string[],
  renamed?: Record<string, string>,
): string | undefined {
  const names = new Set(wanted.fields.map((f) => f.name));
  for (const k of primaryKey) {
    if (!names.has(k)) return `key column "${k}" cannot be dropped (rule: the primary key never changes)`;
  }
  const current = recorded[recorded.length - 1]!.schema;
  for (const [to, from] of Object.entries(renamed ?? {})) {
    if (typeof from !== 'string' || !names.has(to) || names.has(from) || !current.fields.some((f) => f.name === from)) {
      return `rename of "${String(from)}" to "${to}" does not name a column of the version before under its old name and one of this version under its new name (rule: a rename keeps one column)`;
    }
    if (primaryKey.includes(to) || primaryKey.includes(from))
      return `key column "${from}" cannot be renamed (rule: the primary key never changes)`;
  }
  const next = recorded[recorded.length - 1]!.version + 1;
  const ids = columnIds([...recorded, { version: next, schema: wanted, ...(renamed ? { renamed } : {}) }]);
  const wantedIds = ids[recorded.length]!;
  for (const [i, f] of wanted.fields.entries()) {
    if (wantedIds[i] === `${next}:${f.name}`) {
      if (!f.nullable) return `new column "${f.name}" must be nullable (rule: rows written before it have no value for it)`;
      continue;
    }
    for (const [r, v] of recorded.entries()) {
      const j = ids[r]!.indexOf(wantedIds[i]!);
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
  for (let i = 0; i < chain.length; i++) {
    const renamed = chain[i]!.renamed;
    if (renamed !== undefined && (typeof renamed !== 'object' || renamed === null || i === 0)) {
      throw new MemWalError('Corruption', `manifest: schema version ${chain[i]!.version} has an invalid "renamed"`);
    }
    if (i === 0) continue;
    const problem = evolutionProblem(chain.slice(0, i), chain[i]!.schema, primaryKey, renamed);
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

/** What an open changed in, or hid from, a store's schema (`hooks.onSchemaChange`). */
export interface SchemaChange {
  /** The store's name. */
  name: string;
  /** The schema version before the open. */
  from: number;
  /** The schema version after it (equal to `from` when the open only hid columns). */
  to: number;
  /** Columns this open added (new, nullable; older rows read null). */
  added: string[];
  /** Stored columns this opener's schema lacks: kept with their values, left out of its reads; its puts write null to them. */
  hidden: string[];
  /** Columns this open dropped with their values (`dropColumns`). */
  dropped: string[];
  /** Columns this open renamed, old name → new name. */
  renamed: Record<string, string>;
}

/** The schema an open leaves a store with, and how the opener sees it. */
export interface SchemaPlan {
  /** The manifest fields that record it (unchanged when nothing changed). */
  manifest: Pick<Manifest, 'schema' | 'schemaVersion' | 'schemas'>;
  /** The store's current schema after the open: every kept column, hidden ones included. */
  stored: Schema;
  /** Per column of the opener's schema, in its order: [its name, the name of the stored column it reads and writes]. */
  view: [string, string][];
  /** What changed or was hidden; undefined for a new store or when nothing was. */
  change: SchemaChange | undefined;
}

/** The renames an opener asks for, old name → new name: `renameColumns` and `renamedFrom` field metadata. */
function askedRenames(wanted: Schema, renameColumns: Readonly<Record<string, string>>): Map<string, string> {
  const out = new Map(Object.entries(renameColumns));
  for (const f of wanted.fields) {
    const from = f.metadata?.get(RENAMED_FROM);
    if (from === undefined) continue;
    const other = [...out].find(([, to]) => to === f.name);
    if (other && other[0] !== from) {
      throw invalidOption('renameColumns', `column "${f.name}" is renamed from "${other[0]}" and, by renamedFrom, from "${from}"`);
    }
    if (out.has(from) && out.get(from) !== f.name) throw invalidOption('renameColumns', `"${from}" is renamed twice`);
    out.set(from, f.name);
  }
  return out;
}

function invalidOption(option: string, why: string): MemWalError {
  return new MemWalError('InvalidArgument', `option ${option}: ${why}`);
}

/**
 * The schema store `storeName` has after an open with `wanted` (SPEC §9, §9.1; docs/impl.md §12),
 * given its manifest `m` (undefined: a new store). Stored columns `wanted` lacks are kept, hidden
 * from the opener, unless `dropColumns` names them; `renameColumns` (old → new) and `renamedFrom`
 * field metadata rename a stored column, keeping its identity; a name of `wanted` that a stored
 * column had before a rename reads and writes that column (a release from before the rename);
 * any other column of `wanted` the store lacks is added (nullable). A change is recorded as a new
 * version, by the claim of `writerEpoch`.
 *
 * Throws `InvalidArgument`: a schema mismatch ({@link schemaMismatchError}: a kept column's type or
 * nullability changes, a new column is non-nullable), a bad `dropColumns`/`renameColumns` (a key
 * column, a column of `wanted` dropped, a name no recorded version has, a rename onto a column the
 * store has), or a hidden non-nullable column (this opener's puts could not give it a value: keep
 * it in the schema or drop it with `dropColumns`). `Corruption` when the recorded versions are not
 * a chain of allowed changes. Pure.
 */
export function planSchema(
  m: Manifest | undefined,
  wanted: Schema,
  primaryKey: readonly string[],
  asked: { dropColumns: readonly string[]; renameColumns: Readonly<Record<string, string>> },
  storeName: string,
  writerEpoch: number,
): SchemaPlan {
  const wantedNames = new Set(wanted.fields.map((f) => f.name));
  for (const c of asked.dropColumns) {
    if (primaryKey.includes(c)) throw invalidOption('dropColumns', `"${c}" is a key column (the primary key never changes)`);
    if (wantedNames.has(c)) throw invalidOption('dropColumns', `"${c}" is a column of the schema; remove it from the schema to drop it`);
  }
  const renames = askedRenames(wanted, asked.renameColumns);
  for (const [from, to] of renames) {
    if (primaryKey.includes(from) || primaryKey.includes(to)) {
      throw invalidOption('renameColumns', `"${from}" → "${to}" renames a key column (the primary key never changes)`);
    }
    if (!wantedNames.has(to)) throw invalidOption('renameColumns', `"${from}" → "${to}": "${to}" is not a column of the schema`);
    if (wantedNames.has(from)) throw invalidOption('renameColumns', `"${from}" → "${to}": "${from}" is still a column of the schema`);
    if (asked.dropColumns.includes(from)) throw invalidOption('renameColumns', `"${from}" is both renamed and dropped`);
  }
  const identity: [string, string][] = wanted.fields.map((f) => [f.name, f.name]);
  if (!m) {
    const stored = new Schema(wanted.fields.map((f) => new Field(f.name, f.type, f.nullable)));
    return { manifest: newManifestSchema(stored), stored, view: identity, change: undefined };
  }

  const versions = recordedVersions(m);
  const chain = decodeVersions(versions, primaryKey);
  const current = decodeSchema(m.schema);
  const from = m.schemaVersion ?? chain[chain.length - 1]!.version;
  const everNamed = new Set(chain.flatMap((v) => v.schema.fields.map((f) => f.name)));
  for (const c of asked.dropColumns) {
    if (!everNamed.has(c)) throw invalidOption('dropColumns', `store ${storeName} has no column "${c}" in any schema version`);
  }
  // The stored columns after drops and renames, in their stored order.
  const renamed: Record<string, string> = {}; // new → old, as recorded
  const dropped: string[] = [];
  const kept: Field[] = [];
  for (const f of current.fields) {
    if (asked.dropColumns.includes(f.name)) {
      dropped.push(f.name);
      continue;
    }
    const to = renames.get(f.name);
    if (to === undefined) {
      kept.push(f);
      continue;
    }
    if (current.fields.some((g) => g.name === to)) {
      throw invalidOption('renameColumns', `"${f.name}" → "${to}": store ${storeName} already has a column "${to}"`);
    }
    renamed[to] = f.name;
    kept.push(new Field(to, f.type, f.nullable));
  }
  // The names each kept column had in earlier versions (for an opener from before a rename).
  const ids = columnIds([...chain, { version: Number.MAX_SAFE_INTEGER, schema: new Schema(kept), renamed }]);
  const keptIds = ids[chain.length]!;
  const formerNames = keptIds.map((id) => {
    const names = new Set<string>();
    chain.forEach((v, i) => {
      const j = ids[i]!.indexOf(id);
      if (j >= 0) names.add(v.schema.fields[j]!.name);
    });
    return names;
  });
  // The opener's columns: a kept column by name, by a former name, or a new one.
  const added: Field[] = [];
  const view: [string, string][] = [];
  const seen = new Set<string>();
  for (const w of wanted.fields) {
    let j = kept.findIndex((f) => f.name === w.name);
    if (j < 0) j = kept.findIndex((f, k) => !wantedNames.has(f.name) && !seen.has(f.name) && formerNames[k]!.has(w.name));
    if (j < 0) {
      if (!w.nullable) {
        throw schemaMismatchError(storeName, `new column "${w.name}" must be nullable (rule: rows written before it have no value for it)`);
      }
      added.push(new Field(w.name, w.type, true));
      view.push([w.name, w.name]);
      continue;
    }
    const f = kept[j]!;
    if (!typesEqual(f.type, w.type)) {
      throw schemaMismatchError(
        storeName,
        `column "${w.name}" changes type from ${String(f.type)} to ${String(w.type)} (rule: a kept column keeps its type)`,
      );
    }
    if (f.nullable !== w.nullable) {
      throw schemaMismatchError(
        storeName,
        `column "${w.name}" changes from ${f.nullable ? 'nullable' : 'non-nullable'} to ${w.nullable ? 'nullable' : 'non-nullable'} (rule: a kept column keeps its nullability)`,
      );
    }
    seen.add(f.name);
    view.push([w.name, f.name]);
  }
  const hidden = kept.filter((f) => !seen.has(f.name));
  for (const f of hidden) {
    if (!f.nullable) {
      throw new MemWalError(
        'InvalidArgument',
        `option schema: store ${storeName} has a non-nullable column "${f.name}" that the given schema lacks; a stored column is kept (SPEC §9.1) and this opener's puts could not give it a value: keep "${f.name}" in the schema, or name it in dropColumns to drop it and its values`,
      );
    }
  }
  const stored = new Schema([...kept, ...added]);
  const changed = Object.keys(renamed).length > 0 || !schemasEqual(current, stored);
  let manifest: SchemaPlan['manifest'] = { schema: m.schema, schemaVersion: from, schemas: versions };
  let to = from;
  if (changed) {
    const problem = evolutionProblem(chain, stored, primaryKey, Object.keys(renamed).length > 0 ? renamed : undefined);
    if (problem) throw schemaMismatchError(storeName, problem);
    to = Math.max(...versions.map((v) => v.version)) + 1;
    const schema = encodeSchema(stored);
    const version: SchemaVersion = { version: to, schema, writerEpoch, ...(Object.keys(renamed).length > 0 ? { renamed } : {}) };
    manifest = { schema, schemaVersion: to, schemas: [...versions, version] };
  }
  const change: SchemaChange | undefined =
    changed || hidden.length > 0
      ? {
          name: storeName,
          from,
          to,
          added: added.map((f) => f.name),
          hidden: hidden.map((f) => f.name),
          dropped,
          renamed: Object.fromEntries(Object.entries(renamed).map(([n, o]) => [o, n])),
        }
      : undefined;
  return { manifest, stored, view, change };
}

/** The schema fields of a new store's first manifest. */
function newManifestSchema(schema: Schema): SchemaPlan['manifest'] {
  const encoded = encodeSchema(schema);
  return { schema: encoded, schemaVersion: 1, schemas: [{ version: 1, schema: encoded, writerEpoch: 1 }] };
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
 * column by identity ({@link columnIds}).
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
    const ids = columnIds(decoded);
    // The tombstone column (keyed stores) is one column in every version.
    const idsOf = (i: number): string[] => [...ids[i]!, TOMBSTONE_COLUMN];
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
