// Index names (SPEC §17 "Declaring"): an index named `__proto__` (reachable from an app that
// builds its declaration from JSON or a config: `JSON.parse('{"__proto__": {...}}')` makes it an
// own key) used to open and answer queries, but every per-index stats surface is built as a plain
// object, where `out['__proto__'] = …` sets the prototype instead of adding a key: `indexStats()`,
// `stats().indexes` and `metrics()` never showed the index (its entries and bytes vanished from
// the figures apps watch), and "no index" errors listed the store's indexes without it. The name is
// refused with `InvalidArgument` before the store is opened, as any other bad name.

import { describe, expect, it } from 'vitest';
import { MemWal, MemWalError, MemoryStorage, defineSchema, int32, utf8, vector } from '../src/index.js';

const schema = defineSchema({ id: int32(), cat: utf8(), body: utf8(), emb: vector(4) });
const quiet = { warn: () => undefined };

describe('an index named __proto__ is refused before the store opens', () => {
  for (const [kind, spec] of [
    ['ordered', { column: 'cat' }],
    ['text', { column: 'body', kind: 'text' }],
    ['vector', { column: 'emb', kind: 'vector', distance: 'l2' }],
  ] as const) {
    it(`a ${kind} index`, async () => {
      const indexes = JSON.parse(`{"__proto__": ${JSON.stringify(spec)}}`) as object;
      expect(Object.keys(indexes)).toEqual(['__proto__']);
      const storage = new MemoryStorage();
      const opened = MemWal.open({ name: 'names', schema, primaryKey: ['id'], storage, logger: quiet, indexes } as never);
      const error = await opened.then(
        async (w) => {
          await w.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MemWalError);
      expect((error as MemWalError).code).toBe('InvalidArgument');
      expect(String((error as MemWalError).message)).toContain('__proto__');
      // Nothing was claimed: the same store opens with a good declaration.
      const w = await MemWal.open({ name: 'names', schema, primaryKey: ['id'], storage, logger: quiet, indexes: { ok: spec } } as never);
      expect(Object.keys(await w.indexStats())).toEqual(['ok']);
      await w.close();
    });
  }
});
