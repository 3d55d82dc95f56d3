// The layers of docs/impl.md ("Layers"), kept by a test. Every import of every source file (tests
// aside: a test may drive its layer from above) points into its own folder or into a folder the
// map below allows, and nothing at or below the engine touches a runtime (node:*, DOM, Worker),
// except the storage backends written for one. The entry points (src/*.ts) may import anything.

import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * What each folder of src/ may import from, besides itself and packages: the layers from the
 * ground up. A folder missing here, or an import of an entry point (src/*.ts) from a folder, is
 * a violation too.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  util: [],
  data: ['util'],
  format: ['util', 'data'],
  storage: ['util', 'format'],
  metrics: ['util'],
  lsm: ['util', 'data', 'format', 'storage', 'metrics'],
  engine: ['util', 'data', 'format', 'storage', 'metrics', 'lsm'],
  'io-worker': ['util', 'data', 'format', 'storage', 'lsm'],
  drain: ['util', 'data', 'metrics', 'engine'],
  rpc: ['util', 'data', 'storage', 'metrics', 'engine', 'io-worker'],
  testing: ['util', 'data', 'format', 'storage', 'lsm'],
  lance: ['util', 'data', 'metrics', 'engine', 'drain'],
  playwright: ['util', 'metrics', 'storage', 'io-worker', 'rpc', 'testing'],
};

/** Folders that run in every runtime: no node:*, DOM or Worker API (drain and testing run in browsers and workerd too). */
const RUNTIME_FREE = ['util', 'data', 'format', 'storage', 'metrics', 'lsm', 'engine', 'drain', 'testing'];
/** The storage backends written for one runtime, the only exceptions among RUNTIME_FREE. */
const RUNTIME_BACKENDS = [
  'storage/opfs-files.ts',
  'storage/indexeddb.ts',
  'storage/idb-db.ts',
  'storage/weblock.ts',
  'storage/device.ts',
  'storage/fs-node.ts',
  'storage/fs-deno.ts',
];
const NODE_BUILTINS = /^(node:|fs$|fs\/|path$|os$|child_process$|worker_threads$|crypto$|url$|stream$|buffer$)/;
const DOM_GLOBALS =
  /\b(window|document|navigator|indexedDB|localStorage|FileSystemSyncAccessHandle|new Worker|importScripts|self\.|Deno\.)\b/;

const src = dirname(fileURLToPath(import.meta.url));

/** Every source file below `dir` (relative to src/), tests and test utilities left out. */
function sourceFiles(dir = ''): string[] {
  return readdirSync(join(src, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return sourceFiles(rel);
    return e.name.endsWith('.ts') && !e.name.includes('.test') ? [rel] : [];
  });
}

/** The module specifiers `text` imports: static, re-exported, dynamic, and worker URLs. */
function importsOf(text: string): string[] {
  const pattern =
    /(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|new URL\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url/g;
  return [...text.matchAll(pattern)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** The folder (first path segment) of a file relative to src/; `.` for the entry points. */
const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.');

/**
 * Every import among `files` (path relative to src/ → its text) that the layers forbid, as one
 * line each: who imports what, and what the importing folder may import.
 */
function layerViolations(files: ReadonlyMap<string, string>, layers: Readonly<Record<string, readonly string[]>>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    const from = folderOf(file);
    if (from === '.') continue;
    const allowed = layers[from];
    if (!allowed) {
      out.push(`${file}: folder ${from}/ is in no layer (add it to LAYERS in src/layers.test.ts)`);
      continue;
    }
    for (const spec of importsOf(text)) {
      if (!spec.startsWith('.')) continue;
      const target = posix.normalize(posix.join(posix.dirname(file), spec));
      const to = folderOf(target);
      if (to === from || allowed.includes(to)) continue;
      const what = to === '.' ? `the entry point ${target}` : `${to}/`;
      out.push(
        `${file} imports ${spec} (${what}): ${from}/ may import ${allowed.length ? allowed.map((f) => `${f}/`).join(', ') : 'nothing'}`,
      );
    }
  }
  return out;
}

/** Folders that reach themselves through `layers` (none, when the map is a layering). */
function cycles(layers: Readonly<Record<string, readonly string[]>>): string[] {
  const reaches = (from: string, seen = new Set<string>()): Set<string> => {
    for (const to of layers[from] ?? []) {
      if (!seen.has(to)) {
        seen.add(to);
        reaches(to, seen);
      }
    }
    return seen;
  };
  return Object.keys(layers).filter((f) => reaches(f).has(f));
}

function read(file: string): string {
  return readFileSync(join(src, file), 'utf8');
}

/** Code without comments and string literals, for the DOM-global check. */
function code(file: string): string {
  return read(file)
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
    for (const spec of importsOf(read(file))) {
      edges.push([file, spec]);
      if (spec.startsWith('.')) visit(posix.join(posix.dirname(file), spec).replace(/\.js$/, '.ts'));
    }
  };
  for (const e of entries) visit(e);
  return { files, edges };
}

describe('layers (docs/impl.md, "Layers")', () => {
  const all = sourceFiles();

  it('the map is a layering: no folder reaches itself through it', () => {
    expect(cycles(LAYERS)).toEqual([]);
  });

  it('every folder of src/ is in the map', () => {
    const folders = [...new Set(all.map(folderOf))].filter((f) => f !== '.');
    expect(folders.filter((f) => !LAYERS[f])).toEqual([]);
  });

  it("each folder's README.md says what it may import, as the map does", () => {
    for (const [folder, allowed] of Object.entries(LAYERS)) {
      const line = /May import: ([^.]*)\./.exec(read(`${folder}/README.md`).replace(/\s+/g, ' '));
      const named = line?.[1] === 'nothing' ? [] : [...(line?.[1] ?? '').matchAll(/`([a-z-]+)\/`/g)].map((m) => m[1]);
      expect(named, `${folder}/README.md`).toEqual([...allowed]);
    }
  });

  it('every import of every source file points into its own folder or a folder below it', () => {
    expect(layerViolations(new Map(all.map((f) => [f, read(f)])), LAYERS)).toEqual([]);
  });

  it('the checker reports an upward import, an import of an entry point and a folder in no layer', () => {
    const fixture = new Map([
      ['storage/memory.ts', "import type { MemWal } from '../engine/memwal.js';\nimport { x } from './adapter.js';"],
      ['storage/opfs.ts', "const w = new Worker(new URL('../io-worker/io.worker.js', import.meta.url));"],
      ['data/rows.ts', "export { MemWalError } from '../index.js';\nimport { crc32c } from '../util/crc32c.js';"],
      ['engine/memwal.ts', "const lazy = () => import('../rpc/client.js');\nimport { Table } from 'apache-arrow';"],
      ['extra/x.ts', "import { y } from '../util/bytes.js';"],
      ['index.ts', "export { MemWal } from './engine/memwal.js';"],
    ]);
    expect(layerViolations(fixture, LAYERS)).toEqual([
      'storage/memory.ts imports ../engine/memwal.js (engine/): storage/ may import util/, format/',
      'storage/opfs.ts imports ../io-worker/io.worker.js (io-worker/): storage/ may import util/, format/',
      'data/rows.ts imports ../index.js (the entry point index.js): data/ may import util/',
      'engine/memwal.ts imports ../rpc/client.js (rpc/): engine/ may import util/, data/, format/, storage/, metrics/, lsm/',
      'extra/x.ts: folder extra/ is in no layer (add it to LAYERS in src/layers.test.ts)',
    ]);
  });

  it('the map check finds a cycle', () => {
    expect(cycles({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] })).toEqual(['a', 'b', 'c']);
  });
});

describe('runtime-agnostic below the engine (README)', () => {
  const files = sourceFiles().filter((f) => RUNTIME_FREE.includes(folderOf(f)) && !RUNTIME_BACKENDS.includes(f));

  it('covers the engine and everything below it', () => {
    expect(files).toContain('engine/memwal.ts');
    expect(files).toContain('storage/memory.ts');
    expect(files).not.toContain('storage/opfs-files.ts');
  });

  it('imports no node:* or Node builtin module', () => {
    const offenders = files.flatMap((f) =>
      importsOf(read(f))
        .filter((s) => NODE_BUILTINS.test(s))
        .map((s) => `${f} -> ${s}`),
    );
    expect(offenders).toEqual([]);
  });

  it('uses no DOM, Worker or Deno global', () => {
    expect(files.filter((f) => DOM_GLOBALS.test(code(f)))).toEqual([]);
  });

  it('the check sees runtime code: each backend named for a runtime uses one', () => {
    for (const f of RUNTIME_BACKENDS) {
      const usesRuntime = DOM_GLOBALS.test(code(f)) || importsOf(read(f)).some((s) => NODE_BUILTINS.test(s) || s === 'idb');
      expect(usesRuntime, f).toBe(true);
    }
  });
});

describe('what the package entry points reach', () => {
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
