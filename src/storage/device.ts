// What the runtime says of the device the store runs on: its memory, as the browser reports it
// (`navigator.deviceMemory`, a window or a worker in Chromium), for the default block-cache
// budget (lsm/table-cache.ts, blockCacheCeiling). Feature-detected: undefined in Node, Deno,
// Firefox, Safari and edge isolates.

/** This realm's `navigator.deviceMemory` in GiB, or undefined where it is not exposed. */
export function deviceMemoryGiB(): number | undefined {
  const m = (globalThis as { navigator?: { deviceMemory?: unknown } }).navigator?.deviceMemory;
  return typeof m === 'number' ? m : undefined;
}
