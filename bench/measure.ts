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
