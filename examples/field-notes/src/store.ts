// The app's glue: everything of memwal that is not the UI. Three releases of the notes schema
// (the page runs one: `?release=N`, default the newest, as a cached page of an older release would).
import { type SchemaChange, defineSchema, int64, timestamp, utf8 } from 'memwal';
import { memwalStore } from 'memwal/react';

const base = { id: int64(), body: utf8(), tag: utf8(), updatedAt: timestamp() };
const releases = {
  1: defineSchema({ ...base, title: utf8() }),
  // Release 2 adds `location`; release 1, rolled back to, keeps it (hidden) and loses nothing.
  2: defineSchema({ ...base, title: utf8(), location: utf8().nullable() }),
  // Release 3 renames `title` to `name`: the column keeps its values (release 2 still reads `title`).
  3: defineSchema({ ...base, name: utf8().renamedFrom('title'), location: utf8().nullable() }),
};
export type Release = keyof typeof releases;
export const release = (Number(new URLSearchParams(globalThis.location?.search).get('release')) || 3) as Release;
export const schemaChanges: SchemaChange[] = [];

// One store per page, shared by every tab; StrictMode and HMR keep its one open (docs/react.md).
export const notes = memwalStore(
  {
    name: 'field-notes',
    schema: releases[release],
    primaryKey: ['id'],
    tabs: 'share',
    indexes: { byUpdated: { column: 'updatedAt' }, byTag: { columns: ['tag', 'updatedAt'] } },
  },
  { onSchemaChange: (change) => schemaChanges.push(change) },
);
import.meta.hot?.dispose(() => notes.close());
