// Outside tester: CRC-32C in a small WebAssembly module with a JavaScript fallback
// (docs/impl.md, "CRC-32C"), attacked through the public API only (MemWal, NodeFileStorage). A
// runtime that refuses to compile WebAssembly (a page whose CSP lacks 'wasm-unsafe-eval', an
// edge runtime) is stood in for by a `WebAssembly` whose `Module` throws a CompileError, and a
// fresh copy of memwal's modules is loaded under it. A store written on one path must reopen on
// the other with every acknowledged row, byte for byte, at payload sizes around the module's
// 64 KiB chunk and 128 KiB memory; SharedArrayBuffer-backed input and views at odd offsets are
// taken; and a byte flipped anywhere in a WAL frame or a table file is refused `Corruption` on
// both paths, never read back as other data.

import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Binary, Field, Int32, RecordBatch, RecordBatchFileReader, Schema, Struct, Utf8, makeData } from 'apache-arrow';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { MemWal as Db } from '../src/index.js';
import type { NodeFileStorage } from '../src/node.js';

const root = mkdtempSync(join(tmpdir(), 'memwal-crc32c-fallback-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => {
  vi.unstubAllGlobals();
});

const quiet = { warn: () => {} };
const realWasm = globalThis.WebAssembly;

type Memwal = typeof import('../src/index.js');
type NodeEntry = typeof import('../src/node.js');

interface Loaded {
  MemWal: Memwal['MemWal'];
  NodeFileStorage: NodeEntry['NodeFileStorage'];
  /** Modules compiled (path 'wasm') or refused (path 'js') so far by this copy. */
  compiles: () => number;
}

/**
 * A fresh copy of memwal (its CRC module state included) in a runtime that compiles WebAssembly
 * ('wasm') or refuses to ('js', as a CSP without 'wasm-unsafe-eval' does). The stand-in
 * `WebAssembly` stays installed until the test ends (memwal compiles on first use).
 */
async function load(path: 'wasm' | 'js'): Promise<Loaded> {
  vi.unstubAllGlobals();
  vi.resetModules();
  let compiles = 0;
  const stand = Object.create(realWasm) as typeof WebAssembly;
  if (path === 'js') {
    Object.defineProperty(stand, 'Module', {
      value: function Module() {
        compiles++;
        throw new realWasm.CompileError("WebAssembly.Module(): Refused to compile (CSP: no 'wasm-unsafe-eval'), test stand-in");
      },
    });
  } else {
    Object.defineProperty(stand, 'Module', {
      value: class Counting extends realWasm.Module {
        constructor(bytes: BufferSource) {
          super(bytes);
          compiles++;
        }
      },
    });
  }
  vi.stubGlobal('WebAssembly', stand);
  const { MemWal } = await import('../src/index.js');
  const { NodeFileStorage } = await import('../src/node.js');
  return { MemWal, NodeFileStorage, compiles: () => compiles };
}

const schema = new Schema([new Field('id', new Int32(), false), new Field('b', new Binary(), true), new Field('s', new Utf8(), true)]);

/** Deterministic bytes of row `id` (length `n`), different for every id. */
function blob(id: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = (id * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Sizes of a row's blob so that WAL payloads and table blocks land on and around 64 KiB and 128 KiB. */
const SIZES = [
  0,
  1,
  15,
  16,
  17,
  127,
  128,
  129,
  1000,
  65_536 - 600,
  65_536 - 333,
  65_536 - 17,
  65_536 - 1,
  65_536,
  65_537,
  65_536 + 15,
  65_536 + 16,
  98_304 + 3,
  131_072 - 300,
  131_072 - 1,
  131_072,
  131_072 + 1,
  131_072 + 16_384,
  200_003,
  (1 << 20) + 5,
];

interface Model {
  /** id -> blob length (its bytes are `blob(id, len)`), -1 null. */
  rows: Map<number, number>;
}

/** One row a put, each blob size; ids from `first`. Half the rows plain objects, half Arrow batches on shared or odd-offset buffers. */
async function writeRows(db: Db, model: Model, first: number): Promise<void> {
  let id = first;
  for (const size of SIZES) {
    const b = blob(id, size);
    if (id % 2 === 0) {
      await db.put([{ id, b, s: `é€😀-${id}` }]);
    } else {
      // The blob's bytes in a SharedArrayBuffer at an odd offset, as an Arrow Binary column.
      const sab = new SharedArrayBuffer(size + 7);
      const view = new Uint8Array(sab, 3, size);
      view.set(b);
      const offsets = new Int32Array([0, size]);
      const s = new TextEncoder().encode(`é€😀-${id}`);
      const children = [
        makeData({ type: new Int32(), length: 1, data: new Int32Array([id]) }),
        makeData({ type: new Binary(), length: 1, valueOffsets: offsets, data: view }),
        makeData({ type: new Utf8(), length: 1, valueOffsets: new Int32Array([0, s.length]), data: s }),
      ];
      await db.put(new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: 1, nullCount: 0, children })));
    }
    model.rows.set(id, size);
    id++;
  }
  // a null blob too
  await db.put([{ id, b: null, s: null }]);
  model.rows.set(id, -1);
}

