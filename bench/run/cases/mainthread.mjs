// The main-thread cost of a 1,000-row put through the client: the page profiled while it puts,
// then each piece of a put timed alone. Node.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULTS_DIR, SIZE } from '../args.mjs';
import { details, log, record } from '../results.mjs';
import { mainThreadShares } from '../trace.mjs';

export const mainThreadCases = {
  /**
   * Case 11: the main thread's cost of a 1,000-row put through the client, profiled (V8's
   * sampling profiler on the page, 100 µs), then its pieces timed one by one.
   */
  async mainthread({ call, context, page }) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
    await call(([r]) => globalThis.bench.mainThreadOpen(r), 100_000);
    let rows;
    let profile;
    try {
      await call(([r]) => globalThis.bench.mainThreadRows(r), 10_000); // warm-up
      await cdp.send('Profiler.start');
      // 100k rows even in a quick run: the profile needs its samples.
      rows = await call(([r]) => globalThis.bench.mainThreadRows(r), 100_000);
      ({ profile } = await cdp.send('Profiler.stop'));
    } finally {
      await call(() => globalThis.bench.mainThreadClose());
      await cdp.detach();
    }
    writeFileSync(join(RESULTS_DIR, 'profile-mainthread-page.cpuprofile.json'), JSON.stringify(profile));
    const shares = mainThreadShares(profile);
    const pieces = await call(([r]) => globalThis.bench.mainThreadPieces(r), SIZE.smallRows);
    const busyMs = Object.entries(shares)
      .filter(([k]) => k !== 'idle')
      .reduce((a, [, ms]) => a + ms, 0);
    details.mainthread = {
      puts: rows.puts,
      wallMs: rows.ms,
      putCallSyncMs: rows.syncMs,
      busyMsPerPut: busyMs / rows.puts,
      profileMsPerPut: Object.fromEntries(Object.entries(shares).map(([k, ms]) => [k, ms / rows.puts])),
      pieces,
    };
    record('mainthread_ms_per_put', 'busy_total', [busyMs / rows.puts], 'ms');
    record('mainthread_ms_per_put', 'put_call_sync_p50', [rows.syncMs.p50], 'ms');
    for (const [k, v] of Object.entries(pieces)) record('mainthread_ms_per_put', `${k}_p50`, [v.p50], 'ms');
    log(`main thread: ${(busyMs / rows.puts).toFixed(3)} ms busy per 1,000-row put; ${JSON.stringify(details.mainthread.profileMsPerPut)}`);
  },
};
