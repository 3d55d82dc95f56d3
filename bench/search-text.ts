// Full-text search in Node (docs/benchmarks.md, "search-text"): a real English corpus — the entries
// of Debian's package changelogs (/usr/share/doc/*/changelog.Debian.gz, one document per entry,
// files in name order) — `docs` documents, and `queries` 1–3 term queries drawn from it (seeded:
// consecutive terms of a random document, so every query has a hit). memwal (a text index; in the
// memtable, then flushed and compacted into one table file) and MiniSearch (AND, BM25+ as it ships)
// side by side in one run: build time, then each query timed (limit 10). One untimed pass of the
// queries first (JIT; for memwal's table tier it also builds the file's section). Prints one JSON
// line. Alone: `node --import tsx bench/search-text.ts --docs=10000 --queries=1000`. Node 20+.

import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import MiniSearch from 'minisearch';
import { MemWal } from '../src/index.js';
import { tokenize } from '../src/data/tokenize.js';
import { MemoryStorage } from '../src/storage/memory.js';
import { int, rng } from '../src/testing/rng.js';
import { spread } from './measure.js';

const { values } = parseArgs({ options: { docs: { type: 'string' }, queries: { type: 'string' } } });
const DOCS = Number(values.docs ?? 10_000);
const QUERIES = Number(values.queries ?? 1000);
const DOC_DIR = '/usr/share/doc';

/** Changelog entries, one per document: the lines of an entry between its header and its trailer. */
function corpus(n: number): string[] {
  const out: string[] = [];
  for (const pkg of readdirSync(DOC_DIR).sort()) {
    let text: string;
    try {
      text = gunzipSync(readFileSync(`${DOC_DIR}/${pkg}/changelog.Debian.gz`)).toString('utf8');
    } catch {
      continue;
    }
    let entry: string[] = [];
    for (const line of text.split('\n')) {
      if (/^\S.*\(.*\).*urgency=/.test(line)) entry = [];
      else if (line.startsWith(' -- ')) {
        const body = entry.join('\n').trim();
        if (body) out.push(body);
        if (out.length >= n) return out;
      } else entry.push(line);
    }
  }
  if (out.length < n) throw new Error(`search-text: only ${out.length} changelog entries under ${DOC_DIR}, wanted ${n}`);
  return out;
}

const docs = corpus(DOCS);
const ix = { name: 'words', column: 'body', locale: undefined, stopWords: new Set<string>() };
const r = rng(7);
const queries: string[] = [];
while (queries.length < QUERIES) {
  const terms = tokenize(ix, docs[int(r, docs.length)]!).filter((t) => /^\p{L}+$/u.test(t));
  if (terms.length === 0) continue;
  const n = Math.min(terms.length, 1 + int(r, 3));
  const at = int(r, terms.length - n + 1);
  queries.push(terms.slice(at, at + n).join(' '));
}

/** Each query timed; one untimed pass first. */
async function timeQueries(
  run: (q: string) => Promise<number> | number,
): Promise<{ qps: number; hits: number } & ReturnType<typeof spread>> {
  for (const q of queries) await run(q);
  const lat = new Float64Array(queries.length);
  let hits = 0;
  const t0 = performance.now();
  for (let i = 0; i < queries.length; i++) {
    const t = performance.now();
    hits += await run(queries[i]!);
    lat[i] = performance.now() - t;
  }
  const ms = performance.now() - t0;
  return { qps: Math.round((queries.length / ms) * 1000), hits, ...spread(lat) };
}

const schema = new Schema([new Field('id', new Int32(), false), new Field('body', new Utf8(), true)]);
const db = await MemWal.open({
  name: 'search',
  schema,
  primaryKey: ['id'],
  storage: new MemoryStorage(),
  indexes: { words: { column: 'body', kind: 'text' } },
  maxMemtableBytes: 1 << 30,
  maxUnflushedMemtableBytes: 1 << 30,
  logger: { warn: () => undefined },
} as never);
let t = performance.now();
for (let i = 0; i < docs.length; i += 500) await db.put(docs.slice(i, i + 500).map((body, j) => ({ id: i + j, body })));
const memwalBuildMs = performance.now() - t;
const memwalBytes = (await db.indexStats()).words!.bytes;
const search = async (q: string): Promise<number> => (await db.search('words', q, { limit: 10 })).length;
const memtable = await timeQueries(search);
await db.forceSealActive();
await db.waitForFlushDrain();
await db.compact();
t = performance.now();
await db.search('words', 'debian'); // builds the file's section
const sectionBuildMs = performance.now() - t;
const table = await timeQueries(search);
await db.close();

t = performance.now();
const mini = new MiniSearch({ fields: ['body'], storeFields: [] });
mini.addAll(docs.map((body, id) => ({ id, body })));
const miniBuildMs = performance.now() - t;
const miniSearch = (q: string): number => mini.search(q, { combineWith: 'AND' }).slice(0, 10).length;
const minisearch = await timeQueries(miniSearch);

console.log(
  JSON.stringify({
    docs: docs.length,
    queries: queries.length,
    corpusChars: docs.reduce((s, d) => s + d.length, 0),
    memwal: { buildMs: Math.round(memwalBuildMs), indexBytes: memwalBytes, memtable, sectionBuildMs: Math.round(sectionBuildMs), table },
    minisearch: { buildMs: Math.round(miniBuildMs), ...minisearch },
  }),
);