const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Problems of `db` against the model: get of every id and a scan, blob bytes compared. */
async function check(db: Db, model: Model, when: string): Promise<string[]> {
  const problems: string[] = [];
  for (const [id, size] of model.rows) {
    const row = (await db.get({ id })) as { b: Uint8Array | null; s: string | null } | undefined;
    if (!row) problems.push(`${when}: get ${id} missing`);
    else if (size < 0 ? row.b !== null : !row.b || !equalBytes(row.b, blob(id, size))) problems.push(`${when}: get ${id} blob differs`);
    else if (row.s !== (size < 0 ? null : `é€😀-${id}`)) problems.push(`${when}: get ${id} s ${row.s}`);
  }
  const t = await db.scan({ columns: ['id', 'b'] });
  const ids = t.getChild('id')!.toArray() as Int32Array;
  if (ids.length !== model.rows.size) problems.push(`${when}: scan ${ids.length} rows, model ${model.rows.size}`);
  const bs = t.getChild('b')!;
  for (let i = 0; i < ids.length; i++) {
    const size = model.rows.get(ids[i]!);
    const got = bs.get(i) as Uint8Array | null;
    if (size === undefined) problems.push(`${when}: scan ${ids[i]} not in model`);
    else if (size < 0 ? got !== null : !got || !equalBytes(got, blob(ids[i]!, size))) problems.push(`${when}: scan ${ids[i]} blob differs`);
  }
  return problems;
}

/** Bit-at-a-time CRC-32C (docs/format.md §10's reference), table-free. */
function crcReference(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) {
    c ^= bytes[i]!;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

/**
 * What a reader without memwal sees (docs/format.md §4, §8-§10): each WAL frame's CRC over bytes
 * [12, 28 + length), and each table file of the newest manifest its `bytes` and whole-file
 * `checksum` (combined from block checksums by the writer), all against the reference.
 */
function checkFiles(dir: string, when: string): string[] {
  const problems: string[] = [];
  const versions = readdirSync(join(dir, 'manifest')).filter((f) => /^\d+\.json$/.test(f));
  const newest = versions.sort((a, b) => Number.parseInt(b, 10) - Number.parseInt(a, 10))[0]!;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest', newest), 'utf8')) as {
    tables: { name: string; bytes: number; checksum: string }[];
  };
  for (const t of manifest.tables) {
    const bytes = new Uint8Array(readFileSync(join(dir, 'tables', t.name)));
    const crc = crcReference(bytes).toString(16).padStart(8, '0');
    if (bytes.length !== t.bytes || crc !== t.checksum)
      problems.push(`${when}: table ${t.name} ${bytes.length}/${crc}, manifest ${t.bytes}/${t.checksum}`);
  }
  for (const seg of readdirSync(join(dir, 'wal'))) {
    const bytes = new Uint8Array(readFileSync(join(dir, 'wal', seg)));
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at + 28 <= bytes.length && dv.getUint32(at, true) === 0x4c41574d; ) {
      const length = dv.getUint32(at + 4, true);
      if (crcReference(bytes.subarray(at + 12, at + 28 + length)) !== dv.getUint32(at + 8, true))
        problems.push(`${when}: WAL ${seg} frame at ${at} CRC`);
      at += 28 + length;
    }
  }
  return problems;
}

const opts = (name: string, storage: NodeFileStorage) => ({
  name,
  schema,
  primaryKey: ['id'],
  storage,
  logger: quiet,
  maxMemtableBytes: 512 * 1024,
});

