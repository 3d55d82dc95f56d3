// Index sections of table files (format 3, docs/format.md §8 "Index sections"): a flush's file
// carries, per declared ordered index, exactly the index keys of the rows the file holds (not of
// the overwritten versions its memtable also held, not of delete markers), each with its row's
// position; the whole-file checksum covers the sections without reading them; a damaged section
// is `Corruption` when read; a non-JS Arrow reader still reads the rows.

import { createRequire } from 'node:module';
import { Field, Float64, Int32, List, Schema, type Table, Utf8, tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { indexKeysOfRow, resolveIndexes } from '../../data/index-keys.js';
import { keyString, makeKeyEncoder } from '../../data/keys.js';
import { rowObject, toBatches, tombstoneBatch } from '../../data/rows.js';
import { makeStoreSchema } from '../../data/schema.js';
import { buildFlushTable } from '../../lsm/jobs.js';
import { crc32c } from '../../util/crc32c.js';
import { decodeOrderedSection, orderedSectionId } from './ordered-section.js';
import { checkSection, readTableIndex } from './reader.js';
import { decodeSectionDirectory, encodeSectionDirectory, findSection } from './sections.js';

const base = makeStoreSchema(
  new Schema([
    new Field('id', new Int32(), false),
    new Field('title', new Utf8(), true),
    new Field('qty', new Float64(), true),
    new Field('tags', new List(new Field('item', new Utf8(), true)), true),
  ]),
  ['id'],
);
const resolved = resolveIndexes(
  { byTitle: { column: 'title' }, byTag: { column: 'tags', multiEntry: true }, byQtyTitle: { columns: ['qty', 'title'] } },
  base.base,
  ['id'],
);
const storeSchema = { ...base, indexes: resolved };
const reader = (bytes: Uint8Array) => (offset: number, length: number) => Promise.resolve(bytes.slice(offset, offset + length));

/** A memtable's batches: 3,000 rows, then overwrites of every third id with other values, then deletes of every seventh. */
function memtable() {
  const row = (id: number, v: number) => ({
    id,
    title: id % 11 === 0 ? null : `t${(id * (v + 1)) % 37}`,
    qty: id % 13 === 0 ? null : (id * (v + 3)) % 17,
    tags: id % 9 === 0 ? null : [`g${(id + v) % 5}`, `g${(id * v) % 7}`, `g${(id + v) % 5}`],
  });
  const first = toBatches(
    Array.from({ length: 3000 }, (_, i) => row(i, 0)),
    storeSchema,
  );
  const over = toBatches(
    Array.from({ length: 1000 }, (_, i) => row(i * 3, 1)),
    storeSchema,
  );
  const dels = tombstoneBatch(
    Array.from({ length: 429 }, (_, i) => ({ id: i * 7 })),
    storeSchema,
  )!;
  return [...first, ...over, dels];
}

describe('index sections', () => {
  it("a flush's file carries per index exactly the index keys of its own rows, each with its row's position", async () => {
    const built = await buildFlushTable(storeSchema, makeKeyEncoder(storeSchema), memtable(), 4);
    const index = await readTableIndex(
      't',
      built.bytes.length,
      reader(built.bytes),
      storeSchema.internal,
      built.crc.toString(16).padStart(8, '0'),
    );
    expect(index.format).toBe(3);
    expect(index.sections.map((s) => s.name)).toEqual(['byTitle', 'byTag', 'byQtyTitle']);
    // The file's rows, decoded by apache-arrow (not memwal's reader), in file order.
    const rows: { row: Record<string, unknown>; pk: string; deleted: boolean }[] = [];
    const enc = makeKeyEncoder(storeSchema);
    for (const b of (tableFromIPC(built.bytes) as Table).batches) {
      const keys = enc(b);
      for (let r = 0; r < b.numRows; r++) {
        rows.push({ row: rowObject(b, r), pk: keyString(keys[r]!, storeSchema), deleted: b.getChild('_tombstone')!.get(r) === true });
      }
    }
    expect(rows.length).toBe(built.rows);
    for (const ix of resolved) {
      const info = findSection(index.sections, orderedSectionId(ix))!;
      const bytes = checkSection(
        't',
        index,
        info,
        built.bytes.slice(index.sectionAreaStart + info.offset, index.sectionAreaStart + info.offset + info.length),
      );
      const got = decodeOrderedSection(bytes, 't', ix.name, built.rows);
      const expected: string[] = [];
      rows.forEach((r, at) => {
        if (r.deleted) return;
        for (const k of indexKeysOfRow(ix, r.row)) expected.push(`${k}|${r.pk}|${at}`);
      });
      const entries = got.keys.map((k, i) => `${k}|${got.pks[i]}|${got.rows[i]}`);
      expect(entries.length, ix.name).toBe(expected.length);
      expect(new Set(entries), ix.name).toEqual(new Set(expected));
      // In (key, primary key) order, and each entry's row has that primary key.
      for (let i = 1; i < got.keys.length; i++) {
        const before = got.keys[i - 1]! < got.keys[i]! || (got.keys[i - 1] === got.keys[i] && got.pks[i - 1]! < got.pks[i]!);
        expect(before, `${ix.name} entry ${i}`).toBe(true);
      }
      for (let i = 0; i < got.keys.length; i++) expect(rows[got.rows[i]!]!.pk).toBe(got.pks[i]);
    }
  });

  it('the whole-file checksum covers the sections unread; a damaged section is Corruption when read, naming it', async () => {
    const built = await buildFlushTable(storeSchema, makeKeyEncoder(storeSchema), memtable(), 4);
    const checksum = built.crc.toString(16).padStart(8, '0');
    expect(checksum).toBe(crc32c(built.bytes).toString(16).padStart(8, '0'));
    const reads: [number, number][] = [];
    const index = await readTableIndex(
      't',
      built.bytes.length,
      (o, l) => {
        reads.push([o, l]);
        return Promise.resolve(built.bytes.slice(o, o + l));
      },
      storeSchema.internal,
      checksum,
    );
    const area = index.sectionAreaStart;
    const areaEnd = area + index.sections.reduce((n, s) => n + s.length, 0);
    // Opening read the trailer's 64 KiB and the schema message, not the (larger) section area ahead of them.
    expect(areaEnd - area).toBeGreaterThan(64 * 1024);
    for (const [o, l] of reads) expect(o >= areaEnd - 64 * 1024 || o + l <= area, `read ${o}+${l}`).toBe(true);
    const s = index.sections[1]!;
    const damaged = built.bytes.slice(area + s.offset, area + s.offset + s.length);
    const mid = damaged.length >> 1;
    damaged[mid] = damaged[mid]! ^ 0x10;
    expect(() => checkSection('t', index, s, damaged)).toThrow(/index section ordered byTag .* fails its checksum/);
    try {
      checkSection('t', index, s, damaged);
    } catch (e) {
      expect((e as { code?: string }).code).toBe('Corruption');
    }
  });

  it('a section directory cut short or pointing outside its area is Corruption', () => {
    const dir = encodeSectionDirectory({
      areaLength: 16,
      areaCrc: 1,
      sections: [{ kind: 'ordered', name: 'a', spec: '{}', offset: 0, length: 16, crc: 2 }],
    });
    expect(decodeSectionDirectory(dir, 'f').sections[0]).toMatchObject({ kind: 'ordered', name: 'a', length: 16 });
    expect(() => decodeSectionDirectory(dir.subarray(0, dir.length - 1), 'f')).toThrow(/cut short/);
    const outside = encodeSectionDirectory({
      areaLength: 8,
      areaCrc: 1,
      sections: [{ kind: 'ordered', name: 'a', spec: '{}', offset: 0, length: 16, crc: 2 }],
    });
    expect(() => decodeSectionDirectory(outside, 'f')).toThrow(/outside its 8-byte area/);
    expect(() => decodeOrderedSection(new Uint8Array([5, 0, 0, 0, 0]), 'f', 'a', 10)).toThrow(/claims 5 entries/);
  });

  it('Polars (a non-JS Arrow reader) reads every row of a format-3 file with sections', async () => {
    const pl = createRequire(import.meta.url)('nodejs-polars') as {
      readIPC(data: Buffer): { height: number; getColumn(n: string): { toArray(): unknown[] } };
    };
    const built = await buildFlushTable(storeSchema, makeKeyEncoder(storeSchema), memtable(), 4);
    const df = pl.readIPC(Buffer.from(built.bytes));
    expect(df.height).toBe(built.rows);
    expect(df.getColumn('id').toArray().map(Number)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  });
});
