// Types of the `memwal-baseline/*` alias (bench/vite.config.ts): an older memwal's public entry
// points, typed as this checkout's (bench/baseline.worker.ts uses only what both have).

declare module 'memwal-baseline/index.js' {
  export const MemWal: typeof import('../src/index.js').MemWal;
}

declare module 'memwal-baseline/worker.js' {
  export const defaultBrowserStorage: typeof import('../src/worker.js').defaultBrowserStorage;
}
