// What `npm pack` ships: LICENSE, README and the built entry points; no
// screenshot; and every relative link of the packed README (and docs) points at a file in the
// tarball, so nothing is dead on npm. Packs as test/examples/pack.ts does (cached by content),
// or takes MEMWAL_TARBALL.

import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { packMemwal } from './examples/pack.js';

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
  files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));
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
});
