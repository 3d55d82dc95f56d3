// The core is runtime-agnostic (README): no DOM, Worker or node:* module anywhere in it, and
// nothing reachable from the `memwal` entry point imports node:*.

import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = dirname(fileURLToPath(import.meta.url));
const CORE_DIRS = ['data', 'lsm', 'engine', 'format/wal', 'format/manifest', 'metrics', 'testing', 'drain'];
const CORE_FILES = ['util/errors.ts', 'util/crc32c.ts', 'format/schema-versions.ts', 'storage/adapter.ts', 'storage/memory.ts'];
const NODE_BUILTINS = /^(node:|fs$|fs\/|path$|os$|child_process$|worker_threads$|crypto$|url$|stream$|buffer$)/;
const DOM_GLOBALS = /\b(window|document|navigator|indexedDB|localStorage|FileSystemSyncAccessHandle|new Worker|importScripts|self\.)\b/;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(src, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(rel);
    return e.name.endsWith('.ts') && !e.name.includes('.test') ? [rel] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(join(src, file), 'utf8');
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2]!);
}

/** Code without comments and string literals, for the DOM-global check. */
function code(file: string): string {
  return readFileSync(join(src, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/(['"`])(?:\\.|(?!\1).)*\1/g, "''");
}

/** Source files reachable from `entries` through relative imports, and every import edge among them. */
function reachable(entries: string[]): { files: Set<string>; edges: [string, string][] } {
  const files = new Set<string>();
  const edges: [string, string][] = [];
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of imports(file)) {
      edges.push([file, spec]);
      if (spec.startsWith('.')) visit(join(dirname(file), spec).replace(/\.js$/, '.ts'));
    }
  };
  for (const e of entries) visit(e);
  return { files, edges };
}

describe('runtime-agnostic core', () => {
  const files = [...CORE_DIRS.flatMap(sourceFiles), ...CORE_FILES];

  it('core files import no node:* or Node builtin module', () => {
    const offenders = files.flatMap((f) =>
      imports(f)
        .filter((s) => NODE_BUILTINS.test(s))
        .map((s) => `${f} -> ${s}`),
    );
    expect(offenders).toEqual([]);
  });

  it('core files use no DOM or Worker global', () => {
    const offenders = files.filter((f) => DOM_GLOBALS.test(code(f)));
    expect(offenders).toEqual([]);
  });

  it('nothing reachable from the memwal entry point imports node:*', () => {
    const { files, edges } = reachable(['index.ts', 'worker.ts']);
    expect(files.size).toBeGreaterThan(10);
    expect(edges.filter(([, spec]) => NODE_BUILTINS.test(spec)).map(([f, spec]) => `${f} -> ${spec}`)).toEqual([]);
  });

  it('nothing reachable from memwal or memwal/worker reaches memwal/lance or @lancedb/lancedb (drain() is in the core)', () => {
    const { files, edges } = reachable(['index.ts', 'worker.ts']);
    expect(files).toContain('drain/drain.ts');
    expect([...files].filter((f) => f === 'lance.ts' || f.startsWith('lance/'))).toEqual([]);
    expect(edges.filter(([, spec]) => spec.startsWith('@lancedb/')).map(([f, spec]) => `${f} -> ${spec}`)).toEqual([]);
  });

  it('nothing reachable from memwal or memwal/worker is part of memwal/playwright or imports @playwright/*', () => {
    const { files, edges } = reachable(['index.ts', 'worker.ts']);
    expect(files).toContain('rpc/test-hook.ts'); // the page-side hook is the only piece of the kit in the product
    expect([...files].filter((f) => f === 'playwright.ts' || f.startsWith('playwright/'))).toEqual([]);
    const kitImports = edges.filter(([, spec]) => spec.startsWith('@playwright/') || spec === 'playwright' || spec === 'esbuild');
    expect(kitImports.map(([f, spec]) => `${f} -> ${spec}`)).toEqual([]);
  });
});
