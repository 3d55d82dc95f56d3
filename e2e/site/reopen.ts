// The reopen page: one dedicated module worker (reopen.worker.ts) exposed to Playwright as
// `window.reopen`, so that every store of a test is opened and closed in the same worker.

import * as Comlink from 'comlink';
import type { ReopenWorkerApi } from './reopen.worker.js';

const worker = new Worker(new URL('./reopen.worker.ts', import.meta.url), { type: 'module' });
(window as unknown as { reopen: Comlink.Remote<ReopenWorkerApi> }).reopen = Comlink.wrap<ReopenWorkerApi>(worker);
