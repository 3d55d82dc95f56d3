// Plain rows with nested columns where code generation from strings is refused (workerd; a page
// whose CSP lacks 'unsafe-eval'): apache-arrow's builder compiled its `nullValues` option with
// `new Function`, so every put of a List or Struct column failed there (found by
// test/fixtures/query-conformance.ts in workerd). Simulated here by a `Function` that throws.

import { Field, Int32, List, Schema, Struct, Utf8 } from 'apache-arrow';
import { afterEach, describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { MemoryStorage } from '../storage/memory.js';

const real = globalThis.Function;
afterEach(() => {
  globalThis.Function = real;
});

describe('plain rows without code generation', () => {
  it('puts and reads back list and struct columns, nulls included', async () => {
    const schema = new Schema([
      new Field('id', new Int32(), false),
      new Field('tags', new List(new Field('item', new Utf8(), true)), true),
      new Field('s', new Struct([new Field('a', new Int32(), true)]), true),
    ]);
    const w = await MemWal.open({
      name: 'e',
      schema,
      primaryKey: ['id'],
      storage: new MemoryStorage(),
      logger: { warn: () => undefined },
    } as never);
    try {
      globalThis.Function = new Proxy(real, {
        construct() {
          throw new EvalError('Code generation from strings disallowed for this context');
        },
        apply() {
          throw new EvalError('Code generation from strings disallowed for this context');
        },
      });
      const rows = [
        { id: 1, tags: ['a', null, 'b'], s: { a: 1 } },
        { id: 2, tags: null, s: null },
        { id: 3, tags: [], s: { a: null } },
        { id: 4 },
      ];
      await w.put(rows as never);
      globalThis.Function = real;
      expect(await w.getMany([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }] as never)).toEqual([
        { id: 1, tags: ['a', null, 'b'], s: { a: 1 } },
        { id: 2, tags: null, s: null },
        { id: 3, tags: [], s: { a: null } },
        { id: 4, tags: null, s: null },
      ]);
    } finally {
      globalThis.Function = real;
      await w.close();
    }
  });
});
