// yieldToEventLoop in Node: a pending yield keeps the process alive (an engine waiting on one
// must not exit mid-put), and an idle one does not (scripts still end); a test that fakes the
// timers (setImmediate included) does not stop the yields a put makes.
import { spawnSync } from 'node:child_process';
import { expect, it, vi } from 'vitest';
import { open, rows } from '../src/engine/testkit.test-util.js';

it('a pending yield keeps a Node process alive until it resumes, and the process then exits', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/yield-only.ts'], { encoding: 'utf8', timeout: 20_000 });
  expect(r.status).toBe(0);
  expect(r.stdout).toContain('resumed');
});

it('a durable put completes while a test fakes the timers, setImmediate included', async () => {
  const realSetTimeout = setTimeout;
  const w = await open();
  vi.useFakeTimers(); // vitest's default set: setTimeout, setInterval, setImmediate, Date, ...
  let outcome: string;
  try {
    outcome = await Promise.race([
      w.put(rows(0, 10)).then(() => 'resolved'),
      new Promise<string>((resolve) => realSetTimeout(() => resolve('still pending after 5 s'), 5_000)),
    ]);
  } finally {
    vi.useRealTimers();
  }
  expect(outcome).toBe('resolved');
  expect((await w.scan()).numRows).toBe(10);
  await w.close();
});
