// Vite config of the benchmark page (bench/index.html): memwal straight from ../src, the peers
// from node_modules. `npm run bench` builds it and serves the build with `vite preview`.

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
/** The older memwal of bench/baseline.worker.ts: extracted by bench/run/baseline.mjs, else this checkout's own src. */
const baselineSrc = process.env.BENCH_BASELINE_SRC ?? `${repoRoot}src/`;

const isolation: Record<string, string> =
  process.env.BENCH_COI === '0' ? {} : { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  // Deps used only inside workers are otherwise found late (Vite reloads the page mid-run);
  // sqlite-wasm and PGlite locate their .wasm through import.meta.url and must not be prebundled.
  optimizeDeps: {
    include: ['apache-arrow', 'idb', 'comlink', 'dexie'],
    exclude: ['@sqlite.org/sqlite-wasm', '@electric-sql/pglite'],
  },
  resolve: { alias: [{ find: /^memwal-baseline\//, replacement: baselineSrc }] },
  worker: { format: 'es' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Readable function names in CPU profiles (BENCH_PROFILE); V8 runs it as fast either way.
    minify: false,
    chunkSizeWarningLimit: 4096,
    // The page's code in one chunk per origin (memwal, apache-arrow, comlink, the bench), so
    // that a CPU profile of the main thread attributes each sample by its script (run.mjs).
    rolldownOptions: {
      output: {
        codeSplitting: {
          groups: [
            { name: 'apache-arrow', test: /node_modules\/apache-arrow\//, priority: 2 },
            { name: 'comlink', test: /node_modules\/comlink\//, priority: 2 },
            { name: 'memwal', test: (id: string) => id.startsWith(`${repoRoot}src/`), priority: 1 },
          ],
        },
      },
    },
  },
  // Cross-origin isolated (COOP/COEP), as apps that use wasm threads are: performance.now() then
  // has 5 µs resolution instead of 100 µs, which the point-read latencies need. BENCH_COI=0: off.
  server: { fs: { allow: [repoRoot] }, headers: isolation },
  preview: { headers: isolation },
  logLevel: 'warn',
});
