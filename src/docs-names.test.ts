// Every code name docs/impl.md gives exists in src/, so the page cannot keep describing a function
// or field that was renamed or removed. A name is a backticked span outside code fences that reads
// as code: an identifier or a dotted path of them, optionally called (`tableWrite`,
// `StoreHandle.release`, `flush()`), with an upper-case letter or an underscore in it, a dot, or
// call parentheses. Plain lower-case words (`put`, `opfs`) and file names (`fault.ts`) are left
// out: they read as words, option values or paths. Each part of a name must be a word of some
// non-test source file of src/, or a name the platform declares (TypeScript's lib files:
// `SharedArrayBuffer`, `getFile()`).

import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = dirname(fileURLToPath(import.meta.url));
const root = dirname(src);

/** The text of every non-test .ts file below `dir`. */
function sourceText(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((e) => {
      const path = join(dir, e.name);
      if (e.isDirectory()) return sourceText(path);
      return e.name.endsWith('.ts') && !e.name.includes('.test') ? readFileSync(path, 'utf8') : '';
    })
    .join('\n');
}

const words = (text: string): Set<string> => new Set(text.match(/[A-Za-z_$][\w$]*/g) ?? []);

/** The words of TypeScript's lib declarations (the platform: ECMAScript, DOM, workers). */
function platformWords(): Set<string> {
  const lib = dirname(createRequire(import.meta.url).resolve('typescript'));
  const text = readdirSync(lib)
    .filter((f) => /^lib\..*\.d\.ts$/.test(f))
    .map((f) => readFileSync(join(lib, f), 'utf8'))
    .join('\n');
  return words(text);
}

const NAME = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*(\(\))?$/;
const FILE = /\.(ts|js|mjs|cjs|md|json|html|arrow|wasm)$/;

/** The code names `markdown` gives (see the file's comment for the rule). */
function codeNames(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  const names = new Set<string>();
  for (const [, span] of prose.matchAll(/`([^`\n]+)`/g)) {
    if (!span || !NAME.test(span) || FILE.test(span)) continue;
    if (/[A-Z_.]/.test(span) || span.endsWith('()')) names.add(span);
  }
  return [...names];
}

describe('docs/impl.md names only code that exists', () => {
  const names = codeNames(readFileSync(join(root, 'docs/impl.md'), 'utf8'));

  it('finds the names the page gives (the rule matches code spans)', () => {
    expect(names.length).toBeGreaterThan(100);
    expect(names).toContain('StoreHandle');
  });

  it('every part of every name is a word of src/ or of the platform', () => {
    const known = words(sourceText(src));
    const platform = platformWords();
    const missing = names.filter((n) =>
      n
        .replace(/\(\)$/, '')
        .split('.')
        .some((part) => !known.has(part) && !platform.has(part)),
    );
    expect(missing).toEqual([]);
  });

  it('the rule: code spans in, words, files and fenced code out', () => {
    const md = 'A `put` to `opfs` of `fault.ts` calls `tableWrite`, `Store.release()`, `flush()` and `MAX_X`.\n```ts\n`inFence`\n```\n';
    expect(codeNames(md).sort()).toEqual(['MAX_X', 'Store.release()', 'flush()', 'tableWrite']);
  });
});