describe('CRC-32C on the WebAssembly path and the JavaScript fallback', () => {
  it('a store written on one path reopens on the other, every acknowledged row byte for byte (WAL replay and table files, 64/128 KiB boundaries, shared and odd-offset input)', async () => {
    const model: Model = { rows: new Map() };
    const name = 'paths';
    const problems: string[] = [];
    let next = 0;
    // Rounds alternate the path: each writes rows, flushes some (table files on this path), writes
    // more left only in the WAL (abort: replayed by the next open, on the other path).
    for (const [round, path] of (['js', 'wasm', 'js', 'wasm'] as const).entries()) {
      const m = await load(path);
      const db = await m.MemWal.open(opts(name, new m.NodeFileStorage(root)));
      problems.push(...(await check(db, model, `round ${round} (${path}) reopened`)));
      await writeRows(db, model, next);
      next += SIZES.length + 1;
      await db.forceSealActive();
      await db.waitForFlushDrain();
      await writeRows(db, model, next);
      next += SIZES.length + 1;
      problems.push(...(await check(db, model, `round ${round} (${path}) written`)));
      if (round === 2) {
        await db.compact();
        problems.push(...(await check(db, model, `round ${round} (${path}) compacted`)));
      }
      expect(m.compiles(), `round ${round}: the ${path} runtime was asked to compile`).toBeGreaterThan(0);
      await db.abort();
      problems.push(...checkFiles(join(root, name), `round ${round} (${path})`));
    }
    const m = await load('js');
    const db = await m.MemWal.open(opts(name, new m.NodeFileStorage(root)));
    problems.push(...(await check(db, model, 'last reopen (js)')));
    await db.close();
    expect(problems).toEqual([]);
  });

  /** Frames of WAL segment `bytes`: offset, payload length. */
  function frames(bytes: Uint8Array): { at: number; length: number }[] {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const out: { at: number; length: number }[] = [];
    for (let at = 0; at + 28 <= bytes.length && dv.getUint32(at, true) === 0x4c41574d; ) {
      const length = dv.getUint32(at + 4, true);
      out.push({ at, length });
      at += 28 + length;
    }
    return out;
  }

  it('a byte flipped in a WAL frame (header fields, each 64 KiB chunk, the last bytes) is refused Corruption on both paths', async () => {
    const w = await load('wasm');
    const base = join(root, 'damage-src');
    const name = 'damage';
    const model: Model = { rows: new Map() };
    let db = await w.MemWal.open(opts(name, new w.NodeFileStorage(base)));
    await writeRows(db, model, 0);
    await db.abort();
    const walDir = join(base, name, 'wal');
    const [segment] = readdirSync(walDir);
    const bytes = new Uint8Array(readFileSync(join(walDir, segment!)));
    const all = frames(bytes);
    // A frame of more than 128 KiB that other frames follow (so a damage in it is no torn tail).
    const big = all.slice(0, -1).find((f) => f.length > 140_000)!;
    expect(big, `frames ${all.map((f) => f.length).join(',')}`).toBeDefined();
    const p = big.at + 28;
    const spots: [string, number][] = [
      ['epoch field', big.at + 12],
      ['position field', big.at + 27],
      ['payload byte 0', p],
      ['payload byte 65535', p + 65_535],
      ['payload byte 65536', p + 65_536],
      ['payload byte 131071', p + 131_071],
      ['payload byte 131072', p + 131_072],
      ['payload, 17 bytes before its end', p + big.length - 17],
      ['payload, its last byte', p + big.length - 1],
    ];
    const problems: string[] = [];
    for (const [path, m] of [
      ['wasm', w],
      ['js', await load('js')],
    ] as const) {
      for (const [what, at] of spots) {
        const copy = join(root, `damage-${path}-${at}`);
        cpSync(base, copy, { recursive: true });
        const damaged = bytes.slice();
        damaged[at]! ^= 0x10;
        writeFileSync(join(copy, name, 'wal', segment!), damaged);
        const outcome = await m.MemWal.open(opts(name, new m.NodeFileStorage(copy))).then(
          async (opened) => {
            const found = await check(opened, model, 'opened');
            await opened.abort();
            return `opened (${found.length ? found[0] : 'every row whole'})`;
          },
          (e: { code?: string }) => e.code ?? String(e),
        );
        if (outcome !== 'Corruption') problems.push(`${path}, ${what}: ${outcome}`);
      }
    }
    expect(problems).toEqual([]);
    // The undamaged store still opens whole on the fallback path.
    const j = await load('js');
    db = await j.MemWal.open(opts(name, new j.NodeFileStorage(base)));
    expect(await check(db, model, 'undamaged')).toEqual([]);
    await db.close();
  });

  /** Where `needle` first occurs in `bytes`, or -1. */
  function indexOfBytes(bytes: Uint8Array, needle: Uint8Array): number {
    for (let at = bytes.indexOf(needle[0]!); at >= 0; at = bytes.indexOf(needle[0]!, at + 1)) {
      let i = 1;
      while (i < needle.length && bytes[at + i] === needle[i]) i++;
      if (i === needle.length) return at;
    }
    return -1;
  }

  /** Where `needle` (an ASCII string) last occurs in `bytes`. */
  function lastIndexOfAscii(bytes: Uint8Array, needle: string): number {
    const n = new TextEncoder().encode(needle);
    outer: for (let at = bytes.length - n.length; at >= 0; at--) {
      for (let i = 0; i < n.length; i++) if (bytes[at + i] !== n[i]) continue outer;
      return at;
    }
    return -1;
  }

  it('a table file damaged in a block, its block index or its Bloom filter: every read fails Corruption or gives the right row, never other data or a miss', async () => {
    const w = await load('wasm');
    const base = join(root, 'table-src');
    const name = 'tables';
    const model: Model = { rows: new Map() };
    const db = await w.MemWal.open(opts(name, new w.NodeFileStorage(base)));
    await writeRows(db, model, 0);
    await db.close(); // flushed: every row in table files, no WAL left
    const tablesDir = join(base, name, 'tables');
    const files = readdirSync(tablesDir).filter((f) => f.endsWith('.arrow'));
    expect(files.length).toBeGreaterThan(0);
    const problems: string[] = [];
    const damages: { what: string; file: string; bytes: Uint8Array }[] = [];
    for (const f of files) {
      const bytes = new Uint8Array(readFileSync(join(tablesDir, f)));
      const meta = RecordBatchFileReader.from(bytes).open().schema.metadata;
      // A blob's bytes, inside a block's body: the first blob of 64 bytes or more found in the file.
      for (const [id, size] of model.rows) {
        if (size < 64) continue;
        const at = indexOfBytes(bytes, blob(id, size).subarray(0, 16));
        if (at < 0) continue;
        const d = bytes.slice();
        d[at + 8]! ^= 0x01;
        damages.push({ what: `${f}: block body (blob of ${id})`, file: f, bytes: d });
        break;
      }
      // A character of the block index and of the Bloom filter (footer copies), each for another
      // valid base64 character: the footer decodes, with other bits.
      for (const key of ['memwal.table.blocks', 'memwal.table.bloom']) {
        const value = meta.get(key)!;
        const at = lastIndexOfAscii(bytes, value);
        expect(at, key).toBeGreaterThan(0);
        for (const i of [6, 13, Math.floor(value.length / 2), value.length - 6]) {
          const c = value[i]!;
          if (c === '=') continue;
          const d = bytes.slice();
          d[at + i] = (c === 'A' ? 'B' : 'A').charCodeAt(0);
          damages.push({ what: `${f}: ${key} char ${i} ${c}`, file: f, bytes: d });
        }
      }
    }
    for (const [path, m] of [
      ['wasm', w],
      ['js', await load('js')],
    ] as const) {
      for (const [k, damage] of damages.entries()) {
        const copy = join(root, `table-${path}-${k}`);
        cpSync(base, copy, { recursive: true });
        writeFileSync(join(copy, name, 'tables', damage.file), damage.bytes);
        const where = `${path}, ${damage.what}`;
        let opened: Db;
        try {
          opened = await m.MemWal.open(opts(name, new m.NodeFileStorage(copy)));
        } catch (e) {
          if ((e as { code?: string }).code !== 'Corruption') problems.push(`${where}: open ${String(e)}`);
          continue;
        }
        for (const [id, size] of model.rows) {
          try {
            const row = (await opened.get({ id })) as { b: Uint8Array | null } | undefined;
            if (!row) problems.push(`${where}: get ${id} missing`);
            else if (size < 0 ? row.b !== null : !row.b || !equalBytes(row.b, blob(id, size)))
              problems.push(`${where}: get ${id} other data`);
          } catch (e) {
            if ((e as { code?: string }).code !== 'Corruption') problems.push(`${where}: get ${id} ${String(e)}`);
          }
        }
        await opened.abort();
      }
    }
    expect(problems).toEqual([]);
  });
});
