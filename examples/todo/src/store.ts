// The app's store: a typed schema, and the one memwal store every tab of the app shares.

import { type MemWalClient, type RowsOf, bool, defineSchema, int64, openMemWal, timestamp, utf8 } from 'memwal';

export const todoSchema = defineSchema({
  id: int64(),
  title: utf8(),
  done: bool(),
  createdAt: timestamp(),
});

export type TodoStore = MemWalClient<RowsOf<typeof todoSchema, 'id'>>;
export type Todo = NonNullable<Awaited<ReturnType<TodoStore['get']>>>;

/**
 * Open the shared store: the first tab hosts it in its worker, the others forward to it, and
 * another tab takes over when that one closes. `onState` sees every writer state.
 */
export function openTodos(onState: (state: string) => void): Promise<TodoStore> {
  return openMemWal({ name: 'todos', schema: todoSchema, primaryKey: ['id'], tabs: 'share', persist: true }, { onStateChange: onState });
}

/** A new id, unique across tabs without coordination: milliseconds and a random suffix. */
export function newId(): bigint {
  return BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000));
}

/** Every todo, oldest first. */
export async function listTodos(db: TodoStore): Promise<Todo[]> {
  const table = await db.scan();
  const todos: Todo[] = [];
  for (const row of table) todos.push({ id: row.id, title: row.title, done: row.done, createdAt: row.createdAt });
  return todos.sort((a, b) => a.createdAt - b.createdAt);
}
