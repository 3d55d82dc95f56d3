// A small app on memwal, built by test/hook-size.test.ts with and without the test hook to
// measure what memwal/playwright's hook adds to a production bundle.

import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { openMemWal } from '../../src/index.js';

const schema = new Schema([new Field('id', new Int32(), false), new Field('text', new Utf8(), true)]);
const notes = await openMemWal({ name: 'notes', schema, primaryKey: ['id'] });
await notes.put([{ id: 1, text: 'hello' }]);
const list = document.querySelector('#notes')!;
for (const row of (await notes.scan()).toArray())
  list.append(Object.assign(document.createElement('li'), { textContent: String(row.text) }));
