// The migrations page (SPEC §9.1): the releases of issue 36's field-notes app, each opening the
// same store through openMemWal, exposed to Playwright as `window.migrations`. Rows come back with
// their bigint ids as numbers (JSON-safe).

import { defineSchema, int64, type MemWalClient, openMemWal, type SchemaChange, utf8 } from '../../src/index.js';

const releases = {
  1: defineSchema({ id: int64(), title: utf8() }),
  2: defineSchema({ id: int64(), title: utf8(), location: utf8().nullable() }),
  3: defineSchema({ id: int64(), name: utf8().renamedFrom('title'), location: utf8().nullable() }),
} as const;
type Release = keyof typeof releases;

const plain = (r: Record<string, unknown> | undefined): Record<string, unknown> | null =>
  r ? Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])) : null;

let open: { db: MemWalClient; changes: SchemaChange[] } | undefined;

const migrations = {
  /** Open store `name` as release `release` (`tabs` as openMemWal takes it); resolves the schema changes the open reported. */
  async open(name: string, release: Release, tabs: 'exclusive' | 'share' = 'exclusive'): Promise<SchemaChange[]> {
    const changes: SchemaChange[] = [];
    const db = (await openMemWal(
      { name, schema: releases[release], primaryKey: ['id'], tabs },
      { onSchemaChange: (c) => changes.push(c) },
    )) as unknown as MemWalClient;
    open = { db, changes };
    return changes;
  },
  async put(rows: Record<string, unknown>[]): Promise<void> {
    await open!.db.put(rows);
  },
  async get(id: number): Promise<Record<string, unknown> | null> {
    return plain(await open!.db.get({ id }));
  },
  async scanColumns(): Promise<string[]> {
    return (await open!.db.scan()).schema.fields.map((f) => f.name);
  },
  async info(): Promise<{
    role: string;
    version: number;
    stored: string[];
    hidden: string[];
    aliases: Record<string, string>;
    renamed: unknown[];
  }> {
    const i = await open!.db.schemaInfo();
    return {
      role: open!.db.role(),
      version: i.version,
      stored: i.schema.fields.map((f) => f.name),
      hidden: i.hidden,
      aliases: i.aliases,
      renamed: i.versions.map((v) => v.renamed ?? null),
    };
  },
  async close(): Promise<void> {
    await open?.db.close();
    open = undefined;
  },
};

(window as unknown as { migrations: typeof migrations }).migrations = migrations;
