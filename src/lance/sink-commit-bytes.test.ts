// A commit's rows are bounded by their bytes padded to the table's width (`maxCommitBytes`), not
// only by their number: a request of many rows that bring few columns, into a table another
// store made wide, held all its padding in one commit (a 1.6 MB body of 200,000 position-only
// rows under a 16 KB null row: 1.2 GiB RSS; docs/testing.md, "Attacks on the sink's data plane,
// 2026-12-07"). Crafted bodies straight into `applyEncoded`. Node only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { craftRequest, nulls } from './bodies.test-util.js';
import { arrow } from './lancedb.js';
import { LanceSink } from './sink.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('maxCommitBytes', () => {
  it('a narrow request into a table with a 4,000-byte null row is committed in rows of at most maxCommitBytes padded', async () => {
    const uri = mkdtempSync(join(tmpdir(), 'memwal-lance-commit-bytes-'));
    dirs.push(uri);
    const sink = new LanceSink({ uri, table: 't', maxCommitBytes: 64 * 1024, logger: { warn: () => undefined } });
    const vec = new arrow.FixedSizeList(1000, new arrow.Field('item', new arrow.Float32(), true));
    await sink.applyEncoded('wide', ...request(craftRequest([{ field: new arrow.Field('vec', vec, true), data: nulls(vec, 1) }], 1, 1)));
    const before = sink.stats().commits;
    // 100 rows of only the position column: each padded to 4,000 (vec) + 8 (position) + 6 (store id) bytes.
    const result = await sink.applyEncoded('narrow', ...request(craftRequest([], 100, 1)));
    expect(result).toMatchObject({ appliedPosition: 1, rows: 100, duplicate: false });
    const perCommit = Math.floor((64 * 1024) / (4000 + 8 + 6)); // 16
    expect(sink.stats().commits - before).toBe(Math.ceil(100 / perCommit) + 1); // the data commits, then the position's
    expect(await (await sink.table())!.countRows("_memwal_store = 'narrow'")).toBe(100);
    await sink.close();
  });
});

function request(r: ReturnType<typeof craftRequest>): [typeof r.meta, Uint8Array] {
  return [r.meta, r.body];
}
