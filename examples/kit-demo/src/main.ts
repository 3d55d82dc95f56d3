// A todo list that keeps its todos in memwal (OPFS in the browser): add, tick off, reload,
// nothing is lost. It knows nothing of tests: examples/kit-demo/tests drive it through
// memwal/playwright.

import { type Todo, TodoStore } from './store.js';

const $ = <T extends HTMLElement>(selector: string): T => document.querySelector<T>(selector)!;
const list = $<HTMLUListElement>('#todos');
const status = $<HTMLParagraphElement>('#status');
const warning = $<HTMLParagraphElement>('#warning');
const waiting = $<HTMLParagraphElement>('#waiting');
const title = $<HTMLInputElement>('#title');

const store = new TodoStore({
  state(s) {
    waiting.hidden = s !== 'waiting-for-lock';
    if (s === 'reopening') status.textContent = 'Reconnecting to storage…';
  },
  warning(message) {
    warning.hidden = message === null;
    warning.textContent = message === null ? '' : `Saving is having trouble; your todos are kept and saving is retried. (${message})`;
  },
});
let todos: Todo[] = [];

function render(): void {
  list.replaceChildren(
    ...todos.map((t) => {
      const li = document.createElement('li');
      li.className = t.done ? 'done' : '';
      const box = Object.assign(document.createElement('input'), { type: 'checkbox', checked: t.done });
      box.setAttribute('aria-label', `Done: ${t.title}`);
      box.addEventListener('change', () => void update({ ...t, done: box.checked }));
      li.append(box, Object.assign(document.createElement('span'), { textContent: t.title }));
      return li;
    }),
  );
}

async function update(todo: Todo): Promise<void> {
  todos = todos.some((t) => t.id === todo.id) ? todos.map((t) => (t.id === todo.id ? todo : t)) : [...todos, todo];
  render();
  await store.save(todo);
  status.textContent = `${todos.length} todos, saved`;
}

$<HTMLFormElement>('#add').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const text = title.value.trim();
  if (!text) return;
  title.value = '';
  void update({ id: crypto.randomUUID(), title: text, done: false, createdAt: Date.now() });
});

async function start(): Promise<void> {
  todos = await store.list();
  render();
  status.textContent = `${todos.length} todos, saved`;
  $<HTMLFieldSetElement>('#controls').disabled = false; // adding before the list is loaded would be overwritten by it
  setInterval(() => {
    store.checkHealth().catch(() => undefined); // the next save reopens and reports
  }, 500);
}

start().catch((e: unknown) => {
  status.textContent = `Storage failed: ${String(e)}`;
});
