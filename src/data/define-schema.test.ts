// defineSchema: the Arrow schema it builds, and the row types it gives MemWal / openMemWal. The
// type assertions are checked by `tsc` (npm test's typecheck): a wrong column name or type in a
// put, a key or a primaryKey must not compile, so each `@ts-expect-error` below fails the
// typecheck if that line ever compiles.

import { Bool, Int64, Schema, Field, Int32, type Table, TimeUnit, Timestamp, Utf8 } from 'apache-arrow';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { bool, defineSchema, float64, int32, int64, timestamp, utf8, type RowsOf } from './define-schema.js';
import type { MemWalClient } from '../rpc/client.js';
import { openMemWal } from '../rpc/open-memwal.js';
import { MemoryStorage } from '../storage/memory.js';

const todos = defineSchema({
  id: int64(),
  title: utf8(),
  done: bool(),
  note: utf8().nullable(),
  due: timestamp().nullable(),
});

describe('defineSchema', () => {
  it('builds the Arrow schema of its columns, in order, with their nullability', () => {
    expect(todos).toBeInstanceOf(Schema);
    expect(todos.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual([
      ['id', String(new Int64()), false],
      ['title', String(new Utf8()), false],
      ['done', String(new Bool()), false],
      ['note', String(new Utf8()), true],
      ['due', String(new Timestamp(TimeUnit.MILLISECOND)), true],
    ]);
  });

  it('refuses a column that no builder made', () => {
    expect(() => defineSchema({ id: new Int32() as never })).toThrow(/column "id" must be made by a column builder/);
  });

  it('a store opened with it takes typed rows and gives them back typed (Int64 as bigint)', async () => {
    const db = await MemWal.open({ name: 'typed-rows', schema: todos, primaryKey: ['id'], storage: new MemoryStorage() });
    await db.put([
      { id: 1, title: 'milk', done: false },
      { id: 2n, title: 'eggs', done: true, note: 'six', due: new Date(86_400_000) },
    ]);
    const row = await db.get({ id: 1n });
    expect(row).toEqual({ id: 1n, title: 'milk', done: false, note: null, due: null });
    expect((await db.get({ id: 2 }))?.due).toBe(86_400_000);
    // bigint -> JSON (README): JSON.stringify throws on a bigint, a replacer turns it into a number or a string.
    expect(() => JSON.stringify(row)).toThrow(TypeError);
    const json = JSON.stringify(row, (_key, v) => (typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : String(v)) : v));
    expect(JSON.parse(json)).toEqual({ id: 1, title: 'milk', done: false, note: null, due: null });
    const table = await db.scan({ columns: ['id', 'title'] });
    expect(table.getChild('title')?.toArray()).toEqual(['milk', 'eggs']);
    await db.close();
  });
});

// ------------------------------------------------------------------ types (checked by tsc)

type TodoRows = RowsOf<typeof todos, 'id'>;

