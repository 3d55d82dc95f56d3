// Keyed flushes of edge keys in real Chromium, through memwal's own worker and its I/O worker
// (where a flush is built from the WAL's rows): no acknowledged put lost, no overwritten or
// deleted row back, before and after a flush, a compaction and a reopen.

import { expect, test } from '@playwright/test';

type Probe = {
  run(which: 'int64' | 'composite', name: string, seed: number): Promise<{ wrong: string[]; model: [number, number][] }>;
  reopen(which: 'int64' | 'composite', name: string, acked: [number, number][]): Promise<string[]>;
};

for (const which of ['int64', 'composite'] as const) {
  test(`${which} edge keys with repeats and deletes: the I/O worker's flushes keep the newest row of each key, before and after a reopen`, async ({
    page,
  }) => {
    await page.goto('/keyed-edges.html');
    await page.waitForFunction(() => 'keyedEdges' in window);
    const name = `edges-${which}`;
    const run = await page.evaluate(([w, n]) => (window as unknown as { keyedEdges: Probe }).keyedEdges.run(w, n, 7), [
      which,
      name,
    ] as const);
    expect(run.wrong).toEqual([]);
    expect(run.model.length).toBeGreaterThan(10);
    await page.reload();
    await page.waitForFunction(() => 'keyedEdges' in window);
    const again = await page.evaluate(([w, n, m]) => (window as unknown as { keyedEdges: Probe }).keyedEdges.reopen(w, n, m), [
      which,
      name,
      run.model,
    ] as const);
    expect(again).toEqual([]);
  });
}
