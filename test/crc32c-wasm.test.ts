// src/util/crc32c-wasm.ts holds the bytes scripts/gen-crc32c-wasm.ts assembles (rerun the script
// after changing it), and they form a valid module with the exports crc32c.ts uses.

import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { assembleCrc32cWasm, crc32cWasmSource } from '../scripts/gen-crc32c-wasm.js';

it('src/util/crc32c-wasm.ts is what scripts/gen-crc32c-wasm.ts writes', () => {
  const bytes = assembleCrc32cWasm();
  expect(WebAssembly.validate(bytes)).toBe(true);
  const source = readFileSync(new URL('../src/util/crc32c-wasm.ts', import.meta.url), 'utf8');
  expect(source).toBe(crc32cWasmSource(bytes));
  const exports = WebAssembly.Module.exports(new WebAssembly.Module(bytes));
  expect(exports.map((e) => `${e.kind} ${e.name}`)).toEqual(['memory m', 'function crc']);
});
