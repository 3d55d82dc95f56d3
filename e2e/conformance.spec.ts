// The storage adapters in real Chromium: every conformance case against OpfsStorage and
// IndexedDbStorage, and a real QuotaExceededError (DevTools quota override) mapping to QuotaExceeded.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, expect, test } from '@playwright/test';
import type { BrowserContext, Page } from '@playwright/test';
import type { Harness, Layout } from './site/protocol.js';

const LAYOUTS: Layout[] = ['opfs', 'indexeddb'];
const MiB = 1024 * 1024;

for (const layout of LAYOUTS) {
  for (const ioWorker of [false, true]) {
    const where = ioWorker ? 'through its I/O worker' : "on the worker's own thread";
    test(`every storage conformance case passes with the ${layout} layout, ${where}`, async ({ page }) => {
      await harnessPage(page);
      const results = await page.evaluate(([l, io]) => (window as unknown as { harness: Harness }).harness.conformance(l, io), [
        layout,
        ioWorker,
      ] as const);
      const failures = results.filter((r) => !r.ok).map((r) => `${r.name}\n    ${r.error}`);
      console.log(`${layout} (${where}): ${results.length - failures.length} passed, ${failures.length} failed`);
      expect(results.length, 'number of conformance cases run').toBeGreaterThan(10);
      expect(failures, `failing ${layout} conformance cases`).toEqual([]);
    });
  }
}

for (const via of ['tableWriter', 'brokenTableWriter'] as const) {
  const where = via === 'tableWriter' ? 'with a table writer thread' : 'with a table writer thread that dies as it starts';
  test(`every storage conformance case passes with the opfs layout on the worker's own thread, ${where}`, async ({ page }) => {
    await harnessPage(page);
    const results = await page.evaluate((v) => (window as unknown as { harness: Harness }).harness.conformance('opfs', v), via);
    const failures = results.filter((r) => !r.ok).map((r) => `${r.name}\n    ${r.error}`);
    console.log(`opfs (${where}): ${results.length - failures.length} passed, ${failures.length} failed`);
    expect(results.length, 'number of conformance cases run').toBeGreaterThan(10);
    expect(failures, 'failing opfs conformance cases').toEqual([]);
  });
}

/** The bytes the storage worker's `append(…, length, seed)` writes. */
const pattern = (length: number, seed: number): number[] => Array.from({ length }, (_, i) => (i * 31 + seed * 17) & 0xff);

async function harnessPage(page: Page): Promise<void> {
  await page.goto('/conformance.html');
  await page.waitForFunction(() => 'harness' in window);
}

test(`CRC-32C takes the WebAssembly path on the page and in a dedicated worker, with the JavaScript path's results`, async ({ page }) => {
  await harnessPage(page);
  const r = await page.evaluate(() => (window as unknown as { harness: Harness }).harness.crc32c());
  expect(r).toEqual({
    page: { path: 'wasm', checkValue: 0xe3069283, agrees: true },
    worker: { path: 'wasm', checkValue: 0xe3069283, agrees: true },
  });
});

