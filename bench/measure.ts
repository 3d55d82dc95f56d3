// Small helpers shared by the bench page and the bench worker: units, a monotonic clock, a
// pause that lets other tasks run, unique store names. Browser (page or worker).

export const MiB = 1024 * 1024;

/** Milliseconds, monotonic. */
export const now = (): number => performance.now();

/** Let the event loop run other tasks (timers, messages) for at least `ms` before going on. */
export const pause = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A store or database name unique to this run and repetition. */
export function uniqueName(what: string): string {
  return `bench-${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** What {@link settleStore} needs of a store: in-process (MemWal) or through the page's client. */
interface Settleable {
  forceSealActive(): Promise<unknown>;
  waitForFlushDrain(): Promise<void>;
  compactionStats(): Promise<{ running: boolean; pendingBytes: number; tableCount: number; l0StallCount: number }>;
}

/**
 * Seal the active memtable, wait for every flush, then for the background compaction to settle
 * (nothing running, no debt, three polls 100 ms apart), at most `limitMs`. Resolves how long it
 * took, whether it settled, and the tables it left.
 */
export async function settleStore(
  db: Settleable,
  limitMs = 300_000,
): Promise<{ settleMs: number; settled: boolean; tableCount: number; l0StallCount: number }> {
  const t0 = now();
  await db.forceSealActive();
  await db.waitForFlushDrain();
  let quiet = 0;
  while (quiet < 3 && now() - t0 < limitMs) {
    const s = await db.compactionStats();
    quiet = !s.running && s.pendingBytes === 0 ? quiet + 1 : 0;
    await pause(100);
  }
  const cs = await db.compactionStats();
  return { settleMs: now() - t0, settled: quiet >= 3, tableCount: cs.tableCount, l0StallCount: cs.l0StallCount };
}

/** Latencies (ms) of a series: median, 99th percentile, max, mean. */
export function spread(xs: ArrayLike<number>): { p50: number; p99: number; max: number; mean: number } {
  const s = Float64Array.from(xs).sort();
  const at = (p: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return { p50: at(50), p99: at(99), max: s[s.length - 1]!, mean: s.reduce((a, b) => a + b, 0) / s.length };
}
