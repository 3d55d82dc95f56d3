// Outside tester: table files built by the new var-width gather (Int32 offsets written in
// place) and the table-driven base64 of their block index and Bloom filter, attacked through the
// public API (MemWal on NodeFileStorage) against a plain JS model. Keyed stores whose Utf8,
// Binary, LargeUtf8 and LargeBinary columns hold empty values, nulls, whole memtables of nulls or
// of empty values, multi-byte UTF-8 and values of 100 KiB and more, overwritten and deleted
// across flushes, compacted, evolved (a var-width column added, another dropped), reopened: scan,
// get and getMany give exactly the model. Keys of every length mod 3, so the block index's and
// Bloom filter's base64 end in each of its three tails.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Binary, Field, LargeBinary, LargeUtf8, Schema, Utf8 } from 'apache-arrow';
import { afterAll, expect, it } from 'vitest';
import { MemWal } from '../src/index.js';
import { NodeFileStorage } from '../src/node.js';

const root = mkdtempSync(join(tmpdir(), 'memwal-varwidth-model-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const quiet = { warn: () => {} };

type Row = Record<string, unknown>;

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ['', 'a', 'é', '€', '😀', '日本語', 'naïve', '\u0000', 'ß'];

/** A string of round `v`: null, empty, short multi-byte, or long (up to 120 KiB). */
function str(r: () => number, v: number, mode: 'mixed' | 'nulls' | 'empty'): string | null {
  if (mode === 'nulls') return null;
  if (mode === 'empty') return '';
  const x = r();
  if (x < 0.15) return null;
  if (x < 0.3) return '';
  if (x < 0.85) return `${PIECES[v % PIECES.length]}${v}${PIECES[Math.floor(r() * PIECES.length)]}`;
  return `${'😀'.repeat(Math.floor(r() * 4000))}${'x'.repeat(Math.floor(r() * 110_000))}${v}`;
}

function bin(r: () => number, v: number, mode: 'mixed' | 'nulls' | 'empty'): Uint8Array | null {
  if (mode === 'nulls') return null;
  if (mode === 'empty') return new Uint8Array(0);
  const x = r();
  if (x < 0.15) return null;
  if (x < 0.3) return new Uint8Array(0);
  const n = x < 0.9 ? 1 + (v % 7) : 65_536 + Math.floor(r() * 70_000);
  return Uint8Array.from({ length: n }, (_, k) => (v * 13 + k) & 0xff);
}

/** Key `i`: a string of length 1 + i % 23 (every length mod 3), multi-byte for some. */
const key = (i: number): string => `${i % 5 === 0 ? 'ü' : 'k'}${String(i).padStart(1 + (i % 23), '0')}`;

const norm = (v: unknown): unknown =>
  v instanceof Uint8Array
    ? `bin:${v.length}:${Array.from(v.subarray(0, 8)).join(',')}:${v.reduce((a, b) => (a * 31 + b) >>> 0, 0)}`
    : (v ?? null);

function normRow(schema: Schema, row: Row | undefined): Row | undefined {
  if (!row) return undefined;
  const out: Row = {};
  for (const f of schema.fields) out[f.name] = norm(row[f.name]);
  return out;
}

async function check(db: MemWal, schema: Schema, model: Map<string, Row>, when: string): Promise<string[]> {
  const problems: string[] = [];
  const t = await db.scan();
  const seen = new Set<string>();
  for (const r of t) {
    const row = r!.toJSON() as Row;
    const k = row.k as string;
    seen.add(k);
    const want = model.get(k);
    if (!want) problems.push(`${when}: scan has ${k}`);
    else if (JSON.stringify(normRow(schema, row)) !== JSON.stringify(normRow(schema, want)))
      problems.push(
        `${when}: scan ${k} ${JSON.stringify(normRow(schema, row)).slice(0, 200)} want ${JSON.stringify(normRow(schema, want)).slice(0, 200)}`,
      );
  }
  for (const k of model.keys()) if (!seen.has(k)) problems.push(`${when}: scan lacks ${k}`);
  const keys = [...model.keys(), key(999_999), 'absent'];
  const got = await db.getMany(keys.map((k) => ({ k })));
  keys.forEach((k, i) => {
    const a = JSON.stringify(normRow(schema, got[i] as Row | undefined));
    const b = JSON.stringify(normRow(schema, model.get(k)));
    if (a !== b) problems.push(`${when}: getMany ${k} ${String(a).slice(0, 200)} want ${String(b).slice(0, 200)}`);
  });
  for (const k of keys.slice(0, 40)) {
    const a = JSON.stringify(normRow(schema, (await db.get({ k })) as Row | undefined));
    const b = JSON.stringify(normRow(schema, model.get(k)));
    if (a !== b) problems.push(`${when}: get ${k}`);
  }
  return problems.slice(0, 20);
}

it('var-width columns (empty, null, all-null and all-empty memtables, multi-byte, 100 KiB values) overwritten, deleted, flushed, compacted, evolved and reopened: exactly the model', async () => {
  const storage = new NodeFileStorage(root);
  const v1 = new Schema([
    new Field('k', new Utf8(), false),
    new Field('s', new Utf8(), true),
    new Field('b', new Binary(), true),
    new Field('ls', new LargeUtf8(), true),
    new Field('lb', new LargeBinary(), true),
  ]);
  // Added: a nullable Utf8 (before s); dropped: lb.
  const v2 = new Schema([
    new Field('k', new Utf8(), false),
    new Field('added', new Utf8(), true),
    new Field('s', new Utf8(), true),
    new Field('b', new Binary(), true),
    new Field('ls', new LargeUtf8(), true),
  ]);
  const o = { name: 'var', primaryKey: ['k'], storage, logger: quiet, maxMemtableBytes: 256 * 1024 };
  const r = rng(8);
  const model = new Map<string, Row>();
  const problems: string[] = [];
  let schema = v1;
  let db = await MemWal.open({ ...o, schema });
  const KEYS = 400;
  const round = async (v: number, mode: 'mixed' | 'nulls' | 'empty'): Promise<void> => {
    const ids = Array.from({ length: KEYS }, (_, i) => i).filter((i) => (i * 7 + v) % 3 !== 0);
    if (v % 2) ids.reverse();
    for (let at = 0; at < ids.length; ) {
      const size = [1, 17, 120, 3, 60][(at + v) % 5]!;
      const rows: Row[] = ids.slice(at, at + size).map((i) => {
        const row: Row = { k: key(i), s: str(r, v, mode), b: bin(r, v, mode), ls: str(r, v + 1, mode) };
        if (schema === v1) row.lb = bin(r, v + 2, mode);
        else row.added = str(r, v + 3, mode === 'mixed' ? 'mixed' : 'nulls');
        return row;
      });
      at += size;
      await db.put(rows);
      for (const row of rows) model.set(row.k as string, { ...row });
    }
    const dead = Array.from({ length: KEYS }, (_, i) => i)
      .filter((i) => (i + v) % 11 === 0)
      .map((i) => ({ k: key(i) }));
    await db.delete(dead);
    for (const d of dead) model.delete(d.k);
  };
  const settle = async (): Promise<void> => {
    await db.forceSealActive();
    await db.waitForFlushDrain();
  };
  await round(1, 'mixed');
  await settle();
  await round(2, 'nulls'); // whole memtables with every var-width value null
  await settle();
  problems.push(...(await check(db, schema, model, 'v1 nulls flushed')));
  await round(3, 'empty'); // ... and every one empty
  await settle();
  await round(4, 'mixed');
  problems.push(...(await check(db, schema, model, 'v1 open')));
  await db.close();
  db = await MemWal.open({ ...o, schema });
  problems.push(...(await check(db, schema, model, 'v1 reopened')));
  await db.compact();
  problems.push(...(await check(db, schema, model, 'v1 compacted')));
  await db.close();
  // Evolve: rows of v1 read back without lb and with added null.
  schema = v2;
  for (const row of model.values()) {
    delete row.lb;
    row.added = null;
  }
  db = await MemWal.open({ ...o, schema });
  problems.push(...(await check(db, schema, model, 'v2 reopened')));
  await round(5, 'mixed');
  await settle();
  await round(6, 'empty');
  problems.push(...(await check(db, schema, model, 'v2 open')));
  await db.compact();
  problems.push(...(await check(db, schema, model, 'v2 compacted')));
  await db.close();
  db = await MemWal.open({ ...o, schema });
  problems.push(...(await check(db, schema, model, 'v2 reopened again')));
  await db.close();
  expect(problems).toEqual([]);
});
