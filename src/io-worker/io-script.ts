// How stores hosted in your own worker (memwal/worker) start their I/O worker: from io.worker.ts,
// through the literal `new Worker(new URL('…', import.meta.url))` that bundlers (Vite, webpack,
// esbuild) recognise to bundle it with your worker. memwal's default worker starts its own script
// instead (rpc/default-worker.ts), so this module is not in its bundle. Browser contexts.

import type { IoEndpoint } from './remote-storage.js';

/** Starts memwal's I/O worker script under `name` (an `IoWorkerStarter` of browser.ts). */
export function startIoWorkerScript(name: string): IoEndpoint {
  // Keep it literal (see above).
  return new Worker(new URL('./io.worker.js', import.meta.url), { type: 'module', name }) as unknown as IoEndpoint;
}
