// What `npm pack` ships: LICENSE, README and the built entry points; no
// screenshot; and every relative link of the packed README (and docs) points at a file in the
// tarball, so nothing is dead on npm. Packs as test/examples/pack.ts does (cached by content),
// or takes MEMWAL_TARBALL.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { packMemwal } from './examples/pack.js';

const repo = fileURLToPath(new URL('../', import.meta.url));

/** The files a tarball holds, without npm's `package/` prefix. */
const listTarball = (path: string): string[] =>
  execFileSync('tar', ['-tzf', path], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));

/** The type and module files every subpath of `exports` names, without their `./`. */
function exportFiles(pkg: { exports: Record<string, { types: string; import: string }> }): string[] {
  return Object.values(pkg.exports).flatMap(({ types, import: module }) => [types, module].map((f) => f.replace(/^\.\//, '')));
}

let tarball: string;
let files: string[];

const read = (file: string): string => execFileSync('tar', ['-xzOf', tarball, `package/${file}`], { encoding: 'utf8' });

/** Relative link targets in markdown `text` (inline links and images), without #anchors. */
function relativeLinks(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
    out.push(target.split('#')[0]!);
  }
  return out;
}

beforeAll(async () => {
  tarball = process.env.MEMWAL_TARBALL || (await packMemwal(mkdtempSync(join(tmpdir(), 'memwal-pack-test-'))));
  files = listTarball(tarball);
}, 180_000);

describe('npm pack', () => {
  it('ships LICENSE (Apache-2.0), README, package.json and the built entry points', () => {
    for (const f of [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/worker.js',
      'dist/rpc/default-worker.js',
    ]) {
      expect(files, f).toContain(f);
    }
    expect(read('LICENSE')).toMatch(/Apache License\s+Version 2\.0, January 2004/);
    expect(JSON.parse(read('package.json')).license).toBe('Apache-2.0');
  });

  it('every subpath of package.json exports ships its types and its module', () => {
    const exports = JSON.parse(read('package.json')).exports as Record<string, { types: string; import: string }>;
    expect(Object.keys(exports)).toContain('./drain');
    for (const [subpath, { types, import: module }] of Object.entries(exports)) {
      expect(files, `${subpath} types`).toContain(types.replace(/^\.\//, ''));
      expect(files, `${subpath} module`).toContain(module.replace(/^\.\//, ''));
    }
  });

  it('ships no screenshot, sources, tests or examples', () => {
    expect(files.filter((f) => /\.(png|jpe?g|gif)$/.test(f))).toEqual([]);
    expect(files.filter((f) => /^(src|e2e|test|examples|demo|bench)\//.test(f) || /\.test\./.test(f))).toEqual([]);
  });

  it('every relative link in the packed README and docs points at a file in the tarball', () => {
    const docs = ['README.md', ...files.filter((f) => f.startsWith('docs/') && f.endsWith('.md'))];
    const dead: string[] = [];
    for (const doc of docs) {
      const dir = doc.includes('/') ? doc.slice(0, doc.lastIndexOf('/') + 1) : '';
      for (const link of relativeLinks(read(doc))) {
        const target = new URL(link, `file:///package/${dir}`).pathname.replace(/^\/package\//, '');
        if (!files.includes(target)) dead.push(`${doc} -> ${link}`);
      }
    }
    expect(dead).toEqual([]);
    expect(relativeLinks(read('README.md')).length).toBeGreaterThan(0);
  });

  it('a plain `npm pack` of a fresh checkout (no dist/) builds first (prepack) and ships every export', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      exports: Record<string, { types: string; import: string }>;
    };
    expect(pkg.scripts.prepack).toBe('npm run build');
    // A checkout as `git clone && ./scripts/setup.sh` leaves it: sources, no dist/.
    const checkout = mkdtempSync(join(tmpdir(), 'memwal-prepack-'));
    for (const f of ['src', 'docs', 'scripts', 'README.md', 'LICENSE', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
      cpSync(join(repo, f), join(checkout, f), { recursive: true });
    }
    symlinkSync(join(repo, 'node_modules'), join(checkout, 'node_modules'));
    expect(existsSync(join(checkout, 'dist'))).toBe(false);
    const out = execFileSync('npm', ['pack', '--pack-destination', checkout, '--loglevel=error'], { cwd: checkout, encoding: 'utf8' });
    const packed = listTarball(join(checkout, out.trim().split('\n').at(-1)!));
    const missing = exportFiles(pkg).filter((f) => !packed.includes(f));
    expect(missing).toEqual([]);
    expect(packed).toContain('dist/rpc/default-worker.js');
  }, 600_000);
});
