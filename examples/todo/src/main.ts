// The todo page: add, edit (rename, tick), delete, list; every tab sees every change at once by
// following the store's WAL (`tail`), and the stats panel shows what the store is doing.

import { isMemWalError } from 'memwal';
import { type Todo, type TodoStore, listTodos, newId, openTodos } from './store.js';

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const list = $<HTMLUListElement>('list');
const stats = $<HTMLDivElement>('stats');
const errorLine = $<HTMLParagraphElement>('error');
let state = 'opening';

function showError(e: unknown): void {
  errorLine.textContent = isMemWalError(e) ? `${e.code}: ${e.message}` : String(e);
}

function render(db: TodoStore, todos: Todo[]): void {
  list.replaceChildren(
    ...todos.map((todo) => {
      const li = document.createElement('li');
      li.dataset.testid = 'todo';
      li.className = todo.done ? 'done' : '';
      const done = Object.assign(document.createElement('input'), { type: 'checkbox', checked: todo.done });
      done.dataset.testid = 'done';
      done.onchange = () => void db.put([{ ...todo, done: done.checked }]).catch(showError);
      const title = Object.assign(document.createElement('span'), { className: 'title', textContent: todo.title });
      title.dataset.testid = 'title';
      const edit = Object.assign(document.createElement('button'), { textContent: 'Edit' });
      edit.dataset.testid = 'edit';
      edit.onclick = () => {
        const input = Object.assign(document.createElement('input'), { type: 'text', value: todo.title });
        input.dataset.testid = 'edit-title';
        input.onkeydown = (ev) => {
          if (ev.key === 'Enter') void db.put([{ ...todo, title: input.value }]).catch(showError);
        };
        title.replaceWith(input);
        input.focus();
      };
      const remove = Object.assign(document.createElement('button'), { textContent: 'Delete' });
      remove.dataset.testid = 'delete';
      remove.onclick = () => void db.delete([{ id: todo.id }]).catch(showError);
      li.append(done, title, edit, remove);
      return li;
    }),
  );
}

/** Re-render whenever any tab writes: every write is a WAL entry, and every tab follows the WAL. */
async function follow(db: TodoStore): Promise<void> {
  const refresh = async (): Promise<void> => render(db, await listTodos(db));
  const from = (await db.walStats()).nextPosition; // before the first list: no write falls between
  await refresh();
  for await (const _entry of db.tail(from, { follow: true })) await refresh();
}

async function showStats(db: TodoStore): Promise<void> {
  const [mem, wal, bp] = await Promise.all([db.memtableStats(), db.walStats(), db.backpressureStats()]);
  stats.textContent = [
    `role ${db.role()}   state ${state}`,
    `rows in memory ${mem.rowCount}   frozen memtables ${mem.frozenCount}   unflushed ${mem.estimatedBytes + mem.frozenBytes} B`,
    `WAL next position ${wal.nextPosition}   retained ${wal.retainedBytes} B`,
    `backpressure waits ${bp.totalCount}   waiting now ${bp.activeCount}`,
  ].join('\n');
  stats.dataset.role = db.role();
  stats.dataset.rows = String(mem.rowCount);
}

async function main(): Promise<void> {
  const db = await openTodos((s) => (state = s));
  $<HTMLFormElement>('add').onsubmit = (ev) => {
    ev.preventDefault();
    const input = $<HTMLInputElement>('title');
    const title = input.value.trim();
    if (!title) return;
    input.value = '';
    db.put([{ id: newId(), title, done: false, createdAt: Date.now() }]).catch(showError);
  };
  setInterval(() => void showStats(db).catch(showError), 500);
  await showStats(db);
  document.body.dataset.ready = 'true';
  await follow(db);
}

main().catch(showError);
