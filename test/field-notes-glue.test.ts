// The field-notes example (examples/field-notes) keeps the promise: an app of that shape on
// memwal/react needs at most 30 lines of glue. The glue is src/store.ts (schemas of three releases,
// the store opened once per page, HMR); the UI reaches memwal only through memwal/react's hooks and
// the client's own calls (put, delete, role), so it holds no change feed, no open/close dance and no
// migration code of its own.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const src = (file: string): string => readFileSync(new URL(`../examples/field-notes/src/${file}`, import.meta.url), 'utf8');
/** Lines that are code: not blank, not a comment. */
const codeLines = (text: string): string[] => text.split('\n').filter((l) => !/^\s*(\/\/|\/\*|\*|$)/.test(l));

describe('examples/field-notes glue', () => {
  it('src/store.ts is at most 30 lines of code', () => {
    const lines = codeLines(src('store.ts'));
    expect(lines.length).toBeGreaterThan(5); // the file is read, not an empty one
    expect(lines.length).toBeLessThanOrEqual(30);
  });

  it('the UI imports from memwal only the hooks and error type; it never opens, tails or migrates', () => {
    for (const file of ['App.tsx', 'main.tsx']) {
      const text = src(file);
      const imports = [...text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(memwal[^']*)'/g)].flatMap(([, names, from]) =>
        (names ?? '').split(',').map((n) => `${from}:${n.replace(/^\s*type\s+/, '').trim()}`),
      );
      for (const name of imports)
        expect(['memwal:isMemWalError', 'memwal/react:useMemWal', 'memwal/react:useQuery', 'memwal/react:useStats']).toContain(name);
      expect(text).not.toMatch(/openMemWal|\.tail\(|\.scan\(|onStats|renameColumns|dropColumns/);
    }
  });
});
