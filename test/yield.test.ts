// yieldToEventLoop in Node: a pending yield keeps the process alive (an engine waiting on one
// must not exit mid-put), and an idle one does not (scripts still end).
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';

it('a pending yield keeps a Node process alive until it resumes, and the process then exits', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/yield-only.ts'], { encoding: 'utf8', timeout: 20_000 });
  expect(r.status).toBe(0);
  expect(r.stdout).toContain('resumed');
});
