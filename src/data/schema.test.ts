import {
  Bool,
  Dictionary,
  Field,
  Float64,
  Int32,
  Int64,
  List,
  Schema,
  TimestampMillisecond,
  Utf8,
  tableFromIPC,
  tableToIPC,
  Table,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { TOMBSTONE_COLUMN, decodeSchema, describeSchemaDifference, encodeSchema, makeStoreSchema, schemasEqual } from './schema.js';

const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);

/** Matches a MemWalError with this code whose message contains `text`. */
function memWalError(code: string, text = ''): unknown {
  return expect.objectContaining({ name: 'MemWalError', code, message: expect.stringContaining(text) });
}

describe('makeStoreSchema', () => {
  it('appends a non-nullable Bool _tombstone last when there is a primary key', () => {
    const storeSchema = makeStoreSchema(schema, ['id']);
    expect(storeSchema.internal.fields.map((f) => f.name)).toEqual(['id', 'value', 'name', TOMBSTONE_COLUMN]);
    const t = storeSchema.internal.fields[3]!;
    expect(t.nullable).toBe(false);
    expect(t.type).toBeInstanceOf(Bool);
    expect(storeSchema.internal.fields[0]).toBe(storeSchema.base.fields[0]);
    expect(storeSchema.keyIndices).toEqual([0]);
    expect(storeSchema.hasTombstone).toBe(true);
  });

  it('uses the base schema as the internal one without a primary key', () => {
    const storeSchema = makeStoreSchema(schema, []);
    expect(storeSchema.internal).toBe(storeSchema.base);
    expect(storeSchema.hasTombstone).toBe(false);
  });

  it('finds composite key columns in primaryKey order', () => {
    const storeSchema = makeStoreSchema(
      new Schema([new Field('a', new Int32(), false), new Field('b', new Utf8(), false), new Field('c', new Int64(), false)]),
      ['c', 'a'],
    );
    expect(storeSchema.keyIndices).toEqual([2, 0]);
  });

  it.each([
    ['a missing key column', schema, ['nope'], 'nope'],
    ['a nullable key column', schema, ['name'], 'name'],
    ['a float key column', new Schema([new Field('f', new Float64(), false)]), ['f'], '"f"'],
    ['a list key column', new Schema([new Field('l', new List(new Field('item', new Int32())), false)]), ['l'], '"l"'],
    ['a key column listed twice', schema, ['id', 'id'], 'id'],
    ['a user field named _tombstone', new Schema([new Field(TOMBSTONE_COLUMN, new Bool(), false)]), [], TOMBSTONE_COLUMN],
    ['duplicate field names', new Schema([new Field('x', new Int32()), new Field('x', new Utf8())]), [], '"x"'],
    ['a dictionary-encoded column', new Schema([new Field('d', new Dictionary(new Utf8(), new Int32()))]), [], '"d"'],
  ])('rejects %s with InvalidArgument naming the column', (_what, s, pk, name) => {
    expect(() => makeStoreSchema(s, pk)).toThrow(memWalError('InvalidArgument', name));
  });

  it('accepts temporal, string, binary and integer key columns', () => {
    const s = new Schema([new Field('t', new TimestampMillisecond(), false), new Field('n', new Utf8(), false)]);
    expect(makeStoreSchema(s, ['t', 'n']).keyIndices).toEqual([0, 1]);
  });
});

describe('schemasEqual', () => {
  it('treats a schema decoded from IPC as equal to the one built by hand', () => {
    const decoded = (tableFromIPC(tableToIPC(new Table(schema), 'stream')) as Table).schema;
    expect(decoded.fields[0]!.type.constructor).not.toBe(Int64); // apache-arrow decodes to Int_
    expect(schemasEqual(schema, decoded)).toBe(true);
  });

  it('ignores metadata', () => {
    const withMeta = new Schema(
      schema.fields.map((f) => new Field(f.name, f.type, f.nullable, new Map([['k', 'v']]))),
      new Map([['a', 'b']]),
    );
    expect(schemasEqual(schema, withMeta)).toBe(true);
  });

  it('does not equate dictionary<utf8> with utf8', () => {
    const dict = new Schema([schema.fields[0]!, schema.fields[1]!, new Field('name', new Dictionary(new Utf8(), new Int32()), true)]);
    expect(schemasEqual(schema, dict)).toBe(false);
    expect(describeSchemaDifference(schema, dict)).toContain('"name"');
  });

  it('describes the first difference: nullability, type, name, count', () => {
    const nullable = new Schema([new Field('id', new Int64(), true), schema.fields[1]!, schema.fields[2]!]);
    expect(describeSchemaDifference(schema, nullable)).toMatch(/"id" is non-nullable .* but nullable/);
    const retyped = new Schema([new Field('id', new Int32(), false), schema.fields[1]!, schema.fields[2]!]);
    expect(describeSchemaDifference(schema, retyped)).toMatch(/"id" is Int64 .* Int32/);
    const renamed = new Schema([schema.fields[0]!, new Field('v', new Float64(), true), schema.fields[2]!]);
    expect(describeSchemaDifference(schema, renamed)).toContain('"v"');
    const shorter = new Schema(schema.fields.slice(0, 2));
    expect(describeSchemaDifference(schema, shorter)).toContain('lacks column "name"');
    expect(describeSchemaDifference(schema, schema)).toBeUndefined();
  });
});

describe('encodeSchema / decodeSchema', () => {
  it('round-trips a schema through base64 IPC', () => {
    const s = new Schema([...schema.fields, new Field('l', new List(new Field('item', new Int32(), true)), true)]);
    const b64 = encodeSchema(s);
    expect(b64).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(schemasEqual(decodeSchema(b64), s)).toBe(true);
  });

  it.each([['not base64 at all!'], [btoa('garbage bytes that are not arrow')], ['']])('throws Corruption on %j', (input) => {
    expect(() => decodeSchema(input)).toThrow(memWalError('Corruption'));
  });
});
