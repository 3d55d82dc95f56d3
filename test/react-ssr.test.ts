// memwal/react on the server (SSR): importing it and rendering components that use its hooks
// opens nothing and throws nothing; openMemWal on the server rejects NotSupported saying what to do.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { createElement } from 'react';
import { describe, expect, it } from 'vitest';
import { openMemWal } from '../src/index.js';
import { memwalStore, useMemWal, useQuery, useStats } from '../src/react.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('name', new Utf8(), true)]);
const store = memwalStore({ name: 'ssr-notes', schema, primaryKey: ['id'] });

function Notes(): ReturnType<typeof createElement> {
  const db = useMemWal(store);
  const note = useQuery(db, { get: { id: 1 } });
  const stats = useStats(db);
  return createElement('p', null, db ? `${note?.name} ${stats?.unflushedBytes}` : 'opening…');
}

describe('memwal/react on the server', () => {
  it('renders components using useMemWal, useQuery and useStats without opening the store', async () => {
    // react-dom ships no types of its own (and @types/react-dom is not a dependency).
    const server = 'react-dom/server';
    const { renderToString } = (await import(server)) as { renderToString(element: unknown): string };
    expect(renderToString(createElement(Notes))).toBe('<p>opening…</p>');
    expect(store.current).toBeUndefined();
  });

  it('openMemWal rejects NotSupported, saying to open in the browser only or in-process', async () => {
    expect(typeof (globalThis as { Worker?: unknown }).Worker).toBe('undefined');
    const e = await openMemWal({ name: 'ssr', schema }).then(
      () => undefined,
      (err: unknown) => err as { code: string; message: string },
    );
    expect(e?.code).toBe('NotSupported');
    expect(e?.message).toMatch(/server rendering the page \(SSR\), open the store in the browser only/);
    expect(e?.message).toContain('MemWal.open');
    await expect(memwalStore({ name: 'ssr', schema }).open()).rejects.toMatchObject({ code: 'NotSupported' });
  });
});
