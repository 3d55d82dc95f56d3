// The app's UI: notes (create, edit, delete), a tag filter, a live count and a storage-status
// panel. Every list re-renders when a commit from any tab alters it (useQuery over the indexes).

import { isMemWalError } from 'memwal';
import { useMemWal, useQuery, useStats } from 'memwal/react';
import { type FormEvent, useLayoutEffect, useState } from 'react';
import { notes, release, schemaChanges } from './store';

type Db = NonNullable<typeof notes.current>;
/** A note as any release reads it: release 3 calls the title `name`, releases 1 and 2 `title`. */
type Note = NonNullable<Awaited<ReturnType<Db['get']>>> & { title?: string; name?: string; location?: string | null };
/** A row as a put takes it (the release's schema). */
type Input = Extract<Parameters<Db['put']>[0], readonly unknown[]>[number];
interface Draft {
  title: string;
  body: string;
  tag: string;
  location: string;
}

const titleOf = (n: Note): string => n.name ?? n.title ?? '';
/** A new id, unique across tabs without coordination: milliseconds and a random suffix. */
const newId = (): bigint => BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000));

/** The row this release writes for `draft`. */
function row(id: bigint, d: Draft) {
  const title = release === 3 ? { name: d.title } : { title: d.title };
  const location = release === 1 ? {} : { location: d.location || null };
  return { id, body: d.body, tag: d.tag, updatedAt: Date.now(), ...title, ...location } as Input;
}

function NoteForm({ initial, label, onSave }: { initial: Draft; label: string; onSave: (d: Draft) => Promise<unknown> }) {
  const [draft, setDraft] = useState(initial);
  const field = (key: keyof Draft, name: string) => (
    <input
      aria-label={`${label} ${name}`}
      placeholder={name}
      value={draft[key]}
      onChange={(e) => setDraft({ ...draft, [key]: e.target.value })}
    />
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!draft.title.trim()) return;
    void onSave(draft).then(() => setDraft(initial));
  };
  return (
    <form onSubmit={submit}>
      {field('title', 'title')}
      {field('body', 'body')}
      {field('tag', 'tag')}
      {release > 1 && field('location', 'location')}
      <button type="submit">{label}</button>
    </form>
  );
}

function NoteItem({ db, note, onError }: { db: Db; note: Note; onError: (e: unknown) => void }) {
  const [editing, setEditing] = useState(false);
  const title = titleOf(note);
  if (editing) {
    const initial = { title, body: note.body, tag: note.tag, location: note.location ?? '' };
    const save = (d: Draft) => db.put([row(note.id, d)]).then(() => setEditing(false), onError);
    return (
      <li>
        <NoteForm initial={initial} label="Save" onSave={save} />
      </li>
    );
  }
  return (
    <li aria-label={title}>
      <span className="title">{title}</span>
      <span className="body">{note.body}</span>
      <span className="tag">{note.tag}</span>
      {note.location ? <span className="location">@ {note.location}</span> : null}
      <button type="button" onClick={() => setEditing(true)}>
        Edit
      </button>
      <button type="button" onClick={() => db.delete([{ id: note.id }]).catch(onError)}>
        Delete
      </button>
    </li>
  );
}

/** What an open changed in the stored schema, in words. */
function describeChange(c: (typeof schemaChanges)[number]): string {
  const renamed = Object.entries(c.renamed).map(([from, to]) => `${from} → ${to}`);
  const parts = [
    ['added', c.added],
    ['kept hidden', c.hidden],
    ['dropped', c.dropped],
    ['renamed', renamed],
  ] as const;
  return parts.flatMap(([what, cols]) => (cols.length ? [`${what} ${cols.join(', ')}`] : [])).join('; ');
}

/** Adds `count` sample notes (tag `sample`), in puts of 1,000. */
async function addSamples(db: Db, count: number): Promise<void> {
  const at = Date.now();
  for (let i = 0; i < count; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - i) }, (_, j) => {
      const n = i + j;
      return {
        ...row(BigInt(at) * 100_000n + BigInt(n), { title: `sample ${n}`, body: `observation ${n}`, tag: 'sample', location: '' }),
        updatedAt: at + n,
      };
    });
    await db.put(batch);
  }
}

function StatusPanel({ db }: { db: Db }) {
  const stats = useStats(db, { intervalMs: 500 });
  if (!stats) return <pre role="status">opening…</pre>;
  const lines = [
    `release ${release}   role ${db.role()}`,
    `rows in memory ${stats.memtable?.rowCount ?? 0}   unflushed ${stats.unflushedBytes} B`,
    `WAL next position ${stats.wal.nextPosition}`,
    `backpressure waits ${stats.backpressure.totalCount}   waiting now ${stats.backpressure.activeCount}`,
    ...schemaChanges.map((c) => `schema v${c.from} → v${c.to}: ${describeChange(c)}`),
  ];
  return (
    <pre role="status" data-role={db.role()}>
      {lines.join('\n')}
    </pre>
  );
}

export function App() {
  const db = useMemWal(notes);
  const [tag, setTag] = useState('');
  const [error, setError] = useState('');
  const onError = (e: unknown) => setError(isMemWalError(e) ? `${e.code}: ${e.message}` : String(e));
  // Newest first; with a tag, the notes of that tag (the compound index's leading column).
  const list = useQuery(db, tag ? { query: 'byTag', prefix: [tag], reverse: true } : { query: 'byUpdated', reverse: true }) as
    | Note[]
    | undefined;
  const count = useQuery(db, { count: 'byUpdated' });
  // Page load → first list in the DOM (docs/benchmarks.md): a layout effect runs once React has put
  // it there. Also marked: the store open, the first list's rows arrived (before React renders them).
  if (db && !performance.getEntriesByName('store-open').length) performance.mark('store-open');
  if (list && !performance.getEntriesByName('list-arrived').length) performance.mark('list-arrived');
  useLayoutEffect(() => {
    if (list && !document.body.dataset.listed) {
      performance.mark('first-list');
      document.body.dataset.listed = String(list.length);
    }
  }, [list]);
  if (!db) return <p>Opening the notes…</p>;
  const add = (d: Draft) => db.put([row(newId(), d)]).catch(onError);
  return (
    <main>
      <h1>Field notes</h1>
      <p role="alert">{error}</p>
      <NoteForm initial={{ title: '', body: '', tag: '', location: '' }} label="Add" onSave={add} />
      <button type="button" onClick={() => addSamples(db, 10_000).catch(onError)}>
        Add 10,000 sample notes
      </button>
      <label>
        Filter by tag <input aria-label="Filter by tag" value={tag} onChange={(e) => setTag(e.target.value)} />
      </label>
      <p data-testid="count">{count === undefined ? '…' : `${count} notes`}</p>
      <ul aria-label="notes">
        {list?.map((note) => (
          <NoteItem key={String(note.id)} db={db} note={note} onError={onError} />
        ))}
      </ul>
      <StatusPanel db={db} />
    </main>
  );
}