for (const layout of LAYOUTS) {
  test(`a writer stolen from by another worker is fenced, and dead workers leave the store openable (${layout})`, async ({ page }) => {
    await harnessPage(page);
    const r = await page.evaluate((l) => (window as unknown as { harness: Harness }).harness.stealAcrossWorkers(l), layout);
    expect(r.secondOpenWithoutSteal, 'second open with timeoutMs 0').toMatchObject({ ok: false, code: 'Locked' });
    expect(r.stealOpen, 'open with steal').toEqual({ ok: true });
    expect(r.oldSegmentSeenByNewWriter, "the old writer's segment read by the new one").toEqual({ ok: true, value: pattern(100, 1) });
    expect(r.oldWriterLostReason, "the old writer's onLost").toBe('stolen');
    expect(r.oldWriterAppend, "the old writer's append after the steal").toMatchObject({ ok: false, code: 'Fenced' });
    expect(r.oldWriterCommit, "the old writer's commit after the steal").toMatchObject({ ok: false, code: 'Fenced' });
    expect(r.newWriterCommit, "the new writer's claim").toEqual({ ok: true });
    expect(r.newWriterAppend, "the new writer's append").toEqual({ ok: true });
    expect(r.openAfterTerminate, 'open after both writers were terminated').toEqual({ ok: true });
    expect(r.segmentsAfterTerminate).toEqual({
      ok: true,
      value: [
        ['1-1', 100],
        ['2-2', 50],
      ],
    });
  });

  test(`a stale writer that has not seen its lock stolen: every append it acknowledged is replayed, every other mutation is Fenced (${layout})`, async ({
    page,
  }) => {
    await harnessPage(page);
    const r = await page.evaluate((l) => (window as unknown as { harness: Harness }).harness.staleWriter(l), layout);
    const fenced = { ok: false, code: 'Fenced' };
    expect.soft(r.stealOpen, 'open with steal').toEqual({ ok: true });
    expect.soft(r.appendInWindow, 'the old writer creates a segment before the new writer claims').toEqual({ ok: true });
    expect.soft(r.newWriterClaim, "the new writer's claim").toEqual({ ok: true });
    expect.soft(r.newSegmentAfterClaim, 'a new segment after the claim').toMatchObject(fenced);
    expect.soft(r.truncate, 'WAL truncate after the claim').toMatchObject(fenced);
    expect.soft(r.removeSegment, 'WAL remove after the claim').toMatchObject(fenced);
    expect.soft(r.tableWrite, 'table write after the claim').toMatchObject(fenced);
    expect.soft(r.tableRemove, 'table remove after the claim').toMatchObject(fenced);
    expect.soft(r.commitAtCurrentVersion, 'manifest commit at the current version after the claim').toMatchObject(fenced);
    // Soft: one run reports every call that was not fenced.
    // An append to a segment the old writer holds may land (OPFS: its exclusive handle keeps the
    // new writer out until it lets go, so the new writer replays it) or be Fenced (IndexedDB).
    if (layout === 'indexeddb') expect.soft(r.appendAfterClaim, 'append to its own segment after the claim').toMatchObject(fenced);
    const acknowledged = [...pattern(100, 1), ...(r.appendAfterClaim.ok ? pattern(50, 2) : [])];
    expect.soft(r.segmentsSeenByNewWriter, 'what the new writer lists after its claim: exactly the acknowledged appends').toEqual({
      ok: true,
      value: [['1-1', acknowledged]],
    });
    expect.soft(r.tablesSeenByNewWriter).toEqual({ ok: true, value: ['1-1-1.arrow'] });
    expect.soft(r.manifestSeenByNewWriter).toEqual({ ok: true, value: [2, 2] });
    expect.soft(r.oldWriterLostReason, "the old writer's onLost, once delivered").toBe('stolen');
  });

  test(`deleting the memwal database under a writer fences it (${layout})`, async ({ page }) => {
    await harnessPage(page);
    const r = await page.evaluate((l) => (window as unknown as { harness: Harness }).harness.databaseDeletedUnderWriter(l), layout);
    expect(r.lostReason, 'onLost reason').toContain('versionchange');
    expect(r.appendAfter, 'append after the database was deleted').toMatchObject({ ok: false, code: 'Fenced' });
    expect(r.reopenAfterRelease, 'reopen after release').toEqual({ ok: true });
  });
}

/** Sets a 50 MiB quota on the page's origin, fills both layouts until writes fail, resets it. */
async function checkQuotaMapping(page: Page, context: BrowserContext, origin: string, label: string): Promise<void> {
  await harnessPage(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 50 * MiB });
  try {
    for (const layout of LAYOUTS) {
      const r = await page.evaluate((l) => (window as unknown as { harness: Harness }).harness.quota(l), layout);
      console.log(`${label} ${layout} quota:`, JSON.stringify(r));
      expect(r.wal, `${layout}: a WAL append should fail under a 50 MiB quota`).toBeDefined();
      expect(r.wal!.code, `${layout} WAL append: ${r.wal!.message}`).toBe('QuotaExceeded');
      expect(r.wal!.bytesBefore).toBeGreaterThan(0);
      expect(r.wal!.lengthAfter, `${layout}: a failed append leaves the segment as it was`).toBe(r.wal!.bytesBefore);
      expect(r.table, `${layout}: a table write should fail under a 50 MiB quota`).toBeDefined();
      expect(r.table!.code, `${layout} table write: ${r.table!.message}`).toBe('QuotaExceeded');
      expect(r.table!.bytesBefore).toBeGreaterThan(0);
      expect(r.table!.partialFileLeft, `${layout}: the failed table file must be removed`).toBe(false);
    }
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
  }
}

// Off-the-record (Playwright's default context) keeps OPFS in memory, where Chromium reports a
// full quota differently (see checkWritten in src/storage/opfs.ts) than the on-disk backend.
test('a full quota rejects QuotaExceeded in both layouts (off-the-record context)', async ({ page, context, baseURL }) => {
  await checkQuotaMapping(page, context, new URL(baseURL!).origin, 'off-the-record');
});

test('a full quota rejects QuotaExceeded in both layouts (persistent profile)', async ({ baseURL }, testInfo) => {
  const profile = mkdtempSync(join(tmpdir(), 'memwal-e2e-'));
  const context = await chromium.launchPersistentContext(profile, { ...testInfo.project.use.launchOptions, baseURL });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await checkQuotaMapping(page, context, new URL(baseURL!).origin, 'persistent');
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
