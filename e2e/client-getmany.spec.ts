// getMany from the page: many point reads in one call, one message each way between the page and
// the store's worker, rows in the caller's order across the memtable and table files.

import { expect, test } from '@playwright/test';
import { clientPage, code, mw, ok, open } from './client-fixtures.js';

test("getMany from the page: one message each way, rows in the caller's order, undefined for absent keys", async ({ page }) => {
  await clientPage(page);
  const id = await open(page, { name: 'get-many', keyed: true });
  ok(await mw(page, 'put', id, 0, 5000));
  ok(await mw(page, 'call', id, 'forceSealActive'));
  ok(await mw(page, 'call', id, 'waitForFlushDrain')); // 0..4999 in a table file
  ok(await mw(page, 'put', id, 4990, 20)); // 4990..5009 in the memtable
  const asked = [4999, 7, 123_456, 5005, 7, 0, 4096, -3];
  const r = ok(await mw(page, 'getMany', id, asked));
  expect(r.ids).toEqual([4999, 7, null, 5005, 7, 0, 4096, null]);
  expect({ sent: r.sent, received: r.received }).toEqual({ sent: 1, received: 1 });
  const many = ok(
    await mw(
      page,
      'getMany',
      id,
      Array.from({ length: 1000 }, (_, i) => i * 5),
    ),
  );
  expect(many.ids).toEqual(Array.from({ length: 1000 }, (_, i) => (i * 5 < 5010 ? i * 5 : null)));
  expect({ sent: many.sent, received: many.received }).toEqual({ sent: 1, received: 1 });
  const bad = await mw(page, 'getMany', id, [1, 'not a number', 2]);
  expect(code(bad)).toBe('InvalidArgument');
  expect((bad as { message: string }).message).toContain('keys[1]');
  ok(await mw(page, 'call', id, 'close'));
});
