// Assembles the WebAssembly module of src/util/crc32c-wasm.ts (docs/impl.md, "CRC-32C") and, run
// as `npx tsx scripts/gen-crc32c-wasm.ts`, writes that file. test/crc32c-wasm.test.ts checks the
// bytes there are this script's.

import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The module: one memory of 2 pages (exported `m`) and one function (exported `crc`):
 * `crc(at, length, register) -> register` runs the CRC-32C register (no initial or final xor)
 * over `length` bytes of memory from `at`, 16 bytes per step slicing-by-16, then byte by byte.
 * Table `k` (1 KiB, 256 little-endian u32) sits at `k * 1024`; the caller fills the 16 tables.
 */
export function assembleCrc32cWasm(): Uint8Array<ArrayBuffer> {
  const uleb = (n: number): number[] => {
    const out: number[] = [];
    do {
      let b = n & 0x7f;
      n >>>= 7;
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return out;
  };
  const sleb = (n: number): number[] => {
    const out: number[] = [];
    for (;;) {
      const b = n & 0x7f;
      n >>= 7;
      if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
      out.push(b | 0x80);
    }
  };
  const get = (i: number) => [0x20, i];
  const set = (i: number) => [0x21, i];
  const i32 = (n: number) => [0x41, ...sleb(n | 0)];
  const load = (offset: number) => [0x28, 2, ...uleb(offset)]; // i32.load align=4
  const load8 = [0x2d, 0, 0]; // i32.load8_u
  const [XOR, AND, SHR_U, SHL, ADD, GE_U] = [0x73, 0x71, 0x76, 0x74, 0x6a, 0x4f];
  const [BLOCK, LOOP, BR, BR_IF, END] = [[0x02, 0x40], [0x03, 0x40], 0x0c, 0x0d, 0x0b];

  // Table `table`'s entry for byte `j` of local `v`: load(((v >>> 8j) & 0xff) * 4 + table * 1024).
  const lookup = (v: number, j: number, table: number) => [
    ...get(v),
    ...(j === 0 ? [...i32(2), SHL] : [...i32(8 * j - 2), SHR_U]),
    ...i32(0x3fc),
    AND,
    ...load(table * 1024),
  ];
  // The four bytes of local `v` looked up in tables first, first-1, first-2, first-3, xored.
  const word = (v: number, first: number) => [
    ...lookup(v, 0, first),
    ...lookup(v, 1, first - 1),
    XOR,
    ...lookup(v, 2, first - 2),
    XOR,
    ...lookup(v, 3, first - 3),
    XOR,
  ];
  // Locals: 0 at, 1 length, 2 register, 3 end, 4..7 the step's four words.
  const code = [
    // end = at + (length & ~15)
    ...get(0),
    ...get(1),
    ...i32(-16),
    AND,
    ADD,
    ...set(3),
    ...BLOCK,
    ...LOOP,
    ...get(0),
    ...get(3),
    GE_U,
    BR_IF,
    1,
    ...get(2),
    ...get(0),
    ...load(0),
    XOR,
    ...set(4),
    ...get(0),
    ...load(4),
    ...set(5),
    ...get(0),
    ...load(8),
    ...set(6),
    ...get(0),
    ...load(12),
    ...set(7),
    ...word(4, 15),
    ...word(5, 11),
    XOR,
    ...word(6, 7),
    XOR,
    ...word(7, 3),
    XOR,
    ...set(2),
    ...get(0),
    ...i32(16),
    ADD,
    ...set(0),
    BR,
    0,
    END,
    END,
    // end = at + (length & 15): the tail byte by byte, register = (register >>> 8) ^ T0[(register ^ byte) & 0xff]
    ...get(1),
    ...i32(15),
    AND,
    ...get(0),
    ADD,
    ...set(3),
    ...BLOCK,
    ...LOOP,
    ...get(0),
    ...get(3),
    GE_U,
    BR_IF,
    1,
    ...get(2),
    ...i32(8),
    SHR_U,
    ...get(2),
    ...get(0),
    ...load8,
    XOR,
    ...i32(0xff),
    AND,
    ...i32(2),
    SHL,
    ...load(0),
    XOR,
    ...set(2),
    ...get(0),
    ...i32(1),
    ADD,
    ...set(0),
    BR,
    0,
    END,
    END,
    ...get(2),
    END,
  ];
  const I32 = 0x7f;
  const body = [...uleb(1), ...uleb(5), I32, ...code]; // one run of 5 i32 locals
  const section = (id: number, content: number[]) => [id, ...uleb(content.length), ...content];
  const name = (s: string) => [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // magic, version 1
    ...section(1, [1, 0x60, 3, I32, I32, I32, 1, I32]), // type 0: (i32, i32, i32) -> i32
    ...section(3, [1, 0]), // function 0 has type 0
    ...section(5, [1, 0x00, 2]), // memory 0: 2 pages, no maximum
    ...section(7, [2, ...name('m'), 0x02, 0, ...name('crc'), 0x00, 0]), // exports
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** The text of src/util/crc32c-wasm.ts for `bytes`. */
export function crc32cWasmSource(bytes: Uint8Array): string {
  const base64 = Buffer.from(bytes).toString('base64');
  return `// The CRC-32C WebAssembly module (docs/impl.md, "CRC-32C"), written by scripts/gen-crc32c-wasm.ts:
// do not edit. Runtime-agnostic.

/**
 * The module's bytes, base64: memory \`m\` (2 pages) and \`crc(at, length, register) -> register\`,
 * slicing-by-16 over tables the caller writes at \`k * 1024\` (table \`k\`, k < 16).
 */
export const CRC32C_WASM_BASE64 =
  '${base64}';
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = fileURLToPath(new URL('../src/util/crc32c-wasm.ts', import.meta.url));
  writeFileSync(out, crc32cWasmSource(assembleCrc32cWasm()));
  console.log(`wrote ${out}`);
}