describe('row types', () => {
  it('put takes input rows: required non-nullable columns, optional nullable ones, bigint | number for Int64', () => {
    expectTypeOf<TodoRows['input']>().toEqualTypeOf<{
      id: bigint | number;
      title: string;
      done: boolean;
      note?: string | null;
      due?: Date | number | bigint | null;
    }>();
  });

  it('get gives output rows: every column, null where nullable, bigint for Int64', () => {
    expectTypeOf<TodoRows['output']>().toEqualTypeOf<{
      id: bigint;
      title: string;
      done: boolean;
      note: string | null;
      due: number | null;
    }>();
    expectTypeOf<TodoRows['key']>().toEqualTypeOf<{ id: bigint | number }>();
  });

  it('MemWal.open and openMemWal infer them from the schema and the key', async () => {
    const open = () => MemWal.open({ name: 't', schema: todos, primaryKey: ['id'], storage: 'memory' });
    type Db = Awaited<ReturnType<typeof open>>;
    expectTypeOf<Db['get']>().returns.toEqualTypeOf<Promise<TodoRows['output'] | undefined>>();
    expectTypeOf<Db['get']>().parameter(0).toEqualTypeOf<{ id: bigint | number }>();
    expectTypeOf<ReturnType<Db['scan']>>().toEqualTypeOf<
      Promise<Table<{ id: Int64; title: Utf8; done: Bool; note: Utf8; due: Timestamp }>>
    >();
    expectTypeOf<MemWalClient<TodoRows>['put']>().parameter(0).extract<unknown[]>().toEqualTypeOf<TodoRows['input'][]>();
    const openClient = () => openMemWal({ name: 't', schema: todos, primaryKey: ['id'] });
    expectTypeOf<Awaited<ReturnType<typeof openClient>>>().toEqualTypeOf<MemWalClient<TodoRows>>();
    // @ts-expect-error: primaryKey names a column the schema lacks
    const badClientKey = () => openMemWal({ name: 't', schema: todos, primaryKey: ['idd'] });
    expect(badClientKey).toBeTypeOf('function');
  });

  it('MemWalClient<typeof schema> and MemWal<typeof schema> type a variable: the opened store fits, rows are typed, a key may give any column', async () => {
    const openClient = () => openMemWal({ name: 't', schema: todos, primaryKey: ['id'] });
    const openStore = () => MemWal.open({ name: 't', schema: todos, primaryKey: ['id'], storage: 'memory' });
    expectTypeOf<Awaited<ReturnType<typeof openClient>>>().toExtend<MemWalClient<typeof todos>>();
    expectTypeOf<Awaited<ReturnType<typeof openStore>>>().toExtend<MemWal<typeof todos>>();
    // The old spelling still works, and both open results fit it.
    expectTypeOf<Awaited<ReturnType<typeof openClient>>>().toExtend<MemWalClient<RowsOf<typeof todos, 'id'>>>();
    type Client = MemWalClient<typeof todos>;
    type Store = MemWal<typeof todos>;
    expectTypeOf<Client['get']>().returns.toEqualTypeOf<Promise<TodoRows['output'] | undefined>>();
    expectTypeOf<Store['get']>().returns.toEqualTypeOf<Promise<TodoRows['output'] | undefined>>();
    expectTypeOf<Client['get']>().parameter(0).toEqualTypeOf<Partial<TodoRows['input']>>();
    expectTypeOf<Store['get']>().parameter(0).toEqualTypeOf<Partial<TodoRows['input']>>();
    expectTypeOf<Client['put']>().parameter(0).extract<unknown[]>().toEqualTypeOf<TodoRows['input'][]>();
    expectTypeOf<Store['put']>().parameter(0).extract<unknown[]>().toEqualTypeOf<TodoRows['input'][]>();
    type TodoTable = Table<{ id: Int64; title: Utf8; done: Bool; note: Utf8; due: Timestamp }>;
    expectTypeOf<ReturnType<Client['scan']>>().toEqualTypeOf<Promise<TodoTable>>();
    expectTypeOf<ReturnType<Store['scan']>>().toEqualTypeOf<Promise<TodoTable>>();
    // A plain Schema gives the untyped client, as openMemWal does for it.
    expectTypeOf<MemWalClient<Schema>>().toEqualTypeOf<MemWalClient>();
    const never = async (db: MemWalClient<typeof todos>): Promise<void> => {
      await db.get({ id: 1 });
      // @ts-expect-error: unknown column "idd"
      await db.get({ idd: 1 });
      // @ts-expect-error: title must be a string
      await db.put([{ id: 1, title: 42, done: false }]);
      // @ts-expect-error: no column "titel" to project
      await db.scan({ columns: ['titel'] });
    };
    expect(never).toBeTypeOf('function');
  });

  it('wrong column names and types do not compile', () => {
    // Only checked, never run: each line below must be a type error.
    const never = async (db: MemWal<TodoRows>): Promise<void> => {
      // @ts-expect-error: unknown column "idd"
      await db.put([{ idd: 1, title: 'x', done: false }]);
      // @ts-expect-error: title must be a string
      await db.put([{ id: 1, title: 42, done: false }]);
      // @ts-expect-error: done is required (non-nullable)
      await db.put([{ id: 1, title: 'x' }]);
      // @ts-expect-error: the key is { id }
      await db.get({ title: 'x' });
      // @ts-expect-error: no column "titel" to project
      await db.scan({ columns: ['titel'] });
      // @ts-expect-error: a delete takes keys
      await db.delete([{ idd: 1 }]);
    };
    // @ts-expect-error: primaryKey names a column the schema lacks
    const badKey = () => MemWal.open({ name: 't', schema: todos, primaryKey: ['idd'], storage: 'memory' });
    expect([never, badKey]).toHaveLength(2);
  });

  it('a plain Arrow Schema keeps Record<string, unknown> rows', async () => {
    const plain = new Schema([new Field('id', new Int32(), false), new Field('x', new Utf8(), true)]);
    const open = () => MemWal.open({ name: 'p', schema: plain, primaryKey: ['id'], storage: 'memory' });
    type Db = Awaited<ReturnType<typeof open>>;
    expectTypeOf<Db['get']>().returns.toEqualTypeOf<Promise<Record<string, unknown> | undefined>>();
    expectTypeOf<Db['put']>().parameter(0).extract<unknown[]>().toEqualTypeOf<Record<string, unknown>[]>();
    const openClient = () => openMemWal({ name: 'p', schema: plain, primaryKey: ['id'] });
    expectTypeOf<Awaited<ReturnType<typeof openClient>>>().toEqualTypeOf<MemWalClient>();
    const anyColumns = float64(); // builders are plain values too
    expect(anyColumns.type.typeId).toBeDefined();
    expect(int32().isNullable).toBe(false);
  });
});
