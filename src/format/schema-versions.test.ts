// The recorded schema chain is checked on every open (docs/impl.md §12): a chain no release can
// record — a kept column whose nullability or type changes between versions — is Corruption, not
// a store to read. planSchema refuses such a change before it is recorded, so only a manifest
// written elsewhere carries one; these tests give decodeVersions such chains directly.

import { Field, Int32, Int64, Schema, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { encodeSchema } from '../data/schema.js';
import { MemWalError } from '../util/errors.js';
import { decodeVersions } from './schema-versions.js';

const version = (n: number, fields: Field[]) => ({ version: n, schema: encodeSchema(new Schema(fields)), writerEpoch: n });
const id = new Field('id', new Int64(), false);

function corruption(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MemWalError);
    expect((e as MemWalError).code).toBe('Corruption');
    return (e as Error).message;
  }
  throw new Error('expected Corruption');
}

describe('decodeVersions', () => {
  it('takes a chain of allowed changes: a nullable column added, one dropped', () => {
    const chain = decodeVersions(
      [
        version(1, [id, new Field('a', new Utf8(), false)]),
        version(2, [id, new Field('a', new Utf8(), false), new Field('b', new Int32(), true)]),
        version(3, [id, new Field('b', new Int32(), true)]),
      ],
      ['id'],
    );
    expect(chain.map((v) => v.schema.fields.map((f) => f.name))).toEqual([
      ['id', 'a'],
      ['id', 'a', 'b'],
      ['id', 'b'],
    ]);
  });

  it('refuses a kept column made non-nullable in a later version', () => {
    const message = corruption(() =>
      decodeVersions([version(1, [id, new Field('a', new Utf8(), true)]), version(2, [id, new Field('a', new Utf8(), false)])], ['id']),
    );
    expect(message).toMatch(/schema version 2 .*"a" changes from nullable to non-nullable/);
  });

  it('refuses a kept column made nullable in a later version', () => {
    const message = corruption(() =>
      decodeVersions([version(1, [id, new Field('a', new Utf8(), false)]), version(2, [id, new Field('a', new Utf8(), true)])], ['id']),
    );
    expect(message).toMatch(/"a" changes from non-nullable to nullable/);
  });

  it('refuses a kept column whose type changes in a later version', () => {
    const message = corruption(() =>
      decodeVersions([version(1, [id, new Field('a', new Int32(), true)]), version(2, [id, new Field('a', new Int64(), true)])], ['id']),
    );
    expect(message).toMatch(/"a" changes type/);
  });
});
